//! kprof's Kokkos plugin (`libkprof.so`) driven by `tests/harness/kokkos_host.c`, a
//! C program that loads a Kokkos tool exactly as Kokkos 4.x / 3.4 does (same
//! environment variables, dlopen flags, symbol lookups, call order and argument
//! values) and runs scripted scenarios with exactly known counts. The expected
//! numbers below are those documented at the top of `kokkos_host.c`.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use kprof_tests::{
    assert_ok, build_kokkos_hosts, clean_cmd, compile, lib, node, nodes, read_profile, run,
    scratch, shape, test_file, u, workspace_root,
};
use serde_json::Value;

const TOOL_FENCE: &str = "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence";

/// The harness binaries and the second tool, compiled once per test process.
struct Built {
    host: PathBuf,
    host_annotate: PathBuf,
    second_tool: PathBuf,
    /// The second tool without the tuning callbacks.
    second_tool_no_tuning: PathBuf,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = scratch("kokkos_harness_bin");
        let (host, host_annotate) = build_kokkos_hosts(&dir);
        let second_tool = compile(
            &[&test_file("harness/second_tool.c")],
            &dir.join("libsecond_tool.so"),
            &["-shared", "-fPIC"],
        );
        let second_tool_no_tuning = compile(
            &[&test_file("harness/second_tool.c")],
            &dir.join("libsecond_tool_no_tuning.so"),
            &["-shared", "-fPIC", "-DSECOND_TOOL_NO_TUNING"],
        );
        Built {
            host,
            host_annotate,
            second_tool,
            second_tool_no_tuning,
        }
    })
}

fn kprof_lib() -> String {
    lib("libkprof.so").display().to_string()
}

