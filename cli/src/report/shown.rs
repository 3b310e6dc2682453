//! What each view of `kprof report` keeps of the call-path tree as it streams by
//! ([`Sink`]s): the flat view's rows and the counter block's by key (a row per
//! distinct name, kind and device, added up in bounded memory by
//! [`KeyedSums`], only the rows shown kept), the tree view's siblings that
//! `--top` shows with the count and time of those it hides, and the nodes that
//! `--threads` lists. Memory is bounded by what is printed (and the table of
//! keys [`KeyedSums`] holds).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::hash::BuildHasher;

use kprof_core::output::counters;
use kprof_core::output::flat::{
    device_text, own_team, per_thread, FlatRow, TeamStack, Totals, SCANNED_LEVELS,
};
use kprof_core::output::report::TreeNode;
use regex::Regex;
use rustc_hash::{FxBuildHasher, FxHashMap};

use super::args::sort_value;
use super::by_key::{KeyedSums, Op};
use super::stream::{bare, blank, Sink};
use crate::sort_key::SortKey;

/// The first `k` items in an order, chosen as they come with at most `2k` held
/// (all of them without `k`), and how many came.
pub struct TopK<T> {
    k: Option<usize>,
    items: Vec<T>,
    seen: usize,
}

impl<T> TopK<T> {
    /// Keeps the first `k` (every item for `None`).
    pub fn new(k: Option<usize>) -> Self {
        TopK {
            k,
            items: Vec::new(),
            seen: 0,
        }
    }

    /// Offers `item`; `order` is the same at every call and total.
    pub fn push(&mut self, item: T, order: &dyn Fn(&T, &T) -> Ordering) {
        self.seen += 1;
        self.items.push(item);
        if let Some(k) = self.k {
            if self.items.len() >= 2 * k.max(1) {
                self.trim(order);
            }
        }
    }

    fn trim(&mut self, order: &dyn Fn(&T, &T) -> Ordering) {
        if let Some(k) = self.k {
            if self.items.len() > k {
                self.items.select_nth_unstable_by(k, order);
                self.items.truncate(k);
            }
        }
    }

    /// The first `k` in order, and how many were offered.
    pub fn finish(mut self, order: &dyn Fn(&T, &T) -> Ordering) -> (Vec<T>, usize) {
        self.trim(order);
        self.items.sort_by(order);
        (self.items, self.seen)
    }
}

/// A device as a flat row's key: the node's three fields (the default view,
/// as `flat::top_rows`), or the label they show as (`--flat`, as `flat::flatten`).
#[derive(PartialEq)]
enum Device {
    Fields(Option<String>, Option<u32>, Option<u32>),
    Label(String),
}

/// How a flat row's figures combine: count, total (recursion once), the sum of
/// the instances' time, self, min, max, the number of the first node of the
/// key (the order keys were first met in), and the largest team.
const FLAT_OPS: &[Op] = &[
    Op::Sum,
    Op::Sum,
    Op::Sum,
    Op::Sum,
    Op::Min,
    Op::Max,
    Op::Min,
    Op::Max,
];

/// The keys of the nodes enclosing the current one, innermost last, and
/// whether a key is among them: the first [`SCANNED_LEVELS`] are scanned, the
/// deeper ones looked up by hash (their bytes compared only where the hash is
/// there), so that a tree 100,000 deep is read in time that grows with its
/// nodes, and a shallow one as fast as by a scan.
#[derive(Default)]
struct OpenKeys {
    /// The keys one after the other, and where each ends.
    text: Vec<u8>,
    ends: Vec<usize>,
    /// The hashes of the keys past the scanned levels, and how many have each.
    hashes: Vec<u64>,
    counts: FxHashMap<u64, u32>,
}

impl OpenKeys {
    fn key(&self, level: usize) -> &[u8] {
        let start = if level == 0 { 0 } else { self.ends[level - 1] };
        &self.text[start..self.ends[level]]
    }

    /// Closes all but the first `levels`.
    fn truncate(&mut self, levels: usize) {
        let deep = levels.saturating_sub(SCANNED_LEVELS);
        for h in self.hashes.drain(deep.min(self.hashes.len())..) {
            if let Some(c) = self.counts.get_mut(&h) {
                *c -= 1;
                if *c == 0 {
                    self.counts.remove(&h);
                }
            }
        }
        self.ends.truncate(levels);
        self.text.truncate(self.ends.last().copied().unwrap_or(0));
    }

