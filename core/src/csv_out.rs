//! `profile.csv`: one row per call-path tree node, parents before children.

use std::path::Path;

use crate::output::{create_file, OutputError};
use crate::report::{Report, TreeNode};

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

/// Writes the tree of `report` to `path`.
pub fn write(path: &Path, report: &Report) -> Result<(), OutputError> {
    let err = |e: csv::Error| OutputError::File {
        path: path.display().to_string(),
        source: e.into(),
    };
    let mut w = csv::Writer::from_writer(create_file(path)?);
    w.write_record(HEADER).map_err(err)?;
    let mut prefix = Vec::new();
    for n in &report.tree {
        row(&mut w, n, &mut prefix).map_err(err)?;
    }
    w.flush().map_err(|source| OutputError::File {
        path: path.display().to_string(),
        source,
    })
}

fn row<W: std::io::Write>(
    w: &mut csv::Writer<W>,
    n: &TreeNode,
    prefix: &mut Vec<String>,
) -> csv::Result<()> {
    prefix.push(n.name.clone());
    w.write_record([
        prefix.join(";"),
        n.name.clone(),
        n.kind.clone(),
        n.device.clone().unwrap_or_default(),
        n.instance.map(|i| i.to_string()).unwrap_or_default(),
        (prefix.len() - 1).to_string(),
        n.count.to_string(),
        n.total_ns.to_string(),
        n.self_ns.to_string(),
        n.min_ns.to_string(),
        n.max_ns.to_string(),
        format!("{:.1}", n.mean_ns),
        format!("{:.1}", n.stddev_ns),
    ])?;
    for c in &n.children {
        row(w, c, prefix)?;
    }
    prefix.pop();
    Ok(())
}
