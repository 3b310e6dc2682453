//! Folding the threads' profiles into one: call paths with the same names from the
//! root become one node, whichever thread ran them; subtrees a thread hung under
//! another thread's node (anchors) go under that node; code addresses get their
//! names here, once each.

use kprof_abi::Kind;
use rustc_hash::FxHashMap;

use crate::base::category::Category;
use crate::hot::nesting::Symbols;

use crate::hot::aggregate::busy::DeviceBusy;
use crate::hot::aggregate::local::{
    CopyKey, CopyStats, CounterStats, MessageKey, MessageStats, ThreadProfile, ADDRESS_NAME,
};
use crate::hot::aggregate::task_graph::TaskGraph;
use crate::hot::aggregate::tree::{Node, Tree, ROOT};

/// Not mapped to a node of the merged tree (yet).
const UNMAPPED: u32 = u32::MAX;

/// Everything the threads aggregated, as one.
#[derive(Default)]
pub struct Merged {
    /// The call-path tree of the process.
    pub tree: Tree,
    /// Memory copies.
    pub copies: FxHashMap<CopyKey, CopyStats>,
    /// Instants by name id.
    pub markers: FxHashMap<u32, u64>,
    /// Dual-view counts by label id.
    pub dual_views: FxHashMap<u32, [u64; 4]>,
    /// User counters by name id.
    pub counters: FxHashMap<u32, CounterStats>,
    /// Messages by (channel, direction, peer).
    pub messages: FxHashMap<MessageKey, MessageStats>,
    /// Device activity per device, by device label id.
    pub devices: FxHashMap<u32, DeviceBusy>,
    /// Device copies by device label id and direction.
    pub device_copies: FxHashMap<(u32, u8), CopyStats>,
    /// Dependence edges by task names.
    pub task_graph: TaskGraph,
    /// Distinct call paths over all threads' trees (the profile's size while the
    /// program ran).
    pub thread_nodes: u64,
    /// Per thread index, each node of its own tree -> the merged node it became
    /// (what a call-stack sample tagged with a thread's node goes under).
    pub node_maps: FxHashMap<u32, Vec<u32>>,
}

/// One thread's part of the merge.
struct Part<'a> {
    p: &'a ThreadProfile,
    /// Local node -> merged node.
    map: Vec<u32>,
    /// Names of the thread's code addresses, looked up once each.
    address_names: Vec<Option<u32>>,
}

impl Part<'_> {
    /// The final name id of this thread's name id `name` (a code address gets
    /// its name here).
    fn name(&mut self, name: u32, symbols: &mut impl Symbols) -> u32 {
        if name & ADDRESS_NAME == 0 {
            return name;
        }
        let i = (name & !ADDRESS_NAME) as usize;
        let p = self.p;
        match self.address_names.get_mut(i) {
            Some(n) => *n.get_or_insert_with(|| symbols.name_of(p.addresses[i])),
            None => name,
        }
    }
}

/// Merges `threads` (in any order), naming code addresses with `symbols`.
/// The threads' trees are emptied as they are merged (their memory goes back
/// before the report is built): the largest tree that names no code address and
/// hangs nothing under another thread becomes the merged tree itself, so a
/// million call paths are not copied.
pub fn merge(threads: &mut [&mut ThreadProfile], symbols: &mut impl Symbols) -> Merged {
    let mut m = Merged {
        thread_nodes: threads.iter().map(|p| p.tree.nodes.len() as u64 - 1).sum(),
        ..Merged::default()
    };
    let base = threads
        .iter()
        .enumerate()
        .filter(|(_, p)| p.addresses.is_empty() && p.anchored.is_empty())
        .max_by_key(|(_, p)| p.tree.nodes.len())
        .map(|(i, _)| i);
    let adopted = base.map(|b| {
        m.tree = std::mem::take(&mut threads[b].tree);
        let index = threads[b].index();
        for i in 0..m.tree.nodes.len() as u32 {
            if let Some(ns) = thread_time(&m.tree.nodes, i) {
                m.tree.nodes[i as usize].add_thread_time(index, ns);
            }
        }
        // Its nodes are the merged tree's: every node maps to itself.
        (b, (0..m.tree.nodes.len() as u32).collect::<Vec<u32>>())
    });
    merge_trees(&mut m, threads, adopted, symbols);
    for p in threads.iter_mut() {
        p.tree = Default::default();
    }
    m
}

