//! Hardware and software counters (`KPROF_COUNTERS`) through the real PAPI of
//! Debian's libpapi (PAPI 7). This machine has no hardware PMU for PAPI, so the
//! values come from a PAPI software-defined event (SDE) that the test program
//! (`tests/harness/sde_counters.c`) registers and increments itself, by known
//! amounts, inside known regions, on every thread of an OpenMP team: the same
//! PAPI path (an event set per thread, start, read at begin and end) that
//! hardware events take. The profile's per-node values must equal the program's
//! own amounts exactly, in place and from records, and traces carry them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use kprof_tests::openmp::{have, ompt_lib};
use kprof_tests::trace_check::read_perfetto;
use kprof_tests::{
    assert_ok, clean_cmd, compile_with, lib, lib_dir, nodes, read_profile, run, scratch,
    skip_unless, test_file, u,
};
use serde_json::Value;

const EVENT: &str = "sde:::kptest::items";

/// The SDE program, built once with clang (libomp, OMPT) against the core and
/// libsde; `None` when PAPI's development files or clang are missing.
fn program() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if !Path::new("/usr/include/sde_lib.h").exists() || !have("clang") {
                return None;
            }
            let dir = scratch("counters_build");
            let libdir = lib_dir();
            let l = format!("-L{}", libdir.display());
            let rpath = format!("-Wl,-rpath,{}", libdir.display());
            Some(compile_with(
                "clang",
                &[&test_file("harness/sde_counters.c")],
                &dir.join("sde_counters"),
                &["-fopenmp", &l, "-lkprof_core", &rpath, "-lsde"],
            ))
        })
        .clone()
}

fn available() -> Option<PathBuf> {
    let p = program();
    if skip_unless(p.is_some(), "PAPI with SDE (libpapi-dev) and clang") {
        return None;
    }
    p
}