/// A harness command with a clean tool environment, run in `dir`, writing kprof's
/// files to `dir/out`, with libkprof.so in KOKKOS_TOOLS_LIBS.
fn host_cmd(exe: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(exe);
    for var in ["SECOND_TOOL_OUT", "SECOND_TOOL_WATCH"] {
        cmd.env_remove(var);
    }
    cmd.current_dir(dir)
        .args(args)
        .env("KOKKOS_TOOLS_LIBS", kprof_lib())
        .env("KPROF_OUTPUT_DIR", dir.join("out"));
    cmd
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert_ok(&out);
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn f(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

/// Checks the statistics every tree node must satisfy, recursively.
fn check_stats(list: &Value) {
    for n in list.as_array().expect("node list") {
        let name = n["name"].as_str().unwrap_or("?");
        let count = u(&n["count"]);
        let total = u(&n["total_ns"]);
        let selfns = u(&n["self_ns"]);
        let (min, max, mean) = (f(&n["min_ns"]), f(&n["max_ns"]), f(&n["mean_ns"]));
        assert!(count > 0, "{name}: count 0");
        assert!(
            selfns <= total,
            "{name}: self_ns {selfns} > total_ns {total}"
        );
        assert!(
            min <= mean && mean <= max,
            "{name}: min {min} mean {mean} max {max}"
        );
        assert!(
            (mean * count as f64 - total as f64).abs() <= count as f64 + 1.0,
            "{name}: mean {mean} x count {count} != total {total}"
        );
        assert!(f(&n["stddev_ns"]) >= 0.0, "{name}: negative stddev");
        let children = n["children"].as_array().expect("children");
        let child_total: u64 = children.iter().map(|c| u(&c["total_ns"])).sum();
        assert!(
            child_total <= total,
            "{name}: children total {child_total} > total {total}"
        );
        check_stats(&n["children"]);
    }
}

/// The unique node at `path` with `kind` (several kinds may share a name, e.g.
/// "<null>"); long names are cut in the panic message.
fn node_of_kind<'a>(all: &'a [(Vec<String>, Value)], path: &[&str], kind: &str) -> &'a Value {
    let found: Vec<&Value> = all
        .iter()
        .filter(|(p, n)| n["kind"] == kind && p.iter().map(String::as_str).eq(path.iter().copied()))
        .map(|(_, n)| n)
        .collect();
    match found.as_slice() {
        [one] => one,
        _ => panic!(
            "expected one {kind} node at {path:?}, found {}; present:\n{}",
            found.len(),
            all.iter()
                .map(|(p, n)| {
                    let s = p.join(" / ");
                    let s: String = s.chars().take(80).collect();
                    format!("{s} ({})", n["kind"])
                })
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

fn assert_kernel(
    all: &[(Vec<String>, Value)],
    path: &[&str],
    kind: &str,
    count: u64,
    device: &str,
    instance: u64,
) {
    let n = node_of_kind(all, path, kind);
    assert_eq!(u(&n["count"]), count, "{path:?} count");
    assert_eq!(n["device"], device, "{path:?} device");
    assert_eq!(n["device_index"], 0, "{path:?} device_index");
    assert_eq!(u(&n["instance"]), instance, "{path:?} instance");
}

fn assert_region(all: &[(Vec<String>, Value)], path: &[&str], kind: &str, count: u64) {
    let n = node_of_kind(all, path, kind);
    assert_eq!(n["kind"], kind, "{path:?} kind");
    assert_eq!(u(&n["count"]), count, "{path:?} count");
    assert!(
        n["device"].is_null(),
        "{path:?}: a region has no device: {}",
        n["device"]
    );
    assert!(
        n["device_index"].is_null() && n["instance"].is_null(),
        "{path:?}"
    );
}

fn memory<'a>(p: &'a Value, space: &str) -> &'a Value {
    p["memory"]
        .as_array()
        .expect("memory")
        .iter()
        .find(|m| m["space"] == space)
        .unwrap_or_else(|| panic!("no memory entry for {space}: {}", p["memory"]))
}

const BASIC_N: u64 = 10;

/// Everything the `basic` scenario must produce (both interface versions).
fn check_basic(p: &Value, kokkos_version: &str) {
    assert_eq!(p["schema"], "kprof-profile/1");
    assert_eq!(p["program"]["executable"], "kokkos_host");
    check_stats(&p["tree"]);
    let all = nodes(p);
    let paths: BTreeSet<String> = all.iter().map(|(p, _)| p.join(" / ")).collect();
    let expected: BTreeSet<String> = [
        "solve",
        "solve / iteration",
        "solve / iteration / axpy",
        "solve / iteration / dot",
        "solve / iteration / prefix",
        "solve / sync",
        "solve / x <- d_x",
        "solve / d_x <- x",
        "solve / assemble",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(paths, expected, "tree paths");

    assert_region(&all, &["solve"], "region", 1);
    assert_region(&all, &["solve", "iteration"], "region", 3);
    assert_kernel(
        &all,
        &["solve", "iteration", "axpy"],
        "parallel_for",
        3 * BASIC_N,
        "OpenMP",
        1,
    );
    assert_kernel(
        &all,
        &["solve", "iteration", "dot"],
        "parallel_reduce",
        3,
        "OpenMP",
        1,
    );
    assert_kernel(
        &all,
        &["solve", "iteration", "prefix"],
        "parallel_scan",
        3,
        "OpenMP",
        1,
    );
    assert_kernel(&all, &["solve", "sync"], "fence", 1, "OpenMP", 0);
    assert_kernel(&all, &["solve", "assemble"], "parallel_for", 4, "OpenMP", 1);
    for (path, count) in [(["solve", "x <- d_x"], 1), (["solve", "d_x <- x"], 2)] {
        let n = node(&all, &path);
        assert_eq!(n["kind"], "deep_copy", "{path:?}");
        assert_eq!(u(&n["count"]), count, "{path:?}");
    }
    // Every kernel spun >= 1 us.
    let axpy = node(&all, &["solve", "iteration", "axpy"]);
    assert!(
        f(&axpy["min_ns"]) >= 500.0,
        "axpy min_ns {}",
        axpy["min_ns"]
    );
    let solve = node(&all, &["solve"]);
    assert!(
        u(&solve["total_ns"]) >= 3 * BASIC_N * 500,
        "solve total {}",
        solve["total_ns"]
    );

    // sections, events
    let sections = p["sections"].as_array().expect("sections");
    assert_eq!(sections.len(), 1, "sections: {}", p["sections"]);
    assert_eq!(sections[0]["name"], "assembly");
    assert_eq!(u(&sections[0]["count"]), 4);
    assert!(u(&sections[0]["min_ns"]) <= u(&sections[0]["max_ns"]));
    assert!(u(&sections[0]["total_ns"]) >= 4 * u(&sections[0]["min_ns"]));
    assert_eq!(
        p["events"],
        serde_json::json!([{"name": "checkpoint", "count": 2}])
    );

    // deep copies
    let dc = p["deep_copies"].as_array().expect("deep_copies");
    assert_eq!(dc.len(), 2, "deep_copies: {}", p["deep_copies"]);
    let find_dc = |dst: &str| {
        dc.iter()
            .find(|d| d["dst_space"] == dst)
            .unwrap_or_else(|| panic!("no deep copy to {dst}: {}", p["deep_copies"]))
    };
    let to_host = find_dc("Host");
    assert_eq!(
        (
            &to_host["dst_label"],
            &to_host["src_space"],
            &to_host["src_label"]
        ),
        (&Value::from("x"), &Value::from("Cuda"), &Value::from("d_x"))
    );
    assert_eq!((u(&to_host["count"]), u(&to_host["bytes"])), (1, 8000));
    let to_cuda = find_dc("Cuda");
    assert_eq!(
        (
            &to_cuda["dst_label"],
            &to_cuda["src_space"],
            &to_cuda["src_label"]
        ),
        (&Value::from("d_x"), &Value::from("Host"), &Value::from("x"))
    );
    assert_eq!((u(&to_cuda["count"]), u(&to_cuda["bytes"])), (2, 16000));

    // memory
    assert_eq!(
        p["memory"].as_array().expect("memory").len(),
        2,
        "{}",
        p["memory"]
    );
    let host = memory(p, "Host");
    assert_eq!(u(&host["allocations"]), 4);
    assert_eq!(u(&host["deallocations"]), 3);
    assert_eq!(u(&host["current_bytes"]), 4096);
    assert_eq!(u(&host["high_water_bytes"]), 120096);
    let leaks = host["leaks"].as_array().expect("leaks");
    assert_eq!(leaks.len(), 1, "Host leaks: {}", host["leaks"]);
    assert_eq!(leaks[0]["label"], "leaky");
    assert_eq!(u(&leaks[0]["bytes"]), 4096);
    assert!(leaks[0]["address"]
        .as_str()
        .is_some_and(|a| a.starts_with("0x")));
    let largest = host["largest"].as_array().expect("largest");
    assert_eq!(largest[0]["label"], "tmp");
    assert_eq!(u(&largest[0]["bytes"]), 100000);
    assert_eq!(largest.len(), 4, "largest: {}", host["largest"]);
    let cuda = memory(p, "Cuda");
    assert_eq!(
        (
            u(&cuda["allocations"]),
            u(&cuda["deallocations"]),
            u(&cuda["current_bytes"]),
            u(&cuda["high_water_bytes"])
        ),
        (1, 1, 0, 8000)
    );
    assert_eq!(cuda["leaks"], serde_json::json!([]));

    // dual views
    assert_eq!(
        p["dual_views"],
        serde_json::json!([{"label": "dv", "sync_to_device": 1, "sync_to_host": 1,
                            "modify_on_device": 1, "modify_on_host": 2}])
    );

    // metadata: the 19 pairs the harness declares (kprof may add its own)
    let md = p["metadata"].as_object().expect("metadata");
    assert_eq!(md["Kokkos Version"], kokkos_version);
    for key in [
        "Default Device",
        "Kokkos_ENABLE_OPENMP",
        "KOKKOS_COMPILER_GNU",
        "OpenMP thread_pool_size",
    ] {
        assert!(md.contains_key(key), "metadata lacks {key}: {md:?}");
    }
    assert_eq!(md["Default Device"], "N6Kokkos6OpenMPE");
    assert!(md.len() >= 19, "metadata has {} keys", md.len());

    // nothing anomalous, nothing dropped
    for (k, v) in p["anomalies"].as_object().expect("anomalies") {
        assert_eq!(u(v), 0, "anomaly {k} in a clean run");
    }
    assert_eq!(u(&p["dropped_records"]), 0);
    assert!(p["plugins"]
        .as_array()
        .expect("plugins")
        .contains(&Value::from("kokkos")));
    assert!(u(&p["clock"]["duration_ns"]) > 0);
}

#[test]
fn header_layout_matches_reference() {
    let dir = scratch("kokkos_layout");
    let src = dir.join("layout.c");
    std::fs::write(
        &src,
        r#"#include "kokkosp.h"
#include <stdio.h>
#include <stdalign.h>
#define S(t) printf(#t " size %zu align %zu\n", sizeof(t), alignof(t))
#define O(t, f) printf(#t "." #f " offset %zu\n", offsetof(t, f))
int main(void) {
  S(Kokkos_Profiling_KokkosPDeviceInfo); S(Kokkos_Profiling_SpaceHandle);
  S(Kokkos_Tools_ToolProgrammingInterface); S(Kokkos_Tools_ToolSettings);
  S(Kokkos_Tools_VariableInfo_ValueUnion); S(Kokkos_Tools_VariableInfo_ValueUnionSet);
  S(Kokkos_Tools_ValueSet); S(Kokkos_Tools_OptimizationGoal); S(Kokkos_Tools_ValueRange);
  S(Kokkos_Tools_VariableInfo); S(Kokkos_Tools_VariableValue);
  O(Kokkos_Tools_ToolProgrammingInterface, fence);
  O(Kokkos_Tools_ToolSettings, requires_global_fencing);
  O(Kokkos_Tools_ValueSet, values); O(Kokkos_Tools_OptimizationGoal, goal);
  O(Kokkos_Tools_ValueRange, upper); O(Kokkos_Tools_ValueRange, step);
  O(Kokkos_Tools_ValueRange, openLower); O(Kokkos_Tools_ValueRange, openUpper);
  O(Kokkos_Tools_VariableInfo, category); O(Kokkos_Tools_VariableInfo, valueQuantity);
  O(Kokkos_Tools_VariableInfo, candidates); O(Kokkos_Tools_VariableInfo, toolProvidedInfo);
  O(Kokkos_Tools_VariableValue, value); O(Kokkos_Tools_VariableValue, metadata);
  printf("enum size %zu\n", sizeof(enum Kokkos_Tools_VariableInfo_ValueType));
  return 0;
}
"#,
    )
    .unwrap();
    let exe = compile(&[&src], &dir.join("layout"), &[]);
    let out = run_ok(&mut Command::new(exe));
    let text = String::from_utf8(out.stdout).unwrap();
    // From shared/reference/kokkos-tools.md (measured on Kokkos 4.6.01, x86-64).
    let expected = "\
Kokkos_Profiling_KokkosPDeviceInfo size 8 align 8
Kokkos_Profiling_SpaceHandle size 64 align 1
Kokkos_Tools_ToolProgrammingInterface size 256 align 8
Kokkos_Tools_ToolSettings size 256 align 1
Kokkos_Tools_VariableInfo_ValueUnion size 64 align 8
Kokkos_Tools_VariableInfo_ValueUnionSet size 8 align 8
Kokkos_Tools_ValueSet size 16 align 8
Kokkos_Tools_OptimizationGoal size 16 align 8
Kokkos_Tools_ValueRange size 200 align 8
Kokkos_Tools_VariableInfo size 224 align 8
Kokkos_Tools_VariableValue size 80 align 8
Kokkos_Tools_ToolProgrammingInterface.fence offset 0
Kokkos_Tools_ToolSettings.requires_global_fencing offset 0
Kokkos_Tools_ValueSet.values offset 8
Kokkos_Tools_OptimizationGoal.goal offset 8
Kokkos_Tools_ValueRange.upper offset 64
Kokkos_Tools_ValueRange.step offset 128
Kokkos_Tools_ValueRange.openLower offset 192
Kokkos_Tools_ValueRange.openUpper offset 193
Kokkos_Tools_VariableInfo.category offset 4
Kokkos_Tools_VariableInfo.valueQuantity offset 8
Kokkos_Tools_VariableInfo.candidates offset 16
Kokkos_Tools_VariableInfo.toolProvidedInfo offset 216
Kokkos_Tools_VariableValue.value offset 8
Kokkos_Tools_VariableValue.metadata offset 72
enum size 4
";
    assert_eq!(text, expected);
    // The header also compiles as C++.
    let cpp = dir.join("layout_cpp.cpp");
    std::fs::write(&cpp, "#include \"kokkosp.h\"\nint main() { return sizeof(Kokkos_Tools_ToolSettings) == 256 ? 0 : 1; }\n").unwrap();
    let exe = compile(&[&cpp], &dir.join("layout_cpp"), &[]);
    run_ok(&mut Command::new(exe));
    assert!(workspace_root().join("ffi-headers/kokkosp.h").is_file());
}

#[test]
fn basic_profile_is_exact() {
    let b = built();
    let dir = scratch("kokkos_basic");
    let out = run_ok(&mut host_cmd(&b.host, &dir, &["4", "basic"]));
    assert!(
        out.stdout.is_empty(),
        "kprof printed on stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = stderr(&out);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    assert_eq!(
        last,
        format!("kprof: files in {}", dir.join("out").display()),
        "stderr:\n{err}"
    );
    assert!(err.contains("axpy"), "summary lists the kernels:\n{err}");
    let p = read_profile(&dir.join("out"));
    check_basic(&p, "4.6.1");
    assert_eq!(p["program"]["pid"].as_u64().map(|x| x > 0), Some(true));

    // profile.csv: one row per tree node
    let csv = std::fs::read_to_string(dir.join("out/profile.csv")).expect("profile.csv");
    let mut lines = csv.lines();
    let header = lines.next().expect("csv header");
    assert_eq!(
        header,
        "path,name,kind,device,instance,depth,count,total_ns,self_ns,min_ns,max_ns,mean_ns,stddev_ns,id,parent,threads,per_thread_total_ns,per_thread_self_ns"
    );
    let rows: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), nodes(&p).len(), "csv rows:\n{csv}");
    let axpy = rows
        .iter()
        .find(|r| r.starts_with("solve;iteration;axpy,"))
        .unwrap_or_else(|| panic!("no axpy row:\n{csv}"));
    let cols: Vec<&str> = axpy.split(',').collect();
    assert_eq!(
        &cols[1..7],
        &["axpy", "parallel_for", "OpenMP", "1", "2", "30"],
        "{axpy}"
    );
}

