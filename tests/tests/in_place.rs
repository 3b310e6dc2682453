//! Profiles aggregated in place (no trace: each thread adds its events to its own
//! call-path tree, merged at the end) against profiles built from records (with a
//! trace, or `KPROF_IN_PLACE=0`): the same tree from the same program, exact counts
//! with 64 threads, threads that exit before the program, and SIGTERM while threads
//! are inside regions. The annotation programs are `tests/harness/in_place.c`; the
//! OpenMP ones are those of `tests/openmp/` on libomp; the Kokkos one is the harness
//! `tests/harness/kokkos_host.c`.
//!
//! The annotation API has no begin with an explicit parent, so the placement of an
//! instance under a parent open on another thread is checked with OpenMP (nested.c
//! and tasks.c: implicit and explicit tasks under the region of the primary thread).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kprof_tests::openmp::{self as omp, Compiler, Runtime};
use kprof_tests::{
    assert_ok, build_kokkos_hosts, clean_cmd, core_harness, lib, node, nodes, read_profile, run,
    scratch, skip_unless, spawn_until, u,
};
use serde_json::Value;

/// How the events reach the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No trace: every thread aggregates in place.
    InPlace,
    /// `KPROF_TRACE=perfetto`: records through the writer thread.
    Trace,
    /// `KPROF_IN_PLACE=0`, no trace: records through the writer thread.
    Records,
}

