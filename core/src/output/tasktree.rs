//! `tasktree.json`: the call-path tree in the literal form that Hatchet
//! (`hatchet.GraphFrame.from_literal`) reads as it is: a list of roots, each
//! `{"frame": {"name", "type"}, "metrics": {...}, "children": [...]}`. Times are in
//! ns; `time (inc)` is inclusive, `time` exclusive (Hatchet's default metric).
//!
//! Written node by node as the tree is walked (nested arrays opened and closed by
//! depth): no copy of the tree is built (a profile can have a million nodes).

use std::io::Write;
use std::path::Path;

use crate::output::call_path::{CallPath, Walk};
use crate::output::files::{write_whole, OutputError};
use crate::output::nested_json::NestedJson;

/// Writes the tree `walk` meets to `path` (completely or not at all), without
/// the metrics named in `omit`.
pub fn write(path: &Path, walk: Walk, omit: &[&str]) -> Result<(), OutputError> {
    let file = |source| OutputError::File {
        path: path.display().to_string(),
        source,
    };
    write_whole(path, |f| {
        f.write_all(b"[").map_err(file)?;
        let mut nodes = NestedJson::new(f);
        let mut number = itoa::Buffer::new();
        walk(&mut |depth, n| nodes.node(depth, |buf| literal(buf, n, omit, &mut number)));
        nodes.finish().map_err(file)?;
        f.write_all(b"]\n").map_err(file)
    })
    .map(drop)
}

/// Hatchet's literal form of node `n`, opened with its `children` array.
///
/// Written by hand but for the two strings: a million nodes carry a dozen
/// metrics each, whose names are literals that need no escaping.
fn literal(buf: &mut Vec<u8>, n: &dyn CallPath, omit: &[&str], number: &mut itoa::Buffer) {
    buf.extend_from_slice(br#"{"frame":{"name":"#);
    let name = serde_json::to_writer(&mut *buf, n.name());
    buf.extend_from_slice(br#","type":"#);
    let kind = serde_json::to_writer(&mut *buf, n.kind());
    // Strings only: serde_json cannot fail on them.
    debug_assert!(name.is_ok() && kind.is_ok());
    buf.extend_from_slice(br#"},"metrics":{"#);
    let mut first = true;
    n.metrics(&mut |k, v| {
        if omit.contains(&k) {
            return;
        }
        debug_assert!(!k.contains(['"', '\\']), "{k}");
        if !first {
            buf.push(b',');
        }
        first = false;
        buf.push(b'"');
        buf.extend_from_slice(k.as_bytes());
        buf.extend_from_slice(b"\":");
        // Whole numbers as integers (counts and ns read back exactly); JSON has
        // no NaN or infinity, which become 0.
        if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) {
            buf.extend_from_slice(number.format(v as u64).as_bytes());
        } else if v.is_finite() {
            let r = serde_json::to_writer(&mut *buf, &v);
            debug_assert!(r.is_ok());
        } else {
            buf.push(b'0');
        }
    });
    buf.extend_from_slice(br#"},"children":["#);
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
        let mut number = itoa::Buffer::new();
        walk_tree(&tree, &mut |d, n| {
            nodes.node(d, |buf| literal(buf, n, &[], &mut number))
        });
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

    #[test]
    fn a_tree_without_teams_leaves_their_columns_out() {
        let tree = vec![TreeNode::user_region("main", 1000, 1000, 1, vec![])];
        let mut out = Vec::new();
        let mut nodes = NestedJson::new(&mut out);
        let mut number = itoa::Buffer::new();
        let omit = crate::output::call_path::TEAM_METRICS;
        walk_tree(&tree, &mut |d, n| {
            nodes.node(d, |buf| literal(buf, n, &omit, &mut number))
        });
        nodes.finish().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let keys: Vec<&String> = v["metrics"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "count",
                "max (inc)",
                "mean (inc)",
                "min (inc)",
                "stddev (inc)",
                "time",
                "time (inc)"
            ],
            "{v}"
        );
    }
}
