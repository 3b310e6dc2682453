//! `kprof report --samples`: the call-stack samples (`KPROF_SAMPLE_HZ`) of each
//! construct, most samples first: its self samples by function and by source
//! line, and the program's call paths below it, with their shares. Of a job's
//! merged profile: each construct's samples summed over the ranks, by function
//! and by line, with their range over ranks, and the call paths below it
//! summed over the ranks.

use std::fmt::Write as _;

use kprof_core::output::report::{Report, TreeNode};
use kprof_core::output::stack_samples::{NodeStackSamples, SamplePath};
use serde::Deserialize;
use serde_json::Value;

use super::args::ReportArgs;
use crate::fmt::pct;
use crate::outcome::Failure;

/// Rows of a construct's functions, lines and call paths shown.
const ROWS: usize = 10;

/// The constructs that have samples, with their path of names from the root.
#[derive(Default)]
pub struct Keep {
    path: Vec<String>,
    kept: Vec<(String, String, NodeStackSamples)>,
}

impl Keep {
    /// A node of the streamed tree.
    pub fn enter(&mut self, depth: usize, n: &TreeNode) {
        self.path.truncate(depth);
        self.path.push(n.name.to_string());
        if let Some(s) = n.stack_samples.as_deref().filter(|s| s.samples > 0) {
            self.kept
                .push((self.path.join(" / "), n.kind.to_string(), s.clone()));
        }
    }
}

/// Writes the samples view into `out`.
pub fn render(out: &mut String, r: &Report, keep: Keep, args: &ReportArgs) -> Result<(), Failure> {
    let Some(info) = &r.stack_samples else {
        return Err(Failure(
            "this profile has no call-stack samples: run the program with `kprof run --sample-hz N` (KPROF_SAMPLE_HZ)".into(),
        ));
    };
    let all = info.samples.max(1) as f64;
    let _ = writeln!(
        out,
        "\nCall-stack samples: {} at {} Hz of each thread's CPU time on {} thread(s) ({} signals of signal {}); {} lost, {} truncated; handler {:.0} ns a signal",
        info.samples, info.hz, info.threads, info.signals, info.signal, info.lost, info.truncated, info.handler_ns_mean
    );
    let mut kept = keep.kept;
    kept.sort_by(|a, b| b.2.samples.cmp(&a.2.samples).then_with(|| a.0.cmp(&b.0)));
    let top = args.top.unwrap_or(10);
    let more = kept.len().saturating_sub(top);
    for (path, kind, s) in kept.iter().take(top) {
        let _ = writeln!(
            out,
            "\n{path} ({kind}): {} samples, {} of all",
            s.samples,
            pct(s.samples as f64, all)
        );
        construct(out, s, args.wide);
    }
    if more > 0 {
        let _ = writeln!(out, "\n({more} more constructs with samples: --top N)");
    }
    if info.outside.samples > 0 {
        let _ = writeln!(
            out,
            "\noutside every construct: {} samples, {} of all",
            info.outside.samples,
            pct(info.outside.samples as f64, all)
        );
        construct(out, &info.outside, args.wide);
    }
    Ok(())
}

/// A name cut to 60 characters unless `wide`.
fn cut(name: &str, wide: bool) -> String {
    if wide || name.chars().count() <= 60 {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(59).collect();
        s.push('…');
        s
    }
}

/// One construct's functions, lines and call paths.
fn construct(out: &mut String, s: &NodeStackSamples, wide: bool) {
    let whole = s.samples.max(1) as f64;
    let _ = writeln!(out, "  self samples by function:");
    for f in s.functions.iter().take(ROWS) {
        let _ = writeln!(
            out,
            "    {:>7} {:>6}  {}",
            f.samples,
            pct(f.samples as f64, whole),
            cut(&f.name, wide)
        );
    }
    if !s.lines.is_empty() {
        let _ = writeln!(out, "  self samples by line:");
        for l in s.lines.iter().take(ROWS) {
            let file = std::path::Path::new(&l.file)
                .file_name()
                .map_or(l.file.clone(), |n| n.to_string_lossy().into_owned());
            let _ = writeln!(
                out,
                "    {:>7} {:>6}  {}:{} in {}",
                l.samples,
                pct(l.samples as f64, whole),
                file,
                l.line,
                cut(&l.function, wide)
            );
        }
    }
    if !s.paths.is_empty() {
        let _ = writeln!(
            out,
            "  call paths (samples in and below, % of the construct's):"
        );
        let mut rows = 0;
        for p in &s.paths {
            paths(out, p, 2, whole, wide, &mut rows);
        }
    }
}

/// A call path and (while rows remain) its callees, indented by depth.
fn paths(out: &mut String, p: &SamplePath, depth: usize, whole: f64, wide: bool, rows: &mut usize) {
    if *rows >= 3 * ROWS {
        return;
    }
    *rows += 1;
    let _ = writeln!(
        out,
        "    {:>7} {:>6}  {}{}",
        p.samples,
        pct(p.samples as f64, whole),
        "  ".repeat(depth - 2),
        cut(&p.name, wide)
    );
    for c in &p.children {
        paths(out, c, depth + 1, whole, wide, rows);
    }
}

