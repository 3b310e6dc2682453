//! Where and how output is written: the per-process directory (pattern expansion,
//! never reusing an existing directory, never following symlinks), the profile files
//! and the summary on stderr. Failures (a full disk, no permission) become one line
//! on stderr; the program is never affected. The submodules are the report model
//! ([`report`]), its flat view ([`flat`]), the summary ([`summary`]) and the CSV
//! ([`csv`]).

pub mod analysis_files;
pub mod cali;
pub mod cali_job;
pub mod call_path;
pub mod calltree;
pub mod counters;
pub mod csv;
pub mod files;
pub mod flat;
pub mod messages;
pub mod mpi;
pub mod nested_json;
pub mod readable;
pub mod report;
pub mod samples;
pub mod stack_samples;
pub mod summary;
pub mod taskgraph;
pub mod tasktree;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::base::config::Config;
use crate::hot::runtime::{warn, Runtime};
use crate::output::calltree::CallTree;
use crate::output::nested_json::NestedJson;
use crate::output::report::{Report, TreeNode};
use csv as csv_out;
pub use files::{
    bytes_on_disk, create_file, create_unique_dir, expand, write_whole, OutputError, Written,
};

/// Writes `profile.json`: `report`, with `tree` as its call-path tree (the
/// report's own `tree` is not written). The tree is written node by node as it is
/// walked: a profile of a million call paths never exists twice in memory.
fn write_json(dir: &Path, report: &Report, tree: &dyn CallTree) -> Result<PathBuf, OutputError> {
    let path = dir.join("profile.json");
    let encode = |source| OutputError::Encode {
        path: path.display().to_string(),
        source,
    };
    let file = |source| OutputError::File {
        path: path.display().to_string(),
        source,
    };
    write_whole(&path, |f| {
        // The report's own tree is not written (an empty one is skipped).
        let head = if report.tree.is_empty() {
            serde_json::to_vec(report)
        } else {
            serde_json::to_vec(&Report {
                tree: Vec::new(),
                ..report.clone()
            })
        }
        .map_err(encode)?;
        // `{...}` without its closing brace, then the tree as its last member.
        f.write_all(&head[..head.len() - 1]).map_err(file)?;
        f.write_all(br#","tree":["#).map_err(file)?;
        // Each node as serde writes it, its `children` (always its last member) open.
        let mut nodes = NestedJson::new(f);
        tree.walk(&mut |depth, n| {
            nodes.node(depth, |buf| {
                let start = buf.len();
                let leaf = if n.children.is_empty() {
                    serde_json::to_writer(&mut *buf, n)
                } else {
                    let alone = TreeNode {
                        children: Vec::new(),
                        ..n.clone()
                    };
                    serde_json::to_writer(&mut *buf, &alone)
                };
                debug_assert!(leaf.is_ok() && buf[start..].ends_with(b"[]}"));
                // Drop `]}`: the node's `children` array stays open.
                buf.truncate(buf.len() - 2);
            })
        });
        nodes.finish().map_err(file)?;
        f.write_all(b"]}\n").map_err(file)
    })
}

/// Creates this process's output directory from the configured pattern; on failure
/// says why in one line and returns None (the run goes on without files).
pub fn prepare_dir(rt: &Runtime, cfg: &Config) -> Option<PathBuf> {
    let wanted = PathBuf::from(expand(&cfg.output_dir, &rt.process));
    match create_unique_dir(&wanted) {
        Ok(d) => Some(d),
        Err(e) => {
            warn(&e.to_string());
            None
        }
    }
}

/// Bytes kept free for the profile files while traces fill the disk.
pub const PROFILE_RESERVE_BYTES: u64 = 16 << 20;

/// Disk space held for the profile while traces are written: an unnamed file in
/// the output directory (`O_TMPFILE`, or a hidden file removed as soon as it is
/// made where the file system has no unnamed files), allocated when traces start
/// and emptied just before the profile is written. Traces that fill the disk
/// stop (each with a line); the profile, small and the most valuable, still
/// finds its space (up to [`PROFILE_RESERVE_BYTES`]). Having no name, it leaves
/// nothing behind however the process ends: the kernel frees it when the last
/// descriptor closes (SIGKILL, `_exit`, `exec`).
pub struct Reserve {
    file: File,
}

impl Reserve {
    /// Holds `bytes` in `dir`; `None` where the space cannot be had (the profile
    /// then takes its chances, as without traces).
    pub fn take(dir: &Path, bytes: u64) -> Option<Reserve> {
        use std::os::fd::AsRawFd;
        let file = unnamed_file(dir)?;
        let len = libc::off_t::try_from(bytes).ok()?;
        // SAFETY: a valid descriptor of a file we own; plain integers.
        let r = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        (r == 0).then_some(Reserve { file })
    }
}

/// A new file in `dir` without a name, open for writing: `O_TMPFILE`, or where
/// the file system lacks it, a hidden file created and removed at once.
fn unnamed_file(dir: &Path) -> Option<File> {
    let tmp = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir);
    match tmp {
        Ok(f) => Some(f),
        Err(_) => {
            let path = dir.join(".profile.reserve");
            let f = create_file(&path).ok()?.into_inner().ok()?;
            std::fs::remove_file(&path).ok()?;
            Some(f)
        }
    }
}

