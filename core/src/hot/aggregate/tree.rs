//! The call-path tree: one node per distinct path of (name, kind, device) from the
//! root, shared by all threads, so nodes with the same path merge across threads.

use hashbrown::HashTable;
use kprof_abi::Kind;

use super::stats::Stats;
use crate::hot::counters::Values;

/// Index of the virtual root.
pub const ROOT: u32 = 0;

/// Up to this many children, a child is found by looking at each.
const SCAN_CHILDREN: usize = 8;

/// A node of the tree. Kept small (104 bytes): a profile can hold a million
/// nodes, so what few nodes have (thread spread, arguments, counters) lives in
/// [`Extra`], allocated on first use.
#[derive(Debug, Clone)]
pub struct Node {
    /// Parent node (the root is its own parent).
    pub parent: u32,
    /// Name id.
    pub name: u32,
    /// Kind (the root's is meaningless).
    pub kind: Kind,
    /// Device index.
    pub dev: u16,
    /// Timing.
    pub stats: Stats,
    /// Thread spread, arguments and counters, for the nodes that have any.
    extra: Option<Box<Extra>>,
    /// Children in creation order.
    pub children: Vec<u32>,
}

/// What only some nodes carry.
#[derive(Debug, Clone, Default)]
struct Extra {
    per_thread: Vec<(u32, u64)>,
    args: Vec<(u32, u64, u64)>,
    counters: Option<Box<NodeCounters>>,
    /// A sample of its instances for scatterplots (`KPROF_SAMPLES`).
    samples: Option<super::samples::Reservoir>,
}

impl Node {
    /// A node without instances yet.
    pub fn new(parent: u32, name: u32, kind: Kind, dev: u16) -> Node {
        Node {
            parent,
            name,
            kind,
            dev,
            stats: Stats::default(),
            extra: None,
            children: Vec::new(),
        }
    }