/// Merges the trees of `threads` into `m.tree`, except the one `adopted` already
/// is (with its node map), then everything else the threads aggregated.
fn merge_trees(
    m: &mut Merged,
    threads: &[&mut ThreadProfile],
    adopted: Option<(usize, Vec<u32>)>,
    symbols: &mut impl Symbols,
) {
    let (base, base_map) = match adopted {
        Some((b, map)) => (Some(b), map),
        None => (None, Vec::new()),
    };
    let mut base_map = Some(base_map);
    let mut parts: Vec<Part<'_>> = threads
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let p: &ThreadProfile = p;
            let map = if Some(i) == base {
                base_map.take().unwrap_or_default()
            } else {
                let mut map = vec![UNMAPPED; p.tree.nodes.len()];
                map[ROOT as usize] = ROOT;
                map
            };
            Part {
                p,
                map,
                address_names: vec![None; p.addresses.len()],
            }
        })
        .collect();
    let position: FxHashMap<u32, usize> = threads
        .iter()
        .enumerate()
        .map(|(i, p)| (p.index(), i))
        .collect();
    for (i, part) in parts.iter_mut().enumerate() {
        if Some(i) != base {
            merge_children(&mut m.tree, part, ROOT, ROOT, symbols);
        }
    }
    // Anchors whose node is mapped go under it; an anchor can stand for a node
    // that is itself under an anchor (nested parallel regions), so repeat while
    // that places more. What never maps (the parent's thread was not merged)
    // goes under the root.
    let mut pending: Vec<(usize, u32, (u32, u32))> = parts
        .iter()
        .enumerate()
        .flat_map(|(i, part)| part.p.anchored.iter().map(move |&(l, at)| (i, l, at)))
        .collect();
    loop {
        let before = pending.len();
        pending.retain(|&(i, local, (thread, node))| {
            let target = position
                .get(&thread)
                .and_then(|&t| parts[t].map.get(node as usize).copied())
                .filter(|&g| g != UNMAPPED);
            match target {
                Some(g) => {
                    merge_children(&mut m.tree, &mut parts[i], local, g, symbols);
                    false
                }
                None => true,
            }
        });
        if pending.len() == before {
            break;
        }
    }
    for (i, local, _) in pending {
        merge_children(&mut m.tree, &mut parts[i], local, ROOT, symbols);
    }

    for part in parts.iter_mut() {
        let p = part.p;
        m.task_graph
            .absorb(&p.task_graph, |n| part.name(n, symbols));
    }
    for p in threads {
        for (&k, c) in &p.copies {
            let t = m.copies.entry(k).or_default();
            t.count += c.count;
            t.bytes += c.bytes;
            t.total_ns += c.total_ns;
        }
        for (&k, &n) in &p.markers {
            *m.markers.entry(k).or_default() += n;
        }
        for (&k, x) in &p.messages {
            let t = m.messages.entry(k).or_default();
            t.count += x.count;
            t.bytes += x.bytes;
        }
        for (&k, d) in &p.devices {
            m.devices.entry(k).or_default().merge(p.clock(), d);
        }
        for (&k, c) in &p.device_copies {
            let t = m.device_copies.entry(k).or_default();
            t.count += c.count;
            t.bytes += c.bytes;
            t.total_ns += c.total_ns;
        }
        for (&k, d) in &p.dual_views {
            let t = m.dual_views.entry(k).or_default();
            for (a, b) in t.iter_mut().zip(d) {
                *a += b;
            }
        }
        for (&k, c) in &p.counters {
            m.counters
                .entry(k)
                .and_modify(|t| {
                    t.count += c.count;
                    t.min = t.min.min(c.min);
                    t.max = t.max.max(c.max);
                    t.sum += c.sum;
                    if c.last_ts >= t.last_ts {
                        (t.last, t.last_ts) = (c.last, c.last_ts);
                    }
                })
                .or_insert(*c);
        }
    }
    for p in threads {
        m.task_graph.resolve_pending(&p.task_graph);
    }
    for part in parts {
        m.node_maps.insert(part.p.index(), part.map);
    }
}

/// What node `i` of one thread's tree (`nodes`) adds to its node's spread
/// across threads (OpenMP kinds only). A thread's own tree holds only that
/// thread's instances, so this is its total: added as the trees merge, not on
/// every end. For an implicit task it is the thread's work: its total less the
/// time the thread waited inside it (the exclusive time of the nodes below it
/// whose category is [`Category::Wait`]: barriers, sync waits, taskwait, lock
/// waits), so that a region's spread is its load balance.
fn thread_time(nodes: &[Node], i: u32) -> Option<u64> {
    let n = &nodes[i as usize];
    if !n.kind.is_openmp() || n.stats.count == 0 {
        return None;
    }
    if n.kind != Kind::OmpImplicitTask {
        return Some(n.stats.total_ns);
    }
    let mut waited = 0u64;
    let mut todo: Vec<u32> = n.children.clone();
    while let Some(c) = todo.pop() {
        let c = &nodes[c as usize];
        if Category::of(c.kind) == Some(Category::Wait) {
            waited += c.stats.self_ns;
        }
        todo.extend_from_slice(&c.children);
    }
    Some(n.stats.total_ns.saturating_sub(waited))
}

/// Merges the children of `part`'s node `local` (recursively) under the merged
/// node `global`.
fn merge_children(
    tree: &mut Tree,
    part: &mut Part<'_>,
    local: u32,
    global: u32,
    symbols: &mut impl Symbols,
) {
    let p = part.p;
    let nodes = &p.tree.nodes;
    // Deep trees (recursion down to the depth cap): a stack, not recursion.
    let mut todo = vec![(local, global)];
    while let Some((l, g)) = todo.pop() {
        part.map[l as usize] = g;
        for &c in &nodes[l as usize].children {
            let n = &nodes[c as usize];
            let name = part.name(n.name, symbols);
            let m = tree.child(g, name, n.kind, n.dev);
            let into = &mut tree.nodes[m as usize];
            into.stats.merge(&n.stats);
            if let Some(ns) = thread_time(nodes, c) {
                into.add_thread_time(p.index(), ns);
            }
            for &(k, min, max) in n.args() {
                into.add_arg(k, min);
                into.add_arg(k, max);
            }
            into.merge_counters(n.counters());
            into.merge_samples(n.samples());
            todo.push((c, m));
        }
    }
}
