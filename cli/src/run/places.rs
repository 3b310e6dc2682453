//! Where the program's files go, and why none appeared.

use std::path::{Path, PathBuf};

use super::signals::signal_name;
use crate::detect::Models;
use crate::path_text::show;

/// Why `dir` could not be made: the first missing or unwritable directory on its
/// way, as the system says it; `None` when it could be.
fn unwritable(dir: &Path) -> Option<String> {
    let mut at = dir.parent()?;
    // The nearest directory that exists is where creating failed.
    while std::fs::symlink_metadata(at).is_err() {
        at = at.parent()?;
    }
    if !at.is_dir() {
        return Some(format!("{} is not a directory", show(at)));
    }
    let c = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0 {
        return None;
    }
    Some(format!("{}: {}", show(at), std::io::Error::last_os_error()))
}

/// Where the program's files go.
pub enum OutDir {
    /// A directory chosen before the program starts.
    Exact(PathBuf),
    /// This prefix and the program's pid.
    ProgramPid(PathBuf),
    /// A pattern the runtime expands (`%p`, `%h`, ...).
    Pattern(PathBuf),
}

/// The directory the runtime made for `base`: `base` or the last of `base.1`,
/// `base.2`, ... made since `since`.
pub fn written_dir(base: &Path, since: std::time::SystemTime) -> Option<PathBuf> {
    let fresh = |p: &Path| {
        std::fs::symlink_metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since)
    };
    let mut found = fresh(base).then(|| base.to_path_buf());
    for n in 1.. {
        let mut s = base.as_os_str().to_owned();
        s.push(format!(".{n}"));
        let p = PathBuf::from(s);
        if std::fs::symlink_metadata(&p).is_err() {
            break;
        }
        if fresh(&p) {
            found = Some(p);
        }
    }
    found
}

/// `base`, or `base.1`, `base.2`, ... : the first that does not exist.
pub fn unused(base: &Path) -> PathBuf {
    if std::fs::symlink_metadata(base).is_err() {
        return base.to_path_buf();
    }
    (1..)
        .map(|n| {
            let mut s = base.as_os_str().to_owned();
            s.push(format!(".{n}"));
            PathBuf::from(s)
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .unwrap_or_else(|| base.to_path_buf())
}

/// The real reason no output directory appeared, for the end-of-run line.
pub fn nothing_written(
    dir: &Path,
    killed: Option<i32>,
    loaded: &[&str],
    missing: &[&str],
    models: &Models,
    exe_name: &str,
) -> String {
    if let Some(why) = unwritable(dir) {
        return format!("the output directory cannot be created ({why})");
    }
    let active = !loaded.is_empty() || models.annotations;
    if let (Some(sig), true) = (killed, active) {
        return format!(
            "the program was killed by {} before kprof wrote anything",
            signal_name(sig)
        );
    }
    if active {
        return "nothing was recorded, or the program ended without running its exit \
                handlers (_exit, exec)"
            .into();
    }
    if !missing.is_empty() {
        return format!(
            "the {} plugin was not found next to kprof (see above)",
            missing.join(", ")
        );
    }
    if models.gomp_only {
        return format!(
            "{exe_name} runs on GCC's libgomp, which has no OpenMP tool interface (see above)"
        );
    }
    let mut line = "no kprof plugin or annotation was active".to_string();
    if let Some(sig) = killed {
        line.push_str(&format!("; the program was killed by {}", signal_name(sig)));
    }
    line
}

/// One line for each trace in `dir` that the runtime did not complete: those
/// still under their partial name (`trace.pftrace.partial`), saying what each
/// holds.
pub fn unfinished_traces(dir: &Path) -> Vec<String> {
    use kprof_core::consume::trace::PARTIAL;
    use kprof_core::output::{bytes_on_disk, readable::bytes};
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && n.ends_with(PARTIAL))
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let size = bytes_on_disk(&path);
            if name.starts_with("otf2") {
                format!(
                    "{} is an unfinished OTF2 archive ({}): OTF2 writes its definitions at \
                     the end, so OTF2 tools cannot read it",
                    show(&path),
                    bytes(size)
                )
            } else if size == 0 {
                format!(
                    "{} is empty: the program ended before kprof first wrote to it (every \
                     KPROF_FLUSH_MS)",
                    show(&path)
                )
            } else {
                format!(
                    "{} is incomplete ({}): it holds what kprof wrote up to its last flush \
                     (every KPROF_FLUSH_MS), not the end of the run",
                    show(&path),
                    bytes(size)
                )
            }
        })
        .collect()
}
