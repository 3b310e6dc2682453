//! `profile.csv`: one row per call-path tree node, parents before children.

use std::path::Path;

use crate::output::report::{Report, TreeNode};
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

/// Writes the tree of `report` to `path` (completely or not at all).
pub fn write(path: &Path, report: &Report) -> Result<(), OutputError> {
    let err = |e: csv::Error| OutputError::File {
        path: path.display().to_string(),
        source: e.into(),
    };
    write_whole(path, |f| {
        let mut w = csv::Writer::from_writer(f);
        w.write_record(HEADER).map_err(err)?;
        let mut row = Row::default();
        for n in &report.tree {
            row.write(&mut w, n, 0).map_err(err)?;
        }
        w.flush().map_err(|source| OutputError::File {
            path: path.display().to_string(),
            source,
        })
    })
    .map(drop)
}

/// What rows share while the tree is walked: the path so far and a number buffer,
/// so that a row costs no allocation (a profile can have a million nodes).
#[derive(Default)]
struct Row {
    path: String,
    number: String,
}

impl Row {
    fn write<W: std::io::Write>(
        &mut self,
        w: &mut csv::Writer<W>,
        n: &TreeNode,
        depth: usize,
    ) -> csv::Result<()> {
        let parent_len = self.path.len();
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
        w.write_field(&n.name)?;
        w.write_field(&n.kind)?;
        w.write_field(n.device.as_deref().unwrap_or_default())?;
        match n.instance {
            Some(i) => self.field(w, format_args!("{i}"))?,
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
            self.field(w, format_args!("{v}"))?;
        }
        for v in [n.mean_ns, n.stddev_ns] {
            // One decimal, from integers: exact float formatting is the slowest
            // part of a row.
            let tenths = (v * 10.0).round().max(0.0) as u64;
            self.field(w, format_args!("{}.{}", tenths / 10, tenths % 10))?;
        }
        w.write_record(None::<&[u8]>)?;
        for c in &n.children {
            self.write(w, c, depth + 1)?;
        }
        self.path.truncate(parent_len);
        Ok(())
    }

    fn field<W: std::io::Write>(
        &mut self,
        w: &mut csv::Writer<W>,
        v: std::fmt::Arguments,
    ) -> csv::Result<()> {
        use std::fmt::Write as _;
        self.number.clear();
        let _ = self.number.write_fmt(v);
        w.write_field(&self.number)
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
        let tree = node("a;b", vec![node("c\\d", vec![node("e", vec![])])]);
        Row::default().write(&mut w, &tree, 0).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(
            text,
            "a\\;b,a;b,user_region,,,0,3,1000,400,100,600,333.3,0.0\n\
             a\\;b;c\\\\d,c\\d,user_region,,,1,3,1000,400,100,600,333.3,0.0\n\
             a\\;b;c\\\\d;e,e,user_region,,,2,3,1000,400,100,600,333.3,0.0\n"
        );
    }
}