#[test]
fn interface_3_4_gives_the_same_kernel_profile() {
    let b = built();
    let d4 = scratch("kokkos_v4_for_34");
    let d34 = scratch("kokkos_v34");
    run_ok(&mut host_cmd(&b.host, &d4, &["4", "basic"]));
    // Kokkos 3.4 reads KOKKOS_PROFILE_LIBRARY, not KOKKOS_TOOLS_LIBS.
    let mut cmd = host_cmd(&b.host, &d34, &["3.4", "basic"]);
    cmd.env_remove("KOKKOS_TOOLS_LIBS")
        .env("KOKKOS_PROFILE_LIBRARY", kprof_lib());
    run_ok(&mut cmd);
    let p4 = read_profile(&d4.join("out"));
    let p34 = read_profile(&d34.join("out"));
    check_basic(&p34, "3.4.1");
    assert_eq!(shape(&p4), shape(&p34));
    if let Some(v) = p34["metadata"].get("Kokkos Tools interface version") {
        assert_eq!(v, "20210225");
    }
}

#[test]
fn bad_inputs_are_counted_exactly() {
    let b = built();
    let dir = scratch("kokkos_bad");
    let out = run_ok(&mut host_cmd(&b.host, &dir, &["4", "bad"]));
    assert!(out.stdout.is_empty());
    let p = read_profile(&dir.join("out"));
    let a = &p["anomalies"];
    let expect = [
        ("null_names", 4),
        ("invalid_utf8_names", 2),
        ("unmatched_ends", 6),
        ("out_of_order_ends", 1),
        ("unclosed_at_exit", 2),
        ("unknown_sections", 2),
        ("unknown_frees", 1),
        ("internal_errors", 0),
    ];
    for (k, v) in expect {
        assert_eq!(u(&a[k]), v, "anomaly {k}; all: {a}");
    }
    assert!(a["calls_after_finalize"].is_u64(), "{a}");
    check_stats(&p["tree"]);

    let all = nodes(&p);
    assert_region(&all, &["after"], "region", 1);
    assert_kernel(&all, &["after", "good"], "parallel_for", 10, "OpenMP", 1);
    assert_kernel(
        &all,
        &["after", "good_r"],
        "parallel_reduce",
        5,
        "OpenMP",
        1,
    );
    assert_eq!(
        node(&all, &["after"])["children"].as_array().unwrap().len(),
        2
    );
    assert_region(&all, &["open_region"], "region", 1);
    assert_kernel(
        &all,
        &["open_region", "open_at_exit"],
        "parallel_for",
        1,
        "OpenMP",
        1,
    );
    assert_kernel(&all, &["<null>"], "parallel_for", 1, "OpenMP", 1);
    assert_kernel(&all, &["twice"], "parallel_for", 1, "OpenMP", 1);
    assert_region(&all, &["<null>"], "region", 1);
    assert_region(&all, &[""], "region", 1);
    assert_kernel(&all, &[""], "parallel_for", 1, "OpenMP", 1);
    assert_kernel(&all, &["<null>"], "fence", 1, "OpenMP", 0);
    assert_kernel(&all, &["outer_k"], "parallel_for", 1, "OpenMP", 1);
    let bad_utf8: Vec<&Value> = all
        .iter()
        .filter(|(_, n)| n["name"].as_str().is_some_and(|s| s.contains('\u{FFFD}')))
        .map(|(_, n)| n)
        .collect();
    assert_eq!(bad_utf8.len(), 2, "names with U+FFFD");
    assert!(bad_utf8.iter().any(|n| n["kind"] == "parallel_for"
        && n["name"].as_str().unwrap().starts_with("bad")
        && n["name"].as_str().unwrap().ends_with("name")));
    assert!(bad_utf8
        .iter()
        .any(|n| n["kind"] == "region" && n["name"].as_str().unwrap().starts_with("reg")));
    let big: Vec<&Value> = all
        .iter()
        .filter(|(_, n)| {
            n["kind"] == "parallel_reduce"
                && n["name"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("AAAAAAAA"))
        })
        .map(|(_, n)| n)
        .collect();
    assert_eq!(big.len(), 1, "the 1 MiB name");
    assert_eq!(u(&big[0]["count"]), 1);
    // Everything after finalize is ignored.
    for (path, _) in &all {
        assert!(
            !path.iter().any(|s| s.starts_with("late")),
            "late call recorded: {path:?}"
        );
    }
    assert!(p["metadata"].get("late").is_none());
    let events = p["events"].as_array().unwrap();
    assert!(
        !events.iter().any(|e| e["name"] == "late"),
        "{}",
        p["events"]
    );
    assert!(
        events
            .iter()
            .any(|e| e["name"] == "<null>" && e["count"] == 1),
        "{}",
        p["events"]
    );
    let host = memory(&p, "Host");
    assert_eq!(u(&host["allocations"]), 1, "{host}");
    assert_eq!(u(&host["current_bytes"]), 0, "{host}");
    assert_eq!(u(&host["high_water_bytes"]), 4096, "{host}");
    assert_eq!(host["leaks"], serde_json::json!([]));
}