/// The program on `threads` OpenMP threads for `rounds` rounds, with the OMPT
/// plugin, writing into `dir`, with `env` set.
fn cmd(exe: &Path, dir: &Path, threads: u32, rounds: u32, env: &[(&str, &str)]) -> Command {
    let mut c = clean_cmd(exe);
    c.arg(threads.to_string())
        .arg(rounds.to_string())
        .env("OMP_TOOL_LIBRARIES", ompt_lib())
        .env("OMP_PROC_BIND", "false")
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_COUNTERS", EVENT);
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// (inclusive, exclusive) of the event on the node at `path`, summed over nodes
/// with that path, and the instances counted.
fn counted(p: &Value, path: &[&str]) -> (u64, u64, u64) {
    let mut out = (0, 0, 0);
    for (at, n) in nodes(p) {
        if at.iter().map(String::as_str).eq(path.iter().copied()) {
            let c = &n["counters"];
            out.0 += u(&c["events"][EVENT]["inclusive"]);
            out.1 += u(&c["events"][EVENT]["exclusive"]);
            out.2 += u(&c["instances"]);
        }
    }
    out
}

/// The path of the program's parallel region (named after its code address).
fn region_path(p: &Value) -> String {
    nodes(p)
        .into_iter()
        .find(|(path, n)| path.len() == 1 && n["kind"] == "omp_parallel")
        .map(|(path, _)| path[0].clone())
        .expect("the parallel region")
}

/// Exact values with 1 and 4 threads, in place, with a trace, and from records:
/// a region's exclusive value leaves out its counted children's, a region that
/// adds nothing shows 0, and each thread's amount lands where it added it.
#[test]
fn software_events_are_exact_per_region_and_thread() {
    let Some(exe) = available() else { return };
    for threads in [1u32, 4] {
        for (mode, env) in [
            ("in_place", vec![]),
            ("trace", vec![("KPROF_TRACE", "perfetto,json,otf2")]),
            ("records", vec![("KPROF_IN_PLACE", "0")]),
        ] {
            let what = format!("{threads} threads, {mode}");
            let dir = scratch(&format!("counters_exact_{threads}_{mode}"));
            let rounds = 3u64;
            let out = run(&mut cmd(&exe, &dir, threads, rounds as u32, &env));
            assert_ok(&out);
            let t = u64::from(threads);
            // The program's own total over the team's threads: rounds x (1 + 1000
            // (t+1) + 7) each, and the primary (main) thread's regions before.
            let team: u64 = rounds * 4196
                + (0..t)
                    .map(|i| rounds * (1 + 1000 * (i + 1) + 7))
                    .sum::<u64>();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                format!("team items {team}"),
                "{what}: the program's result"
            );
            let p = read_profile(&dir.join("out"));
            assert_eq!(p["hardware_counters"]["events"][0], EVENT, "{what}");
            assert!(
                p["hardware_counters"]["problems"]
                    .as_array()
                    .is_some_and(|a| a.is_empty()),
                "{what}: {}",
                p["hardware_counters"]
            );
            assert_eq!(
                counted(&p, &["outer"]),
                (rounds * 4196, rounds * 100, rounds),
                "{what}: outer"
            );
            assert_eq!(
                counted(&p, &["outer", "inner"]),
                (rounds * 4096, rounds * 4096, rounds),
                "{what}: inner"
            );
            assert_eq!(
                counted(&p, &["outer", "none"]),
                (0, 0, rounds),
                "{what}: none"
            );
            let region = region_path(&p);
            let worker = [region.as_str(), "implicit task", "worker"];
            let own: u64 = (0..t).map(|i| rounds * 1000 * (i + 1)).sum();
            assert_eq!(
                counted(&p, &worker),
                (own + rounds * 7 * t, own, rounds * t),
                "{what}: worker"
            );
            let inner = [region.as_str(), "implicit task", "worker", "work_inner"];
            assert_eq!(
                counted(&p, &inner),
                (rounds * 7 * t, rounds * 7 * t, rounds * t),
                "{what}: work_inner"
            );
            // The primary thread's implicit task ends inside the region; the
            // workers' end after the program's exit (libomp ends them at its own
            // shutdown), so only the primary's is counted, and the region
            // (primary thread) holds exactly what its implicit task counted.
            let primary = rounds * (1 + 1000 + 7);
            let task = counted(&p, &[region.as_str(), "implicit task"]);
            assert_eq!((task.0, task.1), (primary, rounds), "{what}: implicit task");
            assert_eq!(
                counted(&p, &[region.as_str()]),
                (primary, 0, 1),
                "{what}: parallel region"
            );
            // Kinds not selected carry nothing (barriers are not counted by default).
            for (path, n) in nodes(&p) {
                if n["kind"] == "omp_barrier" {
                    assert!(n.get("counters").is_none(), "{what}: {path:?} counted");
                }
            }
            if mode == "trace" {
                check_traces(&dir.join("out"), threads, &what);
            }
        }
    }
}

/// The Perfetto trace: every counted slice has what it counted as an argument,
/// and each thread has a counter track of its readings; the JSON trace has the
/// same arguments.
fn check_traces(dir: &Path, threads: u32, what: &str) {
    let Some(m) = read_perfetto(dir) else {
        assert!(
            !kprof_tests::require_all(),
            "{what}: cannot decode the Perfetto trace (protoc)"
        );
        return;
    };
    m.assert_valid();
    let value = |s: &kprof_tests::trace_check::Slice| s.args.get(EVENT).and_then(Value::as_u64);
    for (name, amount) in [("inner", 4096), ("none", 0), ("work_inner", 7)] {
        let slices = m.named(name);
        assert!(!slices.is_empty(), "{what}: no {name} slice");
        for s in slices {
            assert_eq!(value(s), Some(amount), "{what}: {name} args {:?}", s.args);
        }
    }
    for s in m.named("outer") {
        assert_eq!(value(s), Some(4196), "{what}: outer");
    }
    let tracks: Vec<&String> = m.counters.keys().filter(|k| k.starts_with(EVENT)).collect();
    assert_eq!(
        tracks.len(),
        threads as usize,
        "{what}: counter tracks {tracks:?}"
    );
    for k in tracks {
        let series = &m.counters[k];
        assert!(series.len() >= 4, "{what}: {k}: {series:?}");
        assert!(
            series.windows(2).all(|w| w[0].1 <= w[1].1),
            "{what}: {k} must not fall: {series:?}"
        );
    }
    let json = kprof_tests::trace_check::read_json(dir);
    for s in json.named("inner") {
        assert_eq!(value(s), Some(4096), "{what}: JSON inner {:?}", s.args);
    }
    // OTF2: the attribute of each Leave, as otf2-print reads it back.
    if skip_unless(have_otf2_print(), "otf2-print (otf2-tools)") {
        return;
    }
    let out = run(Command::new("otf2-print").arg(dir.join("otf2/traces.otf2")));
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let mut leaves = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.starts_with("LEAVE") && l.contains("Region: \"inner\"") {
            leaves += 1;
            let attrs = lines.get(i + 1).copied().unwrap_or_default();
            assert!(
                attrs.contains(&format!("(\"{EVENT}\"")) && attrs.contains("UINT64; 4096)"),
                "{what}: OTF2 {l} / {attrs}"
            );
        }
    }
    assert_eq!(leaves, 3, "{what}: OTF2 leaves of inner");
}

