//! The flat profile: the call-path tree aggregated by (name, kind, device), the view
//! that the summary and `kprof report` both show, so that they cannot disagree.

use std::borrow::Cow;
use std::hash::Hash;

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::output::report::{Report, TreeNode};

/// One row: every tree node with the same name, kind and device label. Borrows its
/// text from the tree where it can (a profile can have a million distinct names).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlatRow<'a> {
    /// Name.
    pub name: Cow<'a, str>,
    /// Kind (`parallel_for`, `region`, ...).
    pub kind: &'a str,
    /// Device label (`TreeNode::device_label`), empty for none.
    pub device: Cow<'a, str>,
    /// Instances, nested ones included.
    pub count: u64,
    /// See [`Totals::total_ns`].
    pub total_ns: u64,
    /// See [`Totals::instance_ns`].
    pub instance_ns: u64,
    /// Exclusive time (never counted twice).
    pub self_ns: u64,
    /// Shortest instance.
    pub min_ns: u64,
    /// Longest instance.
    pub max_ns: u64,
    /// See [`Totals::threads`].
    pub threads: u32,
}

impl<'a> FlatRow<'a> {
    /// The row of a key and its figures.
    pub fn new(name: Cow<'a, str>, kind: &'a str, device: Cow<'a, str>, t: Totals) -> Self {
        FlatRow {
            name,
            kind,
            device,
            count: t.count,
            total_ns: t.total_ns,
            instance_ns: t.instance_ns,
            self_ns: t.self_ns,
            min_ns: t.min_ns,
            max_ns: t.max_ns,
            threads: t.threads,
        }
    }
}

/// The figures of a flat row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    /// Instances, nested ones included.
    pub count: u64,
    /// Inclusive time inside this name: a recursive instance (nested in one of the
    /// same key) is inside its outer one already and is not added again, so this
    /// never exceeds the time the threads spent there.
    pub total_ns: u64,
    /// Sum of every instance's own duration, nested ones included: the base of the
    /// mean, which then lies between `min_ns` and `max_ns` even under recursion.
    pub instance_ns: u64,
    /// Exclusive time (never counted twice).
    pub self_ns: u64,
    /// Shortest instance.
    pub min_ns: u64,
    /// Longest instance.
    pub max_ns: u64,
    /// The largest team its nodes ran in ([`TeamStack`]): its times are summed
    /// over up to this many threads (1: one thread, or no team known).
    pub threads: u32,
}

impl Totals {
    /// Adds the figures of another row (another key's, for a coarser one: a
    /// name over its kinds and devices).
    pub fn add(&mut self, o: &Totals) {
        self.count = self.count.wrapping_add(o.count);
        self.total_ns = self.total_ns.wrapping_add(o.total_ns);
        self.instance_ns = self.instance_ns.wrapping_add(o.instance_ns);
        self.self_ns = self.self_ns.wrapping_add(o.self_ns);
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.threads = self.threads.max(o.threads);
    }
}

impl FlatRow<'_> {
    /// Its figures.
    pub fn totals(&self) -> Totals {
        Totals {
            count: self.count,
            total_ns: self.total_ns,
            instance_ns: self.instance_ns,
            self_ns: self.self_ns,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            threads: self.threads,
        }
    }
}

impl Default for Totals {
    fn default() -> Self {
        Totals {
            count: 0,
            total_ns: 0,
            instance_ns: 0,
            self_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            threads: 1,
        }
    }
}

/// The figures of one node, as the flat view adds them.
#[derive(Debug, Clone, Copy)]
pub struct NodeFigures {
    /// Instances.
    pub count: u64,
    /// Inclusive time.
    pub total_ns: u64,
    /// Exclusive time.
    pub self_ns: u64,
    /// Shortest instance.
    pub min_ns: u64,
    /// Longest instance.
    pub max_ns: u64,
    /// The threads of its own team ([`own_team`]; 0: none kept).
    pub threads: u32,
}

impl From<&TreeNode> for NodeFigures {
    fn from(n: &TreeNode) -> Self {
        NodeFigures {
            count: n.count,
            total_ns: n.total_ns,
            self_ns: n.self_ns,
            min_ns: n.min_ns,
            max_ns: n.max_ns,
            threads: own_team(n),
        }
    }
}