const MODES: [Mode; 3] = [Mode::InPlace, Mode::Trace, Mode::Records];

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::InPlace => "in_place",
            Mode::Trace => "trace",
            Mode::Records => "records",
        }
    }

    /// Sets (and clears) the variables of this mode on `cmd`.
    fn apply(self, cmd: &mut Command) {
        cmd.env_remove("KPROF_TRACE").env_remove("KPROF_IN_PLACE");
        match self {
            Mode::InPlace => {}
            Mode::Trace => {
                cmd.env("KPROF_TRACE", "perfetto");
            }
            Mode::Records => {
                cmd.env("KPROF_IN_PLACE", "0");
            }
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// kprof's own numbers say which path the events took: in place (no event
/// records, call paths and their memory counted) or records.
fn check_self_cost(p: &Value, mode: Mode, what: &str) {
    let k = &p["kprof"];
    match mode {
        Mode::InPlace => {
            assert!(u(&k["events_in_place"]) > 0, "{what}: kprof {k}");
            assert!(u(&k["call_paths"]) > 0, "{what}: kprof {k}");
            assert!(u(&k["profile_bytes"]) > 0, "{what}: kprof {k}");
        }
        Mode::Trace | Mode::Records => {
            assert_eq!(u(&k["events_in_place"]), 0, "{what}: kprof {k}");
            assert!(u(&k["records"]) > 0, "{what}: kprof {k}");
        }
    }
}

/// One node of the tree with everything that does not depend on timing: path,
/// kind, device, count, the number of threads it ran on (where the profile gives
/// a spread) and its argument ranges.
type Row = (String, String, String, u64, Option<u64>, String);

/// Every node of the tree as a [`Row`], sorted (a multiset: two nodes may share a
/// path and kind on different devices).
fn structure(p: &Value) -> Vec<Row> {
    let mut rows: Vec<Row> = nodes(p)
        .into_iter()
        .map(|(path, n)| {
            (
                path.join(" / "),
                n["kind"].as_str().unwrap_or_default().to_string(),
                format!("{}/{}/{}", n["device"], n["device_index"], n["instance"]),
                u(&n["count"]),
                n["threads"]["threads"].as_u64(),
                n["args"].to_string(),
            )
        })
        .collect();
    rows.sort();
    rows
}

/// Asserts the three trees are the same, listing the rows that differ.
fn assert_same_structure(what: &str, runs: &[(Mode, Value)]) {
    let (first_mode, first) = &runs[0];
    let want = structure(first);
    assert!(!want.is_empty(), "{what}: empty tree");
    for (mode, p) in &runs[1..] {
        let got = structure(p);
        if got == want {
            continue;
        }
        let fmt = |rows: &[Row], other: &[Row]| {
            rows.iter()
                .filter(|r| !other.contains(r))
                .map(|r| format!("  {r:?}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "{what}: the tree of {} differs from that of {}\n--- only in {}:\n{}\n--- only in {}:\n{}",
            mode.name(),
            first_mode.name(),
            first_mode.name(),
            fmt(&want, &got),
            mode.name(),
            fmt(&got, &want)
        );
    }
}

// ------------------------------------------------------- same tree, three ways

/// An OpenMP program of `tests/openmp/` (clang 14, libomp 14, 2 threads) under the
/// OMPT plugin in each mode; returns the profiles.
fn openmp_three_ways(name: &str, env: &[(&str, &str)]) -> Vec<(Mode, Value)> {
    let exe = omp::build(name, Compiler::Clang);
    MODES
        .iter()
        .map(|&mode| {
            let dir = scratch(&format!("in_place_omp_{name}_{}", mode.name()));
            let mut cmd = omp::kprof_cmd(&exe, &dir, Runtime::Llvm14, false);
            mode.apply(&mut cmd);
            cmd.env("KPROF_SUMMARY", "0");
            for (k, v) in env {
                cmd.env(k, v);
            }
            let o = run(&mut cmd);
            assert_ok(&o);
            let p = read_profile(&dir.join("out"));
            let what = format!("{name} {}", mode.name());
            check_self_cost(&p, mode, &what);
            assert_eq!(u(&p["dropped_records"]), 0, "{what}");
            for (k, v) in p["anomalies"].as_object().expect("anomalies") {
                assert_eq!(u(v), 0, "{what}: anomaly {k}");
            }
            (mode, p)
        })
        .collect()
}

fn have_clang() -> bool {
    !skip_unless(omp::have("clang"), "clang")
}

/// Worksharing loops (static, dynamic, guided, reductions, single, sections...):
/// the same tree, spread and argument ranges in place as from records.
#[test]
fn openmp_loops_same_tree_in_place_and_from_records() {
    if !have_clang() {
        return;
    }
    let runs = openmp_three_ways("loops", &[]);
    assert_same_structure("loops.c", &runs);
}

/// Nested parallel regions: the inner regions' implicit tasks run on threads that
/// did not open the outer region; in place they land under the outer region's
/// implicit task exactly as from records.
#[test]
fn openmp_nested_same_tree_in_place_and_from_records() {
    if !have_clang() {
        return;
    }
    let mut runs = openmp_three_ways("nested", &[("OMP_MAX_ACTIVE_LEVELS", "2")]);
    // Which pool threads serve the inner teams is up to libomp (a thread that
    // finished one inner team may serve the next): 3 or 4 threads run the 4
    // inner implicit tasks from run to run. The inner regions' spreads are
    // compared without their thread count; everything else exactly.
    for (_, p) in &mut runs {
        forget_inner_thread_counts(&mut p["tree"], 0);
    }
    assert_same_structure("nested.c", &runs);
    // Nothing fell to the top level: the only root is the outer region.
    for (mode, p) in &runs {
        let roots: Vec<&str> = p["tree"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["name"].as_str().unwrap())
            .collect();
        assert_eq!(roots, ["outer (nested.c:26)"], "{}", mode.name());
    }
}

/// Removes the thread count of the spreads of nodes nested below `depth` 2 (under
/// the outer region's implicit task).
fn forget_inner_thread_counts(nodes: &mut Value, depth: usize) {
    for n in nodes.as_array_mut().into_iter().flatten() {
        if depth >= 2 {
            if let Some(t) = n.get_mut("threads").and_then(Value::as_object_mut) {
                t.remove("threads");
            }
        }
        forget_inner_thread_counts(&mut n["children"], depth + 1);
    }
}

/// Explicit tasks (dependences, taskgroup, taskloop) executed by either thread,
/// under the region the primary thread opened.
#[test]
fn openmp_tasks_same_tree_in_place_and_from_records() {
    if !have_clang() {
        return;
    }
    let runs = openmp_three_ways("tasks", &[]);
    // Which thread runs a task, and in which wait, is up to the runtime: the trees
    // are compared without the tasks' subtrees, the executions by task, and the
    // task graph.
    let without_tasks: Vec<(Mode, Value)> = runs
        .iter()
        .map(|(mode, p)| {
            let mut p = p.clone();
            prune_tasks(&mut p["tree"]);
            (*mode, p)
        })
        .collect();
    assert_same_structure("tasks.c without the tasks", &without_tasks);
    let executions = |p: &Value| -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for (path, n) in nodes(p) {
            if n["kind"] == "omp_task" {
                *out.entry(path.last().unwrap().clone()).or_insert(0) += u(&n["count"]);
            }
        }
        out
    };
    let want = executions(&runs[0].1);
    // 3 x produce, transform, consume; 4 group tasks; 4 taskloop tasks.
    assert_eq!(want.values().sum::<u64>(), 17, "{want:?}");
    for (mode, p) in &runs[1..] {
        assert_eq!(
            executions(p),
            want,
            "tasks.c {}: task executions",
            mode.name()
        );
        assert_eq!(
            p["task_graph"],
            runs[0].1["task_graph"],
            "tasks.c: the task graph of {} (left) differs from that of in_place (right)",
            mode.name()
        );
    }
}

/// Removes the explicit tasks (and what is under them) from a tree.
fn prune_tasks(list: &mut Value) {
    if let Some(a) = list.as_array_mut() {
        a.retain(|n| n["kind"] != "omp_task");
        for n in a {
            prune_tasks(&mut n["children"]);
        }
    }
}

/// The Kokkos harness (`basic`: regions, kernels, fences, deep copies, sections;
/// `threads`: 16 threads x 2000 kernels) under libkprof.so in each mode.
#[test]
fn kokkos_same_tree_in_place_and_from_records() {
    let dir = scratch("in_place_kokkos_bin");
    let (host, _) = build_kokkos_hosts(&dir);
    for args in [&["4", "basic"][..], &["4", "threads", "2000"][..]] {
        let runs: Vec<(Mode, Value)> = MODES
            .iter()
            .map(|&mode| {
                let dir = scratch(&format!("in_place_kokkos_{}_{}", args[1], mode.name()));
                let mut cmd = clean_cmd(&host);
                cmd.current_dir(&dir)
                    .args(args)
                    .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
                    .env("KPROF_OUTPUT_DIR", dir.join("out"))
                    .env("KPROF_SUMMARY", "0");
                mode.apply(&mut cmd);
                let o = run(&mut cmd);
                assert_ok(&o);
                let p = read_profile(&dir.join("out"));
                let what = format!("kokkos {} {}", args[1], mode.name());
                check_self_cost(&p, mode, &what);
                assert_eq!(u(&p["dropped_records"]), 0, "{what}");
                (mode, p)
            })
            .collect();
        let what = format!("kokkos_host {}", args[1]);
        assert_same_structure(&what, &runs);
        // What is not in the tree is the same too.
        for key in [
            "sections",
            "events",
            "deep_copies",
            "dual_views",
            "anomalies",
        ] {
            let strip = |v: &Value| -> Value {
                let mut v = v.clone();
                for item in v.as_array_mut().into_iter().flatten() {
                    if let Some(o) = item.as_object_mut() {
                        o.retain(|k, _| !k.ends_with("_ns"));
                    }
                }
                v
            };
            for (mode, p) in &runs[1..] {
                assert_eq!(
                    strip(&p[key]),
                    strip(&runs[0].1[key]),
                    "{what}: {key} of {}",
                    mode.name()
                );
            }
        }
    }
}

// --------------------------------------------------------- annotation programs

/// `tests/harness/in_place.c`, built once.
fn harness() -> PathBuf {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    core_harness(&EXE, "in_place")
}

/// The harness in `dir` in `mode`, writing to `dir/out`, without the summary.
fn harness_cmd(dir: &Path, mode: Mode, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&harness());
    cmd.current_dir(dir)
        .args(args)
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_SUMMARY", "0")
        .stdin(Stdio::null());
    mode.apply(&mut cmd);
    if mode != Mode::InPlace {
        // Room for every record: the counts must be exact, not bounded by drops.
        cmd.env("KPROF_BUFFER_MB", "2048");
    }
    cmd
}

/// The tree node at `path` with its count and kind checked.
fn region<'a>(all: &'a [(Vec<String>, Value)], path: &[&str], count: u64, what: &str) -> &'a Value {
    let n = node(all, path);
    assert_eq!(u(&n["count"]), count, "{what}: {path:?}");
    assert_eq!(n["kind"], "user_region", "{what}: {path:?}");
    n
}

