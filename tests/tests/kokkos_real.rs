//! kprof's Kokkos plugin (`libkprof.so`) loaded by a REAL Kokkos: the bundled example
//! `examples/kokkos/main.cpp`, built against Kokkos 3.4.01 (Serial + OpenMP) by
//! `tests/scripts/build-kokkos.sh` into `${KPROF_DEPS_DIR:-target/deps}/kokkos-example/`
//! (a relative KPROF_DEPS_DIR is taken relative to the workspace root). When that
//! binary is missing the tests are skipped (failed under KPROF_REQUIRE_ALL_TESTS=1).
//!
//! Facts this test relies on, recorded with a probe tool that printed every
//! kokkosp_* callback of the example under Kokkos 3.4.01 (OMP_NUM_THREADS=2; the
//! same sequence with 4 threads):
//!
//! - Kokkos 3.4 loads a tool ONLY from `KOKKOS_PROFILE_LIBRARY` or
//!   `--kokkos-tools-library=`; it ignores `KOKKOS_TOOLS_LIBS` and `KOKKOS_TOOLS_ARGS`
//!   (both came with Kokkos 3.5+/4). The tests set KOKKOS_PROFILE_LIBRARY, and
//!   KOKKOS_TOOLS_LIBS to the same path (newer Kokkos accepts both when they agree).
//! - `kokkosp_init_library(0, 20210225, 0, ...)`; `--kokkos-tools-args=A B` gives
//!   `kokkosp_parse_args(3, [exe, "A", "B"])` (split at spaces, no quoting) and is
//!   removed from the program's argv.
//! - 26 `declare_metadata` pairs, among them "Kokkos Version" = "3.4.1" and
//!   "Default Device" = "N6Kokkos6OpenMPE" (no "OpenMP thread_pool_size" in 3.4).
//! - devIDs: the program's kernels and the deep copy's internal kernel 0x01000000
//!   (OpenMP, device index 0, instance 0 — Kokkos 3.4 uses instance 0, 4.x uses 1);
//!   the "Kokkos::View::initialization [<label>]" kernels 0x00000000 (decoded Serial,
//!   index 0, instance 0: Kokkos 3.4 passes a literal 0).
//! - Kokkos 3.4 reports NO fences at all (it never calls kokkosp_begin_fence and has
//!   no named `Kokkos::fence(name)`), so the tree has no fence nodes.
//! - The unnamed functor kernel is named `typeid(solver::Clamp).name()`,
//!   "N6solver5ClampE" (Kokkos 3.4 does not demangle; kprof may or may not, so
//!   "solver::Clamp" is accepted too).
//! - Callback order, per run (sizes in bytes):
//!
//! ```text
//! allocate Host "x" 800000, parallel_for "Kokkos::View::initialization [x]" (dev 0)
//! allocate Host "y" 800000, init kernel [y]
//! allocate Host "offsets" 800008, init kernel [offsets]
//! allocate Host "x_host" 800000, init kernel [x_host]
//! allocate Host "leaked_buffer" 4096 (never deallocated)
//! push "setup"
//!   allocate Host "setup_tmp" 800000, init kernel [setup_tmp]
//!   parallel_for init_x, init_y, init_tmp, combine
//!   deallocate "setup_tmp" 800000
//! pop
//! create_profile_section "solver_iteration"
//! push "solve"
//!   5 x { start_section; push "iteration"; parallel_for axpy;
//!         parallel_reduce dot; parallel_scan prefix_sum;
//!         parallel_for N6solver5ClampE; pop; stop_section;
//!         profile_event "checkpoint" after iterations 2 and 4 }
//! pop
//! profile_event "solve_done"; destroy_profile_section
//! begin_deep_copy dst Host "x_host" src Host "x" size 800000
//!   parallel_for "Kokkos::Impl::host_space_deepcopy_double" (dev 0x01000000;
//!   only with more than one OpenMP thread, hence OMP_NUM_THREADS=2 below)
//! end_deep_copy
//! deallocate x_host 800000, offsets 800008, y 800000, x 800000
//! finalize_library
//! ```
//!
//! - Sizes are the Views' own byte counts (no View header in the reported size; the
//!   reported pointer is the allocation base, 128 bytes before `view.data()`).
//! - Host memory: 6 allocations, 5 deallocations, high water while "setup_tmp" is
//!   alive = 4 * 800000 + 800008 + 4096 = 4004104 bytes, 4096 bytes at the end.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kprof_tests::{
    assert_ok, clean_cmd, compile, lib, node, nodes, read_profile, scratch, shape, skip_unless,
    test_file, u, workspace_root, Shape,
};
use serde_json::{json, Value};

