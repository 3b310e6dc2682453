//! Time in MPI (mpiP's "MPI%"): the MPI plugin's calls are nodes of kind `mpi`;
//! their time, summed over the outermost ones (a call inside another is not
//! counted twice), against the run and against the threads' time.

use std::fmt::Write as _;

use crate::output::report::{Report, TreeNode};
use crate::output::summary::duration;

/// This process's time in MPI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MpiTime {
    /// MPI calls.
    pub calls: u64,
    /// Time in them, summed over threads (ns).
    pub ns: u64,
    /// `ns` as a percentage of the run (wall clock; above 100 when several
    /// threads are in MPI at once).
    pub of_run: f64,
    /// `ns` as a percentage of all threads' time.
    pub of_threads: f64,
}

/// The time in MPI, when the profile has MPI calls.
pub fn time(r: &Report) -> Option<MpiTime> {
    fn walk(nodes: &[TreeNode], calls: &mut u64, ns: &mut u64) {
        for n in nodes {
            if n.kind == "mpi" {
                *calls += n.count;
                *ns += n.total_ns;
                count_calls(&n.children, calls);
            } else {
                walk(&n.children, calls, ns);
            }
        }
    }
    fn count_calls(nodes: &[TreeNode], calls: &mut u64) {
        for n in nodes {
            if n.kind == "mpi" {
                *calls += n.count;
            }
            count_calls(&n.children, calls);
        }
    }
    let (mut calls, mut ns) = (0, 0);
    walk(&r.tree, &mut calls, &mut ns);
    if calls == 0 {
        return None;
    }
    let pct = |base: u64| 100.0 * ns as f64 / base.max(1) as f64;
    Some(MpiTime {
        calls,
        ns,
        of_run: pct(r.clock.duration_ns),
        of_threads: pct(r.thread_time_ns()),
    })
}

/// The summary's line (nothing without MPI calls).
pub fn block(s: &mut String, r: &Report) {
    if let Some(t) = time(r) {
        let _ = writeln!(
            s,
            "\nMPI: {} calls, {} in MPI = {:.1}% of the run ({:.1}% of the threads' time)",
            t.calls,
            duration(t.ns as f64),
            t.of_run,
            t.of_threads
        );
    }
}
