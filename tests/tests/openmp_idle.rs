//! What an OpenMP implicit task's time means, on the real runtimes (libomp 14
//! and 19): `tests/openmp/idle.c` runs balanced parallel regions of 2 threads
//! (both threads sleep the same time) between serial sleeps, once (`idle one`:
//! one region of 30 ms, then 50 ms serial until the end) and as a loop (`idle
//! loop`: 40 regions of 2 ms, each followed by 2 ms serial).
//!
//! libomp reports a worker's implicit barrier and implicit task as ending only
//! when the worker is next woken (the next region, or the runtime's shutdown,
//! which comes after kprof wrote its output). Those ends must count at the
//! region's join: what follows is idle, not work and not waiting. So, in place
//! and from records (a trace):
//! - every implicit task lies inside its region: no implicit task is longer
//!   than the longest region, none adds up to more than the region per thread,
//!   and a worker's span ends with its last region;
//! - a region's spread over its threads (`threads` of the implicit task, the
//!   summary's "work per thread") is each thread's work, its implicit task less
//!   what it waited inside: balanced work reads near 1.0x, and the imbalanced
//!   program `tests/openmp/imbalance.c` (one thread sleeps, the other waits)
//!   reads 2.0x;
//! - in the traces, each implicit task slice lies inside a region slice.

use kprof_tests::openmp::{build, kprof_cmd, libomp19, Compiler, Runtime};
use kprof_tests::trace_check::{perfetto_schema, read_json, read_perfetto, Model};
use kprof_tests::{assert_ok, nodes, read_profile, run, scratch, skip_unless, u};
use serde_json::Value;
use std::sync::Mutex;

/// Threads of every region.
const THREADS: u64 = 2;
/// Slack for times written in microseconds (trace.json).
const ROUNDING_NS: u64 = 1_000;
/// The most a balanced region's imbalance may read (the late ends made it 1.3x
/// to 2x).
const BALANCED: f64 = 1.2;

/// One run under kprof, its outputs read back.
struct Run {
    profile: Value,
    stderr: String,
    models: Vec<Model>,
}

/// Runs `program args` on `runtime` with the traces `trace` (empty: none, the
/// profile aggregated in place). One program at a time: the threads' work is
/// their sleeps, and a thread waiting for a CPU after a sleep counts as working.
fn kprof(program: &str, args: &[&str], runtime: Runtime, trace: &str) -> Run {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let exe = build(program, Compiler::Clang);
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let label = format!("{program}-{}-{}-{trace}", args.join("-"), runtime.name());
    let dir = scratch(&format!("openmp-idle-{}", label.replace(',', "-")));
    let mut cmd = kprof_cmd(&exe, &dir, runtime, false);
    cmd.args(args);
    if trace.is_empty() {
        cmd.env_remove("KPROF_TRACE");
    } else {
        cmd.env("KPROF_TRACE", trace);
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    let outdir = dir.join("out");
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
        profile: read_profile(&outdir),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        models,
    }
}

/// The node of kind `kind` (exactly one), with its path.
fn only(p: &Value, kind: &str) -> (Vec<String>, Value) {
    let mut found: Vec<_> = nodes(p)
        .into_iter()
        .filter(|(_, n)| n["kind"] == kind)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {kind} node expected, tree: {}",
        p["tree"]
    );
    found.remove(0)
}

/// The parallel region, its implicit task (under it) and that task's implicit
/// barrier, with their counts checked for `regions` regions.
fn region_nodes(p: &Value, regions: u64) -> (Value, Value, Value) {
    let (rpath, region) = only(p, "omp_parallel");
    let (tpath, task) = only(p, "omp_implicit_task");
    let (bpath, barrier) = only(p, "omp_barrier");
    assert_eq!(
        tpath[..tpath.len() - 1],
        rpath[..],
        "implicit task under its region"
    );
    assert_eq!(
        bpath[..bpath.len() - 1],
        tpath[..],
        "barrier in the implicit task"
    );
    assert_eq!(u(&region["count"]), regions, "{region}");
    assert_eq!(u(&task["count"]), THREADS * regions, "{task}");
    assert_eq!(u(&barrier["count"]), THREADS * regions, "{barrier}");
    (region, task, barrier)
}

/// The summary's line for the region: "1.00x  2 threads  min ...".
fn summary_imbalance(stderr: &str) -> f64 {
    let mut lines = stderr
        .lines()
        .skip_while(|l| !l.starts_with("OpenMP parallel regions: work per thread"));
    assert!(lines.next().is_some(), "no OpenMP block in:\n{stderr}");
    let line = lines.next().expect("a region's line");
    assert!(line.contains(" 2 threads "), "{line}");
    line.trim()
        .split('x')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no imbalance in {line:?}"))
}