fn assert_no_anomaly(p: &Value, what: &str) {
    for (k, v) in p["anomalies"].as_object().expect("anomalies") {
        assert_eq!(u(v), 0, "{what}: anomaly {k}");
    }
}

/// 64 threads x 100000 begin/end pairs (50000 x "outer" { "inner" or
/// "thread_<tt>" }), started together: every node's count is exact in place and
/// from records, nothing dropped, no anomaly, and the two trees are the same.
#[test]
fn sixty_four_threads_exact_in_place_and_traced() {
    const T: u64 = 64;
    const N: u64 = 50_000;
    let mut runs = Vec::new();
    for mode in [Mode::InPlace, Mode::Trace] {
        let dir = scratch(&format!("in_place_many_{}", mode.name()));
        let o = run(&mut harness_cmd(
            &dir,
            mode,
            &["many", &T.to_string(), &N.to_string()],
        ));
        assert!(o.status.success(), "{}: {}", mode.name(), stderr(&o));
        assert_eq!(stderr(&o), "", "{}", mode.name());
        let p = read_profile(&dir.join("out"));
        let what = mode.name();
        check_self_cost(&p, mode, what);
        assert_eq!(u(&p["dropped_records"]), 0, "{what}");
        assert_no_anomaly(&p, what);
        // Main and the 64 workers.
        assert_eq!(p["threads"].as_array().map(Vec::len), Some(65), "{what}");
        let all = nodes(&p);
        assert_eq!(all.len(), 3 + T as usize, "{what}: nodes");
        region(&all, &["setup"], 1, what);
        region(&all, &["outer"], T * N, what);
        region(&all, &["outer", "inner"], T * N / 2, what);
        for t in 0..T {
            region(&all, &["outer", &format!("thread_{t:02}")], N / 2, what);
        }
        if mode == Mode::InPlace {
            // Every begin and end: 2 per region.
            assert_eq!(
                u(&p["kprof"]["events_in_place"]),
                2 * (1 + 2 * T * N),
                "{what}"
            );
        }
        runs.push((mode, p));
    }
    assert_same_structure("in_place.c many", &runs);
}

