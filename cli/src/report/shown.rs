//! What each view of `kprof report` keeps of the call-path tree as it streams by
//! ([`Sink`]s): the flat view's rows by key (a row per distinct name, kind and
//! device: the one thing that grows with the profile), the tree view's siblings
//! that `--top` shows with the count and time of those it hides, the nodes that
//! `--threads` lists, and the few nodes the counter and MPI blocks read. Memory
//! is bounded by what is printed, and by the distinct names for the flat views.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use kprof_core::output::calltree::CallTree;
use kprof_core::output::flat::{device_text, FlatRow, FlatTop, Flattener};
use kprof_core::output::report::TreeNode;
use regex::Regex;
use rustc_hash::FxBuildHasher;

use super::stream::{bare, blank, Sink};
use super::{sort_value, SortKey};

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

/// Distinct names, each stored once in one text (a million names, no
/// allocation each), by number in the order first met.
struct Names {
    text: String,
    /// Name `i` is `text[ends[i]..ends[i + 1]]`.
    ends: Vec<usize>,
    index: HashTable<u32>,
}

impl Names {
    /// Room for about `names` names (the index is sized once: growing it
    /// rehashes every name, repeatedly).
    fn with_capacity(names: usize) -> Self {
        Names {
            text: String::new(),
            ends: Vec::with_capacity(names + 1),
            index: HashTable::with_capacity(names),
        }
    }

    fn get(&self, id: u32) -> &str {
        let i = id as usize;
        &self.text[self.ends[i]..self.ends[i + 1]]
    }

    fn id(&mut self, name: &str) -> u32 {
        if self.ends.is_empty() {
            self.ends.push(0);
        }
        let hash = FxBuildHasher.hash_one(name);
        let (text, ends) = (&self.text, &self.ends);
        let at = |i: u32| &text[ends[i as usize]..ends[i as usize + 1]];
        if let Some(&id) = self.index.find(hash, |&i| at(i) == name) {
            return id;
        }
        let id = (self.ends.len() - 1) as u32;
        self.text.push_str(name);
        self.ends.push(self.text.len());
        let (text, ends) = (&self.text, &self.ends);
        let at = |i: u32| &text[ends[i as usize]..ends[i as usize + 1]];
        self.index
            .insert_unique(hash, id, |&i| FxBuildHasher.hash_one(at(i)));
        id
    }
}

/// A device as a flat row's key: the node's three fields (the default view,
/// as `flat::top_rows`), or the label they show as (`--flat`, as `flat::flatten`).
#[derive(PartialEq)]
enum Device {
    Fields(Option<String>, Option<u32>, Option<u32>),
    Label(String),
}

/// The flat view's rows, by (name, kind, device), added up as the nodes come.
pub struct FlatKeys {
    names: Names,
    kinds: Vec<Cow<'static, str>>,
    devices: Vec<Device>,
    by_label: bool,
    rows: Flattener<(u32, u32, u32)>,
}

impl FlatKeys {
    /// Rows keyed by the device's fields, or by its label (`by_label`), for
    /// about `nodes` nodes (a guess: only what is used is touched).
    pub fn new(by_label: bool, nodes: usize) -> Self {
        FlatKeys {
            names: Names::with_capacity(nodes),
            kinds: Vec::new(),
            devices: Vec::new(),
            by_label,
            rows: Flattener::with_capacity(nodes),
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

    /// Distinct names (numbered from 0 in the order first met).
    pub fn names(&self) -> usize {
        self.names.ends.len().saturating_sub(1)
    }

    /// The name numbered `id`.
    pub fn name(&self, id: u32) -> &str {
        self.names.get(id)
    }

    /// The rows, in the order their keys were first met.
    pub fn rows(&self) -> impl Iterator<Item = FlatRow<'_>> {
        self.keyed_rows().map(|(_, row)| row)
    }

    /// The rows with their names' numbers, in the order their keys were first met.
    pub fn keyed_rows(&self) -> impl Iterator<Item = (u32, FlatRow<'_>)> {
        self.rows.rows.iter().map(|&((name, kind, device), t)| {
            let device = match &self.devices[device as usize] {
                Device::Fields(d, i, inst) => device_text(d.as_deref(), *i, *inst),
                Device::Label(l) => Cow::Borrowed(l.as_str()),
            };
            let row = FlatRow::new(
                Cow::Borrowed(self.names.get(name)),
                &self.kinds[kind as usize],
                device,
                t,
            );
            (name, row)
        })
    }
}

impl Sink for FlatKeys {
    fn enter(&mut self, depth: usize, n: &TreeNode) {
        let name = self.names.id(&n.name);
        let kind = match self.kinds.iter().position(|k| *k == n.kind) {
            Some(k) => k,
            None => {
                self.kinds.push(n.kind.clone());
                self.kinds.len() - 1
            }
        } as u32;
        let device = self.device(n);
        self.rows.add(depth, (name, kind, device), n.into());
    }