#[test]
fn sixteen_threads_lose_and_double_nothing() {
    const M: u64 = 20000;
    let b = built();
    let dir = scratch("kokkos_threads");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "threads", &M.to_string()]);
    cmd.env("KPROF_BUFFER_MB", "1024");
    run_ok(&mut cmd);
    let p = read_profile(&dir.join("out"));
    assert_eq!(u(&p["dropped_records"]), 0);
    check_stats(&p["tree"]);
    let all = nodes(&p);
    assert_eq!(
        all.len(),
        2 + 16,
        "paths: {:?}",
        all.iter().map(|(p, _)| p.join("/")).collect::<Vec<_>>()
    );
    assert_region(&all, &["worker"], "region", 16);
    assert_kernel(
        &all,
        &["worker", "shared_kernel"],
        "parallel_for",
        16 * M.div_ceil(2),
        "Serial",
        1,
    );
    let mut sum = u(&node(&all, &["worker", "shared_kernel"])["count"]);
    for t in 0..16 {
        let name = format!("thread_{t:02}");
        assert_kernel(&all, &["worker", &name], "parallel_for", M / 2, "Serial", 1);
        sum += M / 2;
    }
    assert_eq!(sum, 16 * M);
    let threads = p["threads"].as_array().expect("threads");
    assert!(threads.len() >= 16, "{} threads listed", threads.len());
    for (k, v) in p["anomalies"].as_object().unwrap() {
        assert_eq!(u(v), 0, "anomaly {k}");
    }
}

#[test]
fn fencing_is_off_by_default() {
    let b = built();
    let dir = scratch("kokkos_settings_default");
    let out = run_ok(&mut host_cmd(&b.host, &dir, &["4", "settings"]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fencing=0\n");
    let p = read_profile(&dir.join("out"));
    let all = nodes(&p);
    assert_eq!(all.len(), 1, "only the kernel, no fences");
    assert_kernel(&all, &["k"], "parallel_for", 2, "OpenMP", 1);
}

#[test]
fn kokkos_fences_on_request() {
    let b = built();
    let dir = scratch("kokkos_settings_fences");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "settings"]);
    cmd.env("KPROF_KOKKOS_FENCES", "1");
    let out = run_ok(&mut cmd);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fencing=1\n");
    let p = read_profile(&dir.join("out"));
    let all = nodes(&p);
    // Kokkos fences before each begin (outside the kernel) and each end (inside):
    // those fences are folded into the kernel, not recorded as fence instances.
    assert_eq!(all.len(), 1, "only the kernel, no tool fences: {all:?}");
    assert_kernel(&all, &["k"], "parallel_for", 2, "OpenMP", 1);
    // KOKKOS_TOOLS_ARGS works too (it is in the environment before Kokkos asks for
    // the tool settings; --kokkos-tools-args only arrives later, with parse_args).
    let dir2 = scratch("kokkos_settings_fences_args");
    let mut cmd = host_cmd(&b.host, &dir2, &["4", "settings"]);
    cmd.env("KOKKOS_TOOLS_ARGS", "--kokkos-fences=1");
    let out = run_ok(&mut cmd);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fencing=1\n");
}

/// With Kokkos' fences on, the profile is exactly the one without them (the tool
/// fences are folded into the kernels and regions they time, the program's own named
/// fence "sync" stays), and a chained tool still sees every fence with its own
/// handles.
#[test]
fn tool_fences_fold_into_their_kernels() {
    let b = built();
    let dir = scratch("kokkos_fences_folded");
    let counts_file = dir.join("second.txt");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "chain"]);
    cmd.env(
        "KOKKOS_TOOLS_LIBS",
        format!("{};{}", kprof_lib(), b.second_tool.display()),
    )
    .env("KPROF_KOKKOS_FENCES", "1")
    .env("SECOND_TOOL_OUT", &counts_file);
    let out = run_ok(&mut cmd);
    let p = read_profile(&dir.join("out"));
    check_basic(&p, "4.6.1");
    assert!(!stderr(&out).contains(TOOL_FENCE), "{}", stderr(&out));
    // Kokkos fenced before every kernel begin and end (3N + 10 kernels) and every
    // push and pop (4 each), besides the program's fence "sync".
    let n = BASIC_N as i64;
    let fences = 2 * (3 * n + 10) + 8 + 1;
    let c = read_counts(&counts_file);
    for (k, v) in [
        ("begin_fence", fences),
        ("end_fence", fences),
        ("foreign_ids", 0),
        ("begin_parallel_for", 3 * n + 4),
    ] {
        assert_eq!(c.get(k), Some(&v), "second tool's {k}; all: {c:?}");
    }
}

