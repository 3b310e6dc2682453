//! The runs of each side of `kprof diff`: paths, directories of runs and globs
//! resolved to profiles, each read into the values the diff compares.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use kprof_core::output::report::{Report, TreeNode};
use kprof_core::reduce::MERGED_SCHEMA;
use serde_json::Value;

use super::args::{Metric, RankStat};
use super::jobs::JobVals;
use super::paths::{PathId, Paths};
use crate::load::{load_any, Loaded};
use crate::outcome::Failure;
use crate::path_text::show;

/// A call path's values in one run.
#[derive(Clone, Copy, Default, Debug)]
pub struct Vals {
    /// Instances (per rank, for a job: the mean or the largest over its ranks).
    pub count: f64,
    /// Time in ns (per rank, for a job).
    pub time: f64,
}

/// One run as the diff reads it: a process's profile, or a job's merged one.
pub struct Run {
    /// Its `profile.json`.
    pub file: PathBuf,
    /// The measured program's executable name.
    pub executable: String,
    /// Run time in ns (a job: its slowest rank's).
    pub duration: f64,
    /// Every call path's values.
    pub nodes: HashMap<PathId, Vals>,
    /// Every counted (event, call path)'s value.
    pub counters: HashMap<(String, PathId), f64>,
    /// A job's merged profile (`kprof-merged/1`): this many ranks.
    pub ranks: Option<usize>,
    /// A job's MPI functions, imbalance and messages (a process: none).
    pub job: JobVals,
}

/// Glob characters: an argument holding one that names no existing path is a
/// pattern.
fn is_pattern(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// The runs one argument names: a kprof output directory or a `profile.json`
/// (one run), a directory holding run directories (each one that holds a
/// `profile.json`), or a glob pattern (each match one run).
pub fn expand(arg: &Path) -> Result<Vec<PathBuf>, Failure> {
    if arg.is_dir() && !arg.join("profile.json").exists() {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(arg)
            .map_err(|e| Failure(format!("{}: {e}", show(arg))))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("profile.json").is_file())
            .collect();
        if runs.is_empty() {
            return Err(Failure(format!(
                "{}: no profile.json in this directory nor in a directory in it (is it a \
                 kprof output directory? a run killed with SIGKILL leaves only its trace)",
                show(arg)
            )));
        }
        natural_sort(&mut runs);
        return Ok(runs);
    }
    let text = arg.to_string_lossy();
    if arg.exists() || !is_pattern(&text) {
        // A missing path gets its one line from the loader.
        return Ok(vec![arg.to_path_buf()]);
    }
    let mut runs = glob(arg)?;
    if runs.is_empty() {
        return Err(Failure(format!("{text}: the pattern matches nothing")));
    }
    natural_sort(&mut runs);
    Ok(runs)
}

/// The paths matching `pattern` (`*`, `?` and `[...]` within one path component;
/// a leading `.` matched only by a pattern starting with `.`, as in the shell).
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, Failure> {
    let mut found: Vec<PathBuf> = vec![PathBuf::new()];
    for c in pattern.components() {
        let part = match c {
            Component::Normal(p) => p.to_string_lossy().into_owned(),
            other => {
                for f in &mut found {
                    f.push(other.as_os_str());
                }
                continue;
            }
        };
        if !is_pattern(&part) {
            for f in &mut found {
                f.push(&part);
            }
            continue;
        }
        let re = regex::Regex::new(&glob_regex(&part))
            .map_err(|e| Failure(format!("{}: {e}", show(pattern))))?;
        let mut next = Vec::new();
        for dir in &found {
            let list = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir.as_path()
            };
            let Ok(entries) = std::fs::read_dir(list) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if (name.starts_with('.') && !part.starts_with('.')) || !re.is_match(&name) {
                    continue;
                }
                next.push(dir.join(&name));
            }
        }
        found = next;
    }
    Ok(found.into_iter().filter(|p| p.exists()).collect())
}

/// An anchored regular expression for one component of a glob pattern.
fn glob_regex(part: &str) -> String {
    let chars: Vec<char> = part.chars().collect();
    let mut re = String::from("^");
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '[' => {
                // A class up to its `]` (a `]` first is a member); unclosed: literal.
                let mut j = i + 1;
                if j < chars.len() && (chars[j] == '!' || chars[j] == '^') {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    j += 1;
                }
                if j >= chars.len() {
                    re.push_str(r"\[");
                } else {
                    re.push('[');
                    let mut k = i + 1;
                    if chars[k] == '!' || chars[k] == '^' {
                        re.push('^');
                        k += 1;
                    }
                    for &c in &chars[k..j] {
                        if matches!(c, '\\' | '[' | ']' | '^' | '&' | '~') {
                            re.push('\\');
                        }
                        re.push(c);
                    }
                    re.push(']');
                    i = j;
                }
            }
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    re
}

/// Sorts paths with runs of digits compared as numbers (`run-2` before `run-10`).
fn natural_sort(v: &mut [PathBuf]) {
    fn key(p: &Path) -> Vec<(u8, u128, String)> {
        let s = p.to_string_lossy();
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut digits = false;
        for c in s.chars() {
            if c.is_ascii_digit() != digits && !cur.is_empty() {
                out.push(chunk(&cur, digits));
                cur.clear();
            }
            digits = c.is_ascii_digit();
            cur.push(c);
        }
        if !cur.is_empty() {
            out.push(chunk(&cur, digits));
        }
        out
    }
    fn chunk(s: &str, digits: bool) -> (u8, u128, String) {
        if digits {
            (0, s.parse().unwrap_or(u128::MAX), s.to_string())
        } else {
            (1, 0, s.to_string())
        }
    }
    v.sort_by_cached_key(|p| key(p));
}