/// Main calls exit() while 4 threads record as fast as they can: every begin the
/// runtime took (it returned a GUID) is in the profile, exactly, and every call it
/// did not take is counted. An event that saw the runtime recording completes
/// before the profile is read (none is cut in half, none lands unseen after the
/// output), and an instance left open by the end is closed there and counted.
/// 10 runs per mode.
#[test]
fn exit_while_threads_record_loses_nothing_uncounted() {
    const T: u64 = 4;
    for mode in MODES {
        for rep in 0..10 {
            let what = format!("{} run {rep}", mode.name());
            let dir = scratch(&format!("in_place_exit_{}", mode.name()));
            let o = run(&mut harness_cmd(
                &dir,
                mode,
                &["exit", &T.to_string(), "50"],
            ));
            assert!(o.status.success(), "{what}: {}", stderr(&o));
            let recorded: u64 = String::from_utf8_lossy(&o.stdout)
                .trim()
                .strip_prefix("recorded ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{what}: stdout {}", String::from_utf8_lossy(&o.stdout)));
            assert!(recorded > 0, "{what}");
            let p = read_profile(&dir.join("out"));
            check_self_cost(&p, mode, &what);
            assert_eq!(u(&p["dropped_records"]), 0, "{what}");
            let all = nodes(&p);
            assert_eq!(all.len(), T as usize, "{what}: nodes");
            let in_profile: u64 = all.iter().map(|(_, n)| u(&n["count"])).sum();
            let a = &p["anomalies"];
            assert_eq!(in_profile, recorded, "{what}: anomalies {a}");
            // The threads go on calling after the end (counted, some after the
            // report was made); at most one instance each was left open.
            assert!(u(&a["unclosed_at_exit"]) <= T, "{what}: {a}");
            assert_eq!(u(&a["unmatched_ends"]), 0, "{what}: {a}");
        }
    }
}

