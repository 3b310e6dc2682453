//! The job's summary on stderr, from the merged profile: run time over ranks,
//! the call paths that took the most time summed over ranks with their mean,
//! maximum and imbalance, and the time in MPI.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::output::readable::duration;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

/// The summary of the merged profile `m` of `ranks` processes, written in `dir`;
/// `top` call paths.
pub fn render(m: &Value, ranks: usize, dir: &Path, top: usize) -> String {
    let mut s = String::new();
    let d = &m["duration_ns"];
    let _ = writeln!(
        s,
        "\nkprof: the job's {ranks} ranks, reduced at MPI_Finalize: run time {} min, {} mean, {} max",
        duration(num(&d["min"])),
        duration(num(&d["mean"])),
        duration(num(&d["max"]))
    );
    // Every node with its path; MPI time from the outermost `mpi` nodes.
    let mut rows: Vec<(f64, String, &Value)> = Vec::new();
    let (mut mpi_ns, mut mpi_calls) = (0.0, 0.0);
    let mut stack: Vec<(String, &Value, bool)> = m["tree"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| (String::new(), n, false))
        .collect();
    while let Some((prefix, n, in_mpi)) = stack.pop() {
        let name = n["name"].as_str().unwrap_or("?");
        let path = if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix} > {name}")
        };
        let is_mpi = n["kind"] == "mpi";
        if is_mpi {
            mpi_calls += num(&n["count"]["sum"]);
            if !in_mpi {
                mpi_ns += num(&n["total_ns"]["sum"]);
            }
        }
        rows.push((num(&n["total_ns"]["sum"]), path.clone(), n));
        for c in n["children"].as_array().into_iter().flatten() {
            stack.push((path.clone(), c, in_mpi || is_mpi));
        }
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    if !rows.is_empty() {
        let _ = writeln!(
            s,
            "{:>12} {:>12} {:>9} {:>6}  call path (time per rank; top {} of {})",
            "mean",
            "max",
            "imbalance",
            "ranks",
            top.min(rows.len()),
            rows.len()
        );
    }
    for (_, path, n) in rows.iter().take(top) {
        let t = &n["total_ns"];
        let _ = writeln!(
            s,
            "{:>12} {:>12} {:>9.2} {:>6}  {path}",
            duration(num(&t["mean"])),
            duration(num(&t["max"])),
            num(&t["imbalance"]),
            n["ranks"].as_u64().unwrap_or(0)
        );
    }
    if mpi_calls > 0.0 {
        let run = num(&d["sum"]).max(1.0);
        let _ = writeln!(
            s,
            "MPI: {mpi_calls:.0} calls, {} in MPI summed over ranks = {:.1}% of the ranks' run time",
            duration(mpi_ns),
            100.0 * mpi_ns / run
        );
    }
    // `kprof run` says where the files are once the program has ended.
    if std::env::var_os(crate::output::LAUNCHER_VAR).is_none_or(|v| v != crate::output::KPROF_RUN) {
        let _ = writeln!(
            s,
            "kprof: the job's profile: {} (read it with: kprof report {})",
            dir.join("profile.json").display(),
            dir.display()
        );
    }
    s
}