/// Writes the samples view of a merged profile `v` (of `ranks` ranks) into
/// `out`: `rows` are its nodes (path, kind, node).
pub fn render_job(
    out: &mut String,
    v: &Value,
    rows: &[(&str, &str, &Value)],
    ranks: usize,
    args: &ReportArgs,
) -> Result<(), Failure> {
    let info = &v["stack_samples"];
    if !info.is_object() {
        return Err(Failure(
            "this merged profile has no call-stack samples: run the job's programs with `kprof run --sample-hz N` (KPROF_SAMPLE_HZ) and merge their profiles".into(),
        ));
    }
    let num = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let hz = match info["hz"].as_u64() {
        Some(hz) => format!("{hz} Hz"),
        None => format!("{} to {} Hz", num(info, "hz_min"), num(info, "hz_max")),
    };
    let sampled = num(info, "ranks") as usize;
    let of = if sampled < ranks {
        format!("{sampled} of {}", crate::fmt::ranks_text(ranks))
    } else {
        crate::fmt::ranks_text(ranks)
    };
    let _ = writeln!(
        out,
        "\nCall-stack samples summed over {of}: {} at {hz} of each thread's CPU time on {} thread(s) ({} signals); {} lost, {} truncated",
        num(info, "samples"),
        num(info, "threads"),
        num(info, "signals"),
        num(info, "lost"),
        num(info, "truncated"),
    );
    let all = num(info, "samples").max(1) as f64;
    let mut kept: Vec<(&str, &str, &Value)> = rows
        .iter()
        .map(|&(path, kind, n)| (path, kind, &n["stack_samples"]))
        .filter(|(_, _, s)| sum(s) > 0)
        .collect();
    kept.sort_by(|a, b| sum(b.2).cmp(&sum(a.2)).then_with(|| a.0.cmp(b.0)));
    let top = args.top.unwrap_or(10);
    let more = kept.len().saturating_sub(top);
    for (path, kind, s) in kept.iter().take(top) {
        job_block(out, &format!("{path} ({kind})"), s, all, args.wide);
    }
    if more > 0 {
        let _ = writeln!(out, "\n({more} more constructs with samples: --top N)");
    }
    let outside = &info["outside"];
    if sum(outside) > 0 {
        job_block(out, "outside every construct", outside, all, args.wide);
    }
    Ok(())
}

/// A merged node's samples summed over the ranks.
fn sum(s: &Value) -> u64 {
    s["samples"]["sum"].as_u64().unwrap_or(0)
}

/// One block of a job's samples: its title line (sum, share of `all`, range
/// over ranks), then its functions and lines.
fn job_block(out: &mut String, title: &str, s: &Value, all: f64, wide: bool) {
    let _ = writeln!(
        out,
        "\n{title}: {} samples, {} of all; per rank {}",
        sum(s),
        pct(sum(s) as f64, all),
        range(&s["samples"]),
    );
    job_construct(out, s, wide);
}

/// A statistic's range over ranks: `min .. max (mean M)`.
fn range(s: &Value) -> String {
    format!(
        "{} .. {} (mean {:.1})",
        s["min"].as_u64().unwrap_or(0),
        s["max"].as_u64().unwrap_or(0),
        s["mean"].as_f64().unwrap_or(0.0)
    )
}

/// One construct's functions, lines and call paths of a merged profile,
/// summed over ranks.
fn job_construct(out: &mut String, s: &Value, wide: bool) {
    let whole = s["samples"]["sum"].as_u64().unwrap_or(0).max(1) as f64;
    let list = |k: &str| s[k].as_array().map(Vec::as_slice).unwrap_or_default();
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    let _ = writeln!(
        out,
        "  self samples by function (sum over ranks, per rank min .. max):"
    );
    for f in list("functions").iter().take(ROWS) {
        let n = f["samples"]["sum"].as_u64().unwrap_or(0);
        let _ = writeln!(
            out,
            "    {:>7} {:>6}  {}  [{} .. {}]",
            n,
            pct(n as f64, whole),
            cut(&text(f, "name"), wide),
            f["samples"]["min"].as_u64().unwrap_or(0),
            f["samples"]["max"].as_u64().unwrap_or(0),
        );
    }
    let lines = list("lines");
    if !lines.is_empty() {
        let _ = writeln!(out, "  self samples by line (sum over ranks):");
        for l in lines.iter().take(ROWS) {
            let n = l["samples"]["sum"].as_u64().unwrap_or(0);
            let file = text(l, "file");
            let file = std::path::Path::new(&file)
                .file_name()
                .map_or(file.clone(), |n| n.to_string_lossy().into_owned());
            let _ = writeln!(
                out,
                "    {:>7} {:>6}  {}:{} in {}",
                n,
                pct(n as f64, whole),
                file,
                l["line"],
                cut(&text(l, "function"), wide)
            );
        }
    }
    let below = Vec::<SamplePath>::deserialize(&s["paths"]).unwrap_or_default();
    if !below.is_empty() {
        let _ = writeln!(
            out,
            "  call paths (samples in and below summed over ranks, % of the construct's):"
        );
        let mut rows = 0;
        for p in &below {
            paths(out, p, 2, whole, wide, &mut rows);
        }
    }
}
