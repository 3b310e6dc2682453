//! The flat profile: the call-path tree aggregated by (name, kind, device), the view
//! that the summary and `kprof report` both show, so that they cannot disagree.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use crate::output::report::{Report, TreeNode};

/// One row: every tree node with the same name, kind and device label. Borrows its
/// text from the tree (a profile can have a million distinct names).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlatRow<'a> {
    /// Name.
    pub name: &'a str,
    /// Kind (`parallel_for`, `region`, ...).
    pub kind: &'a str,
    /// Device label (`TreeNode::device_label`), empty for none.
    pub device: Cow<'a, str>,
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
        match (&self.device, self.device_index, self.instance) {
            (Some(d), Some(i), Some(inst)) if i != 0 || inst > 1 => {
                Cow::Owned(format!("{d}[{i}:{inst}]"))
            }
            (Some(d), _, _) => Cow::Borrowed(d),
            _ => Cow::Borrowed(""),
        }
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
    type Key<'a> = (&'a str, &'a str, Cow<'a, str>);
    fn walk<'a>(
        nodes: &'a [TreeNode],
        open: &mut Vec<usize>,
        rows: &mut Vec<FlatRow<'a>>,
        index: &mut FxHashMap<Key<'a>, usize>,
    ) {
        for n in nodes {
            let key = (n.name.as_str(), n.kind.as_str(), n.device_text());
            let at = match index.get(&key) {
                Some(&at) => at,
                None => {
                    rows.push(FlatRow {
                        name: key.0,
                        kind: key.1,
                        device: key.2.clone(),
                        min_ns: u64::MAX,
                        ..Default::default()
                    });
                    index.insert(key, rows.len() - 1);
                    rows.len() - 1
                }
            };
            let recursive = open.contains(&at);
            let f = &mut rows[at];
            f.count += n.count;
            if !recursive {
                f.total_ns += n.total_ns;
            }
            f.instance_ns += n.total_ns;
            f.self_ns += n.self_ns;
            f.min_ns = f.min_ns.min(n.min_ns);
            f.max_ns = f.max_ns.max(n.max_ns);
            open.push(at);
            walk(&n.children, open, rows, index);
            open.pop();
        }
    }
    fn count(nodes: &[TreeNode]) -> usize {
        nodes.iter().map(|n| 1 + count(&n.children)).sum()
    }
    // Sized once: growing a table of a million keys rehashes them all, repeatedly.
    let nodes = count(tree);
    let mut rows = Vec::with_capacity(nodes);
    let mut index = FxHashMap::with_capacity_and_hasher(nodes, Default::default());
    walk(tree, &mut Vec::new(), &mut rows, &mut index);
    rows
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