/// The example's stdout, with Kokkos' tool options removed from argv and
/// OMP_PROC_BIND set (Kokkos 3.4 prints its OMP_PROC_BIND warning on STDOUT otherwise).
const EXPECTED_STDOUT: &str = "\
arguments left after Kokkos::initialize: 0
iteration 1: dot = 8383317.0, scan total = 199998
iteration 2: dot = 7396641.0, scan total = 300000
iteration 3: dot = 10490057.0, scan total = 200002
iteration 4: dot = 12903291.0, scan total = 100000
iteration 5: dot = 14236605.0, scan total = 199998
checksum = 989963.0
execution space = OpenMP
";

const KOKKOS_VERSION: &str = "3.4.1";
const ITERATIONS: u64 = 5;
const CLAMP_NAMES: [&str; 2] = ["N6solver5ClampE", "solver::Clamp"];
const SERIAL_INIT_KERNELS: [&str; 4] = [
    "Kokkos::View::initialization [x]",
    "Kokkos::View::initialization [y]",
    "Kokkos::View::initialization [offsets]",
    "Kokkos::View::initialization [x_host]",
];
const SETUP_KERNELS: [&str; 4] = ["init_x", "init_y", "init_tmp", "combine"];
const DEEP_COPY_KERNEL: &str = "Kokkos::Impl::host_space_deepcopy_double";
const VIEW_BYTES: u64 = 800_000;
const OFFSETS_BYTES: u64 = 800_008;
const LEAK_BYTES: u64 = 4096;

/// `$KPROF_DEPS_DIR` (default `target/deps`, relative to the workspace root).
fn deps_dir() -> PathBuf {
    match std::env::var_os("KPROF_DEPS_DIR") {
        Some(d) if !d.is_empty() => workspace_root().join(d),
        _ => workspace_root().join("target").join("deps"),
    }
}

/// The example binary built by tests/scripts/build-kokkos.sh, if it is there.
fn example_binary() -> Option<PathBuf> {
    let exe = deps_dir().join("kokkos-example").join("kokkos_example");
    exe.is_file().then_some(exe)
}

fn find_example() -> Option<PathBuf> {
    let exe = example_binary();
    if skip_unless(
        exe.is_some(),
        "real Kokkos (run tests/scripts/build-kokkos.sh)",
    ) {
        return None;
    }
    exe
}

/// The example with a clean, deterministic environment, run in `cwd`, no tool.
fn example_cmd(exe: &Path, cwd: &Path) -> Command {
    let mut cmd = clean_cmd(exe);
    cmd.env_remove("OMP_PLACES");
    cmd.current_dir(cwd)
        .env("OMP_NUM_THREADS", "2")
        .env("OMP_PROC_BIND", "false")
        .stdin(Stdio::null());
    cmd
}

/// Adds libkprof.so as the Kokkos tool.
fn with_kprof(cmd: &mut Command) -> &mut Command {
    let l = lib("libkprof.so");
    assert!(l.is_file(), "{} was not built", l.display());
    cmd.env("KOKKOS_PROFILE_LIBRARY", &l)
        .env("KOKKOS_TOOLS_LIBS", &l)
}