    /// Whether `key` is open.
    fn contains(&self, key: &[u8]) -> bool {
        let levels = self.ends.len();
        if (0..levels.min(SCANNED_LEVELS)).any(|i| self.key(i) == key) {
            return true;
        }
        if levels <= SCANNED_LEVELS {
            return false;
        }
        let h = FxBuildHasher.hash_one(key);
        self.counts.contains_key(&h)
            && (SCANNED_LEVELS..levels)
                .rev()
                .any(|i| self.hashes[i - SCANNED_LEVELS] == h && self.key(i) == key)
    }

    /// Opens `key`, innermost.
    fn push(&mut self, key: &[u8]) {
        if self.ends.len() >= SCANNED_LEVELS {
            let h = FxBuildHasher.hash_one(key);
            self.hashes.push(h);
            *self.counts.entry(h).or_insert(0) += 1;
        }
        self.text.extend_from_slice(key);
        self.ends.push(self.text.len());
    }
}

/// The flat view's rows, by (name, kind, device), added up as the nodes come
/// in bounded memory ([`KeyedSums`]). A key is the name (its length first, so
/// that the rows of a name come together), then the numbers of its kind and
/// device in small tables.
pub struct FlatKeys<'f> {
    kinds: Vec<Cow<'static, str>>,
    devices: Vec<Device>,
    by_label: bool,
    /// Only names that match (the others are never shown).
    filter: Option<&'f Regex>,
    sums: KeyedSums,
    /// The keys of the nodes enclosing the current one (a node inside one of
    /// its own key adds its time once).
    open: OpenKeys,
    /// The current node's key.
    key: Vec<u8>,
    /// The teams of the nodes enclosing the current one.
    teams: TeamStack,
    /// Nodes met.
    nodes: u64,
}

impl<'f> FlatKeys<'f> {
    /// Rows keyed by the device's fields, or by its label (`by_label`), of the
    /// names that `filter` matches.
    pub fn new(by_label: bool, filter: Option<&'f Regex>) -> Self {
        FlatKeys {
            kinds: Vec::new(),
            devices: Vec::new(),
            by_label,
            filter,
            sums: KeyedSums::new(FLAT_OPS),
            open: OpenKeys::default(),
            key: Vec::new(),
            teams: TeamStack::default(),
            nodes: 0,
        }
    }

    fn device(&mut self, n: &TreeNode) -> u32 {
        let found = if self.by_label {
            let label = device_text(n.device.as_deref(), n.device_index, n.instance);
            self.devices
                .iter()
                .position(|d| matches!(d, Device::Label(l) if *l == label))
                .ok_or_else(|| Device::Label(label.into_owned()))
        } else {
            let same = |d: &Device| {
                matches!(d, Device::Fields(name, i, inst)
                    if name.as_deref() == n.device.as_deref() && *i == n.device_index && *inst == n.instance)
            };
            self.devices
                .iter()
                .position(same)
                .ok_or_else(|| Device::Fields(n.device.clone(), n.device_index, n.instance))
        };
        match found {
            Ok(at) => at as u32,
            Err(new) => {
                self.devices.push(new);
                (self.devices.len() - 1) as u32
            }
        }
    }

    /// Every row with the number of the node its key was first met at, by
    /// key (the rows of a name one after the other); an error where the
    /// temporary file could not be read back.
    pub fn drain<'s>(&'s mut self, emit: &mut dyn FnMut(FlatRow<'s>, u64)) -> std::io::Result<()> {
        let sums = std::mem::replace(&mut self.sums, KeyedSums::new(FLAT_OPS));
        let this: &'s FlatKeys = self;
        sums.drain(&mut |key, f| {
            let Some((name, kind, device)) = split_key(key) else {
                return;
            };
            let device = match this.devices.get(device as usize) {
                Some(Device::Fields(d, i, inst)) => device_text(d.as_deref(), *i, *inst),
                Some(Device::Label(l)) => Cow::Borrowed(l.as_str()),
                None => Cow::Borrowed(""),
            };
            let totals = Totals {
                count: f[0],
                total_ns: f[1],
                instance_ns: f[2],
                self_ns: f[3],
                min_ns: f[4],
                max_ns: f[5],
                threads: f[7] as u32,
            };
            let kind = this.kinds.get(kind as usize).map_or("", |k| k.as_ref());
            let row = FlatRow::new(Cow::Owned(name.to_string()), kind, device, totals);
            emit(row, f[6]);
        })
    }
}