#[test]
fn no_finalize_still_writes_a_complete_profile() {
    let b = built();
    let dir = scratch("kokkos_nofinalize");
    let out = run_ok(&mut host_cmd(&b.host, &dir, &["4", "nofinalize"]));
    assert!(out.stdout.is_empty());
    let p = read_profile(&dir.join("out"));
    check_stats(&p["tree"]);
    let all = nodes(&p);
    assert_eq!(all.len(), 3);
    assert_region(&all, &["solve"], "region", 1);
    assert_kernel(&all, &["solve", "axpy"], "parallel_for", 5, "OpenMP", 1);
    assert_kernel(&all, &["solve", "dot"], "parallel_reduce", 1, "OpenMP", 1);
    let host = memory(&p, "Host");
    assert_eq!(host["leaks"].as_array().unwrap().len(), 1);
    assert_eq!(host["leaks"][0]["label"], "nf_leak");
    assert_eq!(u(&host["leaks"][0]["bytes"]), 512);
    assert_eq!(p["metadata"]["Kokkos Version"], "4.6.1");
    let err = stderr(&out);
    assert!(err.contains("kprof: files in "), "{err}");
}

#[test]
fn sigterm_writes_output_and_dies_by_the_signal() {
    let b = built();
    let dir = scratch("kokkos_signal");
    let out = run(&mut host_cmd(&b.host, &dir, &["4", "signal"]));
    assert_eq!(
        out.status.signal(),
        Some(15),
        "status {:?}\nstderr:\n{}",
        out.status,
        stderr(&out)
    );
    let p = read_profile(&dir.join("out"));
    check_stats(&p["tree"]);
    let all = nodes(&p);
    assert_region(&all, &["before"], "region", 1);
    assert_kernel(&all, &["before", "pre"], "parallel_for", 7, "OpenMP", 1);
    assert_eq!(node(&all, &["dying"])["kind"], "region");
    assert_kernel(&all, &["dying", "inflight"], "parallel_for", 2, "OpenMP", 1);
}

#[test]
fn help_lists_the_options() {
    let b = built();
    let dir = scratch("kokkos_help");
    let out = run_ok(&mut host_cmd(&b.host, &dir, &["4", "help"]));
    let err = stderr(&out);
    for opt in ["KPROF_OUTPUT_DIR", "KPROF_BUFFER_MB", "KPROF_KOKKOS_FENCES"] {
        assert!(err.contains(opt), "help lacks {opt}:\n{err}");
    }
    assert!(out.stdout.is_empty(), "help went to stdout");
    // Kokkos' own flag does the same, and nothing is measured or written: no output
    // directory, no summary. A chained tool still gets its print_help.
    let dir = scratch("kokkos_help_flag");
    let counts_file = dir.join("second.txt");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "basic", "--kokkos-tools-help"]);
    cmd.env(
        "KOKKOS_TOOLS_LIBS",
        format!("{};{}", kprof_lib(), b.second_tool.display()),
    )
    .env("SECOND_TOOL_OUT", &counts_file);
    let out = run_ok(&mut cmd);
    let err = stderr(&out);
    assert!(err.contains("KPROF_OUTPUT_DIR"), "{err}");
    assert!(!err.contains("kprof: files in"), "{err}");
    assert!(
        !dir.join("out").exists(),
        "--kokkos-tools-help created the output directory"
    );
    let c = read_counts(&counts_file);
    for (k, v) in [
        ("init", 1),
        ("print_help", 1),
        ("finalize", 1),
        ("parse_args", 0),
    ] {
        assert_eq!(c.get(k), Some(&v), "second tool's {k}; all: {c:?}");
    }
}

fn read_counts(path: &Path) -> BTreeMap<String, i64> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("second tool wrote no {}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().parse().unwrap()))
        .collect()
}

#[test]
fn chained_tool_sees_every_callback() {
    let b = built();
    let dir = scratch("kokkos_chain");
    let counts_file = dir.join("second.txt");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "chain"]);
    cmd.env(
        "KOKKOS_TOOLS_LIBS",
        format!("{};{}", kprof_lib(), b.second_tool.display()),
    )
    .env("SECOND_TOOL_OUT", &counts_file)
    .env("SECOND_TOOL_WATCH", "axpy");
    run_ok(&mut cmd);
    let p = read_profile(&dir.join("out"));
    check_basic(&p, "4.6.1");
    let c = read_counts(&counts_file);
    let n = BASIC_N as i64;
    let expected: [(&str, i64); 32] = [
        ("init", 1),
        ("init_load_seq", 1),
        ("init_interface_version", 20240906),
        ("finalize", 1),
        ("request_tool_settings", 1),
        ("provide_tool_programming_interface", 1),
        ("parse_args", 2),
        ("print_help", 0),
        ("begin_parallel_for", 3 * n + 4),
        ("end_parallel_for", 3 * n + 4),
        ("begin_parallel_reduce", 3),
        ("end_parallel_reduce", 3),
        ("begin_parallel_scan", 3),
        ("end_parallel_scan", 3),
        ("begin_fence", 1),
        ("end_fence", 1),
        ("push_region", 4),
        ("pop_region", 4),
        ("create_section", 1),
        ("start_section", 4),
        ("stop_section", 4),
        ("destroy_section", 1),
        ("profile_event", 2),
        ("declare_metadata", 19),
        ("allocate_data", 5),
        ("deallocate_data", 4),
        ("begin_deep_copy", 3),
        ("end_deep_copy", 3),
        ("dual_view_sync", 2),
        ("dual_view_modify", 3),
        ("watched", 3 * n),
        ("foreign_ids", 0),
    ];
    for (k, v) in expected {
        assert_eq!(c.get(k), Some(&v), "second tool's {k}; all: {c:?}");
    }
}

/// Kokkos 4.x's own scratch buffers (freed as "[unlabeled]", reallocated as
/// "Kokkos::OpenMP::scratch_mem", never freed while the tool runs) are neither leaks
/// nor unknown frees; frees of blocks nothing allocated still are.
#[test]
fn runtime_scratch_is_not_a_leak() {
    let b = built();
    let dir = scratch("kokkos_teams");
    let out = run_ok(&mut host_cmd(&b.host, &dir, &["4", "teams"]));
    assert!(!stderr(&out).contains("never freed"), "{}", stderr(&out));
    let p = read_profile(&dir.join("out"));
    let host = memory(&p, "Host");
    assert_eq!(
        (u(&host["allocations"]), u(&host["deallocations"])),
        (3, 1),
        "{host}"
    );
    assert_eq!(host["leaks"], serde_json::json!([]), "{host}");
    assert_eq!(u(&host["current_bytes"]), 2 * 4096, "{host}");
    for (k, v) in p["anomalies"].as_object().expect("anomalies") {
        let want = if k == "unknown_frees" { 2 } else { 0 };
        assert_eq!(u(v), want, "anomaly {k}: {}", p["anomalies"]);
    }
}