/// Runs `cmd`, returning its pid and output; asserts exit 0.
fn run_pid(cmd: &mut Command) -> (u32, Output) {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id();
    let out = child.wait_with_output().expect("wait for the example");
    assert_ok(&out);
    (pid, out)
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn f(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

/// A run of the example without a tool: its stdout is the reference.
fn baseline(exe: &Path, cwd: &Path) -> String {
    let (_, out) = run_pid(&mut example_cmd(exe, cwd));
    let text = stdout(&out);
    assert_eq!(text, EXPECTED_STDOUT, "the example's own output changed");
    text
}

/// Statistics every tree node must satisfy, recursively.
fn check_stats(list: &Value) {
    for n in list.as_array().expect("node list") {
        let name = n["name"].as_str().unwrap_or("?");
        let count = u(&n["count"]);
        let total = u(&n["total_ns"]);
        let selfns = u(&n["self_ns"]);
        let (min, max, mean) = (f(&n["min_ns"]), f(&n["max_ns"]), f(&n["mean_ns"]));
        assert!(count > 0, "{name}: count 0");
        assert!(total > 0, "{name}: total_ns 0");
        assert!(
            selfns <= total,
            "{name}: self_ns {selfns} > total_ns {total}"
        );
        assert!(
            min > 0.0 && min <= mean && mean <= max,
            "{name}: min {min} mean {mean} max {max}"
        );
        assert!(
            (mean * count as f64 - total as f64).abs() <= count as f64 + 1.0,
            "{name}: mean {mean} x count {count} != total {total}"
        );
        assert!(max <= total as f64, "{name}: max {max} > total {total}");
        let sd = f(&n["stddev_ns"]);
        assert!(sd >= 0.0, "{name}: negative stddev");
        if count == 1 {
            assert_eq!(min, max, "{name}: one instance, min != max");
            assert_eq!(sd, 0.0, "{name}: one instance, stddev {sd}");
        }
        let children = n["children"].as_array().expect("children");
        let child_total: u64 = children.iter().map(|c| u(&c["total_ns"])).sum();
        assert!(
            child_total <= total,
            "{name}: children total {child_total} > total {total}"
        );
        assert_eq!(
            selfns,
            total - child_total,
            "{name}: self_ns is not total_ns minus the children's total"
        );
        check_stats(&n["children"]);
    }
}

/// The name kprof gave the unnamed functor kernel (one of [`CLAMP_NAMES`]).
fn clamp_name(p: &Value) -> &'static str {
    let all = nodes(p);
    let found: Vec<&str> = CLAMP_NAMES
        .into_iter()
        .filter(|name| {
            all.iter()
                .any(|(path, _)| path.last().is_some_and(|l| l == name))
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "the unnamed functor kernel is not named one of {CLAMP_NAMES:?}; paths:\n{}",
        all.iter()
            .map(|(p, _)| p.join(" / "))
            .collect::<Vec<_>>()
            .join("\n")
    );
    found[0]
}

/// The exact tree the example must give (see the facts at the top).
fn expected_shape(clamp: &str) -> Shape {
    let k = |path: &str, kind: &str, count: u64, device: &str| {
        (
            path.to_string(),
            kind.to_string(),
            count,
            format!("\"{device}\""),
            "0".to_string(),
            "0".to_string(),
        )
    };
    let r = |path: &str, kind: &str, count: u64| {
        (
            path.to_string(),
            kind.to_string(),
            count,
            "null".to_string(),
            "null".to_string(),
            "null".to_string(),
        )
    };
    let mut s = Shape::new();
    for name in SERIAL_INIT_KERNELS {
        s.insert(k(name, "parallel_for", 1, "Serial"));
    }
    s.insert(r("setup", "region", 1));
    s.insert(k(
        "setup / Kokkos::View::initialization [setup_tmp]",
        "parallel_for",
        1,
        "Serial",
    ));
    for name in SETUP_KERNELS {
        s.insert(k(&format!("setup / {name}"), "parallel_for", 1, "OpenMP"));
    }
    s.insert(r("solve", "region", 1));
    s.insert(r("solve / iteration", "region", ITERATIONS));
    s.insert(k(
        "solve / iteration / axpy",
        "parallel_for",
        ITERATIONS,
        "OpenMP",
    ));
    s.insert(k(
        "solve / iteration / dot",
        "parallel_reduce",
        ITERATIONS,
        "OpenMP",
    ));
    s.insert(k(
        "solve / iteration / prefix_sum",
        "parallel_scan",
        ITERATIONS,
        "OpenMP",
    ));
    s.insert(k(
        &format!("solve / iteration / {clamp}"),
        "parallel_for",
        ITERATIONS,
        "OpenMP",
    ));
    s.insert(r("x_host <- x", "deep_copy", 1));
    s.insert(k(
        &format!("x_host <- x / {DEEP_COPY_KERNEL}"),
        "parallel_for",
        1,
        "OpenMP",
    ));
    s
}

/// The tree: exact shape, nesting, and consistent statistics.
fn check_tree(p: &Value) {
    check_stats(&p["tree"]);
    let clamp = clamp_name(p);
    let got = shape(p);
    let want = expected_shape(clamp);
    assert_eq!(
        got,
        want,
        "tree differs from the example's known structure\nmissing: {:#?}\nunexpected: {:#?}",
        want.difference(&got).collect::<Vec<_>>(),
        got.difference(&want).collect::<Vec<_>>()
    );
    // The roots (their order is not part of the schema).
    let roots: Vec<&str> = p["tree"]
        .as_array()
        .expect("tree")
        .iter()
        .map(|n| n["name"].as_str().expect("name"))
        .collect();
    let mut want_roots: Vec<&str> = SERIAL_INIT_KERNELS.to_vec();
    want_roots.extend(["setup", "solve", "x_host <- x"]);
    assert_eq!(roots.len(), want_roots.len(), "roots {roots:?}");
    assert_eq!(
        roots.iter().collect::<BTreeSet<_>>(),
        want_roots.iter().collect::<BTreeSet<_>>()
    );

    let all = nodes(p);
    let total = |path: &[&str]| u(&node(&all, path)["total_ns"]);
    let iteration = total(&["solve", "iteration"]);
    let solve = total(&["solve"]);
    assert!(iteration <= solve, "iteration {iteration} > solve {solve}");
    let duration = u(&p["clock"]["duration_ns"]);
    let tree_total: u64 = p["tree"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| u(&n["total_ns"]))
        .sum();
    assert!(
        tree_total <= duration,
        "roots' total {tree_total} > run duration {duration}"
    );
    // The deep copy's node and its entry in deep_copies are the same measurement.
    let copy = node(&all, &["x_host <- x"]);
    assert_eq!(copy["kind"], "deep_copy");
    assert_eq!(u(&copy["total_ns"]), u(&p["deep_copies"][0]["total_ns"]));
}

/// Everything the example must produce in `profile.json` (written to `dir`).
fn check_profile(p: &Value, pid: u32) {
    assert_eq!(p["schema"], "kprof-profile/1");
    assert_eq!(p["program"]["executable"], "kokkos_example");
    assert_eq!(u(&p["program"]["pid"]), u64::from(pid));
    assert!(
        p["program"]["rank"].is_null(),
        "rank {}",
        p["program"]["rank"]
    );
    assert!(
        p["plugins"]
            .as_array()
            .expect("plugins")
            .contains(&Value::from("kokkos")),
        "plugins {}",
        p["plugins"]
    );
    let clock = &p["clock"];
    assert_eq!(clock["domain"], "CLOCK_MONOTONIC");
    let (start, end, duration) = (
        u(&clock["start_ns"]),
        u(&clock["end_ns"]),
        u(&clock["duration_ns"]),
    );
    assert!(
        duration > 0 && end >= start && end - start == duration,
        "clock {clock}"
    );

    // Every callback comes on the thread that launches the kernels (the main thread).
    let threads = p["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 1, "threads {}", p["threads"]);
    assert_eq!(
        u(&threads[0]["tid"]),
        u64::from(pid),
        "threads {}",
        p["threads"]
    );
    assert!(u(&threads[0]["records"]) > 0);

    check_tree(p);

    // sections: one, started and stopped once per iteration, around region "iteration"
    let sections = p["sections"].as_array().expect("sections");
    assert_eq!(sections.len(), 1, "sections {}", p["sections"]);
    let s = &sections[0];
    assert_eq!(s["name"], "solver_iteration");
    assert_eq!(u(&s["count"]), ITERATIONS);
    let (s_total, s_min, s_max) = (u(&s["total_ns"]), u(&s["min_ns"]), u(&s["max_ns"]));
    assert!(
        0 < s_min
            && s_min <= s_max
            && ITERATIONS * s_min <= s_total
            && s_total <= ITERATIONS * s_max,
        "section {s}"
    );
    let all = nodes(p);
    let iteration = u(&node(&all, &["solve", "iteration"])["total_ns"]);
    let solve = u(&node(&all, &["solve"])["total_ns"]);
    assert!(
        iteration <= s_total && s_total <= solve,
        "section total {s_total} should lie between region iteration {iteration} and solve {solve}"
    );

    // events
    let mut events: Vec<Value> = p["events"].as_array().expect("events").clone();
    events.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    assert_eq!(
        Value::Array(events),
        json!([{"name": "checkpoint", "count": 2}, {"name": "solve_done", "count": 1}])
    );

    // deep copies
    let dc = p["deep_copies"].as_array().expect("deep_copies");
    assert_eq!(dc.len(), 1, "deep_copies {}", p["deep_copies"]);
    let d = &dc[0];
    assert_eq!(
        (
            &d["dst_space"],
            &d["dst_label"],
            &d["src_space"],
            &d["src_label"]
        ),
        (
            &json!("Host"),
            &json!("x_host"),
            &json!("Host"),
            &json!("x")
        ),
        "deep copy {d}"
    );
    assert_eq!(
        (u(&d["count"]), u(&d["bytes"])),
        (1, VIEW_BYTES),
        "deep copy {d}"
    );
    assert!(u(&d["total_ns"]) > 0);

    // memory: HostSpace only
    let mem = p["memory"].as_array().expect("memory");
    assert_eq!(mem.len(), 1, "memory {}", p["memory"]);
    let host = &mem[0];
    assert_eq!(host["space"], "Host");
    assert_eq!(u(&host["allocations"]), 6, "{host}");
    assert_eq!(u(&host["deallocations"]), 5, "{host}");
    assert_eq!(u(&host["current_bytes"]), LEAK_BYTES, "{host}");
    assert_eq!(
        u(&host["high_water_bytes"]),
        4 * VIEW_BYTES + OFFSETS_BYTES + LEAK_BYTES,
        "{host}"
    );
    let hw_ns = u(&host["high_water_ns"]);
    assert!(
        0 < hw_ns && hw_ns < duration,
        "high_water_ns {hw_ns}, run {duration}"
    );
    let largest = host["largest"].as_array().expect("largest");
    assert_eq!(largest.len(), 6, "largest {}", host["largest"]);
    assert_eq!(
        largest[0],
        json!({"label": "offsets", "bytes": OFFSETS_BYTES})
    );
    let middle: BTreeSet<&str> = largest[1..5]
        .iter()
        .map(|l| {
            assert_eq!(u(&l["bytes"]), VIEW_BYTES, "largest {}", host["largest"]);
            l["label"].as_str().expect("label")
        })
        .collect();
    assert_eq!(middle, BTreeSet::from(["x", "y", "x_host", "setup_tmp"]));
    assert_eq!(
        largest[5],
        json!({"label": "leaked_buffer", "bytes": LEAK_BYTES})
    );
    let leaks = host["leaks"].as_array().expect("leaks");
    assert_eq!(leaks.len(), 1, "leaks {}", host["leaks"]);
    assert_eq!(leaks[0]["label"], "leaked_buffer");
    assert_eq!(u(&leaks[0]["bytes"]), LEAK_BYTES);
    let addr = leaks[0]["address"].as_str().expect("address");
    assert!(
        addr.starts_with("0x")
            && addr.len() > 2
            && u64::from_str_radix(&addr[2..], 16).is_ok_and(|a| a != 0),
        "leak address {addr}"
    );

    assert_eq!(p["dual_views"], json!([]), "the example has no DualView");

    // metadata: Kokkos 3.4.01 declares 26 pairs (kprof may add its own)
    let md = p["metadata"].as_object().expect("metadata");
    assert_eq!(
        md["Kokkos Version"], KOKKOS_VERSION,
        "re-measure the facts above for another Kokkos"
    );
    assert_eq!(md["Default Device"], "N6Kokkos6OpenMPE");
    for key in [
        "KOKKOS_COMPILER_GNU",
        "KOKKOS_ENABLE_CXX14",
        "KOKKOS_ENABLE_GNU_ATOMICS",
        "KOKKOS_ENABLE_MPI",
        "compiler_family",
        "KOKKOS_ENABLE_PRAGMA_VECTOR",
    ] {
        assert!(md.contains_key(key), "metadata lacks {key}: {md:?}");
    }
    assert_eq!(md["compiler_family"], "gnu");
    assert!(md.len() >= 26, "metadata has {} keys", md.len());

    // nothing anomalous, nothing dropped
    let anomalies = p["anomalies"].as_object().expect("anomalies");
    // Every counter kprof defines is reported, each zero.
    assert_eq!(
        anomalies.len(),
        kprof_abi::Anomaly::ALL.len(),
        "anomalies {}",
        p["anomalies"]
    );
    for (k, v) in anomalies {
        assert_eq!(u(v), 0, "anomaly {k} in a clean run");
    }
    assert_eq!(u(&p["dropped_records"]), 0);
}

/// profile.csv: the header, and one row per tree node agreeing with profile.json.
fn check_csv(dir: &Path, p: &Value) {
    let path = dir.join("profile.csv");
    let csv = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("path,name,kind,device,instance,depth,count,total_ns,self_ns,min_ns,max_ns,mean_ns,stddev_ns,id,parent,threads,per_thread_total_ns,per_thread_self_ns")
    );
    let all = nodes(p);
    let by_path: BTreeMap<String, &Value> =
        all.iter().map(|(path, n)| (path.join(";"), n)).collect();
    assert_eq!(by_path.len(), all.len(), "duplicate paths in the tree");
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), all.len(), "csv rows:\n{csv}");
    let mut seen = BTreeSet::new();
    for row in rows {
        // No name of this example contains a comma or a quote, so no field is quoted.
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(fields.len(), 18, "csv row {row:?}");
        let n = by_path
            .get(fields[0])
            .unwrap_or_else(|| panic!("csv path {:?} is not in the tree", fields[0]));
        assert!(seen.insert(fields[0]), "csv path {:?} twice", fields[0]);
        let depth = fields[0].matches(';').count();
        let opt = |v: &Value| match v {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert_eq!(fields[1], n["name"].as_str().unwrap(), "{row}");
        assert_eq!(fields[2], n["kind"].as_str().unwrap(), "{row}");
        assert_eq!(fields[3], opt(&n["device"]), "{row}");
        assert_eq!(fields[4], opt(&n["instance"]), "{row}");
        assert_eq!(fields[5], depth.to_string(), "{row}");
        for (i, key) in [
            (6, "count"),
            (7, "total_ns"),
            (8, "self_ns"),
            (9, "min_ns"),
            (10, "max_ns"),
        ] {
            assert_eq!(
                fields[i].parse::<u64>().ok(),
                n[key].as_u64(),
                "{key} in {row}"
            );
        }
        for (i, key) in [(11, "mean_ns"), (12, "stddev_ns")] {
            let v: f64 = fields[i]
                .parse()
                .unwrap_or_else(|_| panic!("{key} in {row}"));
            assert!(
                (v - f(&n[key])).abs() <= 0.5,
                "{key} in {row}: json {}",
                n[key]
            );
        }
    }
}

#[test]
fn example_under_kprof() {
    let Some(exe) = find_example() else { return };
    let dir = scratch("kokkos_real");
    let base = baseline(&exe, &dir);

    let out_dir = dir.join("out");
    let mut cmd = example_cmd(&exe, &dir);
    with_kprof(&mut cmd).env("KPROF_OUTPUT_DIR", &out_dir);
    let (pid, out) = run_pid(&mut cmd);
    let err = stderr(&out);

    // The program's stdout is untouched and kprof wrote nothing to it.
    assert_eq!(
        stdout(&out),
        base,
        "stdout changed under kprof; stderr:\n{err}"
    );
    // The summary is on stderr, its last line names the directory.
    assert_eq!(
        err.lines().rev().find(|l| !l.trim().is_empty()),
        Some(format!("kprof: files in {}", out_dir.display()).as_str()),
        "stderr:\n{err}"
    );
    assert!(
        err.contains("prefix_sum"),
        "the summary lacks the kernels:\n{err}"
    );

    let p = read_profile(&out_dir);
    check_profile(&p, pid);
    check_csv(&out_dir, &p);

    // Exactly one output directory, nothing else in the working directory.
    let entries: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, BTreeSet::from(["out".to_string()]));
}

