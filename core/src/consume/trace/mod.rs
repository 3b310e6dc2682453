//! Timeline traces: writers that consume the same resolved events as the profile
//! (no second hot path) and stream them to files in the output directory.
//!
//! Every writer is a [`Consumer`](crate::hot::nesting::Consumer): it sees each
//! thread's events in order (begins and ends always nest, see
//! [`crate::collect::resolve`]) and the cross-thread events (memory, sections) in
//! timestamp order. The writer thread calls [`TraceWriter::flush`] at the
//! end of every processing round (`KPROF_FLUSH_MS`), so a killed process leaves a
//! readable trace up to its last round, and [`TraceWriter::finish`] once at shutdown.
//!
//! A trace is written under its name plus [`PARTIAL`] (`trace.pftrace.partial`,
//! `otf2.partial/`) and renamed by [`finish`] once complete: a file under the
//! trace's own name is always whole, and one that a killed process left behind
//! says by its name that it is not.

pub mod chrome;
pub mod otf2;
pub mod perfetto;
pub mod perfetto_proto;
mod writer;

use std::path::{Path, PathBuf};

pub use crate::base::config::TraceFormat;
use crate::hot::runtime::Runtime;
use crate::output::OutputError;

// Defined in a leaf that the writers use too; kept at their old paths here.
pub use writer::{thread_label, TraceWriter};

/// What a trace's name carries until it is complete.
pub const PARTIAL: &str = ".partial";

/// `path` with [`PARTIAL`] appended.
fn partial(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(PARTIAL);
    PathBuf::from(s)
}

/// Opens the writer of `format` in `dir`, writing under the partial name.
pub fn open(
    format: TraceFormat,
    dir: &Path,
    rt: &'static Runtime,
) -> Result<Box<dyn TraceWriter>, OutputError> {
    let path = partial(&dir.join(format.file_name()));
    match format {
        TraceFormat::Json => Ok(Box::new(chrome::ChromeWriter::create(&path, rt)?)),
        TraceFormat::Perfetto => Ok(Box::new(perfetto::PerfettoWriter::create(&path, rt)?)),
        TraceFormat::Otf2 => Ok(Box::new(otf2::Otf2Writer::create(
            &partial(&dir.join("otf2")),
            rt,
        )?)),
    }
}

/// Completes `t` ([`TraceWriter::finish`]) and gives it its own name (the
/// partial name without [`PARTIAL`]); returns the path `finish` gave, under
/// that name. A trace that could not be completed keeps its partial name.
pub fn finish(t: Box<dyn TraceWriter>) -> Result<PathBuf, OutputError> {
    let written = t.path().to_path_buf();
    let finished = t.finish()?;
    let done = written
        .to_str()
        .and_then(|p| p.strip_suffix(PARTIAL))
        .map(PathBuf::from)
        .unwrap_or_else(|| written.clone());
    if done != written {
        std::fs::rename(&written, &done).map_err(|source| OutputError::File {
            path: done.display().to_string(),
            source,
        })?;
    }
    // For OTF2, `finish` names the anchor file inside the archive's directory.
    Ok(match finished.strip_prefix(&written) {
        Ok(inner) if !inner.as_os_str().is_empty() => done.join(inner),
        _ => done,
    })
}
