//! `profile.cali` of a job's profile reduced inside the job (the MPI plugin's
//! `kprof-merged/<n>`): one record per call path with the path's statistics over
//! the ranks, as Caliper's `spot` profiles of an MPI job hold them
//! (`min#`, `max#`, `avg#` and `sum#inclusive#sum#time.duration`, aliases
//! `Min time/rank`, `Max time/rank`, `Avg time/rank` and `Total time`). The
//! ranks' own trees are not in the reduced profile: a record per rank and path
//! comes from `kprof merge` of the ranks' directories ([`super::cali`]).
//!
//! Call-stack samples (`KPROF_SAMPLE_HZ`) are records as in one process's file
//! (the same attributes, written by the same [`Writer`]): per call path and
//! sampled function one record, its `sum#count` (alias `samples`) the
//! function's self samples summed over the ranks, as the path's `Total time`
//! is its time summed over them.
//!
//! Read from the merged profile (`profile.json`'s value, [`MERGED_SCHEMA`]): a
//! node's `total_ns` and `self_ns` hold `min`, `mean`, `max` and `sum` over the
//! job's ranks (a rank without the path counts as 0, as in `profile.json`).
//!
//! [`MERGED_SCHEMA`]: crate::reduce::MERGED_SCHEMA

use std::path::Path;

use serde_json::Value;

use crate::output::cali::{self, CaliType, Global, Metric, Writer};
use crate::output::call_path::CallPath;
use crate::output::files::{write_whole, OutputError};

/// The metrics of a job's record, in seconds where a time. Hatchet takes the
/// first as its default metric (`Avg time/rank`, as Caliper's `spot` shows
/// first), and files metrics whose alias says neither `(inc)` nor
/// `inclusive` as exclusive: these aliases are Caliper's own, so a script written
/// for Caliper's files reads kprof's unchanged (and Hatchet lists them as it
/// lists Caliper's).
pub const JOB_METRICS: [Metric; 6] = [
    Metric {
        name: "avg#inclusive#sum#time.duration",
        alias: "Avg time/rank",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("avg time/rank (inc)"),
    },
    Metric {
        name: "min#inclusive#sum#time.duration",
        alias: "Min time/rank",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("min time/rank (inc)"),
    },
    Metric {
        name: "max#inclusive#sum#time.duration",
        alias: "Max time/rank",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("max time/rank (inc)"),
    },
    Metric {
        name: "sum#inclusive#sum#time.duration",
        alias: "Total time",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("time (inc)"),
    },
    Metric {
        name: "sum#sum#time.duration",
        alias: "time",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("time"),
    },
    Metric {
        name: "sum#region.count",
        alias: "count",
        ty: CaliType::Uint,
        unit: None,
        from: None,
    },
];

/// One node of the merged profile's tree.
struct MergedNode<'a>(&'a Value);

impl MergedNode<'_> {
    /// Statistic `stat` (`min`, `mean`, `max`, `sum`) of field `field`.
    fn stat(&self, field: &str, stat: &str) -> f64 {
        self.0[field][stat].as_f64().unwrap_or(0.0)
    }
}

impl CallPath for MergedNode<'_> {
    fn name(&self) -> &str {
        self.0["name"].as_str().unwrap_or_default()
    }
    fn kind(&self) -> &str {
        self.0["kind"].as_str().unwrap_or_default()
    }
    fn count(&self) -> u64 {
        self.0["count"]["sum"].as_u64().unwrap_or(0)
    }
    fn total_ns(&self) -> u64 {
        self.0["total_ns"]["sum"].as_u64().unwrap_or(0)
    }
    fn metrics(&self, put: &mut dyn FnMut(&'static str, f64)) {
        put("min time/rank (inc)", self.stat("total_ns", "min"));
        put("max time/rank (inc)", self.stat("total_ns", "max"));
        put("avg time/rank (inc)", self.stat("total_ns", "mean"));
        put("time (inc)", self.stat("total_ns", "sum"));
        put("time", self.stat("self_ns", "sum"));
    }
    fn sampled_functions(&self, put: &mut dyn FnMut(&str, u64)) {
        let functions = &self.0["stack_samples"]["functions"];
        for f in functions.as_array().into_iter().flatten() {
            let samples = f["samples"]["sum"].as_u64().unwrap_or(0);
            put(f["name"].as_str().unwrap_or_default(), samples);
        }
    }
}

/// Visits the nodes of `list` (a merged profile's `tree` or `children`) depth
/// first.
fn walk(list: &Value, depth: usize, visit: &mut dyn FnMut(usize, &dyn CallPath)) {
    for n in list.as_array().into_iter().flatten() {
        visit(depth, &MergedNode(n));
        walk(&n["children"], depth + 1, visit);
    }
}

/// Metadata of one rank that are not the job's.
const RANK_ONLY: [&str; 3] = [
    "MPI rank",
    "clock offset to rank 0 (ns)",
    "clock offset error (ns)",
];

