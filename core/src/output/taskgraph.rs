//! `taskgraph.dot`: the task graph as Graphviz reads it. One node per kind of work
//! (name and kind: task, kernel, region) with its instances and inclusive time;
//! solid edges parent -> child (the call-path tree folded by name, labelled with
//! the child's instances under that parent), dashed red edges the declared
//! dependences between tasks (`task_graph` of `profile.json`) with their instances.
//!
//! Every node and edge also carries its numbers as attributes (`fullname`, `kind`,
//! `count`, `total_ns`, `type`), which Graphviz keeps (`dot -Tjson`) and ignores in drawing.
//! Written by hand: DOT is a few lines of text, and no crate writes it better than
//! a format string.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use std::hash::BuildHasher;

use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::output::call_path::Walk;
use crate::output::files::{write_whole, OutputError};
use crate::output::flat::Enclosing;
use crate::output::readable::duration;
use crate::output::report::TaskEdge;

/// Most nodes drawn: the longest by inclusive time. Graphviz lays out a few hundred
/// nodes readably; a profile can have a million names (the file says how many
/// were left out).
pub const MAX_NODES: usize = 400;

/// Kinds whose nodes are task executions: the ends of dependence edges.
const TASK_KINDS: [&str; 2] = ["omp_task", "task"];

/// Which nodes of a tree belong to the [`MAX_NODES`] longest kinds of work (by
/// kind and name, inclusive time with recursion counted once, every kind tied
/// with the last one in), as a tree that knows its nodes by number gives it
/// ([`longest_work`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LongestWork {
    /// Per node, in walk order: whether its kind of work is among them.
    pub shown: Vec<bool>,
    /// Kinds of work in the tree.
    pub kinds: usize,
}

/// How the second walk tells the longest kinds of work.
enum Longest {
    /// Per node in walk order.
    Nodes(Vec<bool>),
    /// Totals by a hash of kind and name, and the least shown.
    Totals(FxHashMap<u64, u64>, u64),
}

/// The `top`-th largest of `all` (0 when there are no more than `top`).
fn least_of_top(mut all: Vec<u64>, top: usize) -> u64 {
    match all.len() {
        len if len > top && top > 0 => *all.select_nth_unstable_by(top - 1, |a, b| b.cmp(a)).1,
        _ => 0,
    }
}

/// [`LongestWork`] of a tree whose nodes are numbers: `walk` calls its argument
/// with (depth, node) depth first, parents before children; `key` is a node's
/// kind of work (equal keys for equal kind and name), `total` its inclusive
/// time. Sorts the nodes by key (about 21 bytes a node for the moment) where
/// the graph's own first walk hashes every name into a table.
pub fn longest_work<K: Ord + Copy + std::hash::Hash>(
    nodes: usize,
    walk: impl Fn(&mut dyn FnMut(usize, u32)),
    key: impl Fn(u32) -> K,
    total: impl Fn(u32) -> u64,
    top: usize,
) -> LongestWork {
    // Per node in walk order: its number, whether it is inside one of its
    // key, and (key, position) to sort by key.
    let mut seq: Vec<u32> = Vec::with_capacity(nodes);
    let mut recursive: Vec<bool> = Vec::with_capacity(nodes);
    let mut by_key: Vec<(K, u32)> = Vec::with_capacity(nodes);
    let mut open: Enclosing<K> = Enclosing::default();
    walk(&mut |depth, n| {
        let k = key(n);
        recursive.push(open.enter(depth, k));
        by_key.push((k, seq.len() as u32));
        seq.push(n);
    });
    // Each key's total, each position's key.
    by_key.sort_unstable();
    let mut group = vec![0u32; seq.len()];
    let mut totals: Vec<u64> = Vec::new();
    let mut i = 0;
    while i < by_key.len() {
        let k = by_key[i].0;
        let g = totals.len() as u32;
        let mut t = 0u64;
        while i < by_key.len() && by_key[i].0 == k {
            let at = by_key[i].1 as usize;
            if !recursive[at] {
                t = t.wrapping_add(total(seq[at]));
            }
            group[at] = g;
            i += 1;
        }
        totals.push(t);
    }
    drop((by_key, seq, recursive));
    let least = least_of_top(totals.clone(), top);
    LongestWork {
        shown: group.iter().map(|&g| totals[g as usize] >= least).collect(),
        kinds: totals.len(),
    }
}

/// One node of the graph.
struct GraphNode {
    name: String,
    kind: String,
    count: u64,
    total_ns: u64,
}

