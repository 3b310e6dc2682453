//! Where results go: the one rule of `kprof run -o`, `kprof merge -o` (and any
//! other command given an explicit output place).
//!
//! - An explicit output place that exists already is refused (exit 2, saying how
//!   to go on: `--force`, or another name), as Score-P refuses an existing
//!   experiment directory; with `--force` it is replaced, and kprof says so.
//! - `--force` replaces only what kprof could have written: a file, an empty
//!   directory, or a directory holding a profile or a trace; never the current
//!   directory or one above it.
//! - Before a program runs, the place is checked: a directory that cannot be
//!   created there stops `kprof run` with the reason, before the program starts.

use std::path::{Path, PathBuf};

use crate::path_text::show;

/// Why `path` must not be written as it is: it exists and `--force` was not given.
pub fn refuse_existing(path: &Path, option: &str) -> String {
    format!(
        "{} exists already: give --force to replace it, or another {option}",
        show(path)
    )
}

/// Whether `path` is something `--force` may remove: a file, an empty directory,
/// or a directory holding kprof's results; `Err` says why not.
pub fn replaceable(path: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", show(path)))?;
    if !meta.is_dir() {
        return Ok(());
    }
    let here = std::env::current_dir().ok();
    let full = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if here.as_deref().is_some_and(|h| h.starts_with(&full)) {
        return Err(format!(
            "{} holds the current directory: --force does not replace it",
            show(path)
        ));
    }
    let entries: Vec<String> = std::fs::read_dir(path)
        .map_err(|e| format!("{}: {e}", show(path)))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let ours = |n: &String| {
        n.starts_with("profile.") || n.starts_with("trace.") || n == "otf2" || n == "plot.html"
    };
    if entries.is_empty() || entries.iter().any(ours) {
        return Ok(());
    }
    Err(format!(
        "{} is not a kprof output directory (no profile or trace in it): --force does not \
         replace it; choose another name",
        show(path)
    ))
}

/// Removes `path` (a file or a directory tree) for `--force`, after
/// [`replaceable`] allowed it.
pub fn remove(path: &Path) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", show(path))),
    };
    let done = if meta.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match done {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot replace {}: {e}", show(path)))
        }
        _ => Ok(()),
    }
}

/// Checks an explicit output place: `Ok(false)` when it does not exist,
/// `Ok(true)` when it exists and `force` allows replacing it (the caller removes
/// it with [`remove`] when it is about to write), `Err` with the line to print
/// otherwise.
pub fn claim(path: &Path, force: bool, option: &str) -> Result<bool, String> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(false);
    }
    if !force {
        return Err(refuse_existing(path, option));
    }
    replaceable(path).map(|()| true)
}

/// The directory under which a directory named by `pattern` would be created:
/// the parent of a literal path, or the part before the first component holding
/// a `%` pattern (expanded per process).
pub fn fixed_base(pattern: &Path) -> PathBuf {
    let has_pattern = |c: &std::path::Component| c.as_os_str().to_string_lossy().contains('%');
    if pattern.components().any(|c| has_pattern(&c)) {
        pattern
            .components()
            .take_while(|c| !has_pattern(c))
            .collect()
    } else {
        pattern.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

/// Why no directory can be created under `base` (which need not exist yet: its
/// nearest existing ancestor is tried), as the system says it; `None` when one
/// can. Tried for real (a probe directory made and removed), so that a file
/// system that refuses whatever the permission bits say (`/proc`, read-only
/// mounts) is found too.
pub fn cannot_create_under(base: &Path) -> Option<String> {
    let mut at = if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base.to_path_buf()
    };
    while std::fs::symlink_metadata(&at).is_err() {
        match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => at = p.to_path_buf(),
            _ => {
                at = PathBuf::from(".");
                break;
            }
        }
    }
    if !at.is_dir() {
        return Some(format!("{} is not a directory", show(&at)));
    }
    let probe = at.join(format!(".kprof-probe-{}", std::process::id()));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            None
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
        Err(e) => {
            let shown = if at == Path::new(".") {
                std::env::current_dir().unwrap_or(at)
            } else {
                at
            };
            let mut why = e.to_string();
            if let Some(i) = why.find(" (os error") {
                why.truncate(i);
            }
            Some(format!("{}: {why}", show(&shown)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_base_stops_before_the_first_pattern() {
        assert_eq!(fixed_base(Path::new("run/pe%r")), PathBuf::from("run"));
        assert_eq!(fixed_base(Path::new("a/%h/x")), PathBuf::from("a"));
        assert_eq!(fixed_base(Path::new("a/b")), PathBuf::from("a"));
        assert_eq!(fixed_base(Path::new("b")), PathBuf::new());
    }

    #[test]
    fn nothing_is_created_under_proc_or_a_file() {
        assert!(cannot_create_under(Path::new("/proc")).is_some());
        let f = std::env::temp_dir().join(format!("kprof-out-dir-{}", std::process::id()));
        std::fs::write(&f, "x").unwrap();
        let why = cannot_create_under(&f.join("sub")).unwrap();
        assert!(why.ends_with("is not a directory"), "{why}");
        std::fs::remove_file(&f).unwrap();
        assert!(cannot_create_under(&std::env::temp_dir().join("a/b")).is_none());
    }
}