/// The threads of a node's own team: how many threads ran it, where the
/// profile keeps that (OpenMP constructs: `TreeNode::threads`); 0 where it
/// does not.
pub fn own_team(n: &TreeNode) -> u32 {
    n.threads.as_ref().map_or(0, |t| t.threads)
}

/// The team of each node of a tree met depth first: the threads its times are
/// summed over, as far as the profile tells. A node with a team of its own
/// (an OpenMP construct: [`own_team`]) has that one; any other node is in its
/// parent's (a region inside an implicit task ran on the task's threads), and
/// the roots in a team of one. Every view that shows a time per thread
/// divides by this ([`per_thread`]), so that a team's implicit tasks, summed
/// over its threads, do not read larger than the region of one thread around
/// them. Memory: one word per level of the current path.
#[derive(Debug, Default)]
pub struct TeamStack {
    teams: Vec<u32>,
}

impl TeamStack {
    /// The team of the node met next, at `depth`, whose own team is `own`
    /// (0: none).
    pub fn enter(&mut self, depth: usize, own: u32) -> u32 {
        self.teams.truncate(depth);
        let team = match own {
            0 => self.teams.last().copied().unwrap_or(1),
            t => t,
        };
        self.teams.push(team);
        team
    }
}

/// A time summed over a team's `threads` as the time per thread (the mean over
/// them), rounded to the nearest ns.
pub fn per_thread(ns: u64, threads: u32) -> u64 {
    let t = u128::from(threads.max(1));
    ((u128::from(ns) + t / 2) / t) as u64
}

/// The keys of the nodes enclosing the current one in a tree met depth first,
/// and whether a node is inside one of its own key (recursion): the first
/// [`SCANNED_LEVELS`] levels are scanned, the deeper ones looked up by how
/// many of them are of each key, so that a tree 100,000 deep is added up in
/// time that grows with its nodes, and a shallow one as fast as by a scan.
#[derive(Debug)]
pub struct Enclosing<K> {
    open: Vec<K>,
    /// Per key, how many of the open levels past the scanned ones are of it.
    deep: FxHashMap<K, u32>,
}

/// Levels of a path that [`Enclosing`] scans.
pub const SCANNED_LEVELS: usize = 32;

impl<K> Default for Enclosing<K> {
    fn default() -> Self {
        Enclosing {
            open: Vec::new(),
            deep: FxHashMap::default(),
        }
    }
}

impl<K: Hash + Eq + Copy> Enclosing<K> {
    /// Meets the node at `depth`, of key `k`: whether one of the nodes
    /// enclosing it is of `k`.
    pub fn enter(&mut self, depth: usize, k: K) -> bool {
        let keep = depth.min(self.open.len());
        // The levels past the scanned ones leave the counts as they close.
        if self.open.len() > SCANNED_LEVELS {
            for gone in self.open.drain(keep.max(SCANNED_LEVELS)..) {
                if let Some(c) = self.deep.get_mut(&gone) {
                    *c -= 1;
                    if *c == 0 {
                        self.deep.remove(&gone);
                    }
                }
            }
        }
        self.open.truncate(keep);
        let scanned = &self.open[..keep.min(SCANNED_LEVELS)];
        let inside = scanned.contains(&k) || (keep > SCANNED_LEVELS && self.deep.contains_key(&k));
        if self.open.len() >= SCANNED_LEVELS {
            *self.deep.entry(k).or_insert(0) += 1;
        }
        self.open.push(k);
        inside
    }

    /// The key of the node at `depth` on the path to the node met last: read
    /// before [`Enclosing::enter`] meets a node at `depth + 1`, its parent's.
    pub fn at(&self, depth: usize) -> Option<&K> {
        self.open.get(depth)
    }
}

/// Adds up nodes met depth first into one row per key: the one rule of the flat
/// view, whatever the key (the names' text when read from a file, their ids in
/// the runtime). Each key is kept once, in its row; the index holds row numbers.
pub struct Flattener<K> {
    index: HashTable<u32>,
    /// The rows, in the order their keys were first met.
    pub rows: Vec<(K, Totals)>,
    /// The rows of the nodes enclosing the current one.
    open: Vec<u32>,
    /// Per row, how many of the nodes enclosing the current one are of it (a
    /// look-up, not a scan of `open`: a tree can be 100,000 deep).
    opened: Vec<u32>,
    /// The teams of the nodes enclosing the current one.
    teams: TeamStack,
}