/// The graph, before it is written. Owns its names: a streamed tree's nodes live
/// only while they are visited.
#[derive(Default)]
struct Graph {
    nodes: Vec<GraphNode>,
    /// kind -> name -> node (a hit allocates nothing).
    index: FxHashMap<String, FxHashMap<String, usize>>,
    /// (parent, child) -> the child's instances under that parent.
    calls: FxHashMap<(usize, usize), u64>,
}

impl Graph {
    fn find(&self, name: &str, kind: &str) -> Option<usize> {
        self.index.get(kind)?.get(name).copied()
    }

    fn node(&mut self, name: &str, kind: &str) -> usize {
        if let Some(i) = self.find(name, kind) {
            return i;
        }
        self.nodes.push(GraphNode {
            name: name.into(),
            kind: kind.into(),
            count: 0,
            total_ns: 0,
        });
        let at = self.nodes.len() - 1;
        self.index
            .entry(kind.into())
            .or_default()
            .insert(name.into(), at);
        at
    }

    /// Adds the tree `walk` meets: the nodes that may be among the [`MAX_NODES`]
    /// longest kinds of work, the tasks and the ends of `dependences`. Which
    /// kinds of work may be shown comes from `longest` where the tree gives it;
    /// else a first walk adds up each kind of work's time by a hash of its name,
    /// keeping no text (a profile can have a million distinct names). The second
    /// builds the graph of those that can be shown. Returns the number of kinds
    /// of work in the tree.
    fn add(&mut self, walk: Walk, dependences: &[TaskEdge], longest: Option<LongestWork>) -> usize {
        let key = |kind: &str, name: &str| FxBuildHasher.hash_one((kind, name));
        let (kinds, longest) = match longest {
            Some(l) => (l.kinds, Longest::Nodes(l.shown)),
            None => {
                let mut totals: FxHashMap<u64, u64> = FxHashMap::default();
                let mut open: Enclosing<u64> = Enclosing::default();
                walk(&mut |depth, n| {
                    let k = key(n.kind(), n.name());
                    let total = totals.entry(k).or_insert(0);
                    if !open.enter(depth, k) {
                        *total += n.total_ns();
                    }
                });
                let all: Vec<u64> = totals.values().copied().collect();
                let least = least_of_top(all, MAX_NODES);
                (totals.len(), Longest::Totals(totals, least))
            }
        };
        let ends: Vec<&str> = dependences
            .iter()
            .flat_map(|e| [e.from.as_str(), e.to.as_str()])
            .collect();
        // The graph node of each open ancestor, by depth (`None`: not in the graph).
        let mut open: Enclosing<Option<usize>> = Enclosing::default();
        let mut at_node = 0;
        walk(&mut |depth, n| {
            let parent = depth
                .checked_sub(1)
                .and_then(|d| open.at(d))
                .copied()
                .flatten();
            let long = match &longest {
                Longest::Nodes(shown) => shown.get(at_node).copied().unwrap_or(false),
                Longest::Totals(totals, least) => totals
                    .get(&key(n.kind(), n.name()))
                    .is_some_and(|t| t >= least),
            };
            at_node += 1;
            let shown = long || TASK_KINDS.contains(&n.kind()) || ends.contains(&n.name());
            if !shown {
                open.enter(depth, None);
                return;
            }
            let at = self.node(n.name(), n.kind());
            // A recursive instance is inside its outer one's time already.
            let recursive = open.enter(depth, Some(at));
            let g = &mut self.nodes[at];
            g.count += n.count();
            if !recursive {
                g.total_ns += n.total_ns();
            }
            if let Some(p) = parent {
                *self.calls.entry((p, at)).or_insert(0) += n.count();
            }
        });
        kinds
    }

    /// The node a dependence edge's end names: its task execution node, else any
    /// node of that name, else a new task node (a task seen only in the graph).
    fn task(&mut self, name: &str) -> usize {
        let found = TASK_KINDS
            .iter()
            .find_map(|k| self.find(name, k))
            .or_else(|| {
                self.index
                    .values()
                    .filter_map(|names| names.get(name).copied())
                    .min()
            });
        found.unwrap_or_else(|| self.node(name, "task"))
    }
}