/// Reads one run: its call paths' values by `metric` (a job's per rank by
/// `ranks`) and its counters, its paths interned in `paths`.
pub fn read_run(
    arg: &Path,
    metric: Metric,
    ranks: RankStat,
    paths: &mut Paths,
) -> Result<Run, Failure> {
    let (file, loaded) = load_any(arg)?;
    Ok(match loaded {
        Loaded::Single(r) => single(file, &r, metric, paths),
        Loaded::Merged(v) => merged(file, &v, metric, ranks, paths)?,
    })
}

fn single(file: PathBuf, r: &Report, metric: Metric, paths: &mut Paths) -> Run {
    fn walk(
        nodes: &[TreeNode],
        metric: Metric,
        parent: Option<PathId>,
        run: &mut Run,
        paths: &mut Paths,
    ) {
        for n in nodes {
            let device = n.device.clone().unwrap_or_default();
            let path = paths.child(parent, (n.name.to_string(), n.kind.to_string(), device));
            let v = run.nodes.entry(path).or_default();
            v.count += n.count as f64;
            v.time += match metric {
                Metric::Total => n.total_ns,
                Metric::SelfTime => n.self_ns,
            } as f64;
            for (e, t) in n.counters.iter().flat_map(|c| &c.events) {
                let value = match metric {
                    Metric::Total => t.inclusive,
                    Metric::SelfTime => t.exclusive,
                };
                *run.counters.entry((e.clone(), path)).or_default() += value as f64;
            }
            walk(&n.children, metric, Some(path), run, paths);
        }
    }
    let mut run = Run {
        file,
        executable: r.program.executable.clone(),
        duration: r.clock.duration_ns as f64,
        nodes: HashMap::new(),
        counters: HashMap::new(),
        ranks: None,
        job: JobVals::default(),
    };
    walk(&r.tree, metric, None, &mut run, paths);
    run
}

/// A job's merged profile: each call path's count and time per rank, the mean
/// over the job's ranks or the largest of a rank (`ranks`).
fn merged(
    file: PathBuf,
    v: &Value,
    metric: Metric,
    ranks: RankStat,
    paths: &mut Paths,
) -> Result<Run, Failure> {
    let bad = |what: &str| {
        Failure(format!(
            "{}: does not match schema {MERGED_SCHEMA}: {what}",
            show(&file)
        ))
    };
    let stat = |s: &Value| -> f64 {
        let key = match ranks {
            RankStat::Mean => "mean",
            RankStat::Max => "max",
        };
        s.get(key).and_then(Value::as_f64).unwrap_or(0.0)
    };
    /// Where a walk is: the run read into, the paths, the value taken per node.
    struct Walk<'a> {
        run: &'a mut Run,
        paths: &'a mut Paths,
        stat: &'a dyn Fn(&Value) -> f64,
        metric: Metric,
        ranks: usize,
    }
    fn walk(nodes: &[Value], parent: Option<PathId>, w: &mut Walk<'_>) {
        let (stat, metric) = (w.stat, w.metric);
        for n in nodes {
            let text = |k: &str| n.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let path = w
                .paths
                .child(parent, (text("name"), text("kind"), text("device")));
            let v = w.run.nodes.entry(path).or_default();
            v.count += n.get("count").map_or(0.0, stat);
            let key = match metric {
                Metric::Total => "total_ns",
                Metric::SelfTime => "self_ns",
            };
            v.time += n.get(key).map_or(0.0, stat);
            w.run.job.node(n, path, key, w.ranks, w.paths);
            if let Some(events) = n.get("counters").and_then(Value::as_object) {
                let which = match metric {
                    Metric::Total => "inclusive",
                    Metric::SelfTime => "exclusive",
                };
                for (e, c) in events {
                    let value = c.get(which).map_or(0.0, stat);
                    *w.run.counters.entry((e.clone(), path)).or_default() += value;
                }
            }
            if let Some(kids) = n.get("children").and_then(Value::as_array) {
                walk(kids, Some(path), w);
            }
        }
    }
    let rank_list = v
        .get("ranks")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no \"ranks\" list"))?;
    let tree = v
        .get("tree")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no \"tree\" list"))?;
    let mut run = Run {
        executable: rank_list
            .first()
            .and_then(|r| r.get("executable"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        duration: v
            .get("duration_ns")
            .and_then(|d| d.get("max"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        file,
        nodes: HashMap::new(),
        counters: HashMap::new(),
        ranks: Some(rank_list.len()),
        job: JobVals::default(),
    };
    let mut w = Walk {
        run: &mut run,
        paths,
        stat: &stat,
        metric,
        ranks: rank_list.len(),
    };
    walk(tree, None, &mut w);
    run.job.messages(&v["messages"]);
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, name: &str) -> bool {
        regex::Regex::new(&glob_regex(pattern))
            .unwrap()
            .is_match(name)
    }

    #[test]
    fn glob_patterns() {
        assert!(matches("base-*", "base-1"));
        assert!(matches("base-*", "base-"));
        assert!(!matches("base-*", "xbase-1"));
        assert!(matches("run?", "run7"));
        assert!(!matches("run?", "run10"));
        assert!(matches("run[0-3]", "run2"));
        assert!(!matches("run[!0-3]", "run2"));
        assert!(matches("run[!0-3]", "run5"));
        assert!(matches("a.b+(c)", "a.b+(c)"));
        assert!(!matches("a.b", "axb"));
        assert!(matches("x[", "x["));
        assert!(matches("[]a]", "]"));
    }

    #[test]
    fn natural_order() {
        let mut v: Vec<PathBuf> = ["r10", "r2", "r1", "q"].iter().map(PathBuf::from).collect();
        natural_sort(&mut v);
        assert_eq!(v, ["q", "r1", "r2", "r10"].map(PathBuf::from));
    }
}