/// A Kokkos built with tuning, kprof alone or chained before a tool without tuning
/// callbacks: Kokkos finds no tuning symbol in kprof (have_tuning_tool() stays
/// false, so its own tuners keep its defaults) and the value stays as given.
#[test]
fn tuning_symbols_are_absent_without_a_tuning_tool() {
    let b = built();
    for (name, chained) in [
        ("kokkos_tuning_alone", None),
        ("kokkos_tuning_no_tuner", Some(&b.second_tool_no_tuning)),
    ] {
        let dir = scratch(name);
        let counts_file = dir.join("second.txt");
        let mut cmd = host_cmd(&b.host, &dir, &["4", "tuning"]);
        if let Some(tool) = chained {
            cmd.env(
                "KOKKOS_TOOLS_LIBS",
                format!("{};{}", kprof_lib(), tool.display()),
            )
            .env("SECOND_TOOL_OUT", &counts_file);
        }
        let out = run_ok(&mut cmd);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "have_tuning_tool=0\ntuned=128\n",
            "{name}; stderr:\n{}",
            stderr(&out)
        );
        let p = read_profile(&dir.join("out"));
        assert_kernel(&nodes(&p), &["axpy"], "parallel_for", 1, "OpenMP", 1);
        if chained.is_some() {
            let c = read_counts(&counts_file);
            assert_eq!(c.get("init"), Some(&1), "{c:?}");
            assert_eq!(c.get("begin_parallel_for"), Some(&1), "{c:?}");
            assert_eq!(c.get("request_values"), Some(&0), "{c:?}");
        }
    }
}

/// A tuning tool chained after kprof gets every tuning call, with Kokkos' arguments,
/// and its answer reaches Kokkos.
#[test]
fn tuning_is_forwarded_to_the_chained_tool() {
    let b = built();
    let dir = scratch("kokkos_tuning_chain");
    let counts_file = dir.join("second.txt");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "tuning"]);
    cmd.env(
        "KOKKOS_TOOLS_LIBS",
        format!("{};{}", kprof_lib(), b.second_tool.display()),
    )
    .env("SECOND_TOOL_OUT", &counts_file);
    let out = run_ok(&mut cmd);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "have_tuning_tool=1\ntuned=64\n",
        "stderr:\n{}",
        stderr(&out)
    );
    let c = read_counts(&counts_file);
    for (k, v) in [
        ("init", 1),
        ("init_load_seq", 1),
        ("declare_output_type", 1),
        ("declare_input_type", 1),
        ("begin_context", 1),
        ("declare_optimization_goal", 1),
        ("request_values", 1),
        ("end_context", 1),
        ("tuning_mismatches", 0),
        ("begin_parallel_for", 1),
        ("finalize", 1),
    ] {
        assert_eq!(c.get(k), Some(&v), "second tool's {k}; all: {c:?}");
    }
    let p = read_profile(&dir.join("out"));
    assert_kernel(&nodes(&p), &["axpy"], "parallel_for", 1, "OpenMP", 1);
}

#[test]
fn annotation_api_and_plugin_share_one_runtime() {
    let b = built();
    let dir = scratch("kokkos_annotate");
    run_ok(&mut host_cmd(&b.host_annotate, &dir, &["4", "annotate"]));
    let p = read_profile(&dir.join("out"));
    check_stats(&p["tree"]);
    let plugins = p["plugins"].as_array().expect("plugins");
    assert!(
        plugins.contains(&Value::from("kokkos")),
        "plugins {plugins:?}"
    );
    assert!(
        plugins.contains(&Value::from("annotation")),
        "plugins {plugins:?}"
    );
    let all = nodes(&p);
    assert_eq!(
        all.len(),
        4,
        "paths: {:?}",
        all.iter().map(|(p, _)| p.join("/")).collect::<Vec<_>>()
    );
    assert_region(&all, &["app phase"], "user_region", 1);
    assert_kernel(
        &all,
        &["app phase", "inner"],
        "parallel_for",
        5,
        "OpenMP",
        1,
    );
    assert_region(&all, &["app phase", "kregion"], "region", 1);
    assert_kernel(
        &all,
        &["app phase", "kregion", "r"],
        "parallel_reduce",
        2,
        "OpenMP",
        1,
    );
    // One runtime, one output directory.
    let entries: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        entries,
        vec!["out".to_string()],
        "scratch holds {entries:?}"
    );
}

#[test]
fn existing_output_directory_is_never_reused() {
    let b = built();
    let dir = scratch("kokkos_existing");
    let out1 = run_ok(&mut host_cmd(&b.host, &dir, &["4", "settings"]));
    let out2 = run_ok(&mut host_cmd(&b.host, &dir, &["4", "settings"]));
    let p1 = read_profile(&dir.join("out"));
    let p2 = read_profile(&dir.join("out.1"));
    assert_ne!(p1["program"]["pid"], p2["program"]["pid"]);
    assert!(stderr(&out1)
        .trim_end()
        .ends_with(&format!("kprof: files in {}", dir.join("out").display())));
    assert!(stderr(&out2)
        .trim_end()
        .ends_with(&format!("kprof: files in {}", dir.join("out.1").display())));
    // A pre-existing empty directory is not reused either.
    let dir = scratch("kokkos_existing_empty");
    std::fs::create_dir(dir.join("out")).unwrap();
    run_ok(&mut host_cmd(&b.host, &dir, &["4", "settings"]));
    assert_eq!(std::fs::read_dir(dir.join("out")).unwrap().count(), 0);
    read_profile(&dir.join("out.1"));
}

#[test]
fn output_dir_pattern_is_expanded() {
    let b = built();
    let dir = scratch("kokkos_pattern");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "settings"]);
    cmd.env("KPROF_OUTPUT_DIR", dir.join("run-%e-%p"));
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    let expected = dir.join(format!("run-kokkos_host-{pid}"));
    let p = read_profile(&expected);
    assert_eq!(u(&p["program"]["pid"]), pid as u64);
    assert_eq!(p["program"]["executable"], "kokkos_host");
}

#[test]
fn invalid_buffer_size_warns_once_and_works() {
    let b = built();
    let dir = scratch("kokkos_bad_buffer");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "basic"]);
    cmd.env("KPROF_BUFFER_MB", "abc");
    let out = run_ok(&mut cmd);
    let err = stderr(&out);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("KPROF_BUFFER_MB"))
        .collect();
    assert_eq!(warnings.len(), 1, "stderr:\n{err}");
    assert!(
        warnings[0].contains("abc"),
        "the warning names the bad value: {}",
        warnings[0]
    );
    check_basic(&read_profile(&dir.join("out")), "4.6.1");
}

