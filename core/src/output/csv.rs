//! `profile.csv`: one row per call-path tree node, parents before children.
//! Each row is as long as its node's own fields and at most [`PATH_NAMES`]
//! names of its path, whatever its depth: the file grows with the nodes, not
//! with the square of the depth (`id` and `parent` link the rows into the tree).

use std::ops::Range;
use std::path::Path;

use crate::output::calltree::CallTree;
use crate::output::files::{write_whole, OutputError};
use crate::output::flat::{own_team, per_thread, TeamStack};
use crate::output::report::TreeNode;

/// Column names, in order.
pub const HEADER: [&str; 18] = [
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
    "id",
    "parent",
    "threads",
    "per_thread_total_ns",
    "per_thread_self_ns",
];

/// Most names a row's `path` holds: a longer path keeps its first
/// `PATH_NAMES / 2` and last `PATH_NAMES / 2 - 1` names, with [`PATH_GAP`]
/// between them.
pub const PATH_NAMES: usize = 64;

/// What stands for the names left out of a long path.
pub const PATH_GAP: &str = "...";

/// Which of a path's `len` names a row shows: the first ones, then (when not
/// empty) the last ones after [`PATH_GAP`].
pub fn path_parts(len: usize) -> (Range<usize>, Range<usize>) {
    if len <= PATH_NAMES {
        (0..len, len..len)
    } else {
        (0..PATH_NAMES / 2, len - (PATH_NAMES / 2 - 1)..len)
    }
}

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
        tree.walk_without_samples(&mut |depth, n| {
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
/// enclosing node's part of it ends), the enclosing nodes' ids and teams, and
/// number buffers, so that a row costs no allocation (a profile can have a
/// million nodes; integers go through `itoa`, which formats several times
/// faster than `fmt`).
#[derive(Default)]
struct Row {
    path: String,
    ends: Vec<usize>,
    /// The row's `path` when the path is cut.
    shown: String,
    ids: Vec<u64>,
    next_id: u64,
    teams: TeamStack,
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
        self.ids.truncate(depth);
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
        self.ends.push(self.path.len());
        let (first, last) = path_parts(depth + 1);
        if last.is_empty() {
            w.write_field(&self.path)?;
        } else {
            // The first names, the gap, the last names (from the `;` before them).
            self.shown.clear();
            self.shown.push_str(&self.path[..self.ends[first.end - 1]]);
            self.shown.push(';');
            self.shown.push_str(PATH_GAP);
            self.shown.push_str(&self.path[self.ends[last.start - 1]..]);
            w.write_field(&self.shown)?;
        }
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
        let id = self.next_id;
        self.next_id += 1;
        w.write_field(self.number.format(id))?;
        match self.ids.last() {
            Some(&p) => w.write_field(self.number.format(p))?,
            None => w.write_field("")?,
        }
        self.ids.push(id);
        let team = self.teams.enter(depth, own_team(n));
        for v in [
            u64::from(team),
            per_thread(n.total_ns, team),
            per_thread(n.self_ns, team),
        ] {
            w.write_field(self.number.format(v))?;
        }
        w.write_record(None::<&[u8]>)?;
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
        tree.walk_without_samples(&mut |depth, n| row.write(&mut w, n, depth).unwrap());
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(
            text,
            "a\\;b,a;b,user_region,,,0,3,1000,400,100,600,333.3,0.0,0,,1,1000,400\n\
             a\\;b;c\\\\d,c\\d,user_region,,,1,3,1000,400,100,600,333.3,0.0,1,0,1,1000,400\n\
             a\\;b;c\\\\d;e,e,user_region,,,2,3,1000,400,100,600,333.3,0.0,2,1,1,1000,400\n\
             f,f,user_region,,,0,3,1000,400,100,600,333.3,0.0,3,,1,1000,400\n"
        );
    }

    /// A team's node and the nodes inside it carry its threads and their times
    /// per thread; a node with its own team of one thread has that one.
    #[test]
    fn teams_give_times_per_thread() {
        let team = |threads: u32| {
            Some(Box::new(crate::output::report::ThreadSpread {
                threads,
                min_ns: 0,
                max_ns: 0,
                mean_ns: 0.0,
                imbalance: 1.0,
            }))
        };
        let mut single = node("single", vec![]);
        single.threads = team(1);
        let mut task = node("task", vec![node("work", vec![]), single]);
        task.threads = team(3);
        let tree = vec![node("region", vec![task])];
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut row = Row::default();
        tree.walk_without_samples(&mut |depth, n| row.write(&mut w, n, depth).unwrap());
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let tails: Vec<&str> = text
            .lines()
            .map(|l| l.splitn(14, ',').last().unwrap())
            .collect();
        assert_eq!(
            tails,
            [
                "0,,1,1000,400",
                "1,0,3,333,133",
                "2,1,3,333,133",
                "3,1,1,1000,400"
            ]
        );
    }

    /// A path deeper than `PATH_NAMES` keeps its first and last names: every
    /// row is as long at depth 2,000 as at depth 100.
    #[test]
    fn deep_paths_are_cut() {
        let depth = 2_000;
        let mut tree = vec![node(&format!("n{}", depth - 1), vec![])];
        for i in (0..depth - 1).rev() {
            tree = vec![node(&format!("n{i}"), tree)];
        }
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut row = Row::default();
        tree.walk_without_samples(&mut |depth, n| row.write(&mut w, n, depth).unwrap());
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), depth);
        let path = |i: usize| lines[i].split(',').next().unwrap();
        let whole: Vec<String> = (0..PATH_NAMES).map(|i| format!("n{i}")).collect();
        assert_eq!(path(PATH_NAMES - 1), whole.join(";"));
        let cut: Vec<String> = (0..32)
            .map(|i| format!("n{i}"))
            .chain([PATH_GAP.to_string()])
            .chain((depth - 31..depth).map(|i| format!("n{i}")))
            .collect();
        assert_eq!(path(depth - 1), cut.join(";"));
        assert_eq!(path(PATH_NAMES).split(';').count(), PATH_NAMES);
        let longest = lines.iter().map(|l| l.len()).max().unwrap();
        assert!(longest < 600, "a row of {longest} bytes");
        assert!(lines[depth - 1].ends_with(&format!(",{},{},1,1000,400", depth - 1, depth - 2)));
    }
}
