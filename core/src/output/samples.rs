//! The per-instance samples of `profile.json` (`KPROF_SAMPLES`), written for the
//! longest call paths only (a profile can have a million paths; a scatterplot
//! shows a few).

use crate::hot::aggregate::samples::Reservoir;
use crate::hot::aggregate::tree::Tree;
use crate::hot::clock::Clock;

/// Call paths whose samples `profile.json` holds: the longest by inclusive time.
pub const TOP_PATHS: usize = 20;

/// Per node of `tree`, whether `profile.json` holds its samples: the
/// [`TOP_PATHS`] longest nodes that have any.
pub fn shown(tree: &Tree) -> Vec<bool> {
    let mut sampled: Vec<(u64, u32)> = tree
        .nodes
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, n)| n.samples().is_some_and(|s| !s.items.is_empty()))
        .map(|(i, n)| (n.stats.total_ns, i as u32))
        .collect();
    let mut keep = vec![false; tree.nodes.len()];
    if sampled.len() > TOP_PATHS {
        sampled.select_nth_unstable_by(TOP_PATHS, |a, b| b.cmp(a));
        sampled.truncate(TOP_PATHS);
    }
    for (_, i) in sampled {
        keep[i as usize] = true;
    }
    keep
}

/// A reservoir as written: `[start ns since start_raw, duration ns]`, by start.
pub fn report(r: &Reservoir, clock: &Clock, start_raw: u64) -> Vec<[u64; 2]> {
    let mut v: Vec<[u64; 2]> = r
        .items
        .iter()
        .map(|&(begin, dur)| [clock.delta_ns(start_raw, begin), dur])
        .collect();
    v.sort_unstable();
    v
}
