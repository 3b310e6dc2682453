//! `tasktree.json`: the call-path tree in the literal form that Hatchet
//! (`hatchet.GraphFrame.from_literal`) reads as it is: a list of roots, each
//! `{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}`. Times are in
//! ns; `time (inc)` is inclusive, `time` exclusive (Hatchet's default metric).
//!
//! Written node by node as the tree is walked (nested arrays opened and closed by
//! depth): no copy of the tree is built (a profile can have a million nodes).

use std::io::Write;
use std::path::Path;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::output::call_path::{CallPath, Walk};
use crate::output::nested_json::NestedJson;
use crate::output::{write_whole, OutputError};

/// Writes the tree `walk` meets to `path` (completely or not at all).
pub fn write(path: &Path, walk: Walk) -> Result<(), OutputError> {
    let file = |source| OutputError::File {
        path: path.display().to_string(),
        source,
    };
    write_whole(path, |f| {
        f.write_all(b"[").map_err(file)?;
        let mut nodes = NestedJson::new(f);
        walk(&mut |depth, n| nodes.node(depth, |buf| literal(buf, n)));
        nodes.finish().map_err(file)?;
        f.write_all(b"]\n").map_err(file)
    })
    .map(drop)
}

/// Hatchet's literal form of node `n`, opened with its `children` array.
fn literal(buf: &mut Vec<u8>, n: &dyn CallPath) {
    buf.extend_from_slice(br#"{"frame":"#);
    let frame = serde_json::to_writer(&mut *buf, &Frame(n));
    buf.extend_from_slice(br#","metrics":"#);
    let metrics = serde_json::to_writer(&mut *buf, &Metrics(n));
    // Strings and numbers only: serde_json cannot fail on them.
    debug_assert!(frame.is_ok() && metrics.is_ok());
    buf.extend_from_slice(br#","children":["#);
}

/// A node's frame: what Hatchet identifies it by.
struct Frame<'a>(&'a dyn CallPath);

/// A node's metrics.
struct Metrics<'a>(&'a dyn CallPath);

impl Serialize for Frame<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("name", self.0.name())?;
        map.serialize_entry("type", self.0.kind())?;
        map.end()
    }
}

impl Serialize for Metrics<'_> {
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
    use crate::output::call_path::walk_tree;
    use crate::output::report::TreeNode;

    #[test]
    fn literal_form_with_every_metric_on_every_node() {
        let tree = vec![
            TreeNode::user_region(
                "main",
                1000,
                400,
                1,
                vec![TreeNode::user_region("solve \"x\"", 600, 600, 3, vec![])],
            ),
            TreeNode::user_region("io", 10, 10, 1, vec![]),
        ];
        let mut out = Vec::new();
        out.push(b'[');
        let mut nodes = NestedJson::new(&mut out);
        walk_tree(&tree, &mut |d, n| nodes.node(d, |buf| literal(buf, n)));
        nodes.finish().unwrap();
        out.push(b']');
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2, "{v}");
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
        assert_eq!(v[1]["frame"]["name"], "io");
    }
}