/// A row's key: the name's length (4 bytes, big endian), the name, the kind's
/// and the device's numbers (4 bytes each).
fn put_key(key: &mut Vec<u8>, name: &str, kind: u32, device: u32) {
    key.clear();
    key.extend_from_slice(&(name.len() as u32).to_be_bytes());
    key.extend_from_slice(name.as_bytes());
    key.extend_from_slice(&kind.to_be_bytes());
    key.extend_from_slice(&device.to_be_bytes());
}

/// The name, kind and device of a key made by [`put_key`].
fn split_key(key: &[u8]) -> Option<(&str, u32, u32)> {
    let len = u32::from_be_bytes(key.get(..4)?.try_into().ok()?) as usize;
    let name = std::str::from_utf8(key.get(4..4 + len)?).ok()?;
    let rest = key.get(4 + len..)?;
    let kind = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
    let device = u32::from_be_bytes(rest.get(4..8)?.try_into().ok()?);
    Some((name, kind, device))
}

impl Sink for FlatKeys<'_> {
    fn enter(&mut self, depth: usize, n: &TreeNode) {
        let number = self.nodes;
        self.nodes += 1;
        let kind = match self.kinds.iter().position(|k| *k == n.kind) {
            Some(k) => k,
            None => {
                self.kinds.push(n.kind.clone());
                self.kinds.len() - 1
            }
        } as u32;
        let device = self.device(n);
        // The enclosing nodes' keys, then this one's after them.
        self.open.truncate(depth);
        put_key(&mut self.key, &n.name, kind, device);
        let recursive = self.open.contains(&self.key);
        self.open.push(&self.key);
        let team = self.teams.enter(depth, own_team(n));
        if self.filter.is_some_and(|re| !re.is_match(&n.name)) {
            return;
        }
        let total = if recursive { 0 } else { n.total_ns };
        self.sums.add(
            &self.key,
            &[
                n.count,
                total,
                n.total_ns,
                n.self_ns,
                n.min_ns,
                n.max_ns,
                number,
                u64::from(team),
            ],
        );
    }

    fn leave(&mut self, _depth: usize) {}
}

/// How the counter block's figures combine: a row's counted instances (or an
/// event's inclusive count, recursion once), an event's exclusive count, and
/// the number of the first node of the key.
const COUNTER_OPS: &[Op] = &[Op::Sum, Op::Sum, Op::Min];

/// The counter block's rows by (name, kind, device label), added up as the
/// counted nodes come, in bounded memory ([`KeyedSums`]): per row a key of
/// its own (its instances) and one per event (the event's name after the
/// row's key), so that the events shown are chosen once the profile's list of
/// them has been read.
#[derive(Default)]
pub struct CounterKeys {
    sums: Option<KeyedSums>,
    /// The counted nodes enclosing the current one: their depths and keys.
    depths: Vec<usize>,
    open: OpenKeys,
    /// Nodes met.
    nodes: u64,
}

/// Text fields one after the other, each its length (4 bytes, big endian)
/// first.
fn put_texts(key: &mut Vec<u8>, texts: &[&str]) {
    for t in texts {
        key.extend_from_slice(&(t.len() as u32).to_be_bytes());
        key.extend_from_slice(t.as_bytes());
    }
}

/// The first text of `key` made by [`put_texts`], and the rest.
fn next_text(key: &[u8]) -> Option<(&str, &[u8])> {
    let len = u32::from_be_bytes(key.get(..4)?.try_into().ok()?) as usize;
    let text = std::str::from_utf8(key.get(4..4 + len)?).ok()?;
    Some((text, key.get(4 + len..)?))
}

impl Sink for CounterKeys {
    fn enter(&mut self, depth: usize, n: &TreeNode) {
        let number = self.nodes;
        self.nodes += 1;
        // Every node ends the counted ones at its depth and below.
        while self.depths.last().is_some_and(|&d| d >= depth) {
            self.depths.pop();
        }
        self.open.truncate(self.depths.len());
        let Some(c) = &n.counters else { return };
        let mut key = Vec::new();
        put_texts(&mut key, &[&n.name, &n.kind, &n.device_label()]);
        let recursive = self.open.contains(&key);
        let sums = self.sums.get_or_insert_with(|| KeyedSums::new(COUNTER_OPS));
        let row = key.len();
        // The row's own key (tag 0), then its events' (tag 1 and the name).
        key.push(0);
        sums.add(&key, &[c.instances, 0, number]);
        key.truncate(row);
        key.push(1);
        for (event, t) in &c.events {
            key.truncate(row + 1);
            put_texts(&mut key, &[event]);
            let inclusive = if recursive { 0 } else { t.inclusive };
            sums.add(&key, &[inclusive, t.exclusive, number]);
        }
        key.truncate(row);
        self.depths.push(depth);
        self.open.push(&key);
    }