    fn extra(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Inclusive time per thread index, for kinds whose instances run on many
    /// threads at once (OpenMP): the spread shows load imbalance. Filled when
    /// threads' trees merge (a thread's own tree has its total only).
    pub fn per_thread(&self) -> &[(u32, u64)] {
        self.extra.as_ref().map_or(&[], |e| &e.per_thread)
    }

    /// Numeric arguments seen on its instances: (key name id, min, max).
    pub fn args(&self) -> &[(u32, u64, u64)] {
        self.extra.as_ref().map_or(&[], |e| &e.args)
    }

    /// What its counted instances counted (`KPROF_COUNTERS`); made on the first.
    pub fn counters(&self) -> Option<&NodeCounters> {
        self.extra.as_ref().and_then(|e| e.counters.as_deref())
    }

    /// Heap bytes of what only some nodes have.
    fn extra_bytes(&self) -> usize {
        use std::mem::size_of;
        self.extra.as_ref().map_or(0, |e| {
            size_of::<Extra>()
                + e.counters.as_ref().map_or(0, |_| size_of::<NodeCounters>())
                + e.per_thread.capacity() * size_of::<(u32, u64)>()
                + e.args.capacity() * size_of::<(u32, u64, u64)>()
                + e.samples
                    .as_ref()
                    .map_or(0, |r| r.items.capacity() * size_of::<(u64, u64)>())
        })
    }

    /// The sample of its instances (`KPROF_SAMPLES`), when it has one.
    pub fn samples(&self) -> Option<&super::samples::Reservoir> {
        self.extra.as_ref().and_then(|e| e.samples.as_ref())
    }

    /// Offers one instance (raw begin, duration) to its sample of at most `k`,
    /// once its statistics hold it. Only a call path's instances after its first
    /// are sampled: most call paths of a large profile run once (one kernel name
    /// per problem size), and a sample for each would double the profile's
    /// memory (10^6 such paths: +310 MB) for scatterplots of one point.
    /// (On every end: a node that has its sample takes two loads and a compare;
    /// making the sample is out of line.)
    #[inline(always)]
    pub fn sample(&mut self, begin: u64, dur: u64, k: usize, rng: &mut super::samples::Rng) {
        if self.stats.count < 2 {
            return;
        }
        match self.extra.as_deref_mut().and_then(|e| e.samples.as_mut()) {
            Some(s) => s.offer(begin, dur, k, rng),
            None => self.first_sample(begin, dur, k, rng),
        }
    }

    /// Makes the node's sample with its first instance.
    #[cold]
    #[inline(never)]
    fn first_sample(&mut self, begin: u64, dur: u64, k: usize, rng: &mut super::samples::Rng) {
        self.extra()
            .samples
            .get_or_insert_with(Default::default)
            .offer(begin, dur, k, rng);
    }

    /// Merges another thread's sample of the same call path into this one's, each
    /// kept in proportion to the instances it stands for.
    pub fn merge_samples(&mut self, other: Option<&super::samples::Reservoir>) {
        let Some(o) = other else { return };
        match &mut self.extra().samples {
            Some(mine) => {
                // End-of-run work: seeded from the counts, so a merge is repeatable.
                let mut rng = super::samples::Rng::new(mine.seen.rotate_left(32) ^ o.seen);
                mine.merge(o, &mut rng);
            }
            slot @ None => *slot = Some(o.clone()),
        }
    }

    /// Adds what one instance counted: `delta` inclusive, of which `children`
    /// was counted by the counted instances inside it on the same thread; the
    /// first `n` events. Sums wrap (2^64 events take decades to count); a
    /// difference never goes below 0 (multiplexed values are estimates).
    #[inline]
    pub fn add_counters(&mut self, delta: &Values, children: &Values, n: usize) {
        let c = self.extra().counters.get_or_insert_with(Default::default);
        c.instances += 1;
        for k in 0..n.min(delta.len()) {
            c.inclusive[k] = c.inclusive[k].wrapping_add(delta[k]);
            c.exclusive[k] = c.exclusive[k].wrapping_add(delta[k].saturating_sub(children[k]));
        }
    }

    /// Merges another node's counter totals into this one's.
    pub fn merge_counters(&mut self, other: Option<&NodeCounters>) {
        let Some(o) = other else { return };
        let c = self.extra().counters.get_or_insert_with(Default::default);
        c.instances += o.instances;
        for k in 0..o.inclusive.len() {
            c.inclusive[k] = c.inclusive[k].saturating_add(o.inclusive[k]);
            c.exclusive[k] = c.exclusive[k].saturating_add(o.exclusive[k]);
        }
    }

    /// Folds an instance's argument into the node's range for that key. (Per
    /// argument of every instance that has any: a key the node has seen takes
    /// a short search and two compares; a new one is added out of line.)
    #[inline(always)]
    pub fn add_arg(&mut self, key: u32, value: u64) {
        let seen = self
            .extra
            .as_deref_mut()
            .and_then(|e| e.args.iter_mut().find(|(k, _, _)| *k == key));
        match seen {
            Some((_, min, max)) => {
                *min = (*min).min(value);
                *max = (*max).max(value);
            }
            None => self.new_arg(key, value),
        }
    }

    /// [`Node::add_arg`] of a key the node has not seen.
    #[cold]
    #[inline(never)]
    fn new_arg(&mut self, key: u32, value: u64) {
        self.extra().args.push((key, value, value));
    }

    /// Adds `ns` to thread `thread`'s total (teams are small: a linear search).
    pub fn add_thread_time(&mut self, thread: u32, ns: u64) {
        let per_thread = &mut self.extra().per_thread;
        match per_thread.iter_mut().find(|(t, _)| *t == thread) {
            Some((_, total)) => *total += ns,
            None => per_thread.push((thread, ns)),
        }
    }
}

/// Counter totals of a node's instances, in the order of the counters' names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeCounters {
    /// Instances whose counters were read at both ends.
    pub instances: u64,
    /// Counted inside its instances, nested counted instances included.
    pub inclusive: Values,
    /// Counted inside its instances but not inside a counted instance nested in
    /// one on the same thread.
    pub exclusive: Values,
}

/// The tree.
pub struct Tree {
    /// All nodes; index 0 is the root.
    pub nodes: Vec<Node>,
    /// The children of parents with many, by (parent, name, kind, device): node
    /// ids only, the key is read from the node.
    index: HashTable<u32>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: vec![Node::new(ROOT, 0, Kind::Region, 0)],
            index: HashTable::new(),
        }
    }
}

/// The hash of a child's key in the index.
fn key_hash(parent: u32, name: u32, kind: Kind, dev: u16) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one((parent, name, kind, dev))
}

/// The index key of node `n`.
fn node_hash(nodes: &[Node], n: u32) -> u64 {
    let k = &nodes[n as usize];
    key_hash(k.parent, k.name, k.kind, k.dev)
}