impl<K: Hash + Eq> Flattener<K> {
    /// A flattener for about `nodes` nodes (sized once: growing a table of a
    /// million keys rehashes them all, repeatedly).
    pub fn with_capacity(nodes: usize) -> Self {
        Flattener {
            index: HashTable::with_capacity(nodes),
            rows: Vec::with_capacity(nodes),
            open: Vec::new(),
            opened: Vec::new(),
            teams: TeamStack::default(),
        }
    }

    /// Adds the node met next, at `depth`.
    pub fn add(&mut self, depth: usize, key: K, n: NodeFigures) {
        for gone in self.open.drain(depth.min(self.open.len())..) {
            self.opened[gone as usize] -= 1;
        }
        let hash = FxBuildHasher.hash_one(&key);
        let rows = &mut self.rows;
        let found = self
            .index
            .find(hash, |&at| rows[at as usize].0 == key)
            .copied();
        let at = match found {
            Some(at) => at,
            None => {
                let at = rows.len() as u32;
                rows.push((key, Totals::default()));
                self.opened.push(0);
                self.index
                    .insert_unique(hash, at, |&i| FxBuildHasher.hash_one(&rows[i as usize].0));
                at
            }
        };
        let recursive = self.opened[at as usize] > 0;
        let team = self.teams.enter(depth, n.threads);
        let f = &mut self.rows[at as usize].1;
        f.count += n.count;
        if !recursive {
            f.total_ns += n.total_ns;
        }
        f.instance_ns += n.total_ns;
        f.self_ns += n.self_ns;
        f.min_ns = f.min_ns.min(n.min_ns);
        f.max_ns = f.max_ns.max(n.max_ns);
        f.threads = f.threads.max(team);
        self.open.push(at);
        self.opened[at as usize] += 1;
    }
}

/// The flat view of a large tree with little memory: the rows one after the
/// other, by key order, to `emit`, without a table of every key. `walk` calls its
/// argument with (depth, node) depth first, parents before children; `key` and
/// `figures` read a node. Memory: 5 bytes per node (the order and a flag), where
/// a [`Flattener`] holds about 70 bytes per distinct key. The rows are those of a
/// [`Flattener`] fed the same walk (tested).
pub fn rows_by_key<K: Ord + Copy + Hash>(
    nodes: usize,
    walk: impl Fn(&mut dyn FnMut(usize, u32)),
    key: impl Fn(u32) -> K,
    figures: impl Fn(u32) -> NodeFigures,
) -> impl FnMut(&mut dyn FnMut(K, Totals)) {
    // Whether a node is nested in one of the same key (its time is inside that
    // one's already), by node.
    let mut recursive = vec![false; nodes];
    let mut order = Vec::with_capacity(nodes);
    let mut open: Enclosing<K> = Enclosing::default();
    // Each node's team, by node, once a node of more than one thread is met
    // (a tree without teams costs nothing more).
    let mut stack = TeamStack::default();
    let mut teams: Vec<u32> = Vec::new();
    walk(&mut |depth, n| {
        let inside = open.enter(depth, key(n));
        if let Some(r) = recursive.get_mut(n as usize) {
            *r = inside;
        }
        order.push(n);
        let team = stack.enter(depth, figures(n).threads);
        if team > 1 && teams.is_empty() {
            teams = vec![1; nodes];
        }
        if let Some(t) = teams.get_mut(n as usize) {
            *t = team;
        }
    });
    order.sort_by_key(|&n| key(n));
    move |emit: &mut dyn FnMut(K, Totals)| {
        let mut i = 0;
        while i < order.len() {
            let k = key(order[i]);
            let mut t = Totals::default();
            while i < order.len() && key(order[i]) == k {
                let n = order[i];
                let f = figures(n);
                t.count += f.count;
                if !recursive.get(n as usize).copied().unwrap_or(false) {
                    t.total_ns += f.total_ns;
                }
                t.instance_ns += f.total_ns;
                t.self_ns += f.self_ns;
                t.min_ns = t.min_ns.min(f.min_ns);
                t.max_ns = t.max_ns.max(f.max_ns);
                t.threads = t.threads.max(teams.get(n as usize).copied().unwrap_or(1));
                i += 1;
            }
            emit(k, t);
        }
    }
}