/// A program that starts a thread per task: 20,000 short-lived threads, one after
/// the other, each recording one region. Every one is in the profile (count and
/// thread list exact), and a thread that is gone leaves only a small slot behind:
/// the memory kprof adds stays below 3 KiB per thread (a whole thread state is
/// 20 KiB; a new thread takes over a gone thread's).
#[test]
fn a_thread_per_task_keeps_every_count_in_little_memory() {
    const T: u64 = 20_000;
    let maxrss = |o: &Output| -> u64 {
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .strip_prefix("maxrss_kb ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("stdout {}", String::from_utf8_lossy(&o.stdout)))
    };
    let dir = scratch("in_place_churn_off");
    let mut off = harness_cmd(&dir, Mode::InPlace, &["churn", &T.to_string()]);
    let o = run(off.env("KPROF_ENABLE", "0"));
    assert!(o.status.success(), "{}", stderr(&o));
    let base = maxrss(&o);
    for mode in [Mode::InPlace, Mode::Records] {
        let what = mode.name();
        let dir = scratch(&format!("in_place_churn_{what}"));
        let o = run(&mut harness_cmd(&dir, mode, &["churn", &T.to_string()]));
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let grown = maxrss(&o).saturating_sub(base);
        let p = read_profile(&dir.join("out"));
        check_self_cost(&p, mode, what);
        assert_eq!(u(&p["dropped_records"]), 0, "{what}");
        assert_no_anomaly(&p, what);
        let all = nodes(&p);
        assert_eq!(all.len(), 1, "{what}: nodes");
        region(&all, &["task"], T, what);
        assert_eq!(
            p["threads"].as_array().map(Vec::len),
            Some(T as usize),
            "{what}: threads listed"
        );
        if mode == Mode::InPlace {
            assert!(
                grown < 3 * T,
                "{what}: {grown} KiB more than without kprof for {T} threads"
            );
        }
    }
}

/// 8 threads record regions and are joined, 8 new threads (which may reuse the
/// first ones' stacks, thread ids and kprof's thread slots) record others and are
/// joined, then main records for 200 ms more and returns: the threads that exited
/// long before the end keep their exact counts, in place and from records.
#[test]
fn threads_that_exit_early_keep_their_numbers() {
    const T: u64 = 8;
    const N: u64 = 20_000;
    for mode in MODES {
        let dir = scratch(&format!("in_place_exited_{}", mode.name()));
        let o = run(&mut harness_cmd(
            &dir,
            mode,
            &["exited", &T.to_string(), &N.to_string(), "200"],
        ));
        assert!(o.status.success(), "{}: {}", mode.name(), stderr(&o));
        let main_after: u64 = String::from_utf8_lossy(&o.stdout)
            .trim()
            .strip_prefix("main_after ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("stdout: {}", String::from_utf8_lossy(&o.stdout)));
        assert!(main_after > 0);
        let p = read_profile(&dir.join("out"));
        let what = mode.name();
        check_self_cost(&p, mode, what);
        assert_eq!(u(&p["dropped_records"]), 0, "{what}");
        assert_no_anomaly(&p, what);
        let all = nodes(&p);
        assert_eq!(all.len(), 4, "{what}: nodes");
        region(&all, &["early"], T * N, what);
        region(&all, &["early", "early_inner"], T * N, what);
        region(&all, &["late"], T * N, what);
        region(&all, &["main_after"], main_after, what);
        // Every thread that recorded is listed, exited or not: main and 2 x 8.
        assert_eq!(
            p["threads"].as_array().map(Vec::len),
            Some(1 + 2 * T as usize),
            "{what}: {}",
            p["threads"]
        );
        if mode == Mode::InPlace {
            assert_eq!(
                u(&p["kprof"]["events_in_place"]),
                2 * (3 * T * N + main_after),
                "{what}"
            );
        }
    }
}

/// SIGTERM while 4 workers loop over begin/end and one thread waits with region
/// "waiting" open: the handler writes profile.json with every worker's regions
/// (counts > 0) and "waiting" once, closed at exit, and the process dies of the
/// signal. `who`: the thread the kernel gives the signal to (main, idle in
/// pause(); or a worker, in the middle of its loop).
fn sigterm_flushes(who: &str) {
    const T: usize = 4;
    // From records first: what in place must match.
    for mode in [Mode::Trace, Mode::Records, Mode::InPlace] {
        for rep in 0..5 {
            let what = format!("{who} {} rep {rep}", mode.name());
            let dir = scratch(&format!("in_place_term_{who}_{}", mode.name()));
            let child = spawn_until(
                &mut harness_cmd(&dir, mode, &["term", &T.to_string(), who]),
                "ready\n",
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
            // SAFETY: signalling our own child.
            assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
            let o = child.wait_with_output().unwrap();
            let err = stderr(&o);
            assert_eq!(o.status.signal(), Some(libc::SIGTERM), "{what}: {err}");
            let p = read_profile(&dir.join("out"));
            check_self_cost(&p, mode, &what);
            let all = nodes(&p);
            let paths: Vec<String> = all.iter().map(|(p, _)| p.join(" / ")).collect();
            for t in 0..T {
                let name = format!("work_{t:02}");
                let n = all
                    .iter()
                    .find(|(p, _)| p.len() == 1 && p[0] == name)
                    .map(|(_, n)| n)
                    .unwrap_or_else(|| {
                        panic!("{what}: no region {name} in the profile (paths {paths:?}); kprof said:\n{err}")
                    });
                // Each worker recorded 1000 regions before "ready".
                assert!(u(&n["count"]) > 1000, "{what}: {name} {n}");
            }
            region(&all, &["waiting"], 1, &what);
            // "waiting", and each worker's region if the signal came inside it.
            let unclosed = u(&p["anomalies"]["unclosed_at_exit"]);
            assert!(
                (1..=1 + T as u64).contains(&unclosed),
                "{what}: unclosed_at_exit {unclosed}"
            );
            assert_eq!(u(&p["dropped_records"]), 0, "{what}");
            assert_eq!(all.len(), T + 1, "{what}: nodes");
            assert_eq!(
                err, "kprof: SIGTERM ends the program; writing what was recorded up to it\n",
                "{what}"
            );
        }
    }
}

/// SIGTERM taken by main, idle in pause(): no thread is inside kprof's handler
/// code when the output is written.
#[test]
fn sigterm_to_an_idle_main_flushes_every_thread() {
    sigterm_flushes("main");
}

/// SIGTERM taken by a worker in its begin/end loop: the handler may interrupt that
/// thread inside an event, and its regions must still be in the profile (they are
/// from records).
#[test]
fn sigterm_to_a_busy_worker_flushes_every_thread() {
    sigterm_flushes("worker");
}
