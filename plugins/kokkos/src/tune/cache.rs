//! The tuning cache (`KPROF_TUNING_CACHE=path`): the converged values of every
//! tuning problem, read at start so that the next run of the same program on the
//! same machine starts at them, written at exit.
//!
//! Written whole or not at all: into a new file beside it (named with the pid, so
//! two runs never share one), synced, then renamed over the cache, so a reader
//! sees the old file or the new one, never a mix. Problems of the file that this
//! run did not meet are kept (the file is read again just before the rename), so
//! runs that tune different kernels add up; when two runs end at once, the last
//! rename wins, whole.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The `format` field of the file.
pub const FORMAT: &str = "kprof tuning cache 1";

/// Which program on which machine a cache belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// The executable's path.
    pub program: String,
    /// The host name.
    pub host: String,
}

impl Identity {
    /// This process's.
    pub fn current() -> Identity {
        let program = std::fs::read_link("/proc/self/exe")
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| std::env::args().next().unwrap_or_default());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        Identity { program, host }
    }
}

/// A problem's converged values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The output variables' names, in the order of `best`.
    pub outputs: Vec<String>,
    /// The chosen values.
    pub best: Vec<serde_json::Value>,
    /// Relative gain over the default when it was measured.
    pub gain: f64,
}

/// The file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct File {
    format: String,
    #[serde(flatten)]
    identity: Identity,
    /// Entries by problem key.
    problems: BTreeMap<String, Entry>,
}

/// Why a cache was not used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// It could not be read.
    #[error("cannot read the tuning cache {path}: {source}; starting without it")]
    Read {
        /// The file.
        path: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// It is not a tuning cache (truncated, edited, another format).
    #[error("the tuning cache {path} is corrupt ({reason}); ignored, it will be rewritten")]
    Corrupt {
        /// The file.
        path: String,
        /// The parser's reason.
        reason: String,
    },
    /// It belongs to another program or machine.
    #[error("the tuning cache {path} is for {program} on {host}; ignored")]
    Foreign {
        /// The file.
        path: String,
        /// Its program.
        program: String,
        /// Its host.
        host: String,
    },
    /// It could not be written.
    #[error("cannot write the tuning cache {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The system's reason.
        source: std::io::Error,
    },
}

/// The entries of the cache at `path` for `me`; an absent file is an empty cache.
pub fn load(path: &Path, me: &Identity) -> Result<BTreeMap<String, Entry>, CacheError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => {
            return Err(CacheError::Read {
                path: path.display().to_string(),
                source,
            })
        }
    };
    parse(&bytes, path, me)
}

/// The entries of a cache file's contents `bytes` (read from `path`, named in
/// the errors) for `me`. Whatever the bytes, an error's message is one line of
/// bounded length: the file's own strings are quoted and clipped.
pub fn parse(
    bytes: &[u8],
    path: &Path,
    me: &Identity,
) -> Result<BTreeMap<String, Entry>, CacheError> {
    let file: File = serde_json::from_slice(bytes).map_err(|e| CacheError::Corrupt {
        path: path.display().to_string(),
        // serde quotes the file's strings it names; they may be long.
        reason: clip(e.to_string()),
    })?;
    if file.format != FORMAT {
        return Err(CacheError::Corrupt {
            path: path.display().to_string(),
            reason: format!("format {}, not '{FORMAT}'", quoted(&file.format)),
        });
    }
    if file.identity != *me {
        return Err(CacheError::Foreign {
            path: path.display().to_string(),
            program: quoted(&file.identity.program),
            host: quoted(&file.identity.host),
        });
    }
    Ok(file.problems)
}

/// Bytes of a file's string shown in a message, at most.
const SHOWN: usize = 200;

/// A string of the file as a message shows it: as it is when plain, otherwise
/// quoted with its control characters escaped (a newline in it must not end
/// the message's line), and clipped.
fn quoted(s: &str) -> String {
    let plain = !s.is_empty() && s.chars().all(|c| !c.is_control() && c != '\'' && c != ' ');
    if plain {
        clip(s.to_string())
    } else {
        clip(format!("'{}'", s.escape_debug()))
    }
}

/// `s` clipped to [`SHOWN`] bytes.
fn clip(mut s: String) -> String {
    if s.len() > SHOWN {
        let mut cut = SHOWN;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// Writes `entries` (over the same keys of the current file, when it is `me`'s)
/// to `path` atomically.
pub fn save(
    path: &Path,
    me: &Identity,
    entries: &BTreeMap<String, Entry>,
) -> Result<(), CacheError> {
    let mut problems = load(path, me).unwrap_or_default();
    problems.extend(entries.iter().map(|(k, v)| (k.clone(), v.clone())));
    let file = File {
        format: FORMAT.into(),
        identity: me.clone(),
        problems,
    };
    let err = |source| CacheError::Write {
        path: path.display().to_string(),
        source,
    };
    let text = serde_json::to_vec_pretty(&file).map_err(|e| err(e.into()))?;
    let temp = temp_name(path);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)?;
        f.write_all(&text)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(err(e));
    }
    Ok(())
}

/// A hidden name beside `path`, unique to this process.
fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "tuning-cache".into());
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kprof-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn me() -> Identity {
        Identity {
            program: "/bin/app".into(),
            host: "node1".into(),
        }
    }

    fn entry(v: i64) -> Entry {
        Entry {
            outputs: vec!["team_size".into()],
            best: vec![v.into()],
            gain: 0.25,
        }
    }

    #[test]
    fn round_trip_and_merge() {
        let d = dir("merge");
        let path = d.join("cache.json");
        assert!(load(&path, &me()).unwrap().is_empty(), "absent: empty");
        let mut a = BTreeMap::new();
        a.insert("k1".to_string(), entry(64));
        save(&path, &me(), &a).unwrap();
        let mut b = BTreeMap::new();
        b.insert("k2".to_string(), entry(32));
        save(&path, &me(), &b).unwrap();
        let got = load(&path, &me()).unwrap();
        assert_eq!(got.get("k1"), Some(&entry(64)), "kept from the first run");
        assert_eq!(got.get("k2"), Some(&entry(32)));
        let left: Vec<_> = std::fs::read_dir(&d).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "no temporary file left");
    }

    #[test]
    fn foreign_and_corrupt_caches_are_refused() {
        let d = dir("refuse");
        let path = d.join("cache.json");
        let mut a = BTreeMap::new();
        a.insert("k".to_string(), entry(8));
        save(&path, &me(), &a).unwrap();
        let other = Identity {
            program: "/bin/other".into(),
            host: "node1".into(),
        };
        let e = load(&path, &other).unwrap_err();
        assert!(matches!(e, CacheError::Foreign { .. }), "{e}");
        assert!(e.to_string().contains("/bin/app on node1"), "{e}");
        std::fs::write(&path, "{\"format\": \"kprof tuning cache 1\", \"probl").unwrap();
        let e = load(&path, &me()).unwrap_err();
        assert!(matches!(e, CacheError::Corrupt { .. }), "{e}");
        // A corrupt file is replaced whole by the next save.
        save(&path, &me(), &a).unwrap();
        assert_eq!(load(&path, &me()).unwrap().len(), 1);
    }
}
