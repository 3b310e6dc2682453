//! The analysis files of a merged directory (`tasktree.json`, `taskgraph.dot`),
//! written by the core's writers from the merged profile's tree (`kprof-merged/1`,
//! per node its statistics over ranks): the mean over ranks as Hatchet's
//! `time (inc)`/`time`, with min/max over ranks and the imbalance (max/mean of the
//! inclusive time) as more columns; the ranks' dependence edges summed.

use std::collections::BTreeMap;
use std::path::Path;

use kprof_core::output::analysis_files::write_files;
use kprof_core::output::call_path::CallPath;
use kprof_core::output::report::TaskEdge;
use serde_json::Value;

/// A node of the merged profile's tree.
struct Node<'a>(&'a Value);

impl Node<'_> {
    /// Statistic `stat` (`min`, `mean`, `max`, `sum`, `imbalance`) of value `what`.
    fn stat(&self, what: &str, stat: &str) -> f64 {
        self.0[what][stat].as_f64().unwrap_or(0.0)
    }
}

impl CallPath for Node<'_> {
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
        let tmean = self.stat("total_ns", "mean");
        let tmax = self.stat("total_ns", "max");
        put("time (inc)", tmean);
        put("time", self.stat("self_ns", "mean"));
        put("count", self.count() as f64);
        put("min time/rank (inc)", self.stat("total_ns", "min"));
        put("max time/rank (inc)", tmax);
        put("min time/rank", self.stat("self_ns", "min"));
        put("max time/rank", self.stat("self_ns", "max"));
        put("min count/rank", self.stat("count", "min"));
        put("max count/rank", self.stat("count", "max"));
        put("ranks", self.0["ranks"].as_f64().unwrap_or(0.0));
        put("imbalance", if tmean > 0.0 { tmax / tmean } else { 1.0 });
    }
}

/// The merged tree depth first, for the writers.
fn walk(list: &[Value], depth: usize, visit: &mut dyn FnMut(usize, &dyn CallPath)) {
    for n in list {
        visit(depth, &Node(n));
        if let Some(kids) = n["children"].as_array() {
            walk(kids, depth + 1, visit);
        }
    }
}

/// Dependence edges by (from, to), summed over the ranks as they are read.
pub type Dependences = BTreeMap<(String, String), u64>;

/// Adds one rank's dependence edges to `sum`.
pub fn add_dependences(sum: &mut Dependences, edges: &[TaskEdge]) {
    for e in edges {
        *sum.entry((e.from.clone(), e.to.clone())).or_insert(0) += e.count;
    }
}

/// Writes the analysis files of `merged` (the merged profile) into `out`, with
/// the ranks' dependences summed in `deps`.
pub fn write(out: &Path, merged: &Value, deps: &Dependences, ranks: usize) {
    let exe = merged["ranks"]
        .get(0)
        .and_then(|r| r["executable"].as_str())
        .unwrap_or_default();
    let title = format!("{exe} ({})", crate::fmt::ranks_text(ranks));
    let edges: Vec<TaskEdge> = deps
        .iter()
        .map(|((from, to), &count)| TaskEdge {
            from: from.clone(),
            to: to.clone(),
            count,
        })
        .collect();
    let tree = merged["tree"].as_array().map_or(&[][..], Vec::as_slice);
    write_files(
        out,
        &|visit| walk(tree, 0, visit),
        &edges,
        &title,
        &[],
        &|| None,
    );
}