/// The example's profile is the same whether Kokkos' events are aggregated in
/// place by the threads (the default), go as records to the writer with a trace,
/// or without one (`KPROF_IN_PLACE=0`): each passes the exact checks of
/// [`check_profile`], and the three trees have the same nodes and counts.
#[test]
fn example_same_profile_in_place_and_from_records() {
    let Some(exe) = find_example() else { return };
    let mut trees = Vec::new();
    for (name, var, value) in [
        ("in_place", "KPROF_IN_PLACE", "1"),
        ("trace", "KPROF_TRACE", "perfetto"),
        ("records", "KPROF_IN_PLACE", "0"),
    ] {
        let dir = scratch(&format!("kokkos_real_{name}"));
        let out_dir = dir.join("out");
        let mut cmd = example_cmd(&exe, &dir);
        with_kprof(&mut cmd)
            .env("KPROF_OUTPUT_DIR", &out_dir)
            .env("KPROF_SUMMARY", "0")
            .env(var, value);
        let (pid, _) = run_pid(&mut cmd);
        let p = read_profile(&out_dir);
        check_profile(&p, pid);
        let in_place = p["kprof"]["events_in_place"].as_u64().unwrap_or(0);
        assert_eq!(in_place > 0, name == "in_place", "{name}: {}", p["kprof"]);
        let mut tree: Vec<(Vec<String>, String, u64)> = nodes(&p)
            .into_iter()
            .map(|(path, n)| {
                let kind = n["kind"].as_str().unwrap_or_default().to_string();
                (path, kind, n["count"].as_u64().unwrap_or(0))
            })
            .collect();
        tree.sort();
        trees.push((name, tree));
    }
    for (name, tree) in &trees[1..] {
        assert_eq!(tree, &trees[0].1, "{name} against in_place");
    }
}

