//! Timeline traces: writers that consume the same resolved events as the profile
//! (no second hot path) and stream them to files in the output directory.
//!
//! Every writer is a [`Consumer`]: it sees each thread's events in order (begins and
//! ends always nest, see [`crate::resolve`]) and the cross-thread events (memory,
//! sections) in timestamp order. The writer thread calls [`TraceWriter::flush`] at the
//! end of every processing round (`KPROF_FLUSH_MS`), so a killed process leaves a
//! readable trace up to its last round, and [`TraceWriter::finish`] once at shutdown.

pub mod chrome;
pub mod otf2;
pub mod perfetto;
pub mod perfetto_proto;

use std::path::{Path, PathBuf};

use crate::output::OutputError;
use crate::resolve::Consumer;
use crate::runtime::Runtime;

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Perfetto's native protobuf, `trace.pftrace`.
    Perfetto,
    /// Chrome / Trace Event Format JSON, `trace.json`.
    Json,
    /// OTF2 archive (Vampir, Score-P tools), `otf2/traces.otf2`; needs the OTF2
    /// library at run time.
    Otf2,
}

impl TraceFormat {
    /// The name that `KPROF_TRACE` takes.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Perfetto => "perfetto",
            TraceFormat::Json => "json",
            TraceFormat::Otf2 => "otf2",
        }
    }

    /// The format named `word` (`perfetto`, `json`, `otf2`).
    pub fn parse(word: &str) -> Option<TraceFormat> {
        match word.to_ascii_lowercase().as_str() {
            "perfetto" | "pftrace" | "protobuf" => Some(TraceFormat::Perfetto),
            "json" | "chrome" => Some(TraceFormat::Json),
            "otf2" => Some(TraceFormat::Otf2),
            _ => None,
        }
    }

    /// File name inside the output directory (for OTF2 the archive's anchor file,
    /// in its own directory).
    pub fn file_name(self) -> &'static str {
        match self {
            TraceFormat::Perfetto => "trace.pftrace",
            TraceFormat::Json => "trace.json",
            TraceFormat::Otf2 => "otf2/traces.otf2",
        }
    }
}

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
    /// Completes the file at shutdown (closes open structures, final flush).
    fn finish(self: Box<Self>) -> Result<PathBuf, OutputError>;
    /// The file (or, for OTF2, the directory) it writes.
    fn path(&self) -> &Path;
}

/// Bytes on disk under `path`: a file's size, or a directory's files summed.
pub fn bytes_on_disk(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::read_dir(path)
            .map(|rd| rd.flatten().map(|e| bytes_on_disk(&e.path())).sum())
            .unwrap_or(0),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

/// Opens the writer of `format` in `dir`.
pub fn open(
    format: TraceFormat,
    dir: &Path,
    rt: &'static Runtime,
) -> Result<Box<dyn TraceWriter>, OutputError> {
    let path = dir.join(format.file_name());
    match format {
        TraceFormat::Json => Ok(Box::new(chrome::ChromeWriter::create(&path, rt)?)),
        TraceFormat::Perfetto => Ok(Box::new(perfetto::PerfettoWriter::create(&path, rt)?)),
        TraceFormat::Otf2 => Ok(Box::new(otf2::Otf2Writer::create(&dir.join("otf2"), rt)?)),
    }
}