fn have_otf2_print() -> bool {
    Command::new("otf2-print")
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Events that do not exist, that exist but cannot be counted here (no PMU on
/// this machine for PAPI_TOT_INS), and more than fit: one line each naming the
/// event and why; the rest measured; the program's output and status unchanged.
#[test]
fn events_that_cannot_be_counted_say_why() {
    let Some(exe) = available() else { return };
    let dir = scratch("counters_problems");
    let extra = (1..=7)
        .map(|i| format!("bogus_{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let list = format!("{EVENT},PAPI_TOT_INS,no_such_event::x,{extra}");
    let out = run(cmd(&exe, &dir, 2, 1, &[]).env("KPROF_COUNTERS", &list));
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "team items 7212"
    );
    let err = stderr(&out);
    let p = read_profile(&dir.join("out"));
    let problems: Vec<String> = p["hardware_counters"]["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect();
    // 10 asked: 8 tried (1 counted, 7 refused), 2 beyond the limit.
    assert_eq!(problems.len(), 9, "{problems:#?}");
    let line = |word: &str| {
        let found: Vec<&String> = problems.iter().filter(|l| l.contains(word)).collect();
        assert_eq!(found.len(), 1, "one line for {word}: {problems:#?}");
        assert!(err.contains(found[0].as_str()), "said on stderr: {err}");
        found[0].clone()
    };
    let tot = line("counter PAPI_TOT_INS:");
    // Whether this machine's PAPI can count PAPI_TOT_INS decides the wording,
    // never whether it is said.
    assert!(
        tot.contains("cannot be counted") || tot.contains("no such event"),
        "{tot}"
    );
    assert!(line("no_such_event::x").contains("no such event"));
    assert!(line("bogus_6").contains("at most 8"));
    assert!(line("bogus_7").contains("at most 8"));
    assert_eq!(p["hardware_counters"]["events"], serde_json::json!([EVENT]));
    assert_eq!(counted(&p, &["outer", "inner"]), (4096, 4096, 1));
}

/// PAPI absent (`KPROF_PAPI_LIB` names no library): one line, no counters, the
/// program's result unchanged, and the profile otherwise complete.
#[test]
fn without_papi_one_line_and_a_complete_profile() {
    let Some(exe) = available() else { return };
    let dir = scratch("counters_no_papi");
    let out = run(&mut cmd(
        &exe,
        &dir,
        2,
        1,
        &[("KPROF_PAPI_LIB", "/nonexistent/libpapi.so")],
    ));
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "team items 7212"
    );
    let err = stderr(&out);
    // Said at start, and again in the summary's counters block: one reason.
    let mut lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("PAPI"))
        .map(|l| l.trim_start_matches("kprof:").trim())
        .collect();
    lines.dedup();
    lines.retain(|l| !l.starts_with("Counters"));
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("cannot load PAPI") && lines[0].contains("KPROF_PAPI_LIB"));
    assert!(lines[0].contains("/nonexistent/libpapi.so"), "{}", lines[0]);
    let p = read_profile(&dir.join("out"));
    assert_eq!(p["hardware_counters"]["events"], serde_json::json!([]));
    assert!(nodes(&p).iter().all(|(_, n)| n.get("counters").is_none()));
    assert_eq!(
        u(&nodes(&p)
            .iter()
            .find(|(path, _)| path == &["outer"])
            .unwrap()
            .1["count"]),
        1
    );
}

/// `KPROF_COUNTER_KINDS` picks what is counted: `sync` counts barriers and not
/// regions; a word it does not know is said, the rest applied.
#[test]
fn counter_kinds_select_instances() {
    let Some(exe) = available() else { return };
    let dir = scratch("counters_kinds");
    let out = run(&mut cmd(
        &exe,
        &dir,
        2,
        1,
        &[("KPROF_COUNTER_KINDS", "sync,nonsense")],
    ));
    assert_ok(&out);
    assert!(
        stderr(&out).contains("'nonsense' is not one of"),
        "{}",
        stderr(&out)
    );
    let p = read_profile(&dir.join("out"));
    let mut barriers = 0;
    for (path, n) in nodes(&p) {
        match n["kind"].as_str() {
            Some("user_region") => assert!(n.get("counters").is_none(), "{path:?}"),
            Some("omp_barrier") => {
                barriers += u(&n["counters"]["instances"]);
            }
            _ => {}
        }
    }
    assert!(barriers >= 1, "no barrier counted");
}

/// `kprof report` shows the counters block with the exact values; `kprof diff`
/// lists counter changes; `kprof merge` keeps them per rank.
#[test]
fn report_diff_and_merge_show_counters() {
    let Some(exe) = available() else { return };
    let a = scratch("counters_cli_a");
    let b = scratch("counters_cli_b");
    assert_ok(&run(&mut cmd(&exe, &a, 2, 1, &[("KPROF_SUMMARY", "0")])));
    assert_ok(&run(&mut cmd(&exe, &b, 2, 2, &[("KPROF_SUMMARY", "0")])));
    let kprof = lib("kprof");
    let report = run(clean_cmd(&kprof).arg("report").arg(a.join("out")));
    assert_ok(&report);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("4096/4096") && l.trim_end().ends_with(" inner")),
        "no counters row of inner: {text}"
    );
    assert!(text.contains("Counters (PAPI"), "{text}");
    let diff = run(clean_cmd(&kprof)
        .arg("diff")
        .arg(a.join("out"))
        .arg(b.join("out")));
    assert_ok(&diff);
    let text = String::from_utf8_lossy(&diff.stdout);
    let row = text
        .lines()
        .find(|l| l.contains(EVENT) && l.trim_end().ends_with("outer / inner"))
        .unwrap_or_else(|| panic!("no counter change of outer / inner: {text}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..4], &["+4096", "+100.0%", "4096", "8192"], "{row}");
    let merged = scratch("counters_cli_merged");
    let _ = std::fs::remove_dir_all(&merged);
    assert_ok(&run(clean_cmd(&kprof)
        .arg("merge")
        .arg("--by-rank")
        .arg(a.join("out"))
        .arg(b.join("out"))
        .arg("-o")
        .arg(&merged)
        .arg("--no-trace")));
    let m = read_profile(&merged);
    let outer = m["tree"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "outer")
        .expect("outer");
    let inner = outer["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "inner")
        .expect("inner");
    assert_eq!(
        inner["counters"][EVENT]["by_rank"]["inclusive"],
        serde_json::json!([4096, 8192])
    );
    assert_eq!(u(&inner["counters"][EVENT]["inclusive"]["sum"]), 12288);
}

/// `kprof run --counters --counter-kinds` sets them for the program.
#[test]
fn kprof_run_takes_counter_flags() {
    let Some(exe) = available() else { return };
    let dir = scratch("counters_run");
    let out = run(clean_cmd(&lib("kprof"))
        .arg("run")
        .arg(format!("--counters={EVENT}"))
        .arg("--counter-kinds=regions")
        .arg("-o")
        .arg(dir.join("out"))
        .arg("--")
        .arg(&exe)
        .args(["2", "1"]));
    assert_ok(&out);
    let p = read_profile(&dir.join("out"));
    assert_eq!(counted(&p, &["outer", "inner"]), (4096, 4096, 1));
    assert_eq!(p["hardware_counters"]["kinds"], "regions");
    for (path, n) in nodes(&p) {
        if n["kind"] == "omp_implicit_task" || n["kind"] == "omp_parallel" {
            assert!(n.get("counters").is_none(), "{path:?}: not a region");
        }
    }
}
