//! `tasktree.json`: the call-path tree in the literal form that Hatchet
//! (`hatchet.GraphFrame.from_literal`) reads as it is: a list of roots, each
//! `{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}`. Times are in
//! ns; `time (inc)` is inclusive, `time` exclusive (Hatchet's default metric).
//!
//! Streamed through serde from the tree: no copy of it is built (a profile can have
//! a million nodes).

use std::io::Write;
use std::path::Path;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::output::call_path::CallPath;
use crate::output::{write_whole, OutputError};

/// Writes the tree of `roots` to `path` (completely or not at all).
pub fn write<T: CallPath>(path: &Path, roots: &[T]) -> Result<(), OutputError> {
    write_whole(path, |f| {
        serde_json::to_writer(&mut *f, &Nodes(roots)).map_err(|source| OutputError::Encode {
            path: path.display().to_string(),
            source,
        })?;
        f.write_all(b"\n").map_err(|source| OutputError::File {
            path: path.display().to_string(),
            source,
        })
    })
    .map(drop)
}

/// A list of sibling nodes.
struct Nodes<'a, T>(&'a [T]);

/// One node with its subtree.
struct Node<'a, T>(&'a T);

/// A node's frame: what Hatchet identifies it by.
struct Frame<'a, T>(&'a T);

/// A node's metrics.
struct Metrics<'a, T>(&'a T);

impl<T: CallPath> Serialize for Nodes<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for n in self.0 {
            seq.serialize_element(&Node(n))?;
        }
        seq.end()
    }
}

impl<T: CallPath> Serialize for Node<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        map.serialize_entry("frame", &Frame(self.0))?;
        map.serialize_entry("metrics", &Metrics(self.0))?;
        map.serialize_entry("children", &Nodes(self.0.children()))?;
        map.end()
    }
}

impl<T: CallPath> Serialize for Frame<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("name", self.0.name())?;
        map.serialize_entry("type", self.0.kind())?;
        map.end()
    }
}

impl<T: CallPath> Serialize for Metrics<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut list: Vec<(&'static str, f64)> = Vec::with_capacity(16);
        self.0.metrics(&mut |k, v| list.push((k, v)));
        let mut map = s.serialize_map(Some(list.len()))?;
        for (k, v) in list {
            // Whole numbers as integers (counts and ns read back exactly); JSON has
            // no NaN or infinity, which become 0.
            if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) {
                map.serialize_entry(k, &(v as u64))?;
            } else if v.is_finite() {
                map.serialize_entry(k, &v)?;
            } else {
                map.serialize_entry(k, &0u64)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::TreeNode;

    #[test]
    fn literal_form_with_every_metric_on_every_node() {
        let tree = vec![TreeNode::user_region(
            "main",
            1000,
            400,
            1,
            vec![TreeNode::user_region("solve \"x\"", 600, 600, 3, vec![])],
        )];
        let text = serde_json::to_string(&Nodes(&tree)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let root = &v[0];
        assert_eq!(root["frame"]["name"], "main");
        assert_eq!(root["frame"]["type"], "user_region");
        assert_eq!(root["metrics"]["time (inc)"], 1000);
        assert_eq!(root["metrics"]["time"], 400);
        let child = &root["children"][0];
        assert_eq!(child["frame"]["name"], "solve \"x\"");
        assert_eq!(child["metrics"]["count"], 3);
        assert_eq!(child["metrics"]["mean (inc)"], 200);
        assert_eq!(child["children"], serde_json::json!([]));
        let keys = |n: &serde_json::Value| {
            n["metrics"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(root), keys(child));
        assert!(keys(root).contains(&"thread max (inc)".to_string()));
    }
}
