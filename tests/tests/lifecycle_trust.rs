//! Numbers and files a user can trust at both ends of a run: the run time counts
//! from the process's start, not from kprof's first event; and however the
//! program ends (SIGKILL, `_exit`, before or after kprof's first flush), no
//! reserve file is left behind, a trace the run could not complete keeps its
//! partial name, and `kprof run` says what each holds, never that it is complete.
//! The program is `tests/harness/lifecycle.c` (annotation API).

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

use kprof_core::output::readable::duration;
use kprof_tests::trace_check::{perfetto_schema, read_json, read_json_text, read_perfetto_bytes};
use kprof_tests::{clean_cmd, core_harness, lib, read_profile, run, scratch, u};

/// The harness program, built once.
fn lifecycle() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    core_harness(&EXE, "lifecycle")
}

/// `kprof run -o out <options> -- lifecycle <args>` in `dir`.
fn kprof_run(dir: &Path, options: &[&str], args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(dir)
        .args(["run", "-o", "out"])
        .args(options)
        .arg("--")
        .arg(lifecycle())
        .args(args)
        .stdin(Stdio::null());
    cmd
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every name in `dir`, hidden ones included.
fn entries(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Nanoseconds per clock tick of the kernel (its process start times' unit).
fn tick_ns() -> u64 {
    // SAFETY: sysconf has no preconditions.
    1_000_000_000 / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64
}

/// A program that sleeps 150 ms before its first annotation: kprof starts there,
/// but the run time counts from the process's start. It is at least the
/// program's own time in `main`, at most the wall time around `kprof run` (plus
/// one clock tick: the kernel gives the start in ticks), and profile.json,
/// the summary's header and `kprof report` say the same.
#[test]
fn run_time_counts_from_the_process_start() {
    let dir = scratch("lifecycle_run_time");
    let t0 = Instant::now();
    let o = run(&mut kprof_run(&dir, &[], &["late"]));
    let wall = t0.elapsed().as_nanos() as u64;
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let main_ns: u64 = String::from_utf8_lossy(&o.stdout)
        .trim()
        .strip_prefix("main ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("stdout: {:?}", o.stdout));
    assert!(main_ns >= 170_000_000, "main took {main_ns} ns");

    let p = read_profile(&dir.join("out"));
    let c = &p["clock"];
    let run_ns = c["process_run_ns"]
        .as_u64()
        .unwrap_or_else(|| panic!("no clock.process_run_ns: {c}"));
    let process_start = u(&c["process_start_ns"]);
    let (start, end, measured) = (u(&c["start_ns"]), u(&c["end_ns"]), u(&c["duration_ns"]));
    assert_eq!(run_ns, end - process_start, "{c}");
    assert!(process_start <= start, "{c}");
    assert!(run_ns >= main_ns, "run {run_ns} < main {main_ns}: {c}");
    assert!(
        run_ns <= wall + tick_ns(),
        "run {run_ns} > wall {wall} + a tick: {c}"
    );
    // kprof itself started at the first annotation, 150 ms in.
    assert!(measured + 140_000_000 <= run_ns, "{c}");

    let head = format!(
        "run {}, measured the last {}",
        duration(run_ns as f64),
        duration(measured as f64)
    );
    assert!(err.contains(&format!("| {head} |")), "{head:?} in\n{err}");
    let o = run(clean_cmd(&lib("kprof"))
        .current_dir(&dir)
        .args(["report", "out"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!("run: {} (clock ", &head[4..])),
        "{head:?} in\n{text}"
    );
}

/// What `kprof run` says of a run that ended before kprof could write its
/// output: the directory's line, then one per trace; never that a trace is
/// complete.
fn check_end_lines(err: &str, why: &str, traces: &str) {
    assert!(
        err.contains(&format!("kprof: out holds no profile.json ({why}")),
        "{why:?} in\n{err}"
    );
    for t in ["trace.json", "trace.pftrace"] {
        assert!(
            err.contains(&format!("kprof: out/{t}.partial is {traces}")),
            "{t}.partial is {traces:?} in\n{err}"
        );
    }
    assert!(
        !err.replace("incomplete", "").contains("complete"),
        "a trace said complete:\n{err}"
    );
}

/// Runs `lifecycle <mode> <ms>` under `kprof run` with both traces and
/// `KPROF_FLUSH_MS=flush_ms`; returns its output once it checked that the
/// directory holds the two partial traces and nothing else (no reserve file, no
/// trace under its complete name).
fn ended_early(name: &str, mode: &str, ms: &str, flush_ms: &str) -> (Output, PathBuf) {
    let dir = scratch(name);
    let o = run(&mut kprof_run(
        &dir,
        &[
            "--trace",
            "perfetto,json",
            "--flush-ms",
            flush_ms,
            "--summary",
            "0",
        ],
        &[mode, ms],
    ));
    let out = dir.join("out");
    assert_eq!(
        entries(&out),
        set(&["trace.json.partial", "trace.pftrace.partial"]),
        "{mode} {ms}:\n{}",
        stderr(&o)
    );
    (o, out)
}

/// The partial traces of a run ended after a few flushes hold its regions.
fn check_partial_traces(out: &Path) {
    let json = read_json_text(&std::fs::read_to_string(out.join("trace.json.partial")).unwrap());
    assert!(!json.complete);
    assert!(
        !json.named("k").is_empty(),
        "no region in trace.json.partial"
    );
    if perfetto_schema().is_some() {
        let pf = read_perfetto_bytes(&std::fs::read(out.join("trace.pftrace.partial")).unwrap())
            .expect("trace.pftrace.partial decodes");
        assert!(
            !pf.named("k").is_empty(),
            "no region in trace.pftrace.partial"
        );
    }
}

/// SIGKILL after kprof flushed its traces a few times: the exit status is the
/// signal's, no reserve file is left, the traces keep their partial names and
/// hold what was flushed, and `kprof run` says they are incomplete.
#[test]
fn sigkill_leaves_no_reserve_and_partial_traces() {
    let (o, out) = ended_early("lifecycle_sigkill", "kill", "600", "50");
    assert_eq!(o.status.code(), Some(137));
    check_end_lines(
        &stderr(&o),
        "the program was killed by signal 9 (SIGKILL) before kprof could write it",
        "incomplete (",
    );
    check_partial_traces(&out);
}

/// SIGKILL before kprof's first flush: empty traces, said to be empty. (The
/// program lives 200 ms first: the writer thread creates the trace files as it
/// starts, which a program ending within microseconds of its start can precede.)
#[test]
fn sigkill_before_the_first_flush_leaves_empty_partial_traces() {
    let (o, out) = ended_early("lifecycle_sigkill_early", "kill", "200", "600000");
    assert_eq!(o.status.code(), Some(137));
    check_end_lines(
        &stderr(&o),
        "the program was killed by signal 9 (SIGKILL)",
        "empty: the program ended before kprof first wrote to it",
    );
    for t in ["trace.json.partial", "trace.pftrace.partial"] {
        assert_eq!(std::fs::metadata(out.join(t)).unwrap().len(), 0, "{t}");
    }
}

/// `_exit(0)` (no exit handler runs): the status stays 0, and the same holds as
/// for SIGKILL, before and after the first flush.
#[test]
fn underscore_exit_leaves_no_reserve_and_partial_traces() {
    let why = "the program ended without running its exit handlers (_exit, exec or a crash)";
    let (o, out) = ended_early("lifecycle_exit", "exit", "600", "50");
    assert_eq!(o.status.code(), Some(0));
    check_end_lines(&stderr(&o), why, "incomplete (");
    check_partial_traces(&out);
    let (o, _) = ended_early("lifecycle_exit_early", "exit", "200", "600000");
    assert_eq!(o.status.code(), Some(0));
    check_end_lines(
        &stderr(&o),
        why,
        "empty: the program ended before kprof first wrote to it",
    );
}

/// Without `kprof run` (`KPROF_TRACE` set by hand), a SIGKILL leaves no reserve
/// file either: it never had a name.
#[test]
fn sigkill_without_kprof_run_leaves_no_reserve() {
    let dir = scratch("lifecycle_sigkill_direct");
    let out = dir.join("out");
    let o = run(clean_cmd(&lifecycle())
        .args(["kill", "300"])
        .env("KPROF_OUTPUT_DIR", &out)
        .env("KPROF_TRACE", "perfetto,json")
        .env("KPROF_FLUSH_MS", "50")
        .env("KPROF_SUMMARY", "0"));
    assert_eq!(o.status.signal(), Some(libc::SIGKILL));
    assert_eq!(
        entries(&out),
        set(&["trace.json.partial", "trace.pftrace.partial"])
    );
}

/// A run that ends normally renames its traces to their own names once
/// complete, and the summary lists them by those names.
#[test]
fn a_complete_trace_has_its_own_name() {
    let dir = scratch("lifecycle_complete");
    let o = run(&mut kprof_run(
        &dir,
        &["--trace", "perfetto,json", "--flush-ms", "50"],
        &["end", "200"],
    ));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let out = dir.join("out");
    let names = entries(&out);
    assert!(
        names.contains("trace.json") && names.contains("trace.pftrace"),
        "{names:?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.contains("partial") || n.contains("reserve")),
        "{names:?}"
    );
    for t in ["trace.json", "trace.pftrace"] {
        let line = format!("kprof: trace {} (", out.join(t).display());
        assert!(err.contains(&line), "{line:?} in\n{err}");
    }
    let json = read_json(&out);
    assert!(json.complete, "trace.json lacks its closing ']'");
    assert_eq!(json.named("k").len(), 1000);
}