/// Balanced regions, `regions` of them, each thread sleeping `sleep_ns` in
/// each: see the module documentation.
fn check_balanced(r: &Run, regions: u64, sleep_ns: u64, what: &str) {
    let p = &r.profile;
    let (region, task, barrier) = region_nodes(p, regions);
    let region_total = u(&region["total_ns"]);
    let region_max = u(&region["max_ns"]);
    // No implicit task (and no barrier inside one) outlasts the longest region,
    // and per thread they add up to at most the regions' time.
    assert!(
        u(&task["max_ns"]) <= region_max,
        "{what}: an implicit task of {} ns in regions of at most {region_max} ns",
        u(&task["max_ns"])
    );
    assert!(
        u(&barrier["max_ns"]) <= region_max,
        "{what}: an implicit barrier of {} ns in regions of at most {region_max} ns",
        u(&barrier["max_ns"])
    );
    assert!(
        u(&task["total_ns"]) <= THREADS * region_total,
        "{what}: implicit tasks {} ns under {THREADS} x {region_total} ns of regions",
        u(&task["total_ns"])
    );
    // Work per thread: at least the sleeps, at most the regions; balanced.
    let t = &task["threads"];
    assert_eq!(u(&t["threads"]), THREADS, "{what}: {t}");
    assert!(
        u(&t["min_ns"]) >= regions * sleep_ns && u(&t["max_ns"]) <= region_total,
        "{what}: work per thread {t}, {} ns of sleep, regions {region_total} ns",
        regions * sleep_ns
    );
    let imbalance = t["imbalance"].as_f64().expect("imbalance");
    assert!(imbalance <= BALANCED, "{what}: imbalance {imbalance} ({t})");
    let shown = summary_imbalance(&r.stderr);
    assert!(
        (shown - imbalance).abs() < 0.006,
        "{what}: the summary says {shown}x, the profile {imbalance}"
    );
    // Each thread's span (first begin to last end) lies within the initial
    // thread's: the worker is not working or waiting after the last join.
    let spans: Vec<(String, u64)> = p["concurrency"]["per_thread"]
        .as_array()
        .expect("concurrency per thread")
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().into(),
                u(&t["span_ns"]),
            )
        })
        .collect();
    let initial = spans
        .iter()
        .find(|(n, _)| n.contains("initial"))
        .map(|s| s.1)
        .unwrap_or_else(|| panic!("{what}: no initial thread in {spans:?}"));
    for (name, span) in &spans {
        assert!(
            *span <= initial,
            "{what}: {name} spans {span} ns, the initial thread {initial} ns"
        );
    }
    if regions == 1 {
        let worker = spans
            .iter()
            .find(|(n, _)| n.contains("worker"))
            .expect("a worker");
        assert!(
            worker.1 <= region_total,
            "{what}: the worker spans {} ns, its only region {region_total} ns",
            worker.1
        );
    }
    let name = region["name"].as_str().expect("region name");
    for m in &r.models {
        check_trace(m, name, &format!("{what} ({:?})", m.format));
    }
}

/// In a trace: every implicit task slice lies inside a slice of the region
/// named `region`.
fn check_trace(m: &Model, region: &str, what: &str) {
    let regions: Vec<(u64, u64)> = m
        .named(region)
        .iter()
        .map(|s| (s.begin_ns, s.end_ns))
        .collect();
    let tasks = m.named("implicit task");
    assert!(
        !regions.is_empty() && !tasks.is_empty(),
        "{what}: no regions or tasks"
    );
    for s in tasks {
        assert!(
            regions
                .iter()
                .any(|&(b, e)| s.begin_ns + ROUNDING_NS >= b && s.end_ns <= e + ROUNDING_NS),
            "{what}: implicit task [{}, {}] outside every region {regions:?}",
            s.begin_ns,
            s.end_ns
        );
    }
}

fn one_region(runtime: Runtime, trace: &str) {
    let r = kprof("idle", &["one"], runtime, trace);
    check_balanced(
        &r,
        1,
        30_000_000,
        &format!("one region, {}", runtime.name()),
    );
}

fn short_regions(runtime: Runtime, trace: &str) {
    let r = kprof("idle", &["loop"], runtime, trace);
    check_balanced(
        &r,
        40,
        2_000_000,
        &format!("40 regions, {}", runtime.name()),
    );
}

#[test]
fn one_balanced_region_then_idle_libomp14() {
    one_region(Runtime::Llvm14, "");
}

#[test]
fn one_balanced_region_then_idle_libomp19() {
    if skip_unless(libomp19().is_some(), "libomp 19 (tests/setup.sh)") {
        return;
    }
    one_region(Runtime::Llvm19, "");
}

#[test]
fn short_balanced_regions_libomp14() {
    short_regions(Runtime::Llvm14, "");
}

#[test]
fn short_balanced_regions_libomp19() {
    if skip_unless(libomp19().is_some(), "libomp 19 (tests/setup.sh)") {
        return;
    }
    short_regions(Runtime::Llvm19, "");
}

/// From records, with both traces: the same profile, and slices that agree.
#[test]
fn balanced_regions_with_traces_libomp14() {
    one_region(Runtime::Llvm14, "perfetto,json");
    short_regions(Runtime::Llvm14, "perfetto,json");
}

#[test]
fn balanced_regions_with_traces_libomp19() {
    if skip_unless(libomp19().is_some(), "libomp 19 (tests/setup.sh)") {
        return;
    }
    one_region(Runtime::Llvm19, "perfetto,json");
    short_regions(Runtime::Llvm19, "perfetto,json");
}

/// `imbalance.c`: in each of 3 regions thread 1 sleeps 200 ms while thread 0
/// waits in the barrier. Thread 0's implicit task lasts as long as thread 1's,
/// but it did no work: the spread is the work, 2.0x.
#[test]
fn imbalanced_work_reads_as_imbalance() {
    for trace in ["", "perfetto"] {
        let r = kprof("imbalance", &[], Runtime::Llvm14, trace);
        let what = format!("imbalance.c, trace {trace:?}");
        let (region, task, _) = region_nodes(&r.profile, 3);
        let t = &task["threads"];
        let imbalance = t["imbalance"].as_f64().expect("imbalance");
        assert!(imbalance > 1.9, "{what}: imbalance {imbalance} ({t})");
        assert!(
            u(&t["min_ns"]) < 30_000_000 && u(&t["max_ns"]) >= 600_000_000,
            "{what}: work per thread {t}"
        );
        assert!(u(&task["max_ns"]) <= u(&region["max_ns"]), "{what}: {task}");
        let shown = summary_imbalance(&r.stderr);
        assert!(
            (shown - imbalance).abs() < 0.006,
            "{what}: summary {shown}x"
        );
    }
}