    fn leave(&mut self, _depth: usize) {}
}

impl CounterKeys {
    /// The first `top` rows in [`counters::order`] (ties in the order first
    /// met) of the events `events`; an error where the temporary file could
    /// not be read back.
    pub fn top(self, events: &[String], top: usize) -> std::io::Result<Vec<counters::Row>> {
        let Some(sums) = self.sums.filter(|_| !events.is_empty()) else {
            return Ok(Vec::new());
        };
        let order = |a: &(counters::Row, u64), b: &(counters::Row, u64)| {
            counters::order(&a.0, &b.0).then(a.1.cmp(&b.1))
        };
        let mut best = TopK::new(Some(top));
        // The row being read: its key, the row, when first met.
        let mut open: Option<(Vec<u8>, counters::Row, u64)> = None;
        sums.drain(&mut |key, f| {
            let Some((row, tag)) = split_row(key) else {
                return;
            };
            if tag == 0 {
                if let Some((_, r, first)) = open.take() {
                    best.push((r, first), &order);
                }
                let Some((name, rest)) = next_text(row) else {
                    return;
                };
                let Some((kind, rest)) = next_text(rest) else {
                    return;
                };
                let Some((device, _)) = next_text(rest) else {
                    return;
                };
                let r = counters::Row {
                    name: name.to_string(),
                    kind: kind.to_string(),
                    device: device.to_string(),
                    instances: f[0],
                    values: vec![(0, 0); events.len()],
                };
                open = Some((row.to_vec(), r, f[2]));
                return;
            }
            // An event of the open row (its key sorts after the row's own).
            let Some((open_key, r, _)) = open.as_mut() else {
                return;
            };
            let Some((event, _)) = next_text(&key[row.len() + 1..]) else {
                return;
            };
            if *open_key == row {
                if let Some(at) = events.iter().position(|e| e == event) {
                    r.values[at] = (f[0], f[1]);
                }
            }
        })?;
        if let Some((_, r, first)) = open.take() {
            best.push((r, first), &order);
        }
        Ok(best.finish(&order).0.into_iter().map(|(r, _)| r).collect())
    }
}

/// A counter key's row part (name, kind, device) and its tag (0: the row's
/// own key, 1: an event's).
fn split_row(key: &[u8]) -> Option<(&[u8], u8)> {
    let (_, rest) = next_text(key)?;
    let (_, rest) = next_text(rest)?;
    let (_, rest) = next_text(rest)?;
    let row = &key[..key.len() - rest.len()];
    Some((row, *rest.first()?))
}

/// A node the tree view shows, with its shown children and the siblings
/// `--top` hid below it: (how many, their total time per thread).
pub struct Shown {
    /// The node, without children.
    pub node: TreeNode,
    /// Its team ([`TeamStack`]): the tree shows its times per thread of it.
    pub team: u32,
    /// Its place among its siblings (ties keep it).
    index: usize,
    /// Its children shown, in order.
    pub kids: Vec<Shown>,
    /// Children hidden by `--top`: how many, their total time per thread.
    pub more: (usize, u64),
}

impl Shown {
    /// Its inclusive time per thread of its team.
    pub fn total(&self) -> u64 {
        per_thread(self.node.total_ns, self.team)
    }

    /// Its exclusive time per thread of its team.
    pub fn self_time(&self) -> u64 {
        per_thread(self.node.self_ns, self.team)
    }
}

/// An open node of the tree view.
struct Open {
    node: TreeNode,
    team: u32,
    index: usize,
    /// Shown whatever its subtree (no filter at its level).
    shown: bool,
    /// Its children shown whatever their subtrees (no filter, or it matched).
    open: bool,
    /// It or a node below it matches the filter.
    matched: bool,
    kids: TopK<Shown>,
    /// Children offered so far, and their total time per thread (wrapping as a
    /// sum does).
    next: usize,
    kids_ns: u64,
}

/// The tree view: per level, the siblings shown (all, or `--top` by the sort
/// key), those that `--filter` keeps (matching, or above or below a match).
pub struct TreeKeep<'f> {
    filter: Option<&'f Regex>,
    key: SortKey,
    top: Option<usize>,
    open: Vec<Open>,
}

