//! The task graph: dependence edges between task instances, aggregated by the
//! names of the tasks (their creation sites), so a program's declared dependences
//! (`depend(out: x)` -> `depend(in: x)`) read as edges between source locations.

use rustc_hash::FxHashMap;

/// Task instances remembered for naming edges; past this, new edges whose ends
/// are unknown count as unresolved rather than grow memory without bound.
const MAX_TASKS: usize = 1 << 20;

/// Dependence edges seen so far.
#[derive(Default)]
pub struct TaskGraph {
    /// Task GUID -> name id (of the task's creation).
    names: FxHashMap<u64, u32>,
    /// (from name, to name) -> instances.
    pub edges: FxHashMap<(u32, u32), u64>,
    /// Edges with an end whose task was never seen.
    pub unresolved: u64,
    /// Edges whose ends were not known here (a task another thread created):
    /// named when the threads' graphs are merged.
    pending: Vec<(u64, u64)>,
}

impl TaskGraph {
    /// Remembers the name of task `guid`.
    pub fn task(&mut self, guid: u64, name: u32) {
        if self.names.len() >= MAX_TASKS {
            self.names.clear();
        }
        self.names.insert(guid, name);
    }

    /// Records the edge `from` -> `to`.
    pub fn edge(&mut self, from: u64, to: u64) {
        match (self.names.get(&from), self.names.get(&to)) {
            (Some(&f), Some(&t)) => *self.edges.entry((f, t)).or_default() += 1,
            _ if self.pending.len() < MAX_TASKS => self.pending.push((from, to)),
            _ => self.unresolved += 1,
        }
    }

    /// Adds another thread's tasks and named edges, with `name` giving the final
    /// id of each of its name ids (call for every thread, then
    /// [`TaskGraph::resolve_pending`] with each thread's graph).
    pub fn absorb(&mut self, o: &TaskGraph, mut name: impl FnMut(u32) -> u32) {
        for (&guid, &n) in &o.names {
            let n = name(n);
            self.task(guid, n);
        }
        for (&(f, t), &n) in &o.edges {
            *self.edges.entry((name(f), name(t))).or_default() += n;
        }
        self.unresolved += o.unresolved;
    }

    /// Names the edges `o` could not, with every thread's tasks known here.
    pub fn resolve_pending(&mut self, o: &TaskGraph) {
        for &(from, to) in &o.pending {
            match (self.names.get(&from), self.names.get(&to)) {
                (Some(&f), Some(&t)) => *self.edges.entry((f, t)).or_default() += 1,
                _ => self.unresolved += 1,
            }
        }
    }

    /// Number of tasks remembered.
    pub fn tasks(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_by_task_names() {
        let mut g = TaskGraph::default();
        g.task(1, 10);
        g.task(2, 20);
        g.task(3, 20);
        g.edge(1, 2);
        g.edge(1, 3);
        g.edge(1, 99);
        assert_eq!(g.edges.get(&(10, 20)), Some(&2));
        // Task 99 is another thread's: named once the graphs are merged.
        let mut other = TaskGraph::default();
        other.task(99, 30);
        other.edge(99, 7);
        let mut all = TaskGraph::default();
        all.absorb(&g, |n| n);
        all.absorb(&other, |n| n + 1000);
        all.resolve_pending(&g);
        all.resolve_pending(&other);
        assert_eq!(all.edges.get(&(10, 1030)), Some(&1));
        assert_eq!(all.edges.get(&(10, 20)), Some(&2));
        assert_eq!((all.unresolved, all.tasks()), (1, 4));
    }
}
