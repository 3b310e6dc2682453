//! The call-path tree: one node per distinct path of (name, kind, device) from the
//! root, shared by all threads, so nodes with the same path merge across threads.

use kprof_abi::Kind;
use rustc_hash::FxHashMap;

use super::stats::Stats;
use crate::hot::counters::Values;

/// Index of the virtual root.
pub const ROOT: u32 = 0;

/// Up to this many children, a child is found by looking at each.
const SCAN_CHILDREN: usize = 8;

/// A node of the tree.
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
    /// Inclusive time per thread index, for kinds whose instances run on many
    /// threads at once (OpenMP): the spread shows load imbalance.
    pub per_thread: Vec<(u32, u64)>,
    /// Numeric arguments seen on its instances: (key name id, min, max).
    pub args: Vec<(u32, u64, u64)>,
    /// What its counted instances counted (`KPROF_COUNTERS`); made on the first.
    pub counters: Option<Box<NodeCounters>>,
    /// Children in creation order.
    pub children: Vec<u32>,
    /// A sample of its instances for scatterplots (`KPROF_SAMPLES`); made on the
    /// first.
    pub samples: Option<Box<super::samples::Reservoir>>,
    /// (packed key, node) of the child looked up last, for the thread that owns
    /// the tree (key 0: none).
    pub last_child: (u64, u32),
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
            per_thread: Vec::new(),
            args: Vec::new(),
            counters: None,
            children: Vec::new(),
            samples: None,
            last_child: (0, 0),
        }
    }

    /// Adds what one instance counted: `delta` inclusive, of which `children`
    /// was counted by the counted instances inside it on the same thread; the
    /// first `n` events. Sums wrap (2^64 events take decades to count); a
    /// difference never goes below 0 (multiplexed values are estimates).
    #[inline]
    pub fn add_counters(&mut self, delta: &Values, children: &Values, n: usize) {
        let c = self.counters.get_or_insert_with(Box::default);
        c.instances += 1;
        for k in 0..n.min(delta.len()) {
            c.inclusive[k] = c.inclusive[k].wrapping_add(delta[k]);
            c.exclusive[k] = c.exclusive[k].wrapping_add(delta[k].saturating_sub(children[k]));
        }
    }

    /// Merges another node's counter totals into this one's.
    pub fn merge_counters(&mut self, other: Option<&NodeCounters>) {
        let Some(o) = other else { return };
        let c = self.counters.get_or_insert_with(Box::default);
        c.instances += o.instances;
        for k in 0..o.inclusive.len() {
            c.inclusive[k] = c.inclusive[k].saturating_add(o.inclusive[k]);
            c.exclusive[k] = c.exclusive[k].saturating_add(o.exclusive[k]);
        }
    }

    /// Folds an instance's argument into the node's range for that key.
    pub fn add_arg(&mut self, key: u32, value: u64) {
        match self.args.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, min, max)) => {
                *min = (*min).min(value);
                *max = (*max).max(value);
            }
            None => self.args.push((key, value, value)),
        }
    }

    /// Adds `ns` to thread `thread`'s total (teams are small: a linear search).
    pub fn add_thread_time(&mut self, thread: u32, ns: u64) {
        match self.per_thread.iter_mut().find(|(t, _)| *t == thread) {
            Some((_, total)) => *total += ns,
            None => self.per_thread.push((thread, ns)),
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
    index: FxHashMap<(u32, u32, Kind, u16), u32>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: vec![Node::new(ROOT, 0, Kind::Region, 0)],
            index: FxHashMap::default(),
        }
    }
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
            .map(|n| {
                n.children.capacity() * size_of::<u32>()
                    + n.per_thread.capacity() * size_of::<(u32, u64)>()
                    + n.args.capacity() * size_of::<(u32, u64, u64)>()
                    + n.counters.as_ref().map_or(0, |_| size_of::<NodeCounters>())
                    + n.samples.as_ref().map_or(0, |r| {
                        size_of::<super::samples::Reservoir>()
                            + r.items.capacity() * size_of::<(u64, u64)>()
                    })
            })
            .sum();
        let index = self.index.capacity() * (size_of::<((u32, u32, Kind, u16), u32)>() + 1);
        (self.nodes.capacity() * size_of::<Node>() + nodes + index) as u64
    }

    /// The child of `parent` with this key, created if new.
    pub fn child(&mut self, parent: u32, name: u32, kind: Kind, dev: u16) -> u32 {
        let kids = &self.nodes[parent as usize].children;
        let key = (parent, name, kind, dev);
        if kids.len() <= SCAN_CHILDREN {
            // Most nodes have a few children (a region's loop and barrier): looking
            // at them is cheaper than hashing.
            let found = kids.iter().copied().find(|&c| {
                let n = &self.nodes[c as usize];
                n.name == name && n.kind == kind && n.dev == dev
            });
            if let Some(n) = found {
                return n;
            }
        } else if let Some(&n) = self.index.get(&key) {
            return n;
        }
        let n = self.nodes.len() as u32;
        self.nodes.push(Node::new(parent, name, kind, dev));
        let kids = &mut self.nodes[parent as usize].children;
        kids.push(n);
        // Only parents with many children are looked up by hash: a million
        // distinct leaves under one parent need the index, a million small
        // families do not.
        match kids.len() {
            len if len == SCAN_CHILDREN + 1 => {
                let kids = kids.clone();
                for c in kids {
                    let k = &self.nodes[c as usize];
                    self.index.insert((parent, k.name, k.kind, k.dev), c);
                }
            }
            len if len > SCAN_CHILDREN + 1 => {
                self.index.insert(key, n);
            }
            _ => {}
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
