//! `profile.csv`: one row per call-path tree node, parents before children.

use std::path::Path;

use crate::output::calltree::CallTree;
use crate::output::report::TreeNode;
use crate::output::{write_whole, OutputError};

/// Column names, in order.
pub const HEADER: [&str; 13] = [
    "path",
    "name",
    "kind",
    "device",
    "instance",
    "depth",
    "count",
    "total_ns",
    "self_ns",
    "min_ns",
    "max_ns",
    "mean_ns",
    "stddev_ns",
];

/// Writes `tree` to `path` (completely or not at all).
pub fn write(path: &Path, tree: &dyn CallTree) -> Result<(), OutputError> {
    let err = |e: csv::Error| OutputError::File {
        path: path.display().to_string(),
        source: e.into(),
    };
    write_whole(path, |f| {
        let mut w = csv::Writer::from_writer(f);
        w.write_record(HEADER).map_err(err)?;
        let mut row = Row::default();
        let mut result = Ok(());
        tree.walk(&mut |depth, n| {
            if result.is_ok() {
                result = row.write(&mut w, n, depth);
            }
        });
        result.map_err(err)?;
        w.flush().map_err(|source| OutputError::File {
            path: path.display().to_string(),
            source,
        })
    })
    .map(drop)
}

/// What rows share while the tree is walked: the path so far (and where each
/// enclosing node's part of it ends) and number buffers, so that a row costs no
/// allocation (a profile can have a million nodes; integers go through `itoa`,
/// which formats several times faster than `fmt`).
#[derive(Default)]
struct Row {
    path: String,
    ends: Vec<usize>,
    number: itoa::Buffer,
    decimal: String,
}

impl Row {
    fn write<W: std::io::Write>(
        &mut self,
        w: &mut csv::Writer<W>,
        n: &TreeNode,
        depth: usize,
    ) -> csv::Result<()> {
        self.ends.truncate(depth);
        self.path.truncate(self.ends.last().copied().unwrap_or(0));
        if depth > 0 {
            self.path.push(';');
        }
        // `;` joins the path: a `;` (or `\`) inside a name is escaped with `\`.
        for c in n.name.chars() {
            if c == ';' || c == '\\' {
                self.path.push('\\');
            }
            self.path.push(c);
        }
        w.write_field(&self.path)?;
        w.write_field(n.name.as_bytes())?;
        w.write_field(n.kind.as_bytes())?;
        w.write_field(n.device.as_deref().unwrap_or_default())?;
        match n.instance {
            Some(i) => w.write_field(self.number.format(i))?,
            None => w.write_field("")?,
        }
        for v in [
            depth as u64,
            n.count,
            n.total_ns,
            n.self_ns,
            n.min_ns,
            n.max_ns,
        ] {
            w.write_field(self.number.format(v))?;
        }
        for v in [n.mean_ns, n.stddev_ns] {
            // One decimal, from integers: exact float formatting is the slowest
            // part of a row.
            let tenths = (v * 10.0).round().max(0.0) as u64;
            self.decimal.clear();
            self.decimal.push_str(self.number.format(tenths / 10));
            self.decimal.push('.');
            self.decimal.push(char::from(b'0' + (tenths % 10) as u8));
            w.write_field(&self.decimal)?;
        }
        w.write_record(None::<&[u8]>)?;
        self.ends.push(self.path.len());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, children: Vec<TreeNode>) -> TreeNode {
        TreeNode {
            min_ns: 100,
            max_ns: 600,
            mean_ns: 333.333,
            stddev_ns: 0.04,
            ..TreeNode::user_region(name, 1000, 400, 3, children)
        }
    }

    #[test]
    fn rows_with_escaped_paths() {
        let mut w = csv::Writer::from_writer(Vec::new());
        let tree = vec![
            node("a;b", vec![node("c\\d", vec![node("e", vec![])])]),
            node("f", vec![]),
        ];
        let mut row = Row::default();
        tree.walk(&mut |depth, n| row.write(&mut w, n, depth).unwrap());
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(
            text,
            "a\\;b,a;b,user_region,,,0,3,1000,400,100,600,333.3,0.0\n\
             a\\;b;c\\\\d,c\\d,user_region,,,1,3,1000,400,100,600,333.3,0.0\n\
             a\\;b;c\\\\d;e,e,user_region,,,2,3,1000,400,100,600,333.3,0.0\n\
             f,f,user_region,,,0,3,1000,400,100,600,333.3,0.0\n"
        );
    }
}