#[test]
fn output_dir_from_kokkos_tools_args() {
    let Some(exe) = find_example() else { return };
    let dir = scratch("kokkos_real_args");
    let base = baseline(&exe, &dir);

    // Kokkos 3.4 splits --kokkos-tools-args at spaces, without quoting.
    let dir2 = dir.join("from-args");
    let dir2_text = dir2.to_str().expect("UTF-8 scratch path");
    assert!(
        !dir2_text.contains(' '),
        "scratch path {dir2_text:?} has a space"
    );

    let mut cmd = example_cmd(&exe, &dir);
    with_kprof(&mut cmd).arg(format!(
        "--kokkos-tools-args=--output-dir={dir2_text} --summary=0"
    ));
    let (pid, out) = run_pid(&mut cmd);
    let err = stderr(&out);

    // Kokkos removed the option from argv ("arguments left ... 0"), stdout is the same.
    assert_eq!(stdout(&out), base, "stderr:\n{err}");
    // --summary=0 reached kprof through the same option.
    assert!(
        !err.contains("kprof: files in"),
        "--summary=0 was not applied:\n{err}"
    );

    let p = read_profile(&dir2);
    assert_eq!(u(&p["program"]["pid"]), u64::from(pid));
    check_tree(&p);
    check_csv(&dir2, &p);

    // The profile went to dir2 and nowhere else (no default kprof-%e-%p directory).
    let entries: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, BTreeSet::from(["from-args".to_string()]));
}

