//! Time in MPI (mpiP's "MPI%"): the MPI plugin's calls are nodes of kind `mpi`;
//! their time, summed over the outermost ones (a call inside another is not
//! counted twice), against the run and against the threads' time.

use std::fmt::Write as _;

use crate::output::calltree::CallTree;
use crate::output::readable::duration;
use crate::output::report::{Report, TreeNode};

/// This process's time in MPI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MpiTime {
    /// MPI calls.
    pub calls: u64,
    /// Time in them, summed over threads (ns).
    pub ns: u64,
    /// `ns` as a percentage of the span kprof measured (`run_ns`; above 100
    /// when several threads are in MPI at once).
    pub of_run: f64,
    /// The span kprof measured (`clock.duration_ns`).
    pub run_ns: u64,
    /// `ns` as a percentage of all threads' time.
    pub of_threads: f64,
}

/// The MPI calls of a tree added up as its nodes come, depth first: what
/// [`time`] reads, for a tree that is streamed and never held.
#[derive(Debug, Default)]
pub struct MpiTally {
    calls: u64,
    ns: u64,
    /// The depth of the outermost MPI call enclosing the current node.
    inside: Option<usize>,
}

impl MpiTally {
    /// Adds the node met next, at `depth`.
    pub fn add(&mut self, depth: usize, n: &TreeNode) {
        if self.inside.is_some_and(|d| depth <= d) {
            self.inside = None;
        }
        if n.kind == "mpi" {
            self.calls += n.count;
            if self.inside.is_none() {
                self.ns += n.total_ns;
                self.inside = Some(depth);
            }
        }
    }

    /// The time in MPI of the nodes added, in the profile `r` (none without
    /// MPI calls).
    pub fn time(&self, r: &Report) -> Option<MpiTime> {
        if self.calls == 0 {
            return None;
        }
        let pct = |base: u64| 100.0 * self.ns as f64 / base.max(1) as f64;
        Some(MpiTime {
            calls: self.calls,
            ns: self.ns,
            of_run: pct(r.clock.duration_ns),
            run_ns: r.clock.duration_ns,
            of_threads: pct(r.thread_time_ns()),
        })
    }
}

/// The time in MPI, when the profile (`r`, whose tree is `tree`) has MPI calls.
pub fn time(r: &Report, tree: &dyn CallTree) -> Option<MpiTime> {
    if !tree.has_kind(&["mpi"]) {
        return None;
    }
    let mut tally = MpiTally::default();
    tree.walk_without_samples(&mut |depth, n: &TreeNode| tally.add(depth, n));
    tally.time(r)
}

/// The summary's line (nothing without MPI calls).
pub fn block(s: &mut String, r: &Report, tree: &dyn CallTree) {
    line(s, time(r, tree));
}

/// The summary's line for `time` (nothing for none).
pub fn line(s: &mut String, time: Option<MpiTime>) {
    if let Some(t) = time {
        let _ = writeln!(
            s,
            "\nMPI: {} calls, {} in MPI = {:.1}% of the {} measured ({:.1}% of the threads' \
             time)",
            t.calls,
            duration(t.ns as f64),
            t.of_run,
            duration(t.run_ns as f64),
            t.of_threads
        );
    }
}