impl<'f> TreeKeep<'f> {
    /// The view for these options.
    pub fn new(filter: Option<&'f Regex>, key: SortKey, top: Option<usize>) -> Self {
        let root = Open {
            node: blank(),
            team: 1,
            index: 0,
            shown: true,
            open: filter.is_none(),
            matched: false,
            kids: TopK::new(top),
            next: 0,
            kids_ns: 0,
        };
        TreeKeep {
            filter,
            key,
            top,
            open: vec![root],
        }
    }

    /// Siblings by the key as shown (times per thread; largest first), then
    /// name, then their order.
    fn order(key: SortKey) -> impl Fn(&Shown, &Shown) -> Ordering {
        move |a, b| {
            sort_value(key, b.total(), b.self_time(), b.node.count)
                .cmp(&sort_value(key, a.total(), a.self_time(), a.node.count))
                .then_with(|| a.node.name.cmp(&b.node.name))
                .then(a.index.cmp(&b.index))
        }
    }

    /// The roots shown, and those hidden.
    pub fn finish(mut self) -> (Vec<Shown>, (usize, u64)) {
        let root = self.open.swap_remove(0);
        let order = Self::order(self.key);
        close(root, &order).map_or((Vec::new(), (0, 0)), |s| (s.kids, s.more))
    }
}

/// The shown form of a node whose children have all come.
fn close(o: Open, order: &dyn Fn(&Shown, &Shown) -> Ordering) -> Option<Shown> {
    if !(o.shown || o.matched) {
        return None;
    }
    let (kids, seen) = o.kids.finish(order);
    let kept = kids.iter().fold(0u64, |s, k| s.wrapping_add(k.total()));
    Some(Shown {
        node: o.node,
        team: o.team,
        index: o.index,
        more: (seen - kids.len(), o.kids_ns.wrapping_sub(kept)),
        kids,
    })
}

impl Sink for TreeKeep<'_> {
    fn enter(&mut self, _depth: usize, n: &TreeNode) {
        let parent = self.open.last_mut().expect("the root is open");
        let index = parent.next;
        parent.next += 1;
        let shown = parent.open;
        let team = match own_team(n) {
            0 => parent.team,
            t => t,
        };
        let matched = self.filter.is_some_and(|re| re.is_match(&n.name));
        self.open.push(Open {
            node: bare(n),
            team,
            index,
            shown,
            open: shown || matched,
            matched,
            kids: TopK::new(self.top),
            next: 0,
            kids_ns: 0,
        });
    }

    fn leave(&mut self, _depth: usize) {
        let Some(o) = self.open.pop() else { return };
        let order = Self::order(self.key);
        let matched = o.matched;
        let shown = close(o, &order);
        let parent = self.open.last_mut().expect("the root is open");
        parent.matched |= matched;
        if let Some(s) = shown {
            parent.kids_ns = parent.kids_ns.wrapping_add(s.total());
            parent.kids.push(s, &order);
        }
    }
}

/// A node run by a team: its path and how much of its time imbalance lost.
pub struct Team {
    /// Names from the root, joined by ` > `.
    pub path: String,
    /// The node, without children.
    pub node: TreeNode,
    lost: f64,
    index: usize,
}

/// `--threads`: the nodes with per-thread totals that lost the most to
/// imbalance (max - mean per thread), as they come.
pub struct Teams {
    /// The path of the current node, and where each level's name ends in it.
    path: String,
    ends: Vec<usize>,
    best: TopK<Team>,
}

impl Teams {
    /// The first `top`.
    pub fn new(top: usize) -> Self {
        Teams {
            path: String::new(),
            ends: Vec::new(),
            best: TopK::new(Some(top)),
        }
    }

    /// Worst first, then by path, then in tree order.
    fn order(a: &Team, b: &Team) -> Ordering {
        b.lost
            .total_cmp(&a.lost)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.index.cmp(&b.index))
    }

    /// The nodes shown in order, and how many have per-thread totals.
    pub fn finish(self) -> (Vec<Team>, usize) {
        self.best.finish(&Self::order)
    }
}

impl Sink for Teams {
    fn enter(&mut self, depth: usize, n: &TreeNode) {
        self.ends.truncate(depth);
        self.path.truncate(self.ends.last().copied().unwrap_or(0));
        if depth > 0 {
            self.path.push_str(" > ");
        }
        self.path.push_str(&n.name);
        self.ends.push(self.path.len());
        if let Some(t) = &n.threads {
            let team = Team {
                path: self.path.clone(),
                node: bare(n),
                lost: t.max_ns as f64 - t.mean_ns,
                index: self.best.seen,
            };
            self.best.push(team, &Self::order);
        }
    }