    fn leave(&mut self, _depth: usize) {}
}

/// The nodes the counter and MPI blocks read (those with counters, and MPI
/// calls), at their depths, as a [`CallTree`] that walks only them. Between two
/// of them, a bare node at the least depth of those left out ends the open
/// ones as those would have.
#[derive(Default)]
pub struct Sparse {
    nodes: Vec<(usize, TreeNode)>,
    skipped: Option<usize>,
}

impl Sink for Sparse {
    fn enter(&mut self, depth: usize, n: &TreeNode) {
        if n.counters.is_none() && n.kind != "mpi" {
            self.skipped = Some(self.skipped.map_or(depth, |d| d.min(depth)));
            return;
        }
        if let Some(d) = self.skipped.take() {
            self.nodes.push((d, blank()));
        }
        self.nodes.push((depth, bare(n)));
    }

    fn leave(&mut self, _depth: usize) {}
}

impl CallTree for Sparse {
    fn walk(&self, visit: &mut dyn FnMut(usize, &TreeNode)) {
        for (depth, n) in &self.nodes {
            visit(*depth, n);
        }
    }

    /// Not kept: `kprof report`'s flat table comes from [`FlatKeys`].
    fn flat_top(&self, _top: usize) -> FlatTop<'_> {
        FlatTop::default()
    }
}

/// A node the tree view shows, with its shown children and the siblings
/// `--top` hid below it: (how many, their total time).
pub struct Shown {
    /// The node, without children.
    pub node: TreeNode,
    /// Its place among its siblings (ties keep it).
    index: usize,
    /// Its children shown, in order.
    pub kids: Vec<Shown>,
    /// Children hidden by `--top`: how many, their total time.
    pub more: (usize, u64),
}

/// An open node of the tree view.
struct Open {
    node: TreeNode,
    index: usize,
    /// Shown whatever its subtree (no filter at its level).
    shown: bool,
    /// Its children shown whatever their subtrees (no filter, or it matched).
    open: bool,
    /// It or a node below it matches the filter.
    matched: bool,
    kids: TopK<Shown>,
    /// Children offered so far, and their total time (wrapping as a sum does).
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

    /// Siblings by the key (largest first), then name, then their order.
    fn order(key: SortKey) -> impl Fn(&Shown, &Shown) -> Ordering {
        move |a, b| {
            let (x, y) = (&a.node, &b.node);
            sort_value(key, y.total_ns, y.self_ns, y.count)
                .cmp(&sort_value(key, x.total_ns, x.self_ns, x.count))
                .then_with(|| x.name.cmp(&y.name))
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
    let kept = kids
        .iter()
        .fold(0u64, |s, k| s.wrapping_add(k.node.total_ns));
    Some(Shown {
        node: o.node,
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
        let matched = self.filter.is_some_and(|re| re.is_match(&n.name));
        self.open.push(Open {
            node: bare(n),
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
            parent.kids_ns = parent.kids_ns.wrapping_add(s.node.total_ns);
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
