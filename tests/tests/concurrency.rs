//! The concurrency view (threads per kind of work) on a real OpenMP runtime:
//! `tests/openmp/imbalance.c` runs 3 parallel regions of 2 threads in which thread
//! 1 sleeps 200 ms while thread 0 waits in the implicit barrier. About half of the
//! two threads' time is therefore waiting in a barrier and half parallel work:
//! `profile.json`'s `concurrency` section must say so within 5 percentage points,
//! in place (no trace) and from records (a trace), and the traces' `threads wait`
//! counter track must show one thread waiting for those 600 ms (within 5%).

use kprof_tests::openmp::{build, kprof_cmd, libomp19, Compiler, Runtime};
use kprof_tests::trace_check::{perfetto_schema, read_json, read_perfetto, Model};
use std::path::PathBuf;
use std::process::Command;

use kprof_tests::{assert_ok, lib, read_profile, run, scratch, skip_unless, u};
use serde_json::Value;

/// Regions in the program, and how long thread 1 sleeps in each.
const ROUNDS: u64 = 3;
const SLEEP_NS: u64 = 200_000_000;

/// One run of the imbalance program.
struct Run {
    profile: Value,
    /// Decoded traces.
    models: Vec<Model>,
    /// kprof's summary.
    stderr: String,
    /// The output directory.
    out: PathBuf,
}

/// Runs the imbalance program on `runtime`, with the traces `trace` (empty: none,
/// the profile aggregated in place).
fn imbalance(runtime: Runtime, trace: &str, label: &str) -> Run {
    let exe = build("imbalance", Compiler::Clang);
    let dir = scratch(&format!("concurrency-{}-{label}", runtime.name()));
    let mut cmd = kprof_cmd(&exe, &dir, runtime, false);
    if trace.is_empty() {
        cmd.env_remove("KPROF_TRACE");
    } else {
        cmd.env("KPROF_TRACE", trace);
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rounds 3 3\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Concurrency: 2 threads"),
        "no concurrency line in the summary:\n{stderr}"
    );
    let outdir = dir.join("out");
    let profile = read_profile(&outdir);
    let mut models = Vec::new();
    if trace.contains("json") {
        let m = read_json(&outdir);
        m.assert_valid();
        models.push(m);
    }
    if trace.contains("perfetto") && !skip_unless(perfetto_schema().is_some(), "protoc") {
        let m = read_perfetto(&outdir).expect("schema checked");
        m.assert_valid();
        models.push(m);
    }
    Run {
        profile,
        models,
        stderr: stderr.into_owned(),
        out: outdir,
    }
}

/// The summary's concurrency block, and `kprof report`'s of the same profile, are
/// the section's numbers: the overall line and one row per thread.
fn check_text(r: &Run) {
    let c = &r.profile["concurrency"];
    let block = |text: &str| -> Vec<String> {
        let mut lines = text.lines().skip_while(|l| !l.starts_with("Concurrency:"));
        let mut out: Vec<String> = lines.next().into_iter().map(String::from).collect();
        out.extend(lines.take_while(|l| l.starts_with("  ")).map(String::from));
        out
    };
    let summary = block(&r.stderr);
    let (wait, _) = category(&c["categories"], "wait");
    let (parallel, _) = category(&c["categories"], "parallel");
    assert_eq!(summary.len(), 3, "{summary:?}");
    assert!(
        summary[0].starts_with("Concurrency: 2 threads (")
            && summary[0].contains(&format!("{wait:.1}% wait"))
            && summary[0].contains(&format!("{parallel:.1}% parallel")),
        "{summary:?}"
    );
    for t in c["per_thread"].as_array().unwrap() {
        let row = format!("  {} ({}): ", t["name"].as_str().unwrap(), t["index"]);
        let line = summary
            .iter()
            .find(|l| l.starts_with(&row))
            .unwrap_or_else(|| panic!("no row {row:?} in {summary:?}"));
        // Shares under 0.05% are left out of the line.
        for cat in ["wait", "parallel"] {
            let (pct, _) = category(&t["categories"], cat);
            let shown = line.contains(&format!("{pct:.1}% {cat}"));
            assert_eq!(shown, pct >= 0.05, "{cat} {pct}: {line}");
        }
    }
    let o = run(Command::new(lib("kprof")).arg("report").arg(&r.out));
    assert_ok(&o);
    assert_eq!(block(&String::from_utf8_lossy(&o.stdout)), summary);
}

/// The share (percent) and time of `category` in a list of category times.
fn category(list: &Value, category: &str) -> (f64, u64) {
    let c = list
        .as_array()
        .expect("categories")
        .iter()
        .find(|c| c["category"] == category)
        .unwrap_or_else(|| panic!("no category {category} in {list}"));
    (c["pct"].as_f64().expect("pct"), u(&c["ns"]))
}