/// `s` as the inside of a DOT quoted string: quotes and backslashes escaped (a
/// backslash would start a label escape such as `\n`), control characters shown
/// escaped.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                for e in c.escape_default() {
                    if e == '\\' {
                        out.push_str("\\\\");
                    } else {
                        out.push(e);
                    }
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The DOT text of the tree `walk` meets and `dependences`; `title` labels the graph.
/// `longest`: which nodes are among the longest kinds of work, where the tree
/// gives it ([`longest_work`]); else they are added up by name.
pub fn render(
    walk: Walk,
    dependences: &[TaskEdge],
    title: &str,
    longest: Option<LongestWork>,
) -> String {
    let mut g = Graph::default();
    let kinds = g.add(walk, dependences, longest);
    let deps: Vec<(usize, usize, u64)> = dependences
        .iter()
        .map(|e| (g.task(&e.from), g.task(&e.to), e.count))
        .collect();

    // The longest nodes, and every end of a dependence (the graph's point).
    let mut order: Vec<usize> = (0..g.nodes.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&g.nodes[a], &g.nodes[b]);
        y.total_ns
            .cmp(&x.total_ns)
            .then_with(|| (&x.name, &x.kind).cmp(&(&y.name, &y.kind)))
    });
    let mut shown = vec![false; g.nodes.len()];
    for &i in order.iter().take(MAX_NODES) {
        shown[i] = true;
    }
    for &(a, b, _) in &deps {
        shown[a] = true;
        shown[b] = true;
    }
    // Left out: the kinds of work never added, and those added but not shown.
    let hidden = kinds.saturating_sub(g.nodes.len()) + shown.iter().filter(|s| !**s).count();
    let longest = g.nodes.iter().map(|n| n.total_ns).max().unwrap_or(0).max(1) as f64;

    let mut s = String::new();
    let _ = writeln!(s, "digraph kprof {{");
    let _ = writeln!(
        s,
        "  // kprof task graph: nodes are kinds of work by name (instances, inclusive time);"
    );
    let _ = writeln!(
        s,
        "  // solid edges parent -> child with the child's instances, dashed red edges declared dependences."
    );
    if hidden > 0 {
        let _ = writeln!(
            s,
            "  // {hidden} of {} nodes (the shortest) are left out, with their edges.",
            kinds.max(g.nodes.len())
        );
    }
    let _ = writeln!(
        s,
        "  graph [label=\"{}\", labelloc=t, rankdir=TB, fontname=\"Helvetica\"];",
        quoted(title)
    );
    let _ = writeln!(
        s,
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];"
    );
    let _ = writeln!(s, "  edge [fontname=\"Helvetica\", fontsize=9];");
    for &i in order.iter().filter(|&&i| shown[i]) {
        let n = &g.nodes[i];
        // White to orange by share of the longest node.
        let heat = n.total_ns as f64 / longest;
        let _ = writeln!(
            s,
            "  n{i} [label=\"{}\\n{}: {} x, {}\", fillcolor=\"0.08 {:.3} 1.0\", fullname=\"{}\", kind=\"{}\", count={}, total_ns={}];",
            quoted(&n.name),
            quoted(&n.kind),
            n.count,
            duration(n.total_ns as f64),
            0.05 + 0.7 * heat,
            quoted(&n.name),
            quoted(&n.kind),
            n.count,
            n.total_ns
        );
    }
    let mut calls: Vec<(&(usize, usize), &u64)> = g.calls.iter().collect();
    calls.sort();
    for (&(a, b), &count) in calls {
        if shown[a] && shown[b] {
            let _ = writeln!(
                s,
                "  n{a} -> n{b} [label=\"{count}\", type=\"call\", count={count}];"
            );
        }
    }
    for (a, b, count) in deps {
        let _ = writeln!(
            s,
            "  n{a} -> n{b} [label=\"dep {count}\", type=\"dependence\", count={count}, style=dashed, color=red, fontcolor=red, constraint=false];"
        );
    }
    let _ = writeln!(s, "}}");
    s
}

