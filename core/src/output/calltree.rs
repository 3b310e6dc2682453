//! The call-path tree as the outputs read it: node by node, depth first, so that a
//! profile of a million call paths is written without a second copy of its tree.
//! The runtime walks its merged tree ([`crate::consume::profile::merge`]) and makes
//! each node's report fields only for the moment it is written; `kprof report`
//! walks the tree it read from `profile.json`.

use crate::output::flat::{flatten, FlatTop};
use crate::output::report::TreeNode;
use crate::output::taskgraph::LongestWork;

/// A call-path tree that the outputs (profile files, summary, `kprof report`) read,
/// from several threads at once.
pub trait CallTree: Sync {
    /// Calls `visit(depth, node)` for every node, depth first, parents before
    /// their children, siblings in order (the roots at depth 0). `node.children`
    /// is not to be read: a streamed tree passes each node without them.
    fn walk(&self, visit: &mut dyn FnMut(usize, &TreeNode));

    /// As [`CallTree::walk`], for the views that never read a node's instance
    /// samples (`TreeNode::samples` may then be `None`): only `profile.json`
    /// shows them, and sorting each shown node's sample is most of what making
    /// its node costs, once per view and end of run.
    fn walk_without_samples(&self, visit: &mut dyn FnMut(usize, &TreeNode)) {
        self.walk(visit)
    }

    /// The flat view's `top` rows by exclusive time, their number, and the fences
    /// (see [`FlatTop`]).
    fn flat_top(&self, top: usize) -> FlatTop<'_>;

    /// Whether any node is of one of `kinds`: a block about those kinds walks
    /// the tree only when there is something to show.
    fn has_kind(&self, kinds: &[&str]) -> bool {
        let mut found = false;
        self.walk_without_samples(&mut |_, n| found |= kinds.contains(&n.kind.as_ref()));
        found
    }

    /// Which nodes belong to the `top` longest kinds of work (for
    /// `taskgraph.dot`), where the tree knows its nodes by number; `None`: the
    /// graph adds them up by name itself.
    fn longest_work(&self, _top: usize) -> Option<LongestWork> {
        None
    }

    /// Whether any node has a team of threads (its time spread over them).
    fn has_teams(&self) -> bool {
        let mut found = false;
        self.walk_without_samples(&mut |_, n| found |= n.threads.is_some());
        found
    }
}

impl CallTree for Vec<TreeNode> {
    fn walk(&self, visit: &mut dyn FnMut(usize, &TreeNode)) {
        fn go(nodes: &[TreeNode], depth: usize, visit: &mut dyn FnMut(usize, &TreeNode)) {
            for n in nodes {
                visit(depth, n);
                go(&n.children, depth + 1, visit);
            }
        }
        go(self, 0, visit);
    }

    fn flat_top(&self, top: usize) -> FlatTop<'_> {
        let rows = flatten(self);
        FlatTop::select(rows, top)
    }
}
