//! Files and folders of the output, made safely: the folder named by its pattern,
//! files created whole or not at all, and the typed error every writer of the
//! output returns. A leaf, used by the output's writers and by the folder's
//! entry point ([`crate::output::write_all`]).

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::base::process::ProcessInfo;

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

/// Why output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The directory could not be created.
    #[error("cannot create the output directory {path}: {source}")]
    Dir {
        /// What was tried.
        path: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// Serialisation failed.
    #[error("cannot encode {path}: {source}")]
    Encode {
        /// The file.
        path: String,
        /// The encoder's reason.
        source: serde_json::Error,
    },
    /// A file could not be completed; nothing of it was left behind.
    #[error("{path} was not written ({reason}); no partial file was left")]
    NotWritten {
        /// The file.
        path: String,
        /// Why, from the error that stopped it.
        reason: String,
    },
}

/// Expands `%p`, `%h`, `%e`, `%r` and `%%` in an output directory pattern.
pub fn expand(pattern: &str, p: &ProcessInfo) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('p') => out.push_str(&p.pid.to_string()),
            Some('h') => out.push_str(&p.host),
            Some('e') => out.push_str(&p.executable),
            Some('r') => {
                if let Some(r) = p.rank {
                    out.push_str(&r.to_string())
                }
            }
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Creates a new directory at `path`, or at `path.1`, `path.2`, ... when it exists.
/// `mkdir` fails on an existing name, symlinks included, so no other run's
/// directory is ever reused.
pub fn create_unique_dir(path: &Path) -> Result<PathBuf, OutputError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| OutputError::Dir {
            path: parent.display().to_string(),
            source,
        })?;
    }
    let mut candidate = path.to_path_buf();
    for n in 1..=10_000u32 {
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let mut s = path.as_os_str().to_owned();
                s.push(format!(".{n}"));
                candidate = PathBuf::from(s);
            }
            Err(source) => {
                return Err(OutputError::Dir {
                    path: candidate.display().to_string(),
                    source,
                })
            }
        }
    }
    Err(OutputError::Dir {
        path: path.display().to_string(),
        source: std::io::Error::other("10000 directories of that name exist"),
    })
}

/// Creates a new file (never an existing one, never through a symlink).
pub fn create_file(path: &Path) -> Result<BufWriter<File>, OutputError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map(|f| BufWriter::with_capacity(1 << 16, f))
        .map_err(|source| OutputError::File {
            path: path.display().to_string(),
            source,
        })
}

/// Writes `path` completely or not at all: `fill` writes into a hidden file beside
/// it, which is renamed to `path` once written and synced, and removed on any error
/// (a full disk must not leave a truncated profile that looks like a result).
pub fn write_whole(
    path: &Path,
    fill: impl FnOnce(&mut BufWriter<File>) -> Result<(), OutputError>,
) -> Result<PathBuf, OutputError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = path.with_file_name(format!(".{name}.partial"));
    let result = (|| {
        let mut f = create_file(&partial)?;
        fill(&mut f)?;
        let file_err = |source| OutputError::File {
            path: path.display().to_string(),
            source,
        };
        f.into_inner()
            .map_err(|e| file_err(e.into_error()))?
            .sync_all()
            .map_err(file_err)?;
        std::fs::rename(&partial, path).map_err(file_err)
    })();
    match result {
        Ok(()) => Ok(path.to_path_buf()),
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            let reason = match &e {
                OutputError::File { source, .. } | OutputError::Dir { source, .. } => {
                    source.to_string()
                }
                OutputError::Encode { source, .. } => source.to_string(),
                OutputError::NotWritten { reason, .. } => reason.clone(),
            };
            Err(OutputError::NotWritten {
                path: path.display().to_string(),
                reason,
            })
        }
    }
}

/// What of the output could be written, for the summary's last line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The directory could not be made.
    Nothing,
    /// `profile.json` could not be written (said above).
    NoProfile,
    /// The profile files.
    All,
}