impl Tree {
    /// A new node outside the root's children: a stand-in for another tree's
    /// node, whose children a merge moves under the real one.
    pub fn anchor(&mut self) -> u32 {
        let n = self.nodes.len() as u32;
        self.nodes.push(Node::new(ROOT, 0, Kind::Region, 0));
        n
    }

    /// Memory the tree holds, in bytes (allocated capacity, approximately).
    pub fn bytes(&self) -> u64 {
        use std::mem::size_of;
        let nodes: usize = self
            .nodes
            .iter()
            .map(|n| n.children.capacity() * size_of::<u32>() + n.extra_bytes())
            .sum();
        let index = self.index.capacity() * (size_of::<u32>() + 1);
        (self.nodes.capacity() * size_of::<Node>() + nodes + index) as u64
    }

    /// The child of `parent` with this key, created if new.
    pub fn child(&mut self, parent: u32, name: u32, kind: Kind, dev: u16) -> u32 {
        match self.find(parent, name, kind, dev) {
            Some(n) => n,
            None => self.add(parent, name, kind, dev),
        }
    }

    /// The child of `parent` with this key, if it exists.
    pub fn find(&self, parent: u32, name: u32, kind: Kind, dev: u16) -> Option<u32> {
        let kids = &self.nodes[parent as usize].children;
        let same = |n: &Node| n.name == name && n.kind == kind && n.dev == dev;
        if kids.len() <= SCAN_CHILDREN {
            // Most nodes have a few children (a region's loop and barrier): looking
            // at them is cheaper than hashing.
            kids.iter()
                .copied()
                .find(|&c| same(&self.nodes[c as usize]))
        } else {
            let nodes = &self.nodes;
            let hash = key_hash(parent, name, kind, dev);
            let hit = |&c: &u32| nodes[c as usize].parent == parent && same(&nodes[c as usize]);
            self.index.find(hash, hit).copied()
        }
    }

    /// Adds a child of `parent` with this key (which it does not have yet):
    /// the node, and the parent's index once it has many children. The only
    /// step of a lookup that allocates or grows a table.
    pub fn add(&mut self, parent: u32, name: u32, kind: Kind, dev: u16) -> u32 {
        let n = self.nodes.len() as u32;
        self.nodes.push(Node::new(parent, name, kind, dev));
        self.nodes[parent as usize].children.push(n);
        // Only parents with many children are looked up by hash: a million
        // distinct leaves under one parent need the index, a million small
        // families do not.
        let nodes = &self.nodes;
        let kids = &nodes[parent as usize].children;
        let rehash = |&c: &u32| node_hash(nodes, c);
        match kids.len() {
            len if len == SCAN_CHILDREN + 1 => {
                for &c in kids.iter() {
                    self.index.insert_unique(node_hash(nodes, c), c, rehash);
                }
            }
            len if len > SCAN_CHILDREN + 1 => {
                self.index.insert_unique(node_hash(nodes, n), n, rehash);
            }
            _ => {}
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A million distinct call paths must fit in about 120 MB of nodes.
    #[test]
    fn a_node_stays_small() {
        assert!(
            std::mem::size_of::<Node>() <= 112,
            "{}",
            std::mem::size_of::<Node>()
        );
    }

    /// A parent's children are found again whether it has a few (scanned) or
    /// many (hashed, from the ninth on, the first eight included).
    #[test]
    fn children_found_by_scan_and_by_index() {
        let mut t = Tree::default();
        let few: Vec<u32> = (0..3).map(|i| t.child(ROOT, i, Kind::Region, 0)).collect();
        let parent = few[0];
        let many: Vec<u32> = (100..140)
            .map(|i| t.child(parent, i, Kind::ParallelFor, 1))
            .collect();
        for (i, &n) in (0..3).zip(&few) {
            assert_eq!(t.child(ROOT, i, Kind::Region, 0), n);
        }
        for (i, &n) in (100..140).zip(&many) {
            assert_eq!(t.child(parent, i, Kind::ParallelFor, 1), n);
            // Same name, another kind or device: another node.
            assert_ne!(t.child(parent, i, Kind::Region, 1), n);
        }
        assert_eq!(t.nodes[parent as usize].children.len(), 80);
        // Only the parent with many children is indexed.
        assert_eq!(t.index.len(), 80);
        assert_eq!(t.nodes.len(), 1 + 3 + 80);
    }
}