/// `tests/kokkos/runtime_memory.cpp` compiled against the Kokkos 3.4.01 install of
/// tests/scripts/build-kokkos.sh (Serial + OpenMP, static, C++14) into `dir`.
fn runtime_memory_program(dir: &Path) -> Option<PathBuf> {
    let install = deps_dir().join("kokkos-3.4.01").join("install");
    let (core, containers) = (
        install.join("lib").join("libkokkoscore.a"),
        install.join("lib").join("libkokkoscontainers.a"),
    );
    if skip_unless(
        core.is_file(),
        "real Kokkos (run tests/scripts/build-kokkos.sh)",
    ) {
        return None;
    }
    let include = install.join("include");
    let args = [
        "-std=c++14",
        "-fopenmp",
        "-isystem",
        include.to_str().expect("UTF-8 path"),
        containers.to_str().expect("UTF-8 path"),
        core.to_str().expect("UTF-8 path"),
        "-ldl",
    ];
    Some(compile(
        &[&test_file("kokkos/runtime_memory.cpp")],
        &dir.join("runtime_memory"),
        &args,
    ))
}

/// The Kokkos-3.4 facts behind `runtime_memory.cpp`'s expected profile, recorded with
/// a probe tool (OMP_NUM_THREADS=2): OpenMP's two per-thread team buffers are
/// allocated before the tool is loaded; the OpenMP team kernel's 32 KiB of scratch
/// makes Kokkos free them and allocate bigger ones, all four `[unlabeled]`, on the
/// worker threads; the first Serial team kernel allocates
/// "Kokkos::Serial::scratch_mem", the second (64 KiB) frees it and allocates a bigger
/// one; none of the runtime's buffers is freed before `kokkosp_finalize_library`.
/// Host: 5 allocations (team_out, 2 OpenMP buffers, 2 Serial buffers), 2
/// deallocations (the first Serial buffer, team_out), one free of an unknown
/// pointer (the program's "ghost").
#[test]
fn runtime_scratch_memory_is_not_the_programs() {
    let dir = scratch("kokkos_real_runtime_memory");
    let Some(exe) = runtime_memory_program(&dir) else {
        return;
    };
    let (_, plain) = run_pid(&mut example_cmd(&exe, &dir));
    let out_dir = dir.join("out");
    let mut cmd = example_cmd(&exe, &dir);
    with_kprof(&mut cmd).env("KPROF_OUTPUT_DIR", &out_dir);
    let (_, out) = run_pid(&mut cmd);
    assert_eq!(stdout(&out), stdout(&plain), "stderr:\n{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("never freed"), "stderr:\n{err}");

    let p = read_profile(&out_dir);
    let mem = p["memory"].as_array().expect("memory");
    assert_eq!(mem.len(), 1, "memory {}", p["memory"]);
    let host = &mem[0];
    assert_eq!(host["space"], "Host");
    assert_eq!(
        (u(&host["allocations"]), u(&host["deallocations"])),
        (5, 2),
        "{host}"
    );
    assert_eq!(host["leaks"], json!([]), "{host}");
    // The runtime's buffers are still memory the process holds.
    let largest: Vec<&str> = host["largest"]
        .as_array()
        .expect("largest")
        .iter()
        .map(|a| a["label"].as_str().expect("label"))
        .collect();
    assert_eq!(
        largest.iter().filter(|&&l| l == "[unlabeled]").count(),
        2,
        "largest {largest:?}"
    );
    assert_eq!(
        largest
            .iter()
            .filter(|&&l| l == "Kokkos::Serial::scratch_mem")
            .count(),
        2,
        "largest {largest:?}"
    );
    assert!(u(&host["current_bytes"]) > 2 * 32 * 1024, "{host}");

    // Exactly the program's own unknown free is counted.
    for (k, v) in p["anomalies"].as_object().expect("anomalies") {
        let want = u64::from(k == "unknown_frees");
        assert_eq!(u(v), want, "anomaly {k}: {}", p["anomalies"]);
    }
}

/// A section created, started, stopped and destroyed in every iteration of a loop is
/// one section (count = start/stop pairs, times summed), as a region would be.
#[test]
fn sections_created_in_a_loop_are_one_row() {
    let dir = scratch("kokkos_real_loop_sections");
    let Some(exe) = runtime_memory_program(&dir) else {
        return;
    };
    let out_dir = dir.join("out");
    let mut cmd = example_cmd(&exe, &dir);
    with_kprof(&mut cmd).env("KPROF_OUTPUT_DIR", &out_dir);
    run_pid(&mut cmd);
    let p = read_profile(&out_dir);
    let sections = p["sections"].as_array().expect("sections");
    assert_eq!(sections.len(), 1, "sections {}", p["sections"]);
    let s = &sections[0];
    assert_eq!(s["name"], "loop_section");
    assert_eq!(u(&s["count"]), 3, "{s}");
    let (total, min, max) = (u(&s["total_ns"]), u(&s["min_ns"]), u(&s["max_ns"]));
    assert!(
        0 < min && min <= max && 3 * min <= total && total <= 3 * max,
        "{s}"
    );
    // Each pair encloses one "in_section" kernel.
    let all = nodes(&p);
    let kernel = node(&all, &["in_section"]);
    assert_eq!(u(&kernel["count"]), 3);
    assert!(u(&kernel["total_ns"]) <= total, "{kernel} vs section {s}");
}

/// `--kokkos-tools-help`: Kokkos 3.4 loads the tool, calls its print_help, finalizes
/// it and exits 0. kprof prints its help on stderr and writes nothing: no output
/// directory (the default one would be kprof-kokkos_example-<pid> in the working
/// directory), no summary.
#[test]
fn kokkos_tools_help_writes_nothing() {
    let Some(exe) = find_example() else { return };
    let dir = scratch("kokkos_real_help");
    let mut cmd = example_cmd(&exe, &dir);
    with_kprof(&mut cmd).arg("--kokkos-tools-help");
    let (_, out) = run_pid(&mut cmd);
    let err = stderr(&out);
    assert!(err.contains("KPROF_OUTPUT_DIR"), "no help:\n{err}");
    assert!(!err.contains("kprof: files in"), "a summary:\n{err}");
    assert!(!err.contains("===="), "a summary:\n{err}");
    assert_eq!(stdout(&out), "", "help mode ran the program");
    let entries: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        entries.is_empty(),
        "help left {entries:?} in {}",
        dir.display()
    );
}
