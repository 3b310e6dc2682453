//! The call paths of every run of a diff, interned as a tree: a path is its
//! parent path's id and its last step. Memory grows with the number of call
//! paths, not with their depth squared (a 10,000-deep profile has 10,000
//! paths whose names, written out, would hold 50 million steps); a path is
//! written out only for a row that is printed.

use std::collections::HashMap;

use kprof_core::output::csv::{path_parts, PATH_GAP};

/// One step of a call path: name, kind and device (empty when none).
pub type Step = (String, String, String);

/// A call path's id in [`Paths`].
pub type PathId = u32;

/// No parent: a root's.
const ROOT: PathId = PathId::MAX;

/// Every call path seen, each stored once.
#[derive(Default)]
pub struct Paths {
    /// Each distinct step once.
    steps: Vec<Step>,
    step_ids: HashMap<Step, u32>,
    /// Per path: its parent's id (or [`ROOT`]) and its last step.
    nodes: Vec<(PathId, u32)>,
    ids: HashMap<(PathId, u32), PathId>,
}

impl Paths {
    /// The id of `parent`'s child by `step` (`parent` None: a root).
    pub fn child(&mut self, parent: Option<PathId>, step: Step) -> PathId {
        let s = match self.step_ids.get(&step) {
            Some(&s) => s,
            None => {
                let s = self.steps.len() as u32;
                self.steps.push(step.clone());
                self.step_ids.insert(step, s);
                s
            }
        };
        let key = (parent.unwrap_or(ROOT), s);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.nodes.len() as PathId;
        self.nodes.push(key);
        self.ids.insert(key, id);
        id
    }

    /// A path as shown: `outer / inner [device]`, a deep one bounded as
    /// `profile.csv` bounds its paths (its first and last names around `...`).
    pub fn shown(&self, id: PathId) -> String {
        let mut steps = Vec::new();
        let mut at = id;
        while at != ROOT {
            let (parent, step) = self.nodes[at as usize];
            steps.push(step);
            at = parent;
        }
        steps.reverse();
        let (first, last) = path_parts(steps.len());
        let mut parts: Vec<String> = steps[first]
            .iter()
            .map(|&s| segment(&self.steps[s as usize]))
            .collect();
        if !last.is_empty() {
            parts.push(PATH_GAP.to_string());
            parts.extend(
                steps[last]
                    .iter()
                    .map(|&s| segment(&self.steps[s as usize])),
            );
        }
        parts.join(" / ")
    }

    /// Each path's place in the order of the paths as shown: the tree walked
    /// depth first, siblings by their shown step (then name, kind, device). For
    /// names without control characters or " / " this is the order of the
    /// shown strings, which it gives without writing them out.
    pub fn order(&self) -> Vec<u32> {
        let mut kids: Vec<Vec<PathId>> = vec![Vec::new(); self.nodes.len()];
        let mut roots = Vec::new();
        for (id, &(parent, _)) in self.nodes.iter().enumerate() {
            if parent == ROOT {
                roots.push(id as PathId);
            } else {
                kids[parent as usize].push(id as PathId);
            }
        }
        let shown: Vec<String> = self.steps.iter().map(segment).collect();
        let by_step = |list: &mut Vec<PathId>| {
            list.sort_by(|&a, &b| {
                let (sa, sb) = (self.nodes[a as usize].1, self.nodes[b as usize].1);
                shown[sa as usize]
                    .cmp(&shown[sb as usize])
                    .then_with(|| self.steps[sa as usize].cmp(&self.steps[sb as usize]))
            })
        };
        by_step(&mut roots);
        let mut rank = vec![0u32; self.nodes.len()];
        let mut next = 0u32;
        // A stack, not recursion: a profile can be 100,000 deep.
        let mut stack: Vec<PathId> = roots.into_iter().rev().collect();
        while let Some(id) = stack.pop() {
            rank[id as usize] = next;
            next += 1;
            let mut list = std::mem::take(&mut kids[id as usize]);
            by_step(&mut list);
            stack.extend(list.into_iter().rev());
        }
        rank
    }
}

/// A step as shown: its name, and its device in brackets.
fn segment((name, _, device): &Step) -> String {
    if device.is_empty() {
        name.clone()
    } else {
        format!("{name} [{device}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, device: &str) -> Step {
        (name.into(), "region".into(), device.into())
    }

    #[test]
    fn paths_are_stored_once_and_ordered_as_shown() {
        let mut p = Paths::default();
        let b = p.child(None, step("b", ""));
        let a = p.child(None, step("a", ""));
        let a2 = p.child(None, step("a2", ""));
        let ax = p.child(Some(a), step("x", "gpu 0"));
        let ay = p.child(Some(a), step("y", ""));
        assert_eq!(p.child(Some(a), step("x", "gpu 0")), ax);
        assert_eq!(p.nodes.len(), 5);
        assert_eq!(p.shown(ax), "a / x [gpu 0]");
        let rank = p.order();
        let mut ids = [b, a, a2, ax, ay];
        ids.sort_by_key(|&i| rank[i as usize]);
        let mut strings: Vec<String> = ids.iter().map(|&i| p.shown(i)).collect();
        let in_order = strings.clone();
        strings.sort();
        assert_eq!(in_order, strings);
        assert_eq!(in_order, ["a", "a / x [gpu 0]", "a / y", "a2", "b"]);
    }

    #[test]
    fn a_deep_path_is_shown_bounded() {
        let mut p = Paths::default();
        let mut at = None;
        for i in 0..1000 {
            at = Some(p.child(at, step(&format!("d{i}"), "")));
        }
        let text = p.shown(at.unwrap());
        let names: Vec<&str> = text.split(" / ").collect();
        assert_eq!(names.len(), 64);
        assert_eq!(names[..2], ["d0", "d1"]);
        assert_eq!(names[32], "...");
        assert_eq!(names[63], "d999");
    }
}