/// Writes the graph of the tree `walk` meets and `dependences` to `path`
/// (completely or not at all).
pub fn write(
    path: &Path,
    walk: Walk,
    dependences: &[TaskEdge],
    title: &str,
    longest: Option<LongestWork>,
) -> Result<(), OutputError> {
    let text = render(walk, dependences, title, longest);
    write_whole(path, |f| {
        f.write_all(text.as_bytes())
            .map_err(|source| OutputError::File {
                path: path.display().to_string(),
                source,
            })
    })
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::call_path::{walk_tree, CallPath};
    use crate::output::report::TreeNode;

    fn task(name: &str, total: u64, count: u64) -> TreeNode {
        TreeNode {
            kind: "omp_task".into(),
            ..TreeNode::user_region(name, total, total, count, vec![])
        }
    }

    #[test]
    fn nodes_by_name_calls_and_dependences() {
        let tree = vec![TreeNode::user_region(
            "main \"q\"",
            1000,
            100,
            1,
            vec![
                task("produce", 300, 3),
                task("consume", 200, 3),
                TreeNode::user_region("x", 10, 10, 2, vec![task("produce", 5, 1)]),
            ],
        )];
        let deps = vec![TaskEdge {
            from: "produce".into(),
            to: "consume".into(),
            count: 3,
        }];
        let text = render(&|v| walk_tree(&tree, v), &deps, "app\\1", None);
        assert!(text.contains("label=\"main \\\"q\\\"\\nuser_region: 1 x, 1.00 us\""));
        assert!(text.contains("graph [label=\"app\\\\1\""));
        // produce: one node for both call paths, 4 instances.
        assert!(
            text.contains("label=\"produce\\nomp_task: 4 x, 305 ns\""),
            "{text}"
        );
        assert!(text.contains("n0 -> n1 [label=\"3\", type=\"call\", count=3];"));
        assert!(text.contains("n1 -> n2 [label=\"dep 3\", type=\"dependence\", count=3,"));
        assert!(text.contains("n3 -> n1 [label=\"1\", type=\"call\", count=1];"));
        assert_eq!(text.matches(" -> n").count(), 5);
    }

    /// The graph from nodes sorted by key is the graph from names hashed:
    /// more kinds of work than are shown, ties at the last one, recursion.
    #[test]
    fn longest_work_by_node_gives_the_same_graph() {
        let mut x: u64 = 99;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        fn grow(depth: usize, next: &mut dyn FnMut(u64) -> u64) -> Vec<TreeNode> {
            let n = if depth < 3 { next(9) } else { 0 };
            (0..n)
                .map(|_| {
                    let name = format!("k{}", next(700));
                    // Ties: many totals alike.
                    let total = 100 * (1 + next(30));
                    let kids = grow(depth + 1, next);
                    let mut node = TreeNode::user_region(&name, total, total / 2, 1, kids);
                    if next(5) == 0 {
                        node.kind = "omp_task".into();
                    }
                    node
                })
                .collect()
        }
        let tree: Vec<TreeNode> = (0..40).flat_map(|_| grow(0, &mut next)).collect();
        let mut nodes: Vec<(usize, &TreeNode)> = Vec::new();
        fn gather<'a>(t: &'a [TreeNode], d: usize, out: &mut Vec<(usize, &'a TreeNode)>) {
            for n in t {
                out.push((d, n));
                gather(&n.children, d + 1, out);
            }
        }
        gather(&tree, 0, &mut nodes);
        let longest = longest_work(
            nodes.len(),
            |visit| {
                for (i, &(d, _)) in nodes.iter().enumerate() {
                    visit(d, i as u32);
                }
            },
            |i| {
                let n = nodes[i as usize].1;
                (n.kind.as_ref(), n.name.as_ref())
            },
            |i| nodes[i as usize].1.total_ns,
            MAX_NODES,
        );
        assert!(longest.kinds > MAX_NODES, "{} kinds", longest.kinds);
        let deps = vec![TaskEdge {
            from: "k1".into(),
            to: "k2".into(),
            count: 1,
        }];
        let walk = |v: &mut dyn FnMut(usize, &dyn CallPath)| walk_tree(&tree, v);
        let hashed = render(&walk, &deps, "t", None);
        let sorted = render(&walk, &deps, "t", Some(longest));
        assert!(hashed.contains("are left out"));
        assert_eq!(hashed, sorted);
    }

    #[test]
    fn large_graphs_keep_the_longest_nodes() {
        let children: Vec<TreeNode> = (0..MAX_NODES as u64 + 10)
            .map(|i| TreeNode::user_region(&format!("k{i}"), 10 + i, 10 + i, 1, vec![]))
            .collect();
        let tree = vec![TreeNode::user_region("main", 1 << 40, 1, 1, children)];
        let text = render(&|v| walk_tree(&tree, v), &[], "t", None);
        assert_eq!(text.matches("[label=\"k").count(), MAX_NODES - 1);
        assert!(text.contains("// 11 of 411 nodes (the shortest) are left out"));
        assert!(!text.contains("\"k0\\n"));
    }
}