/// What the tables show of the flat view: the `top` rows of work by exclusive
/// time, how many rows of work there are, and the fences (device activities are
/// device time, not threads': they have their own block).
#[derive(Debug, Default)]
pub struct FlatTop<'a> {
    /// The top rows, in order.
    pub work: Vec<FlatRow<'a>>,
    /// Rows of work in all.
    pub work_rows: usize,
    /// Every fence row.
    pub fences: Vec<FlatRow<'a>>,
}

/// Kinds of device activities, left out of the flat tables.
pub fn is_device_kind(kind: &str) -> bool {
    matches!(
        kind,
        "gpu_kernel" | "gpu_memcpy" | "gpu_memset" | "gpu_sync"
    )
}

/// The tables' order: exclusive time, then name, kind and device.
pub fn by_self_time(a: &FlatRow, b: &FlatRow) -> std::cmp::Ordering {
    b.self_ns
        .cmp(&a.self_ns)
        .then_with(|| (&a.name, a.kind, &a.device).cmp(&(&b.name, b.kind, &b.device)))
}

impl<'a> FlatTop<'a> {
    /// The top of `rows` (every row of the flat view).
    pub fn select(rows: Vec<FlatRow<'a>>, top: usize) -> Self {
        let (fences, work): (Vec<_>, Vec<_>) = rows
            .into_iter()
            .filter(|f| !is_device_kind(f.kind))
            .partition(|f| f.kind == "fence");
        let work_rows = work.len();
        Self::of_candidates(work, work_rows, fences, top)
    }

    /// The top of `work`, which holds every row that may be among the top ones
    /// of `work_rows` in all.
    pub fn of_candidates(
        mut work: Vec<FlatRow<'a>>,
        work_rows: usize,
        fences: Vec<FlatRow<'a>>,
        top: usize,
    ) -> Self {
        // Only the top rows are shown: select them before sorting (a million names).
        if work.len() > top {
            work.select_nth_unstable_by(top, by_self_time);
            work.truncate(top);
        }
        work.sort_by(by_self_time);
        FlatTop {
            work,
            work_rows,
            fences,
        }
    }
}

impl FlatRow<'_> {
    /// Mean duration of one instance.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.instance_ns as f64 / self.count as f64
        }
    }
}

impl TreeNode {
    /// The device as shown in tables: the back end, with `[device:instance]` when
    /// either is not the default.
    pub fn device_label(&self) -> String {
        self.device_text().into_owned()
    }

    /// [`TreeNode::device_label`], borrowed when it is the back end alone.
    fn device_text(&self) -> Cow<'_, str> {
        device_text(self.device.as_deref(), self.device_index, self.instance)
    }
}

/// A device as the tables show it: the back end, with `[device:instance]` when
/// either is not the default; empty for none.
pub fn device_text(
    device: Option<&str>,
    index: Option<u32>,
    instance: Option<u32>,
) -> Cow<'_, str> {
    match (device, index, instance) {
        (Some(d), Some(i), Some(inst)) if i != 0 || inst > 1 => {
            Cow::Owned(format!("{d}[{i}:{inst}]"))
        }
        (Some(d), _, _) => Cow::Borrowed(d),
        _ => Cow::Borrowed(""),
    }
}

impl Report {
    /// The time all recorded threads together had: the run's duration times the
    /// threads that recorded (at least one). Times summed over threads are shown as
    /// shares of this, so that no share exceeds 100%.
    pub fn thread_time_ns(&self) -> u64 {
        self.clock
            .duration_ns
            .max(1)
            .saturating_mul(self.threads.len().max(1) as u64)
    }
}

