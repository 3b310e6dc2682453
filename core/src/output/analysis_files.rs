//! The analysis files written beside a profile, `tasktree.json` (for
//! Hatchet) and `taskgraph.dot`, from any call-path tree that can be walked
//! ([`crate::output::call_path`]): one process's at the end of its run, or a job's merged by
//! `kprof merge`; and one process's `profile.cali` (for Caliper's readers,
//! Hatchet and Thicket: [`cali`]).

use std::path::Path;

use crate::hot::runtime::warn;
use crate::output::call_path::{Walk, TEAM_METRICS};
use crate::output::calltree::CallTree;
use crate::output::files::OutputError;
use crate::output::report::{Report, TaskEdge};
use crate::output::taskgraph::LongestWork;
use crate::output::{cali, taskgraph, tasktree};

/// Writes `tasktree.json` and `taskgraph.dot` of the tree `walk` meets into `dir`,
/// each completely or not at all, on two threads (each walks the tree); a
/// failure is one line on stderr. `omit`: metrics no node of the tree has;
/// `longest`: the graph's longest kinds of work, where the tree gives them
/// ([`taskgraph::LongestWork`]).
pub fn write_files(
    dir: &Path,
    walk: Walk,
    dependences: &[TaskEdge],
    title: &str,
    omit: &[&str],
    longest: &(dyn Fn() -> Option<LongestWork> + Sync),
) {
    let tree = || tasktree::write(&dir.join("tasktree.json"), walk, omit);
    let graph = || {
        let path = dir.join("taskgraph.dot");
        taskgraph::write(&path, walk, dependences, title, longest())
    };
    let (tree, graph) = std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("kprof-taskgraph".into())
            .spawn_scoped(s, graph)
            .ok();
        let tree = tree();
        let graph = other
            .map(|t| t.join().ok())
            .unwrap_or_else(|| Some(graph()));
        (tree, graph)
    });
    let lost = || OutputError::NotWritten {
        path: dir.join("taskgraph.dot").display().to_string(),
        reason: "internal error".into(),
    };
    for r in [tree, graph.unwrap_or_else(|| Err(lost()))] {
        if let Err(e) = r {
            warn(&e.to_string());
        }
    }
}

/// [`write_files`] for one process's report, whose call-path tree is `tree`,
/// then its `profile.cali`.
pub fn write_report_files(dir: &Path, report: &Report, tree: &dyn CallTree) {
    let p = &report.program;
    let title = match p.rank {
        Some(r) => format!("{} (pid {}, rank {r})", p.executable, p.pid),
        None => format!("{} (pid {})", p.executable, p.pid),
    };
    let omit: &[&str] = if tree.has_teams() { &[] } else { &TEAM_METRICS };
    let cali = || cali::write_report(dir, report, tree);
    // A third walk of the tree beside the two of `write_files`, on its own thread.
    let cali = std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("kprof-cali".into())
            .spawn_scoped(s, cali)
            .ok();
        write_files(
            dir,
            &|visit| tree.walk_without_samples(&mut |depth, n| visit(depth, n)),
            &report.task_graph.edges,
            &title,
            omit,
            &|| tree.longest_work(taskgraph::MAX_NODES),
        );
        match other {
            Some(t) => t.join().unwrap_or_else(|_| {
                Err(OutputError::NotWritten {
                    path: dir.join("profile.cali").display().to_string(),
                    reason: "internal error".into(),
                })
            }),
            None => cali(),
        }
    });
    if let Err(e) = cali {
        warn(&e.to_string());
    }
}
