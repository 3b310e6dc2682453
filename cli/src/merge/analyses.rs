//! The analysis files of a merged directory (`tasktree.json`, `taskgraph.dot`),
//! written by the core's writers from the merged profile's tree (`kprof-merged/1`,
//! per node its statistics over ranks): the mean over ranks as Hatchet's
//! `time (inc)`/`time`, with min/max over ranks and the imbalance (max/mean of the
//! inclusive time) as more columns; the ranks' dependence edges summed. And the
//! job's `profile.cali` ([`CaliJob`]): every rank's records, as the ranks are read.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;

use kprof_core::output::analysis_files::write_files;
use kprof_core::output::cali;
use kprof_core::output::call_path::{walk_tree, CallPath};
use kprof_core::output::report::{Report, TaskEdge};
use kprof_core::output::{write_whole, OutputError};
use serde_json::Value;

/// A node of the merged profile's tree.
struct Node<'a>(&'a Value);

impl Node<'_> {
    /// Statistic `stat` (`min`, `mean`, `max`, `sum`, `imbalance`) of value `what`.
    fn stat(&self, what: &str, stat: &str) -> f64 {
        self.0[what][stat].as_f64().unwrap_or(0.0)
    }
}

impl CallPath for Node<'_> {
    fn name(&self) -> &str {
        self.0["name"].as_str().unwrap_or_default()
    }
    fn kind(&self) -> &str {
        self.0["kind"].as_str().unwrap_or_default()
    }
    fn count(&self) -> u64 {
        self.0["count"]["sum"].as_u64().unwrap_or(0)
    }
    fn total_ns(&self) -> u64 {
        self.0["total_ns"]["sum"].as_u64().unwrap_or(0)
    }
    fn metrics(&self, put: &mut dyn FnMut(&'static str, f64)) {
        let tmean = self.stat("total_ns", "mean");
        let tmax = self.stat("total_ns", "max");
        put("time (inc)", tmean);
        put("time", self.stat("self_ns", "mean"));
        put("count", self.count() as f64);
        put("min time/rank (inc)", self.stat("total_ns", "min"));
        put("max time/rank (inc)", tmax);
        put("min time/rank", self.stat("self_ns", "min"));
        put("max time/rank", self.stat("self_ns", "max"));
        put("min count/rank", self.stat("count", "min"));
        put("max count/rank", self.stat("count", "max"));
        put("ranks", self.0["ranks"].as_f64().unwrap_or(0.0));
        put("imbalance", if tmean > 0.0 { tmax / tmean } else { 1.0 });
    }
}

/// The merged tree depth first, for the writers.
fn walk(list: &[Value], depth: usize, visit: &mut dyn FnMut(usize, &dyn CallPath)) {
    for n in list {
        visit(depth, &Node(n));
        if let Some(kids) = n["children"].as_array() {
            walk(kids, depth + 1, visit);
        }
    }
}

/// Dependence edges by (from, to), summed over the ranks as they are read.
pub type Dependences = BTreeMap<(String, String), u64>;

/// Adds one rank's dependence edges to `sum`.
pub fn add_dependences(sum: &mut Dependences, edges: &[TaskEdge]) {
    for e in edges {
        *sum.entry((e.from.clone(), e.to.clone())).or_insert(0) += e.count;
    }
}

/// Writes the analysis files of `merged` (the merged profile) into `out`, with
/// the ranks' dependences summed in `deps`.
pub fn write(out: &Path, merged: &Value, deps: &Dependences, ranks: usize) {
    let exe = merged["ranks"]
        .get(0)
        .and_then(|r| r["executable"].as_str())
        .unwrap_or_default();
    let title = format!("{exe} ({})", crate::fmt::ranks_text(ranks));
    let edges: Vec<TaskEdge> = deps
        .iter()
        .map(|((from, to), &count)| TaskEdge {
            from: from.clone(),
            to: to.clone(),
            count,
        })
        .collect();
    let tree = merged["tree"].as_array().map_or(&[][..], Vec::as_slice);
    write_files(
        out,
        &|visit| walk(tree, 0, visit),
        &edges,
        &title,
        &[],
        &|| None,
    );
}

/// The job's `profile.cali`, written as the ranks are read: one record per
/// rank and call path (`mpi.rank`), as Caliper's `hatchet-region-profile` writes
/// a job's, into an unnamed temporary file (`TMPDIR`) that
/// [`CaliJob::write`] copies into the output directory once it exists. The
/// records come from each rank's own tree, so they hold every rank's values
/// whether or not the merge keeps them (`--by-rank`).
pub struct CaliJob {
    writer: cali::Writer<BufWriter<File>>,
    /// The lowest rank read and its report (without its tree), whose metadata
    /// the job's are.
    first: Option<(u64, Report)>,
    ranks: u64,
    /// The first write that failed: no file then.
    failed: Option<std::io::Error>,
}

impl CaliJob {
    /// The stream, or `None` (with one line) when no temporary file can be had.
    pub fn open() -> Option<Mutex<CaliJob>> {
        let made = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
            .open(std::env::temp_dir())
            .and_then(|f| cali::Writer::new(BufWriter::new(f), true, true));
        match made {
            Ok(writer) => Some(Mutex::new(CaliJob {
                writer,
                first: None,
                ranks: 0,
                failed: None,
            })),
            Err(e) => {
                eprintln!("kprof merge: no profile.cali: no temporary file ({e})");
                None
            }
        }
    }

    /// Adds the records of rank `rank`, whose report is `r`.
    pub fn add(&mut self, r: &Report, rank: u64) {
        if self.failed.is_some() {
            return;
        }
        if let Err(e) = self.writer.tree(&|visit| walk_tree(&r.tree, visit), rank) {
            self.failed = Some(e);
            return;
        }
        self.ranks += 1;
        if self.first.as_ref().is_none_or(|(f, _)| rank < *f) {
            // Rarely: the ranks are read about in order.
            let report = Report {
                tree: Vec::new(),
                ..r.clone()
            };
            self.first = Some((rank, report));
        }
    }

    /// Ends the stream with the job's metadata and writes it to
    /// `out/profile.cali`, whole or not at all.
    pub fn write(self, out: &Path) -> Result<(), String> {
        let path = out.join("profile.cali");
        let fail = |e: std::io::Error| format!("{}: {e}", path.display());
        if let Some(e) = self.failed {
            return Err(fail(e));
        }
        let globals = self
            .first
            .map(|(_, r)| cali::job_globals(&r, self.ranks))
            .unwrap_or_default();
        let mut file = self
            .writer
            .finish(&globals)
            .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
            .map_err(fail)?;
        file.seek(SeekFrom::Start(0)).map_err(fail)?;
        write_whole(&path, |f| {
            std::io::copy(&mut file, f)
                .map(drop)
                .map_err(|source| OutputError::File {
                    path: path.display().to_string(),
                    source,
                })
        })
        .map(drop)
        .map_err(|e| e.to_string())
    }
}