#[test]
fn tool_args_are_applied_once_though_parsed_twice() {
    let b = built();
    let dir = scratch("kokkos_tool_args");
    // From the environment: argv has no exe.
    let mut cmd = host_cmd(&b.host, &dir, &["4", "settings"]);
    cmd.env_remove("KPROF_OUTPUT_DIR").env(
        "KOKKOS_TOOLS_ARGS",
        format!("--output-dir={}", dir.join("via-env").display()),
    );
    run_ok(&mut cmd);
    read_profile(&dir.join("via-env"));
    assert!(
        !dir.join("via-env.1").exists(),
        "parse_args twice created two directories"
    );
    // From the command line: argv[0] is the exe.
    let arg = format!(
        "--kokkos-tools-args=--output-dir={}",
        dir.join("via-cmd").display()
    );
    let mut cmd = host_cmd(&b.host, &dir, &["4", "settings", &arg]);
    cmd.env_remove("KPROF_OUTPUT_DIR");
    run_ok(&mut cmd);
    read_profile(&dir.join("via-cmd"));
    assert!(!dir.join("via-cmd.1").exists());
    assert!(!dir.join("out").exists());
}

/// Device kernels of the `device` scenarios: 3 "cuda_axpy" and 1 "cuda_dot".
const DEVICE_N: u64 = 3;
/// Device work each Cuda kernel launch queues in the harness (DEVICE_KERNEL_MS).
const DEVICE_KERNEL_NS: u64 = 20_000_000;
const TOOL_REQUESTED_FENCE: &str =
    "Kokkos::Tools::Experimental::Impl::tool_invoked_fence: Tool Requested Fence";

/// The `key=value` words of the `device` scenarios' stdout.
fn fence_counts(out: &Output) -> BTreeMap<String, u64> {
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.parse().expect("a count")))
        .collect()
}

