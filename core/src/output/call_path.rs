//! The call-path tree as the analysis files read it ([`taskgraph`](super::taskgraph),
//! [`tasktree`](super::tasktree)): node by node, depth first ([`Walk`]), each node
//! through a small trait ([`CallPath`]), so that one process's tree ([`TreeNode`]s,
//! or a tree streamed node by node) and a tree merged over ranks (`kprof merge`)
//! give the same files without either being copied into the other's form.

use crate::output::report::TreeNode;

/// One node of a call-path tree, for the analysis writers.
pub trait CallPath {
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
    /// The call-stack samples taken while this was its thread's innermost
    /// instance (`KPROF_SAMPLE_HZ`): `put(function, self samples)` per sampled
    /// function, as `profile.json`'s `stack_samples.functions` lists them. None
    /// by default (a tree without call-stack samples).
    fn sampled_functions(&self, _put: &mut dyn FnMut(&str, u64)) {}
}

/// A tree met depth first: calls `visit(depth, node)` for every node, parents
/// before their children, siblings in order, the roots at depth 0. Called once
/// per file written.
pub type Walk<'a> = &'a (dyn Fn(&mut dyn FnMut(usize, &dyn CallPath)) + Sync);

/// [`Walk`] over a tree of [`TreeNode`]s.
pub fn walk_tree(nodes: &[TreeNode], visit: &mut dyn FnMut(usize, &dyn CallPath)) {
    fn go(nodes: &[TreeNode], depth: usize, visit: &mut dyn FnMut(usize, &dyn CallPath)) {
        for n in nodes {
            visit(depth, n);
            go(&n.children, depth + 1, visit);
        }
    }
    go(nodes, 0, visit);
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
        let [threads, min, mean, max, imbalance] = TEAM_METRICS;
        put(threads, t.map_or(0.0, |t| t.threads as f64));
        put(min, t.map_or(0.0, |t| t.min_ns as f64));
        put(mean, t.map_or(0.0, |t| t.mean_ns));
        put(max, t.map_or(0.0, |t| t.max_ns as f64));
        put(imbalance, t.map_or(0.0, |t| t.imbalance));
    }
    fn sampled_functions(&self, put: &mut dyn FnMut(&str, u64)) {
        for f in self.stack_samples.iter().flat_map(|s| &s.functions) {
            put(&f.name, f.samples);
        }
    }
}

/// The metrics of how a node's time spread over its team's threads: columns a
/// tree without teams (no OpenMP) leaves out of `tasktree.json`, a third of its
/// size at a million nodes.
pub const TEAM_METRICS: [&str; 5] = [
    "threads",
    "thread min (inc)",
    "thread mean (inc)",
    "thread max (inc)",
    "imbalance",
];
