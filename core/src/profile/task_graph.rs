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
            _ => self.unresolved += 1,
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
        assert_eq!(g.unresolved, 1);
    }
}