/// The profile's concurrency section says: 2 threads, half waiting (thread 0,
/// the initial thread, all the time), half parallel (thread 1, sleeping in its
/// implicit task), little else; returns the total wait time.
fn check_section(p: &Value) -> u64 {
    let c = &p["concurrency"];
    assert_eq!(u(&c["threads"]), 2, "{c}");
    let cats = &c["categories"];
    let names: Vec<&str> = cats
        .as_array()
        .expect("categories")
        .iter()
        .map(|c| c["category"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["kernel", "parallel", "task", "wait", "data", "region", "runtime", "idle"]
    );
    // The categories divide the threads' spans exactly.
    let sum: u64 = cats.as_array().unwrap().iter().map(|c| u(&c["ns"])).sum();
    assert_eq!(sum, u(&c["thread_ns"]), "{c}");
    let spans: u64 = c["per_thread"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| u(&t["span_ns"]))
        .sum();
    assert_eq!(spans, u(&c["thread_ns"]));
    assert!(u(&c["wall_ns"]) >= u(&c["thread_ns"]) / 2, "{c}");

    let (wait, wait_ns) = category(cats, "wait");
    let (parallel, _) = category(cats, "parallel");
    assert!(
        (wait - 50.0).abs() <= 5.0,
        "wait {wait}% (want 50 +- 5): {c}"
    );
    assert!(
        (parallel - 50.0).abs() <= 5.0,
        "parallel {parallel}% (want 50 +- 5): {c}"
    );
    for other in ["kernel", "task", "data", "region", "runtime"] {
        assert_eq!(category(cats, other), (0.0, 0), "{other}: {c}");
    }
    // The waiting is the sleep's length on the other thread, 3 times: never
    // less, and more only by how late a loaded machine wakes the sleeper.
    let want = (ROUNDS * SLEEP_NS) as f64;
    assert!(
        within_sleep(wait_ns as f64, want),
        "wait {wait_ns} ns, want {want} -5% +30%"
    );

    // Per thread: the initial thread waits, the worker works.
    let threads = c["per_thread"].as_array().expect("per_thread");
    assert_eq!(threads.len(), 2);
    let by_name = |name: &str| {
        threads
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no thread {name}: {c}"))
    };
    let initial = by_name("OpenMP initial thread");
    let worker = by_name("OpenMP worker thread");
    let (w0, _) = category(&initial["categories"], "wait");
    let (p1, _) = category(&worker["categories"], "parallel");
    assert!(w0 >= 90.0, "initial thread waits {w0}%: {initial}");
    assert!(p1 >= 90.0, "worker works {p1}%: {worker}");
    wait_ns
}

/// Whether `ns` is the length of sleeps of `want` ns in all: not shorter (but
/// for the clock's and the timestamps' slack), and longer only by the wake-up
/// delays that a loaded machine adds to each.
fn within_sleep(ns: f64, want: f64) -> bool {
    ns >= 0.95 * want && ns <= 1.3 * want
}

/// A counter series' step function: total time at each value, and the integral
/// (value x ns), from its first point to its last.
fn steps(series: &[(u64, f64)]) -> (std::collections::BTreeMap<u64, u64>, f64) {
    let mut at = std::collections::BTreeMap::new();
    let mut integral = 0.0;
    for w in series.windows(2) {
        let ((t0, v), (t1, _)) = (w[0], w[1]);
        assert!(t1 >= t0, "counter goes back in time: {series:?}");
        *at.entry(v as u64).or_insert(0) += t1 - t0;
        integral += v * (t1 - t0) as f64;
    }
    (at, integral)
}

#[test]
fn imbalance_waits_in_the_barrier_in_place() {
    let mut runtimes = vec![Runtime::Llvm14];
    if libomp19().is_some() {
        runtimes.push(Runtime::Llvm19);
    }
    for rt in runtimes {
        let r = imbalance(rt, "", "in-place");
        let p = &r.profile;
        assert!(
            u(&p["kprof"]["events_in_place"]) > 0,
            "not aggregated in place"
        );
        check_section(p);
        check_text(&r);
    }
}

#[test]
fn imbalance_waits_in_the_barrier_in_traces() {
    let r = imbalance(Runtime::Llvm14, "perfetto,json", "traces");
    let p = &r.profile;
    assert_eq!(
        u(&p["kprof"]["events_in_place"]),
        0,
        "a trace takes records"
    );
    let wait_ns = check_section(p);
    assert!(!r.models.is_empty());
    for m in &r.models {
        let names: Vec<&String> = m
            .counters
            .keys()
            .filter(|k| k.starts_with("threads "))
            .collect();
        let wait = m
            .counters
            .get("threads wait")
            .unwrap_or_else(|| panic!("{:?}: no 'threads wait' track in {names:?}", m.format));
        let (at, integral) = steps(wait);
        // Never more than one thread waits; one waits 3 x 200 ms (and briefly
        // between regions, the worker).
        assert!(at.keys().all(|&v| v <= 2), "{:?}: {at:?}", m.format);
        let one = *at.get(&1).unwrap_or(&0) as f64;
        let want = (ROUNDS * SLEEP_NS) as f64;
        assert!(
            within_sleep(one, want),
            "{:?}: one thread waits {one} ns, want {want} -5% +30% ({at:?})",
            m.format
        );
        // The same waiting as the profile's.
        assert!(
            (integral - wait_ns as f64).abs() <= 0.05 * wait_ns as f64,
            "{:?}: waiting integral {integral}, profile {wait_ns}",
            m.format
        );
        // The worker sleeps in its implicit task: one thread in parallel work.
        let (par, _) = steps(&m.counters["threads parallel"]);
        let one = *par.get(&1).unwrap_or(&0) as f64;
        assert!(
            one >= 0.95 * want,
            "{:?}: parallel {par:?}, want 1 for {want} ns",
            m.format
        );
        // Every point is a change, and few: not one per event.
        assert!(wait.len() < 100, "{:?}: {} points", m.format, wait.len());
        // At the end, both threads are idle.
        let idle = &m.counters["threads idle"];
        assert_eq!(idle.last().map(|&(_, v)| v), Some(2.0), "{:?}", m.format);
    }
}
