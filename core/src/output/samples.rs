//! The per-instance samples of `profile.json` (`KPROF_SAMPLES`): the threads'
//! reservoirs merged node by node, and written for the longest call paths only
//! (a profile can have a million paths; a scatterplot shows a few).

use crate::hot::aggregate::samples::{Reservoir, Rng};
use crate::hot::aggregate::tree::{Node, Tree, ROOT};
use crate::hot::clock::Clock;
use crate::output::report::TreeNode;

/// Call paths whose samples `profile.json` holds: the longest by inclusive time.
pub const TOP_PATHS: usize = 20;

/// Merges another thread's sample of the same call path into `into`'s.
pub fn merge_node(into: &mut Node, other: Option<&Reservoir>) {
    let Some(o) = other else { return };
    match &mut into.samples {
        Some(mine) => {
            // End-of-run work: seeded from the counts, so a merge is repeatable.
            let mut rng = Rng::new(mine.seen.rotate_left(32) ^ o.seen);
            mine.merge(o, &mut rng);
        }
        None => into.samples = Some(Box::new(o.clone())),
    }
}

/// Puts the samples of the [`TOP_PATHS`] longest sampled nodes of `merged` into
/// `report` (the same tree, rendered: the root's children and each node's children
/// in the same order), as `[start ns since start_raw, duration ns]` by start.
pub fn attach(report: &mut [TreeNode], merged: &Tree, clock: &Clock, start_raw: u64) {
    let mut sampled: Vec<(u64, u32)> = merged
        .nodes
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, n)| n.samples.as_ref().is_some_and(|s| !s.items.is_empty()))
        .map(|(i, n)| (n.stats.total_ns, i as u32))
        .collect();
    if sampled.is_empty() {
        return;
    }
    sampled.sort_unstable_by(|a, b| b.cmp(a));
    sampled.truncate(TOP_PATHS);
    let mut keep = vec![false; merged.nodes.len()];
    for &(_, i) in &sampled {
        keep[i as usize] = true;
    }
    // Both trees walked together, without recursion (depth up to the cap).
    let roots = &merged.nodes[ROOT as usize].children;
    let mut todo: Vec<(&mut TreeNode, u32)> =
        report.iter_mut().zip(roots.iter().copied()).collect();
    while let Some((t, n)) = todo.pop() {
        let node = &merged.nodes[n as usize];
        if keep[n as usize] {
            if let Some(r) = &node.samples {
                let mut v: Vec<[u64; 2]> = r
                    .items
                    .iter()
                    .map(|&(begin, dur)| [clock.delta_ns(start_raw, begin), dur])
                    .collect();
                v.sort_unstable();
                t.samples = Some(v);
            }
        }
        todo.extend(t.children.iter_mut().zip(node.children.iter().copied()));
    }
}