/// Aggregates `tree` by (name, kind, device label), rows in the order first met.
pub fn flatten(tree: &[TreeNode]) -> Vec<FlatRow<'_>> {
    fn count(nodes: &[TreeNode]) -> usize {
        nodes.iter().map(|n| 1 + count(&n.children)).sum()
    }
    fn walk<'a>(
        nodes: &'a [TreeNode],
        depth: usize,
        f: &mut Flattener<(&'a str, &'a str, Cow<'a, str>)>,
    ) {
        for n in nodes {
            let key = (n.name.as_ref(), n.kind.as_ref(), n.device_text());
            f.add(depth, key, n.into());
            walk(&n.children, depth + 1, f);
        }
    }
    let mut f = Flattener::with_capacity(count(tree));
    walk(tree, 0, &mut f);
    f.rows
        .into_iter()
        .map(|((name, kind, device), totals)| {
            FlatRow::new(Cow::Borrowed(name), kind, device, totals)
        })
        .collect()
}

/// The `top` rows of `tree`'s flat view that `keep` keeps, in `order`, and how
/// many rows it keeps in all: what `kprof report` shows of a profile read from
/// a file. Memory: about 21 bytes per node and `2 x top` rows (the rows come
/// one by one from [`rows_by_key`]), where [`flatten`] holds every row.
pub fn top_rows<'a>(
    tree: &'a [TreeNode],
    keep: &dyn Fn(&FlatRow) -> bool,
    order: &dyn Fn(&FlatRow, &FlatRow) -> std::cmp::Ordering,
    top: usize,
) -> (Vec<FlatRow<'a>>, usize) {
    fn gather<'a>(nodes: &'a [TreeNode], depth: usize, out: &mut Vec<(usize, &'a TreeNode)>) {
        for n in nodes {
            out.push((depth, n));
            gather(&n.children, depth + 1, out);
        }
    }
    let mut nodes = Vec::new();
    gather(tree, 0, &mut nodes);
    let node = |i: u32| nodes[i as usize].1;
    let mut rows = rows_by_key(
        nodes.len(),
        |visit| {
            for (i, &(depth, _)) in nodes.iter().enumerate() {
                visit(depth, i as u32);
            }
        },
        |i| {
            let n = node(i);
            let device = (n.device.as_deref(), n.device_index, n.instance);
            (n.name.as_ref(), n.kind.as_ref(), device)
        },
        |i| node(i).into(),
    );
    let mut kept = 0;
    let mut best: Vec<FlatRow> = Vec::new();
    let trim = |best: &mut Vec<FlatRow>| {
        if best.len() > top {
            best.select_nth_unstable_by(top, order);
            best.truncate(top);
        }
    };
    rows(&mut |(name, kind, (device, index, instance)), t| {
        let row = FlatRow::new(
            Cow::Borrowed(name),
            kind,
            device_text(device, index, instance),
            t,
        );
        if keep(&row) {
            kept += 1;
            best.push(row);
            if best.len() >= 2 * top.max(1) {
                trim(&mut best);
            }
        }
    });
    trim(&mut best);
    best.sort_by(order);
    (best, kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, total: u64, self_ns: u64, count: u64, children: Vec<TreeNode>) -> TreeNode {
        TreeNode::user_region(name, total, self_ns, count, children)
    }

    #[test]
    fn recursion_is_counted_once_in_the_total_and_fully_in_the_mean() {
        // fib(3) -> fib(2) -> fib(1): 300 ns, 200 ns, 100 ns; 100 ns self each.
        let tree = vec![node(
            "fib",
            300,
            100,
            1,
            vec![node(
                "fib",
                200,
                100,
                1,
                vec![node("fib", 100, 100, 1, vec![])],
            )],
        )];
        let rows = flatten(&tree);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.count, r.total_ns, r.self_ns, r.instance_ns),
            (3, 300, 300, 600)
        );
        assert_eq!((r.min_ns, r.max_ns), (100, 300));
        assert_eq!(r.mean_ns(), 200.0);
        assert!(r.mean_ns() >= r.min_ns as f64 && r.mean_ns() <= r.max_ns as f64);
    }

    /// The top rows equal the top of every row, in the same order.
    #[test]
    fn top_rows_are_the_top_of_flatten() {
        let tree: Vec<TreeNode> = (0..50u64)
            .map(|i| {
                let kids = vec![node(&format!("k{}", i % 7), 10 + i, 10 + i, 1, vec![])];
                node(&format!("r{}", i % 13), 100 + i, 90, 2, kids)
            })
            .collect();
        let order = |a: &FlatRow, b: &FlatRow| by_self_time(a, b);
        let keep = |r: &FlatRow| r.name != "r3";
        let mut all = flatten(&tree);
        all.retain(|r| keep(r));
        all.sort_by(order);
        for top in [0, 1, 5, 19, 100] {
            let (rows, kept) = top_rows(&tree, &keep, &order, top);
            assert_eq!(kept, all.len());
            assert_eq!(rows, all[..top.min(all.len())].to_vec(), "top {top}");
        }
    }

    /// The sorted rows equal the hashed ones, recursion and repeats included.
    #[test]
    fn rows_by_key_equal_the_flattener() {
        // A tree as (depth, key, figures) in walk order, made up but deterministic.
        let mut nodes = Vec::new();
        let mut x: u64 = 12345;
        let mut depth = 0usize;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            depth = match x >> 62 {
                0 => 0,
                1 => depth.saturating_sub(1),
                _ => (depth + 1).min(nodes.len().min(6)),
            };
            let key = ((x >> 20) % 7) as u32;
            let v = (x >> 33) % 1000;
            nodes.push((
                depth.min(nodes.last().map_or(0, |&(d, _, _)| d + 1)),
                key,
                v,
            ));
        }
        let fig = |v: u64| NodeFigures {
            count: v % 3 + 1,
            total_ns: v * 2,
            self_ns: v,
            min_ns: v / 2,
            max_ns: v * 2,
            threads: [0, 0, 0, 2, 4][(v % 5) as usize],
        };
        let mut f = Flattener::with_capacity(nodes.len());
        for &(d, k, v) in &nodes {
            f.add(d, k, fig(v));
        }
        let mut hashed = f.rows;
        hashed.sort_by_key(|&(k, _)| k);
        let walk = |visit: &mut dyn FnMut(usize, u32)| {
            for (i, &(d, _, _)) in nodes.iter().enumerate() {
                visit(d, i as u32);
            }
        };
        let mut rows = rows_by_key(
            nodes.len(),
            walk,
            |n| nodes[n as usize].1,
            |n| fig(nodes[n as usize].2),
        );
        let mut sorted = Vec::new();
        rows(&mut |k, t| sorted.push((k, t)));
        assert_eq!(sorted, hashed);
        assert!(
            sorted.iter().any(|(_, t)| t.total_ns < t.instance_ns),
            "no recursion tested"
        );
    }

    /// Whether a node is inside one of its key is what a scan of its
    /// ancestors says, through paths deeper than the scanned levels.
    #[test]
    fn enclosing_answers_as_a_scan() {
        let mut x: u64 = 99;
        let mut depth = 0usize;
        let mut path: Vec<u32> = Vec::new();
        let mut e = Enclosing::default();
        let mut deepest = 0;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            depth = match (x >> 61, (x >> 40) % 1024) {
                (_, 0) => depth / 2,
                (0..=2, _) => depth.saturating_sub(1),
                _ => depth + 1,
            }
            .min(path.len());
            let k = ((x >> 20) % 50) as u32;
            path.truncate(depth);
            let want = path.contains(&k);
            path.push(k);
            assert_eq!(e.enter(depth, k), want, "at depth {depth}");
            if depth > 0 {
                assert_eq!(e.at(depth - 1), path.get(depth - 1));
            }
            deepest = deepest.max(depth);
        }
        assert!(deepest > 3 * SCANNED_LEVELS, "{deepest}");
    }

    #[test]
    fn siblings_of_one_name_add_up() {
        let tree = vec![
            node("a", 10, 10, 1, vec![]),
            node("b", 50, 30, 2, vec![node("a", 20, 20, 2, vec![])]),
        ];
        let rows = flatten(&tree);
        let a = rows.iter().find(|r| r.name == "a").unwrap();
        assert_eq!(
            (a.count, a.total_ns, a.instance_ns, a.self_ns),
            (3, 30, 30, 30)
        );
    }
}
