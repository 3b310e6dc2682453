//! What every trace writer shares: the [`TraceWriter`] trait they implement and
//! the label of a thread's track ([`thread_label`]). A leaf of the trace folder:
//! it imports neither its parent [`crate::consume::trace`], which opens the
//! writers, nor any writer, so the writers take these from here without an
//! import circle.

use std::path::{Path, PathBuf};

use crate::consume::concurrency::Point;
use crate::consume::system::Metric;
use crate::hot::nesting::Consumer;
use crate::output::OutputError;

/// The label of a thread's track: its name and kprof's thread index (threads of a
/// team share a name), or `thread <index>` for a thread without a name.
pub fn thread_label(name: &str, index: u32) -> String {
    if name.is_empty() {
        format!("thread {index}")
    } else {
        format!("{name} ({index})")
    }
}

/// A streaming trace writer.
pub trait TraceWriter: Consumer + Send {
    /// Writes everything consumed so far to the file (at the end of each round).
    fn flush(&mut self) -> Result<(), OutputError>;
    /// One sample of the system metrics at raw time `ts` (`KPROF_SAMPLE_MS`):
    /// `values[i]` is `metrics[i]`'s, NaN where it had none; the metrics are the
    /// same at every call and samples come in time order. Each metric is a
    /// counter track of the process.
    fn sample(&mut self, ts: u64, metrics: &[Metric], values: &[f64]);
    /// Completes the file at shutdown (closes open structures, final flush).
    fn finish(self: Box<Self>) -> Result<PathBuf, OutputError>;
    /// The file (or, for OTF2, the directory) it writes.
    fn path(&self) -> &Path;
    /// The number of threads in each category of work from `p.ts` on (made by
    /// [`crate::consume::concurrency::Timeline`], in time order): counter tracks.
    fn concurrency(&mut self, _p: &Point) {}
}