    fn leave(&mut self, _depth: usize) {}
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kprof_core::output::report::{CounterTotal, NodeCounters, Report};

    use super::*;
    use crate::report::stream::walk;

    /// A tree where some nodes are counted (two events, a third the run did
    /// not list), names repeat over paths and devices, nest in themselves, and
    /// tie on the first event.
    fn counted_tree() -> Vec<TreeNode> {
        let mut x: u64 = 5;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        fn grow(depth: usize, next: &mut dyn FnMut(u64) -> u64) -> Vec<TreeNode> {
            let kids = if depth < 4 { next(6) } else { 0 };
            (0..kids)
                .map(|_| {
                    let mut n = TreeNode {
                        name: Cow::Owned(format!("k{}", next(60))),
                        kind: Cow::Borrowed("user_region"),
                        count: 1 + next(3),
                        total_ns: 1000,
                        self_ns: 500,
                        children: grow(depth + 1, next),
                        ..blank()
                    };
                    if next(3) == 0 {
                        n.device = Some("Cuda".into());
                        n.device_index = Some(next(2) as u32);
                        n.instance = Some(1);
                    }
                    if next(4) != 0 {
                        let mut events = BTreeMap::new();
                        for e in ["A", "B", "unlisted"] {
                            let inclusive = 10 * next(20);
                            let total = CounterTotal {
                                inclusive,
                                exclusive: inclusive / 2,
                                per_second: 0.0,
                            };
                            if next(5) != 0 {
                                events.insert(e.to_string(), total);
                            }
                        }
                        n.counters = Some(Box::new(NodeCounters {
                            instances: n.count,
                            events,
                            ipc: None,
                        }));
                    }
                    n
                })
                .collect()
        }
        (0..30).flat_map(|_| grow(0, &mut next)).collect()
    }

    /// Whether a key is open is what a scan of every open key says, through
    /// paths deeper than the scanned levels.
    #[test]
    fn open_keys_answer_as_a_scan() {
        let mut x: u64 = 7;
        let mut path: Vec<Vec<u8>> = Vec::new();
        let mut open = OpenKeys::default();
        let mut deepest = 0;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let depth = match (x >> 61, (x >> 40) % 1024) {
                (_, 0) => path.len() / 2,
                (0..=2, _) => path.len().saturating_sub(1),
                _ => path.len(),
            };
            let key = format!("k{}", (x >> 20) % 40).into_bytes();
            path.truncate(depth);
            open.truncate(depth);
            assert_eq!(open.contains(&key), path.contains(&key), "depth {depth}");
            path.push(key.clone());
            open.push(&key);
            deepest = deepest.max(depth);
        }
        assert!(deepest > 3 * SCANNED_LEVELS, "{deepest}");
    }

    /// The counter block from rows added up on disk (the unit tests hold 64
    /// keys in memory) is the block the core prints from the whole tree.
    #[test]
    fn counter_rows_by_key_give_the_cores_block() {
        let tree = counted_tree();
        let report: Report = serde_json::from_value(serde_json::json!({
            "schema": kprof_core::output::report::SCHEMA, "kprof_version": "0", "plugins": [],
            "threads": [], "program": {"executable": "app", "pid": 1, "host": "h", "rank": null},
            "clock": {"source": "tsc", "domain": "CLOCK_MONOTONIC", "start_ns": 0,
                      "end_ns": 10, "duration_ns": 10},
            "sections": [], "events": [], "deep_copies": [], "memory": [],
            "dual_views": [], "metadata": {}, "anomalies": {}, "dropped_records": 0,
            "hardware_counters": {"source": "PAPI", "events": ["A", "B"], "kinds": "all",
                                  "multiplexed": false, "problems": []}
        }))
        .unwrap();
        let hc = report.hardware_counters.as_ref().unwrap();
        for top in [1, 7, 40, 1000] {
            let mut want = String::new();
            counters::block(&mut want, &report, &tree, top);
            let mut keys = CounterKeys::default();
            walk(&tree, &mut keys);
            let spilled = keys
                .sums
                .as_ref()
                .is_some_and(|s| s.runs() > super::super::by_key::FAN);
            assert!(spilled, "not added up on disk");
            let shown = keys.top(&hc.events, top).unwrap();
            let mut got = String::new();
            counters::write_block(&mut got, hc, &shown, top);
            assert_eq!(got, want, "top {top}");
        }
    }
}