/// Dropping the reserve gives the space back: emptied, not only closed, since a
/// forked child may hold a copy of the descriptor.
impl Drop for Reserve {
    fn drop(&mut self) {
        let _ = self.file.set_len(0);
    }
}

/// Set by `kprof run` to [`KPROF_RUN`] in the program's environment.
pub use kprof_tables::settings::{KPROF_RUN, LAUNCHER as LAUNCHER_VAR};

/// Writes the profile files into `dir` and prints the summary, listing `traces`:
/// `report`, whose call-path tree is `tree`. `profile.json`, `profile.csv`, the
/// analysis files (`tasktree.json`, `taskgraph.dot`) and the summary each walk the
/// whole tree: they are made at once on four threads (the program's threads are
/// done; a million call paths take seconds on one core), or one after the other
/// where a thread cannot be had.
pub fn write_all(
    report: &Report,
    tree: &dyn CallTree,
    cfg: &Config,
    dir: Option<&Path>,
    traces: &[PathBuf],
) {
    let json = || dir.map(|d| write_json(d, report, tree));
    let csv = || dir.map(|d| csv_out::write(&d.join("profile.csv"), tree));
    let body = || {
        cfg.summary
            .then(|| summary::body(report, tree, cfg.summary_top, traces))
    };
    let (json, csv, body) = std::thread::scope(|s| {
        let spawn = |name: &str| std::thread::Builder::new().name(name.into());
        let json_thread = spawn("kprof-json").spawn_scoped(s, json).ok();
        let csv_thread = spawn("kprof-csv").spawn_scoped(s, csv).ok();
        let analyses = || {
            if let Some(dir) = dir {
                analysis_files::write_report_files(dir, report, tree);
            }
        };
        let analyses_thread = spawn("kprof-analyses").spawn_scoped(s, analyses).ok();
        let body = body();
        // A writer that failed inside says so; the other files still come.
        fn lost<T>(file: &str) -> Option<T> {
            warn(&format!("{file} was not written: internal error"));
            None
        }
        let json = match json_thread {
            Some(t) => t.join().unwrap_or_else(|_| lost("profile.json")),
            None => json(),
        };
        let csv = match csv_thread {
            Some(t) => t.join().unwrap_or_else(|_| lost("profile.csv")),
            None => csv(),
        };
        match analyses_thread {
            Some(t) => t.join().unwrap_or_else(|_| {
                lost::<()>("tasktree.json or taskgraph.dot");
            }),
            None => analyses(),
        }
        (json, csv, body)
    });
    let profile_written = match json {
        Some(Ok(_)) => true,
        Some(Err(e)) => {
            warn(&e.to_string());
            false
        }
        None => false,
    };
    if let Some(Err(e)) = csv {
        warn(&e.to_string());
    }
    if let Some(mut text) = body {
        // `kprof run` says where the files are once the program has ended; the
        // summary then does not say it too.
        let dir_line = if std::env::var_os(LAUNCHER_VAR).is_some_and(|v| v == KPROF_RUN) {
            None
        } else {
            dir
        };
        let written = match dir {
            None => Written::Nothing,
            Some(_) if profile_written => Written::All,
            Some(_) => Written::NoProfile,
        };
        text.push_str(&summary::ending(dir_line, written));
        match summary_holder() {
            // Printed only if the job's reduction does not take this process in.
            Some(hold) => hold(report, tree, dir, Some(text)),
            None => {
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
        }
    } else if let Some(hold) = summary_holder() {
        hold(report, tree, dir, None);
    }
}

/// Takes the end of the run's profile (with its call-path tree), the directory
/// of its files and its summary, in place of printing the summary: what a
/// job's reduction installs while it takes this process's profile
/// ([`crate::control::job`]). A hook, so that this layer never calls up into the
/// one that drives it.
pub type SummaryHolder = fn(&Report, &dyn CallTree, Option<&Path>, Option<String>);

static SUMMARY_HOLDER: std::sync::Mutex<Option<SummaryHolder>> = std::sync::Mutex::new(None);

/// Installs (`Some`) or removes (`None`) the [`SummaryHolder`] that the next
/// [`write_all`] hands the summary to.
pub fn hold_summary(holder: Option<SummaryHolder>) {
    *SUMMARY_HOLDER.lock().unwrap_or_else(|p| p.into_inner()) = holder;
}

fn summary_holder() -> Option<SummaryHolder> {
    *SUMMARY_HOLDER.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::process::ProcessInfo;

    fn info() -> ProcessInfo {
        ProcessInfo {
            executable: "app".into(),
            pid: 42,
            host: "node7".into(),
            rank: None,
            start_ns: None,
        }
    }

    /// `profile.json` written node by node from a walk reads back as the report
    /// with its tree in place: every node, nesting and field.
    #[test]
    fn the_streamed_tree_reads_back_whole() {
        let leaf = |name: &str, children| TreeNode::user_region(name, 30, 10, 3, children);
        let mut spread = leaf("team", vec![]);
        spread.threads = Some(Box::new(report::ThreadSpread {
            threads: 2,
            min_ns: 1,
            max_ns: 3,
            mean_ns: 2.0,
            imbalance: 1.5,
        }));
        spread
            .args
            .insert("team_size".into(), report::ArgRange { min: 2, max: 4 });
        let tree = vec![
            leaf(
                "a",
                vec![
                    leaf("b", vec![leaf("c", vec![]), spread]),
                    leaf("d \"quoted\" ]}", vec![]),
                ],
            ),
            leaf("e", vec![]),
            leaf("f", vec![leaf("g", vec![leaf("h", vec![])])]),
        ];
        let report: Report = serde_json::from_value(serde_json::json!({
            "schema": report::SCHEMA, "kprof_version": "0", "plugins": [], "threads": [],
            "program": {"executable": "app", "pid": 1, "host": "h", "rank": null},
            "clock": {"source": "tsc", "domain": "CLOCK_MONOTONIC", "start_ns": 0,
                      "end_ns": 10, "duration_ns": 10},
            "sections": [], "events": [], "deep_copies": [], "memory": [],
            "dual_views": [], "metadata": {}, "anomalies": {}, "dropped_records": 0
        }))
        .unwrap();
        let dir = std::env::temp_dir().join(format!("kprof-json-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for written in [
            &report,
            &Report {
                tree: tree.clone(),
                ..report.clone()
            },
        ] {
            let path = write_json(&dir, written, &tree).unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            let want = serde_json::to_value(Report {
                tree: tree.clone(),
                ..report.clone()
            })
            .unwrap();
            assert_eq!(back, want);
            assert_eq!(text.matches("\"tree\"").count(), 1);
            std::fs::remove_file(&path).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The space held for the profile has no name in the directory, is really
    /// allocated, and is given back when dropped.
    #[test]
    fn the_reserve_is_unnamed_and_given_back() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("kprof-reserve-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let r = Reserve::take(&dir, 1 << 20).expect("1 MiB in the temporary directory");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let m = r.file.metadata().unwrap();
        assert_eq!(m.len(), 1 << 20);
        assert!(m.blocks() * 512 >= 1 << 20, "{} blocks", m.blocks());
        let file = r.file.try_clone().unwrap();
        drop(r);
        assert_eq!(file.metadata().unwrap().len(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn patterns() {
        assert_eq!(expand("kprof-%e-%p", &info()), "kprof-app-42");
        assert_eq!(expand("%h/r%r/%%x%q%", &info()), "node7/r/%x%q%");
        let ranked = ProcessInfo {
            rank: Some(3),
            ..info()
        };
        assert_eq!(expand("out-%r", &ranked), "out-3");
    }

    #[test]
    fn never_reuses_a_directory_or_follows_a_link() {
        let base = std::env::temp_dir().join(format!("kprof-out-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let want = base.join("a/b");
        assert_eq!(create_unique_dir(&want).unwrap(), want);
        let second = create_unique_dir(&want).unwrap();
        assert_eq!(second, base.join("a/b.1"));
        std::os::unix::fs::symlink("/tmp", base.join("a/c")).unwrap();
        assert_eq!(
            create_unique_dir(&base.join("a/c")).unwrap(),
            base.join("a/c.1")
        );
        let f = want.join("x");
        create_file(&f).unwrap();
        assert!(create_file(&f).is_err());
        std::os::unix::fs::symlink(base.join("elsewhere"), want.join("y")).unwrap();
        assert!(create_file(&want.join("y")).is_err());
        assert!(!base.join("elsewhere").exists());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
