//! The policy API of `ffi-headers/kprof.h`: `tests/harness/policy.c` adapts a
//! parameter to the live statistics kprof keeps of one of its call paths.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use kprof_tests::{assert_ok, clean_cmd, core_harness, run, scratch};

fn program() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    core_harness(&EXE, "policy")
}

fn run_policy(name: &str, trace: bool) -> (String, Output) {
    let dir = scratch(name);
    let mut cmd = clean_cmd(&program());
    cmd.current_dir(&dir)
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_SUMMARY", "0");
    if trace {
        cmd.env("KPROF_TRACE", "json");
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    (String::from_utf8(out.stdout.clone()).unwrap(), out)
}

/// `key=value` words of the line starting with `prefix`s.
fn fields(line: &str) -> BTreeMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} line in:\n{text}"))
}

#[test]
fn policies_read_live_statistics_and_adapt() {
    let (text, _) = run_policy("policy_live", false);
    assert_eq!(line(&text, "before="), "before=0 count=0", "not there yet");
    assert_eq!(line(&text, "handles="), "handles=1,2 null=0");
    let polls: Vec<BTreeMap<String, String>> = text
        .lines()
        .filter(|l| l.starts_with("policy "))
        .map(fields)
        .collect();
    assert_eq!(polls.len(), 6, "{text}");
    let num = |m: &BTreeMap<String, String>, k: &str| -> f64 { m[k].parse().unwrap() };
    let mut blocks = Vec::new();
    for (i, p) in polls.iter().enumerate() {
        assert_eq!(p["path"], "solve/step");
        // Five steps complete between polls: the counts are exact.
        assert_eq!(num(p, "count"), 5.0 * (i + 1) as f64, "{text}");
        let (count, total, mean) = (num(p, "count"), num(p, "total_ns"), num(p, "mean_ns"));
        assert!((mean * count - total).abs() <= count, "{p:?}");
        assert!(
            num(p, "min_ns") <= mean && mean <= num(p, "max_ns"),
            "{p:?}"
        );
        // Every step spun at least its block x 40 us (the smallest block is 1),
        // by the program's clock; kprof's clock (the TSC at its calibrated rate)
        // may read a few parts in 10^4 less (39,999 ns seen).
        assert!(num(p, "min_ns") >= 40_000.0 * 0.999, "{p:?}");
        blocks.push(num(p, "block") as i64);
    }
    // The policy halved the block while the mean step was above 300 us.
    assert_eq!(blocks[0], 16);
    assert_eq!(blocks[1], 8, "{text}");
    assert!(blocks.windows(2).all(|w| w[1] <= w[0]), "{blocks:?}");
    assert_eq!(line(&text, "after="), "after=1 count=30");
    assert_eq!(line(&text, "solve="), "solve=1 count=1");
    assert_eq!(line(&text, "none="), "none=0");
    let last = fields(line(&text, "runs="));
    assert_eq!(last["runs"], "6");
    assert_eq!(
        last["rare_runs"], "1",
        "a period of an hour runs at the first poll only"
    );
}

/// With a trace on there are no live statistics: -1, and policies still run
/// (with zeroed statistics, which this one does not act on).
#[test]
fn no_live_statistics_with_a_trace() {
    let (text, _) = run_policy("policy_trace", true);
    assert_eq!(line(&text, "before="), "before=-1 count=0");
    assert_eq!(line(&text, "after="), "after=-1 count=0");
    let last = fields(line(&text, "runs="));
    assert_eq!(last["runs"], "6");
    assert_eq!(last["block"], "16", "nothing to adapt to");
}