/// Runs a `device` scenario; returns the profile, the tpi.fence counts and stderr.
fn run_device(
    name: &str,
    scenario: &str,
    env: &[(&str, &str)],
) -> (Value, BTreeMap<String, u64>, String) {
    let b = built();
    let dir = scratch(name);
    let mut cmd = host_cmd(&b.host, &dir, &["4", scenario]);
    cmd.env("KOKKOS_HOST_CORE", lib("libkprof_core.so"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run_ok(&mut cmd);
    let p = read_profile(&dir.join("out"));
    check_stats(&p["tree"]);
    for (k, v) in p["anomalies"].as_object().expect("anomalies") {
        assert_eq!(u(v), 0, "anomaly {k}");
    }
    (p, fence_counts(&out), stderr(&out))
}

/// The tree of the `device` scenarios, whatever the timing: no tool fence anywhere.
fn check_device_tree(p: &Value) -> Vec<(Vec<String>, Value)> {
    let all = nodes(p);
    let paths: BTreeSet<String> = all.iter().map(|(path, _)| path.join(" / ")).collect();
    let expected: BTreeSet<String> = [
        "step",
        "step / cuda_axpy",
        "step / cuda_dot",
        "step / host_k",
        "step / serial_k",
        "step / sync",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(paths, expected, "no tool fence is a node of its own");
    assert_region(&all, &["step"], "region", 1);
    assert_kernel(
        &all,
        &["step", "cuda_axpy"],
        "parallel_for",
        DEVICE_N,
        "Cuda",
        1,
    );
    assert_kernel(&all, &["step", "cuda_dot"], "parallel_reduce", 1, "Cuda", 1);
    assert_kernel(&all, &["step", "host_k"], "parallel_for", 3, "OpenMP", 1);
    assert_kernel(&all, &["step", "serial_k"], "parallel_for", 2, "Serial", 1);
    assert_kernel(&all, &["step", "sync"], "fence", 1, "Cuda", 1);
    all
}

fn metadata<'a>(p: &'a Value, key: &str) -> &'a str {
    p["metadata"][key]
        .as_str()
        .unwrap_or_else(|| panic!("no metadata {key}: {}", p["metadata"]))
}

/// Without a GPU activity plugin, each kernel on a device back end is fenced once at
/// its end through Kokkos' `tpi.fence`, before its end is timed: its time holds the
/// device's work. The fence Kokkos reports for it is folded into the kernel; host
/// kernels are never fenced; the summary's metadata says what the times mean.
#[test]
fn device_kernels_are_fenced_at_their_end() {
    let (p, c, err) = run_device("kokkos_device_fenced", "device", &[]);
    let expect = |k: &str, v: u64| assert_eq!(c.get(k), Some(&v), "{k}; all: {c:?}");
    expect("tool_fences", DEVICE_N + 1);
    expect("device_ends", DEVICE_N + 1);
    expect("fenced_once", DEVICE_N + 1);
    expect("host_ends", 5);
    expect("host_fences", 0);
    expect("other_fences", 0);
    expect("wrong_dev", 0);
    let all = check_device_tree(&p);
    for name in ["cuda_axpy", "cuda_dot"] {
        let n = node(&all, &["step", name]);
        assert!(
            f(&n["min_ns"]) >= DEVICE_KERNEL_NS as f64,
            "{name}: the device's 20 ms are in every kernel: {n}"
        );
        assert_eq!(
            u(&n["self_ns"]),
            u(&n["total_ns"]),
            "{name}: the fence is folded"
        );
    }
    assert!(u(&node(&all, &["step", "cuda_axpy"])["total_ns"]) >= DEVICE_N * DEVICE_KERNEL_NS);
    for name in ["host_k", "serial_k"] {
        let n = node(&all, &["step", name]);
        assert!(f(&n["max_ns"]) < DEVICE_KERNEL_NS as f64, "{name}: {n}");
    }
    // The program's own fence waited for nothing: the kernels' fences did.
    assert!(u(&node(&all, &["step", "sync"])["total_ns"]) < DEVICE_KERNEL_NS);
    assert_eq!(
        metadata(&p, "kokkos_device_timing"),
        "fenced at kernel end (no GPU activity plugin)"
    );
    assert_eq!(
        err.matches("kprof: Kokkos kernels on device back ends: fenced at kernel end")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains(TOOL_REQUESTED_FENCE), "{err}");
}

/// With a GPU activity plugin active (it said so through `gpu_activity(1)` after
/// Kokkos initialized the tool, before the first kernel), device kernels are not
/// fenced: their device times come from the activities. The device's work is then
/// waited for by the program's own fence.
#[test]
fn gpu_activity_means_no_device_fence() {
    let (p, c, err) = run_device("kokkos_device_gpu", "device_gpu", &[]);
    assert_eq!(c.get("tool_fences"), Some(&0), "{c:?}");
    assert_eq!(c.get("device_ends"), Some(&(DEVICE_N + 1)), "{c:?}");
    let all = check_device_tree(&p);
    for name in ["cuda_axpy", "cuda_dot", "host_k", "serial_k"] {
        let n = node(&all, &["step", name]);
        assert!(
            f(&n["max_ns"]) < DEVICE_KERNEL_NS as f64,
            "{name}: launch time only: {n}"
        );
    }
    assert!(
        u(&node(&all, &["step", "sync"])["total_ns"]) >= (DEVICE_N + 1) * DEVICE_KERNEL_NS,
        "the program's fence waits for the queued device work"
    );
    assert!(
        metadata(&p, "kokkos_device_timing").starts_with("GPU activity"),
        "{}",
        p["metadata"]
    );
    assert!(
        err.contains("kprof: Kokkos kernels on device back ends: GPU activity"),
        "{err}"
    );
}

/// The explicit choice `--kokkos-fences=1` keeps Kokkos' global fences around every
/// kernel: they already put the device's work inside each device kernel, so kprof
/// adds no fence of its own, and says so.
#[test]
fn kokkos_fences_replace_the_device_fence() {
    let (p, c, _) = run_device(
        "kokkos_device_global",
        "device",
        &[("KPROF_KOKKOS_FENCES", "1")],
    );
    assert_eq!(c.get("tool_fences"), Some(&0), "{c:?}");
    let all = check_device_tree(&p);
    for name in ["cuda_axpy", "cuda_dot"] {
        let n = node(&all, &["step", name]);
        assert!(f(&n["min_ns"]) >= DEVICE_KERNEL_NS as f64, "{name}: {n}");
    }
    assert_eq!(
        metadata(&p, "kokkos_device_timing"),
        "fenced by Kokkos' global fences around every kernel"
    );
}

/// A program with host back ends only never fences and records no device timing.
#[test]
fn host_back_ends_are_never_fenced() {
    let b = built();
    let dir = scratch("kokkos_host_only_timing");
    let mut cmd = host_cmd(&b.host, &dir, &["4", "basic"]);
    cmd.env("KOKKOS_HOST_VERBOSE", "1");
    let out = run_ok(&mut cmd);
    let err = stderr(&out);
    assert!(err.contains("kokkos_host: tool_fence_calls=0"), "{err}");
    assert!(!err.contains("device back ends"), "{err}");
    let p = read_profile(&dir.join("out"));
    assert!(
        p["metadata"].get("kokkos_device_timing").is_none(),
        "{}",
        p["metadata"]
    );
}

/// A chained tool sees every fence Kokkos runs for kprof's device-kernel fences
/// (one pair per back end, OpenMP and Cuda, per device kernel) besides the program's
/// own, with its own handles.
#[test]
fn chained_tool_sees_the_device_fences() {
    let b = built();
    let side = scratch("kokkos_device_chain_counts");
    let counts_file = side.join("second.txt");
    let libs = format!("{};{}", kprof_lib(), b.second_tool.display());
    let counts = counts_file.display().to_string();
    let (p, c, _) = run_device(
        "kokkos_device_chain",
        "device",
        &[("KOKKOS_TOOLS_LIBS", &libs), ("SECOND_TOOL_OUT", &counts)],
    );
    assert_eq!(c.get("fenced_once"), Some(&(DEVICE_N + 1)), "{c:?}");
    check_device_tree(&p);
    let fences = 2 * (DEVICE_N as i64 + 1) + 1;
    let second = read_counts(&counts_file);
    for (k, v) in [
        ("begin_fence", fences),
        ("end_fence", fences),
        ("begin_parallel_for", DEVICE_N as i64 + 5),
        ("end_parallel_for", DEVICE_N as i64 + 5),
        ("begin_parallel_reduce", 1),
        ("foreign_ids", 0),
    ] {
        assert_eq!(
            second.get(k),
            Some(&v),
            "second tool's {k}; all: {second:?}"
        );
    }
}

/// The concurrency view of the one-thread `basic` scenario: each category's time
/// is exactly the exclusive time of the tree's nodes of its kinds (kernels,
/// regions, fences as waiting, deep copies as data), the rest of the thread's
/// span idle; in place and from records alike. With a trace, the JSON counter
/// points always account for exactly one thread.
#[test]
fn concurrency_divides_the_thread_by_kind() {
    let b = built();
    for trace in ["", "json"] {
        let dir = scratch(&format!("kokkos_concurrency_{trace}"));
        let mut cmd = host_cmd(&b.host, &dir, &["4", "basic"]);
        cmd.env("KPROF_TRACE", trace);
        run_ok(&mut cmd);
        let p = read_profile(&dir.join("out"));
        let in_place = u(&p["kprof"]["events_in_place"]) > 0;
        assert_eq!(in_place, trace.is_empty(), "trace {trace:?}");
        let mut want: BTreeMap<&str, u64> = BTreeMap::new();
        for (path, n) in nodes(&p) {
            let cat = match n["kind"].as_str().unwrap() {
                "parallel_for" | "parallel_reduce" | "parallel_scan" => "kernel",
                "region" | "user_region" => "region",
                "fence" => "wait",
                "deep_copy" => "data",
                other => panic!("unexpected kind {other} at {path:?}"),
            };
            *want.entry(cat).or_default() += u(&n["self_ns"]);
        }
        let c = &p["concurrency"];
        assert_eq!(u(&c["threads"]), 1, "{c}");
        let got: BTreeMap<&str, u64> = c["categories"]
            .as_array()
            .expect("categories")
            .iter()
            .map(|x| (x["category"].as_str().unwrap(), u(&x["ns"])))
            .filter(|&(k, ns)| k != "idle" && ns > 0)
            .collect();
        assert_eq!(got, want, "trace {trace:?}: {c}");
        for k in ["kernel", "region", "wait", "data"] {
            assert!(want.get(k).copied().unwrap_or(0) > 0, "no {k} time: {c}");
        }
        let busy: u64 = want.values().sum();
        let span = u(&c["thread_ns"]);
        let idle = c["categories"][7]["ns"].as_u64().unwrap();
        assert_eq!(c["categories"][7]["category"], "idle");
        assert_eq!(busy + idle, span, "{c}");
        assert_eq!(u(&c["per_thread"][0]["span_ns"]), span);
        if trace == "json" {
            let m = kprof_tests::trace_check::read_json(&dir.join("out"));
            m.assert_valid();
            let series: Vec<&Vec<(u64, f64)>> = m
                .counters
                .iter()
                .filter(|(k, _)| k.starts_with("threads "))
                .map(|(_, v)| v)
                .collect();
            assert_eq!(series.len(), 8, "{:?}", m.counters.keys());
            let points = series[0].len();
            assert!(points > 2, "{points} points");
            for i in 0..points {
                let threads: f64 = series.iter().map(|s| s[i].1).sum();
                assert_eq!(threads, 1.0, "point {i}");
            }
            assert_eq!(
                m.counters["threads kernel"]
                    .iter()
                    .map(|p| p.1)
                    .fold(0.0, f64::max),
                1.0
            );
        }
    }
}
