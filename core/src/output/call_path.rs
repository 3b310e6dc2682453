//! The call-path tree as the analysis files read it ([`taskgraph`](super::taskgraph),
//! [`tasktree`](super::tasktree)): a small trait, so that one process's tree
//! ([`TreeNode`]) and a tree merged over ranks (`kprof merge`) give the same files
//! without either being copied into the other's form.

use std::path::Path;

use crate::hot::runtime::warn;
use crate::output::report::{Report, TaskEdge, TreeNode};

/// One node of a call-path tree, for the analysis writers.
pub trait CallPath: Sized {
    /// Name.
    fn name(&self) -> &str;
    /// Kind (`parallel_for`, `omp_task`, ...).
    fn kind(&self) -> &str;
    /// Instances (over ranks: summed).
    fn count(&self) -> u64;
    /// Inclusive time in ns (over ranks: summed).
    fn total_ns(&self) -> u64;
    /// Metrics for Hatchet, by name. Every node of one tree gives the same names in
    /// the same order (Hatchet takes the columns from one node); names holding
    /// `(inc)` are inclusive metrics.
    fn metrics(&self, put: &mut dyn FnMut(&'static str, f64));
    /// Nested nodes.
    fn children(&self) -> &[Self];
}

impl CallPath for TreeNode {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> &str {
        &self.kind
    }
    fn count(&self) -> u64 {
        self.count
    }
    fn total_ns(&self) -> u64 {
        self.total_ns
    }
    fn metrics(&self, put: &mut dyn FnMut(&'static str, f64)) {
        put("time (inc)", self.total_ns as f64);
        put("time", self.self_ns as f64);
        put("count", self.count as f64);
        put("min (inc)", self.min_ns as f64);
        put("mean (inc)", self.mean_ns);
        put("max (inc)", self.max_ns as f64);
        put("stddev (inc)", self.stddev_ns);
        // Nodes without a team (not OpenMP constructs) have 0 threads: Hatchet
        // wants every column on every node.
        let t = self.threads.as_ref();
        put("threads", t.map_or(0.0, |t| t.threads as f64));
        put("thread min (inc)", t.map_or(0.0, |t| t.min_ns as f64));
        put("thread mean (inc)", t.map_or(0.0, |t| t.mean_ns));
        put("thread max (inc)", t.map_or(0.0, |t| t.max_ns as f64));
        put("imbalance", t.map_or(0.0, |t| t.imbalance));
    }
    fn children(&self) -> &[TreeNode] {
        &self.children
    }
}

/// Writes `tasktree.json` and `taskgraph.dot` of `roots` into `dir`, each
/// completely or not at all; a failure is one line on stderr.
pub fn write_files<T: CallPath>(dir: &Path, roots: &[T], dependences: &[TaskEdge], title: &str) {
    if let Err(e) = super::tasktree::write(&dir.join("tasktree.json"), roots) {
        warn(&e.to_string());
    }
    if let Err(e) = super::taskgraph::write(&dir.join("taskgraph.dot"), roots, dependences, title) {
        warn(&e.to_string());
    }
}

/// [`write_files`] for one process's report.
pub fn write_report_files(dir: &Path, report: &Report) {
    let p = &report.program;
    let title = match p.rank {
        Some(r) => format!("{} (pid {}, rank {r})", p.executable, p.pid),
        None => format!("{} (pid {})", p.executable, p.pid),
    };
    write_files(dir, &report.tree, &report.task_graph.edges, &title);
}
