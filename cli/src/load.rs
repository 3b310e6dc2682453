//! Reading `profile.json` with one clear line for every way it can be wrong.

use std::path::{Path, PathBuf};

use kprof_core::report::{Report, SCHEMA};
use serde_json::Value;

use crate::merge::MERGED_SCHEMA;
use crate::{show, Failure};

/// `profile.json` of `arg`: a kprof output directory or the file itself.
pub fn profile_path(arg: &Path) -> Result<PathBuf, Failure> {
    let meta = std::fs::metadata(arg).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Failure(format!("{}: no such directory", show(arg)))
        } else {
            Failure(format!("{}: {e}", show(arg)))
        }
    })?;
    if meta.is_dir() {
        let p = arg.join("profile.json");
        if !p.is_file() {
            return Err(Failure(format!(
                "{}: no profile.json in this directory (is it a kprof output directory? \
                 a run killed with SIGKILL leaves only its trace)",
                show(arg)
            )));
        }
        Ok(p)
    } else {
        Ok(arg.to_path_buf())
    }
}

/// Reads `path` as JSON and checks its schema is one of `accepted`.
fn read_value(path: &Path, accepted: &[&str]) -> Result<Value, Failure> {
    let text = std::fs::read(path).map_err(|e| Failure(format!("{}: {e}", show(path))))?;
    let value: Value = serde_json::from_slice(&text).map_err(|e| {
        let what = if e.is_eof() {
            "is truncated"
        } else {
            "is not valid JSON"
        };
        Failure(format!("{} {what} ({e})", show(path)))
    })?;
    let schema = value.get("schema").and_then(Value::as_str);
    match schema {
        Some(s) if accepted.contains(&s) => Ok(value),
        Some(s) => Err(Failure(format!(
            "{}: schema \"{s}\" is not supported (this kprof {} reads {})",
            show(path),
            env!("CARGO_PKG_VERSION"),
            accepted.join(", ")
        ))),
        None => Err(Failure(format!(
            "{}: not a kprof profile (no \"schema\" field)",
            show(path)
        ))),
    }
}

/// A loaded profile: one process's, or a merge of several.
pub enum Loaded {
    /// `kprof-profile/1`.
    Single(Box<Report>),
    /// `kprof-merged/1`.
    Merged(Value),
}

/// Loads a single-process profile from a directory or file.
pub fn load_report(arg: &Path) -> Result<(PathBuf, Report), Failure> {
    match load_any(arg)? {
        (p, Loaded::Single(r)) => Ok((p, *r)),
        (p, Loaded::Merged(_)) => Err(Failure(format!(
            "{}: a merged profile ({MERGED_SCHEMA}); this command needs one process's profile",
            show(&p)
        ))),
    }
}

/// Loads a profile of either schema.
pub fn load_any(arg: &Path) -> Result<(PathBuf, Loaded), Failure> {
    let path = profile_path(arg)?;
    let value = read_value(&path, &[SCHEMA, MERGED_SCHEMA])?;
    if value["schema"] == MERGED_SCHEMA {
        return Ok((path, Loaded::Merged(value)));
    }
    let report: Report = serde_json::from_value(value).map_err(|e| {
        Failure(format!(
            "{}: does not match schema {SCHEMA}: {e}",
            show(&path)
        ))
    })?;
    Ok((path, Loaded::Single(Box::new(report))))
}
