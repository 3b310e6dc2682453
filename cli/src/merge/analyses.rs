//! The analysis files of a merged directory (`tasktree.json`, `taskgraph.dot`),
//! written by the core's writers from the tree merged over ranks: per node the
//! mean over ranks as Hatchet's `time (inc)`/`time`, with min/mean/max over ranks
//! and the imbalance (max/mean of the inclusive time) as more columns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kprof_core::output::call_path::{write_files, CallPath};
use kprof_core::output::report::{Report, TaskEdge};

use super::Merged;

/// Minimum, mean and maximum of per-rank values (ranks without the node count 0).
fn spread(v: &[u64]) -> (f64, f64, f64) {
    let min = v.iter().copied().min().unwrap_or(0) as f64;
    let max = v.iter().copied().max().unwrap_or(0) as f64;
    let mean = v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
    (min, mean, max)
}

impl CallPath for Merged {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &str {
        &self.kind
    }
    fn count(&self) -> u64 {
        self.count.iter().sum()
    }
    fn total_ns(&self) -> u64 {
        self.total.iter().sum()
    }
    fn metrics(&self, put: &mut dyn FnMut(&'static str, f64)) {
        let (tmin, tmean, tmax) = spread(&self.total);
        let (smin, smean, smax) = spread(&self.self_ns);
        let (cmin, _, cmax) = spread(&self.count);
        put("time (inc)", tmean);
        put("time", smean);
        put("count", self.count.iter().sum::<u64>() as f64);
        put("min time/rank (inc)", tmin);
        put("max time/rank (inc)", tmax);
        put("min time/rank", smin);
        put("max time/rank", smax);
        put("min count/rank", cmin);
        put("max count/rank", cmax);
        put("ranks", self.present.iter().filter(|p| **p).count() as f64);
        put("imbalance", if tmean > 0.0 { tmax / tmean } else { 1.0 });
    }
}

/// The merged tree depth first, for the writers.
fn walk(list: &[Merged], depth: usize, visit: &mut dyn FnMut(usize, &dyn CallPath)) {
    for m in list {
        visit(depth, m);
        walk(&m.children, depth + 1, visit);
    }
}

/// The ranks' dependence edges, summed by (from, to).
fn dependences(reports: &[(PathBuf, Report)]) -> Vec<TaskEdge> {
    let mut sum: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for (_, r) in reports {
        for e in &r.task_graph.edges {
            *sum.entry((&e.from, &e.to)).or_insert(0) += e.count;
        }
    }
    sum.into_iter()
        .map(|((from, to), count)| TaskEdge {
            from: from.into(),
            to: to.into(),
            count,
        })
        .collect()
}

/// Writes the analysis files of the merged `tree` into `out`.
pub fn write(out: &Path, tree: &[Merged], reports: &[(PathBuf, Report)]) {
    let exe = reports
        .first()
        .map(|(_, r)| r.program.executable.as_str())
        .unwrap_or_default();
    let title = format!("{exe} ({})", super::ranks_text(reports.len()));
    write_files(
        out,
        &|visit| walk(tree, 0, visit),
        &dependences(reports),
        &title,
    );
}