/// The job's metadata: `own`, the metadata of the process writing the file
/// (one of the job's ranks: the program's pairs, `MPI size` and the like; not
/// what only that rank has, [`RANK_ONLY`]), the executable and host of the
/// job's first rank, the job's size, kprof's version and plugins; and, from the
/// writing process, the user, command line and `KPROF_*` settings.
pub fn job_globals(merged: &Value, own: &[(String, String)]) -> Vec<Global> {
    let mut g: Vec<Global> = own
        .iter()
        .filter(|(k, _)| !RANK_ONLY.contains(&k.as_str()))
        .map(|(k, v)| cali::string(k, v.clone()))
        .collect();
    if let Some(user) = cali::user() {
        g.push(cali::string("user", user));
    }
    let ranks = merged["ranks"].as_array().map_or(&[][..], Vec::as_slice);
    let first = ranks.first();
    let text = |v: Option<&Value>, k: &str| {
        v.and_then(|r| r[k].as_str())
            .unwrap_or_default()
            .to_string()
    };
    g.push(cali::string("executable", text(first, "executable")));
    cali::own_command(&mut g);
    let plugins: Vec<String> = merged["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect();
    cali::host_globals(
        &mut g,
        &text(first, "host"),
        Some(ranks.len() as u64),
        merged["kprof_version"].as_str().unwrap_or_default(),
        &plugins,
    );
    cali::own_settings(&mut g);
    g
}

/// Writes `profile.cali` of the merged profile `merged` into `dir` (completely
/// or not at all), with the metadata `own` of the writing process
/// ([`job_globals`]).
pub fn write_job(dir: &Path, merged: &Value, own: &[(String, String)]) -> Result<(), OutputError> {
    let path = dir.join("profile.cali");
    let file = |source| OutputError::File {
        path: path.display().to_string(),
        source,
    };
    let globals = job_globals(merged, own);
    write_whole(&path, |f| {
        let mut w = Writer::with_metrics(f, &JOB_METRICS, false, false).map_err(file)?;
        w.tree(&|visit| walk(&merged["tree"], 0, visit), 0)
            .map_err(file)?;
        w.finish(&globals).map(drop).map_err(file)
    })
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A merged tree of two ranks: `main` on both, `solve` on rank 1 only.
    fn merged() -> Value {
        let stat = |min: u64, mean: f64, max: u64, sum: u64| json!({"min": min, "mean": mean, "max": max, "sum": sum});
        json!({
            "kprof_version": "9.9",
            "plugins": ["mpi"],
            "ranks": [{"executable": "app", "host": "node12.site"}, {"executable": "app"}],
            "tree": [{
                "name": "main", "kind": "user_region",
                "count": stat(1, 1.0, 1, 2),
                "total_ns": stat(2_000_000_000, 2.5e9, 3_000_000_000, 5_000_000_000),
                "self_ns": stat(0, 1.0e9, 2_000_000_000, 2_000_000_000),
                "children": [{
                    "name": "solve", "kind": "user_region",
                    "count": stat(0, 2.0, 4, 4),
                    "total_ns": stat(0, 1.5e9, 3_000_000_000, 3_000_000_000),
                    "self_ns": stat(0, 1.5e9, 3_000_000_000, 3_000_000_000),
                    "stack_samples": {
                        "samples": stat(0, 2.5, 5, 5),
                        "functions": [{"name": "kernel_loop", "samples": stat(0, 2.0, 4, 4)},
                                      {"name": "solve", "samples": stat(0, 0.5, 1, 1)}]
                    },
                    "children": []
                }]
            }]
        })
    }

    #[test]
    fn one_record_per_path_with_the_statistics_over_ranks() {
        let dir = std::env::temp_dir().join(format!("kprof-cali-job-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let own = [
            ("MPI size".to_string(), "2".to_string()),
            ("MPI rank".to_string(), "0".to_string()),
        ];
        write_job(&dir, &merged(), &own).unwrap();
        let text = std::fs::read_to_string(dir.join("profile.cali")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let records: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("__rec=ctx"))
            .collect();
        // Two call paths, then solve's two sampled functions.
        assert_eq!(records.len(), 4, "{text}");
        // avg, min, max, total, exclusive total, count.
        assert!(
            records[0].ends_with("=2.500000000=2.000000000=3.000000000=5.000000000=2.000000000=2"),
            "{}",
            records[0]
        );
        assert!(
            records[1].ends_with("=1.500000000=0.000000000=3.000000000=3.000000000=3.000000000=4"),
            "{}",
            records[1]
        );
        // A function's record: its path's node, `function`, the function's
        // node, then its samples summed over the ranks.
        for (record, n) in records[2..].iter().zip([4, 1]) {
            assert!(
                record.contains(",attr=") && record.ends_with(&format!(",data={n}")),
                "{record}"
            );
        }
        assert!(
            text.contains("data=source.function#cali.sampler.pc"),
            "{text}"
        );
        assert!(text.contains("data=kernel_loop"), "{text}");
        // Each function's path node is under its construct's (`solve`'s).
        let id_of = |data: &str| -> String {
            let line = text
                .lines()
                .find(|l| l.starts_with("__rec=node") && l.contains(data))
                .unwrap_or_else(|| panic!("{data}: {text}"));
            line.split(',')
                .nth(1)
                .unwrap()
                .trim_start_matches("id=")
                .to_string()
        };
        let solve = id_of(",data=solve,parent=");
        for f in ["kernel_loop", "solve"] {
            let under = format!(",data={f},parent={solve}");
            assert!(text.contains(&under), "{under}: {text}");
        }
        for alias in ["Min time/rank", "Avg time/rank", "Total time"] {
            assert!(text.contains(alias), "{alias}: {text}");
        }
        // The job's metadata: size from the ranks, the first rank's host.
        assert!(text.contains("data=node12.site"), "{text}");
        assert!(
            text.contains("data=node,") || text.contains("data=node\n"),
            "{text}"
        );
        assert!(text.contains("MPI size"), "{text}");
        assert!(!text.contains("MPI rank"), "{text}");
    }
}
