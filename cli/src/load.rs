//! Reading `profile.json` with one clear line for every way it can be wrong.

use std::path::{Path, PathBuf};

use kprof_core::output::report::{Report, SCHEMA};
use kprof_core::reduce::MERGED_SCHEMA;
use serde::Deserialize;
use serde_json::Value;

use crate::outcome::Failure;
use crate::path_text::show;

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

/// The deepest call-path tree a profile holds: the largest `KPROF_MAX_DEPTH`.
const MAX_TREE_DEPTH: usize = 100_000;

/// The deepest nesting of JSON containers that kprof reads: the deepest tree
/// (each node two levels: its object and its `children` array) inside the
/// profile's own few, within the stack `kprof` runs its commands on.
pub const MAX_JSON_DEPTH: usize = 2 * MAX_TREE_DEPTH + 64;

/// The deepest nesting of `[`/`{` in `text` (strings skipped).
fn json_depth(text: &[u8]) -> usize {
    let mut scan = DepthScan::default();
    scan.feed(text);
    scan.max
}

/// The nesting of `[`/`{` in JSON text read piece by piece (strings skipped).
#[derive(Default)]
struct DepthScan {
    depth: usize,
    max: usize,
    in_string: bool,
    escaped: bool,
}

impl DepthScan {
    fn feed(&mut self, text: &[u8]) {
        let mut i = 0;
        while i < text.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                // Strings are most of a profile: jump to their next quote or escape.
                match memchr::memchr2(b'"', b'\\', &text[i..]) {
                    None => return,
                    Some(k) => {
                        i += k;
                        if text[i] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                        }
                    }
                }
                i += 1;
                continue;
            }
            match text[i] {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    self.max = self.max.max(self.depth);
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
            i += 1;
        }
    }
}

/// Parses `text` as a `T`, however deeply it nests (up to [`MAX_JSON_DEPTH`]).
fn parse<'de, T: serde::Deserialize<'de>>(text: &'de [u8]) -> serde_json::Result<T> {
    let mut de = serde_json::Deserializer::from_slice(text);
    de.disable_recursion_limit();
    let v = T::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// Only the schema of a profile, the rest skipped without being kept.
#[derive(serde::Deserialize)]
struct SchemaOnly {
    schema: Option<Value>,
}

/// Reads `path`, checks it is JSON of one of the `accepted` schemas, and returns the
/// text and its schema.
fn read_checked(path: &Path, accepted: &[&str]) -> Result<(Vec<u8>, String), Failure> {
    let text = std::fs::read(path).map_err(|e| Failure(format!("{}: {e}", show(path))))?;
    let invalid = |e: serde_json::Error| {
        let what = if e.is_eof() {
            "is truncated"
        } else {
            "is not valid JSON"
        };
        Failure(format!("{} {what} ({e})", show(path)))
    };
    let depth = json_depth(&text);
    if depth > MAX_JSON_DEPTH {
        return Err(Failure(format!(
            "{}: nested {depth} deep, more than the {MAX_JSON_DEPTH} kprof reads",
            show(path)
        )));
    }
    // One pass that keeps nothing but the schema: valid JSON, and which schema. A
    // profile is an object (serde would read a struct from an array too).
    let object = text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let probe = if object {
        match parse::<SchemaOnly>(&text) {
            Ok(p) => p.schema.unwrap_or(Value::Null),
            Err(e) if e.is_data() => Value::Null,
            Err(e) => return Err(invalid(e)),
        }
    } else {
        parse::<serde::de::IgnoredAny>(&text).map_err(invalid)?;
        Value::Null
    };
    match probe.as_str() {
        Some(s) if accepted.contains(&s) => Ok((text, s.to_string())),
        // The file's string, escaped (a newline in it must not end the
        // message's line) and clipped.
        Some(s) => Err(Failure(format!(
            "{}: schema \"{}\" is not supported (this kprof {} reads {})",
            show(path),
            s.chars().take(100).collect::<String>().escape_debug(),
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

/// Loads a single-process profile in one pass over its text (what `kprof merge`
/// does for thousands of ranks); on any failure, reads it again through
/// [`load_report`] for the precise one-line reason.
pub fn load_report_fast(arg: &Path) -> Result<Report, Failure> {
    let fast = || -> Option<Report> {
        let path = profile_path(arg).ok()?;
        let text = std::fs::read(&path).ok()?;
        if json_depth(&text) > MAX_JSON_DEPTH {
            return None;
        }
        let r: Report = parse(&text).ok()?;
        (r.schema == SCHEMA).then_some(r)
    };
    match fast() {
        Some(r) => Ok(r),
        None => load_report(arg).map(|(_, r)| r),
    }
}

/// The deepest nesting of `[`/`{` in the file at `path`, read in blocks (a profile
/// of a million call paths is hundreds of MB: it is never held whole).
fn file_depth(path: &Path) -> std::io::Result<usize> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut block = vec![0u8; 1 << 16];
    let mut scan = DepthScan::default();
    loop {
        let n = f.read(&mut block)?;
        if n == 0 {
            return Ok(scan.max);
        }
        scan.feed(&block[..n]);
    }
}

/// Reads a single-process profile straight from the file into the report's
/// types, without the whole text in memory; `None` when it is not one (another
/// schema, or invalid: the caller then reads it whole, to say exactly why).
fn read_single(path: &Path) -> Option<Report> {
    if file_depth(path).ok()? > MAX_JSON_DEPTH {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, file));
    de.disable_recursion_limit();
    let report = Report::deserialize(&mut de).ok()?;
    de.end().ok()?;
    (report.schema == SCHEMA).then_some(report)
}

/// Loads a profile of either schema.
pub fn load_any(arg: &Path) -> Result<(PathBuf, Loaded), Failure> {
    let path = profile_path(arg)?;
    if let Some(report) = read_single(&path) {
        return Ok((path, Loaded::Single(Box::new(report))));
    }
    let (text, schema) = read_checked(&path, &[SCHEMA, MERGED_SCHEMA])?;
    if schema == MERGED_SCHEMA {
        let value: Value = parse(&text).map_err(|e| {
            Failure(format!(
                "{}: does not match schema {schema}: {e}",
                show(&path)
            ))
        })?;
        return Ok((path, Loaded::Merged(value)));
    }
    // Straight into the report's types: no JSON tree in between.
    let report: Report = parse(&text).map_err(|e| {
        Failure(format!(
            "{}: does not match schema {SCHEMA}: {e}",
            show(&path)
        ))
    })?;
    Ok((path, Loaded::Single(Box::new(report))))
}
