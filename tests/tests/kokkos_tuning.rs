//! kprof's tuner behind the Kokkos tuning interface (`KPROF_TUNE=1`): the header's
//! tuning types against real Kokkos' own, a problem whose best value is known by
//! construction (`tune_known` of `tests/harness/kokkos_host.c`, which loads the
//! plugin exactly as Kokkos does), the tuning cache, misuses of the interface, and
//! real Kokkos 3.4.01 (built with `Kokkos_ENABLE_TUNING`) tuning a TeamPolicy's team
//! size, checked by an independent tool chained after kprof
//! (`tests/harness/tuning_probe.c`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kprof_tests::{
    assert_ok, build_kokkos_hosts, clean_cmd, compile, lib, read_profile, run, scratch,
    skip_unless, test_file, u, workspace_root,
};
use serde_json::Value;

/// Contexts within which `tune_known` must have converged to its best value: an
/// exhaustive race of 8 values takes two rounds of 8 measurements (16) on a quiet
/// machine, a round more where preempted measurements leave a value unconfirmed;
/// this leaves room for four more rounds.
const CONVERGED_WITHIN: usize = 48;

/// What `tune_known` spins for block size `b`, ns (its header: 20 us at the best,
/// 4).
fn block_cost_ns(b: i64) -> f64 {
    let x = (b as f64).log2() - 2.0;
    20_000.0 * (1.0 + 4.0 * x * x)
}

/// The regret of a run: the sum over its contexts of the time lost to a value
/// other than the best, by construction (ns).
fn regret_ns(blocks: &[i64]) -> f64 {
    blocks
        .iter()
        .map(|&b| block_cost_ns(b) - block_cost_ns(4))
        .sum()
}

fn host() -> &'static PathBuf {
    static HOST: OnceLock<PathBuf> = OnceLock::new();
    HOST.get_or_init(|| build_kokkos_hosts(&scratch("kokkos_tuning_bin")).0)
}

fn kprof_lib() -> PathBuf {
    let l = lib("libkprof.so");
    assert!(l.is_file(), "{} was not built", l.display());
    l
}

/// `kokkos_host 4 <scenario> [n]` with kprof as the tool and `KPROF_TUNE=1`,
/// writing to `dir/<out>`.
fn tune_cmd(dir: &Path, out: &str, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(host());
    cmd.current_dir(dir)
        .args(["4"])
        .args(args)
        .env("KOKKOS_TOOLS_LIBS", kprof_lib())
        .env("KPROF_OUTPUT_DIR", dir.join(out))
        .env("KPROF_TUNE", "1");
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

/// The block sizes `tune_known` printed, one per context.
fn blocks(out: &Output) -> Vec<i64> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            l.strip_prefix("block=")
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("unexpected line {l:?}"))
        })
        .collect()
}

/// The profile's tuning block.
fn tuning(dir: &Path) -> Value {
    let p = read_profile(dir);
    p["extensions"]["tuning"].clone()
}

fn misuses(t: &Value) -> BTreeMap<String, u64> {
    t["misuses"]
        .as_object()
        .expect("misuses")
        .iter()
        .map(|(k, v)| (k.clone(), u(v)))
        .collect()
}

/// The header's tuning types have the layout of real Kokkos' own: the same
/// program prints sizes, offsets and enum values against Kokkos 3.4.01's
/// `Kokkos_Profiling_C_Interface.h` and against `ffi-headers/kokkosp.h`.
#[test]
fn tuning_types_match_real_kokkos() {
    let Some(install) = kokkos_install() else {
        return;
    };
    let dir = scratch("kokkos_tuning_layout");
    let src = dir.join("layout.c");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#include <stdalign.h>
#ifdef REAL_KOKKOS
#include <impl/Kokkos_Profiling_C_Interface.h>
#define UNION union Kokkos_Tools_VariableValue_ValueUnion
#define UNION_SET union Kokkos_Tools_VariableValue_ValueUnionSet
#define SET struct Kokkos_Tools_ValueSet
#define RANGE struct Kokkos_Tools_ValueRange
#define SET_OR_RANGE union Kokkos_Tools_VariableInfo_SetOrRange
#define INFO struct Kokkos_Tools_VariableInfo
#define VALUE struct Kokkos_Tools_VariableValue
#define GOAL struct Kokkos_Tools_OptimzationGoal
#else
#include "kokkosp.h"
#define UNION Kokkos_Tools_VariableInfo_ValueUnion
#define UNION_SET Kokkos_Tools_VariableInfo_ValueUnionSet
#define SET Kokkos_Tools_ValueSet
#define RANGE Kokkos_Tools_ValueRange
#define SET_OR_RANGE Kokkos_Tools_VariableInfo_SetOrRange
#define INFO Kokkos_Tools_VariableInfo
#define VALUE Kokkos_Tools_VariableValue
#define GOAL Kokkos_Tools_OptimizationGoal
#endif
#define S(t) printf(#t " size %zu align %zu\n", sizeof(t), alignof(t))
#define O(t, f) printf(#t "." #f " offset %zu\n", offsetof(t, f))
int main(void) {
  S(UNION); S(UNION_SET); S(SET); S(RANGE); S(SET_OR_RANGE); S(INFO); S(VALUE); S(GOAL);
  O(UNION, double_value); O(UNION, string_value); O(SET, values);
  O(RANGE, lower); O(RANGE, upper); O(RANGE, step); O(RANGE, openLower); O(RANGE, openUpper);
  O(SET_OR_RANGE, range.step); O(INFO, type); O(INFO, category); O(INFO, valueQuantity);
  O(INFO, candidates); O(INFO, candidates.set.values); O(INFO, toolProvidedInfo);
  O(VALUE, type_id); O(VALUE, value); O(VALUE, metadata); O(GOAL, type_id); O(GOAL, goal);
  printf("enum size %zu %zu %zu %zu\n", sizeof(enum Kokkos_Tools_VariableInfo_ValueType),
         sizeof(enum Kokkos_Tools_VariableInfo_StatisticalCategory),
         sizeof(enum Kokkos_Tools_VariableInfo_CandidateValueType),
         sizeof(enum Kokkos_Tools_OptimizationType));
  printf("values %d %d %d | %d %d %d %d | %d %d %d | %d %d\n", kokkos_value_double,
         kokkos_value_int64, kokkos_value_string, kokkos_value_categorical,
         kokkos_value_ordinal, kokkos_value_interval, kokkos_value_ratio, kokkos_value_set,
         kokkos_value_range, kokkos_value_unbounded, Kokkos_Tools_Minimize,
         Kokkos_Tools_Maximize);
  return 0;
}
"#,
    )
    .unwrap();
    let include = install.join("include");
    let real = compile(
        &[&src],
        &dir.join("layout_real"),
        &[
            "-DREAL_KOKKOS",
            "-isystem",
            include.to_str().expect("UTF-8 path"),
        ],
    );
    let ours = compile(&[&src], &dir.join("layout_ours"), &[]);
    let text = |exe: PathBuf| String::from_utf8(run_ok(&mut Command::new(exe)).stdout).unwrap();
    let (real, ours) = (text(real), text(ours));
    assert!(real.contains("INFO size 224 align 8"), "{real}");
    assert_eq!(ours, real, "kokkosp.h differs from Kokkos' own header");
}

/// Converges within [`CONVERGED_WITHIN`] contexts to the known best value (4;
/// the default 16 first), exploits it, with no more regret than a naive grid (each
/// value 3 times, then the best), reports the search; the next run with the
/// cache starts at the best; a corrupt cache is reported in one line and ignored
/// (the run tunes afresh and rewrites it).
#[test]
fn known_best_value_is_found_cached_and_survives_a_corrupt_cache() {
    let dir = scratch("kokkos_tuning_known");
    let cache = dir.join("tuning-cache.json");
    let out =
        run_ok(tune_cmd(&dir, "run1", &["tune_known", "120"]).env("KPROF_TUNING_CACHE", &cache));
    let b = blocks(&out);
    assert_eq!(b.len(), 120);
    assert_eq!(b[0], 16, "the default is the starting point: {b:?}");
    assert!(
        b[CONVERGED_WITHIN..].iter().all(|&x| x == 4),
        "not converged to 4 within {CONVERGED_WITHIN} contexts: {b:?}"
    );
    let mut tried: Vec<i64> = b[..CONVERGED_WITHIN].to_vec();
    tried.sort_unstable();
    tried.dedup();
    assert_eq!(tried, vec![1, 2, 4, 8, 16, 32, 64, 128], "exhaustive");
    // The grid's regret over as many contexts: 3 measurements of each value.
    let grid = 3.0 * regret_ns(&[1, 2, 4, 8, 16, 32, 64, 128]);
    let regret = regret_ns(&b);
    assert!(
        regret <= grid,
        "regret {regret} ns above the grid's {grid}: {b:?}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("block [kernel_name=stencil]: 4 (default 16)"),
        "summary:\n{err}"
    );

    // kprof report shows the same tuning block as the exit summary.
    let report = run_ok(
        Command::new(lib("kprof"))
            .arg("report")
            .arg(dir.join("run1")),
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("block [kernel_name=stencil]: 4 (default 16)"),
        "report:\n{text}"
    );

    let t = tuning(&dir.join("run1"));
    assert_eq!(u(&t["contexts"]), 120);
    let problems = t["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 1, "{t}");
    let p = &problems[0];
    assert_eq!(p["variables"][0]["name"], "block");
    assert_eq!(p["variables"][0]["type"], "int64");
    assert_eq!(
        p["variables"][0]["candidates"]["set"],
        serde_json::json!([1, 2, 4, 8, 16, 32, 64, 128])
    );
    assert_eq!(p["inputs"]["kernel_name"], "stencil");
    assert_eq!(p["default"], serde_json::json!([16]));
    assert_eq!(p["chosen"], serde_json::json!([4]));
    assert_eq!(p["strategy"], "exhaustive");
    assert_eq!(p["converged"], true);
    // Every value measured twice at least; the best from then on.
    let searched = u(&p["search_contexts"]) as usize;
    assert!((16..=CONVERGED_WITHIN).contains(&searched), "{p}");
    assert!(b[searched..].iter().all(|&x| x == 4), "{searched}: {b:?}");
    assert_eq!(u(&p["contexts"]), 120);
    assert_eq!(p["tried"].as_array().map(Vec::len), Some(8));
    // 20 us against 340 us by construction: 94% saved, give or take noise
    // (the best's lowest time twice as long, or the default's half, still saves
    // 75%).
    let gain = p["gain"].as_f64().expect("gain");
    assert!((0.75..1.0).contains(&gain), "gain {gain}");
    assert!(misuses(&t).values().all(|&n| n == 0), "{t}");
    let cached: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(
        cached["problems"]["block | kernel_name=stencil"]["best"],
        serde_json::json!([4])
    );

    // The second run starts at the best.
    let out =
        run_ok(tune_cmd(&dir, "run2", &["tune_known", "10"]).env("KPROF_TUNING_CACHE", &cache));
    assert_eq!(blocks(&out), vec![4; 10], "stderr:\n{}", stderr(&out));
    let p = &tuning(&dir.join("run2"))["problems"][0];
    assert_eq!(p["strategy"], "cached");
    assert_eq!(u(&p["search_contexts"]), 0);
    assert!(p["gain"].as_f64().is_some_and(|g| g > 0.4), "{p}");

    // A corrupt cache: one line, then tuning as without a cache.
    std::fs::write(
        &cache,
        "{\"format\": \"kprof tuning cache 1\", \"problems\": {\"blo",
    )
    .unwrap();
    let out =
        run_ok(tune_cmd(&dir, "run3", &["tune_known", "60"]).env("KPROF_TUNING_CACHE", &cache));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("tuning cache")).collect();
    assert_eq!(lines.len(), 1, "stderr:\n{err}");
    assert!(
        lines[0].contains("is corrupt") && lines[0].contains("ignored"),
        "{}",
        lines[0]
    );
    let b = blocks(&out);
    assert_eq!(b[0], 16);
    assert!(b[CONVERGED_WITHIN..].iter().all(|&x| x == 4), "{b:?}");
    let rewritten: Value = serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(
        rewritten["problems"]["block | kernel_name=stencil"]["best"],
        serde_json::json!([4])
    );

    // A cache of another program: one line, ignored.
    let mut other = rewritten.clone();
    other["program"] = Value::from("/some/other/program");
    std::fs::write(&cache, other.to_string()).unwrap();
    let out =
        run_ok(tune_cmd(&dir, "run4", &["tune_known", "4"]).env("KPROF_TUNING_CACHE", &cache));
    let err = stderr(&out);
    assert!(
        err.lines()
            .filter(|l| l.contains("tuning cache"))
            .eq([format!(
                "kprof: the tuning cache {} is for /some/other/program on {}; ignored",
                cache.display(),
                rewritten["host"].as_str().unwrap()
            )]
            .iter()),
        "stderr:\n{err}"
    );
    assert_eq!(blocks(&out)[0], 16);
}

/// Without `KPROF_TUNE` kprof exports no tuning symbol (Kokkos keeps its
/// defaults) and writes no tuning block.
#[test]
fn tuning_is_off_by_default() {
    let dir = scratch("kokkos_tuning_off");
    let mut cmd = tune_cmd(&dir, "out", &["tune_known", "5"]);
    cmd.env_remove("KPROF_TUNE");
    let out = run_ok(&mut cmd);
    assert_eq!(blocks(&out), vec![16; 5]);
    let p = read_profile(&dir.join("out"));
    assert!(p.get("extensions").is_none(), "{}", p["extensions"]);
    let mut cmd = tune_cmd(&dir, "bad", &["tune_known", "3"]);
    cmd.env("KPROF_TUNE", "maybe");
    let out = run_ok(&mut cmd);
    assert_eq!(blocks(&out), vec![16; 3]);
    assert!(
        stderr(&out).contains("KPROF_TUNE=maybe is invalid (1 or 0); using 0 (no tuning)"),
        "{}",
        stderr(&out)
    );
}

/// Every misuse of `tune_misuse` is counted, by kind and as core anomalies; the
/// program runs on.
#[test]
fn misuses_are_counted_never_fatal() {
    let dir = scratch("kokkos_tuning_misuse");
    let out = run_ok(&mut tune_cmd(&dir, "out", &["tune_misuse"]));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "survived=1\n");
    let t = tuning(&dir.join("out"));
    let m = misuses(&t);
    let want: BTreeMap<String, u64> = [
        ("bad_declarations", 3),
        ("unknown_variables", 3),
        ("values_outside_set", 1),
        ("unmatched_ends", 2),
        ("begun_twice", 1),
        ("never_ended", 1),
        ("too_many_problems", 0),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(m, want, "{t}");
    let p = read_profile(&dir.join("out"));
    assert_eq!(
        u(&p["anomalies"]["tuning_misuses"]),
        11,
        "{}",
        p["anomalies"]
    );
    // The out-of-set default (3) started at the nearest declared value.
    assert_eq!(t["problems"][0]["default"], serde_json::json!([3]));
}

/// `$KPROF_DEPS_DIR` (default `target/deps`), as tests/tests/kokkos_real.rs.
fn deps_dir() -> PathBuf {
    match std::env::var_os("KPROF_DEPS_DIR") {
        Some(d) if !d.is_empty() => workspace_root().join(d),
        _ => workspace_root().join("target").join("deps"),
    }
}

/// The Kokkos 3.4.01 install of tests/scripts/build-kokkos.sh, built with the
/// tuning interface.
fn kokkos_install() -> Option<PathBuf> {
    let install = deps_dir().join("kokkos-3.4.01").join("install");
    let config = install.join("include").join("KokkosCore_config.h");
    let tuning =
        std::fs::read_to_string(&config).is_ok_and(|c| c.contains("#define KOKKOS_ENABLE_TUNING"));
    if skip_unless(
        tuning,
        "real Kokkos built with Kokkos_ENABLE_TUNING (run tests/scripts/build-kokkos.sh)",
    ) {
        return None;
    }
    Some(install)
}

fn probe_counts(path: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the probe wrote no {}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().parse().unwrap()))
        .collect()
}

/// Real Kokkos 3.4.01 tuning the team size of `tests/kokkos/team_tuning.cpp`'s
/// TeamPolicy (KOKKOS_TUNE_INTERNALS=1) with kprof's tuner: the same result as
/// without a tool; every context Kokkos begins is seen; every value kprof answers
/// is within the declared candidates (checked by the probe chained after kprof,
/// which sees kprof's answers); the team kernel's problem is searched and reported.
#[test]
fn real_kokkos_team_size_is_tuned() {
    let Some(install) = kokkos_install() else {
        return;
    };
    let dir = scratch("kokkos_tuning_real");
    let include = install.join("include");
    let exe = compile(
        &[&test_file("kokkos/team_tuning.cpp")],
        &dir.join("team_tuning"),
        &[
            "-std=c++14",
            "-fopenmp",
            "-isystem",
            include.to_str().expect("UTF-8 path"),
            install
                .join("lib")
                .join("libkokkoscontainers.a")
                .to_str()
                .unwrap(),
            install
                .join("lib")
                .join("libkokkoscore.a")
                .to_str()
                .unwrap(),
            "-ldl",
        ],
    );
    let probe = compile(
        &[&test_file("harness/tuning_probe.c")],
        &dir.join("libtuning_probe.so"),
        &["-shared", "-fPIC", "-lm"],
    );
    let base = |cmd: &mut Command| {
        cmd.current_dir(&dir)
            .env("OMP_NUM_THREADS", "2")
            .env("OMP_PROC_BIND", "false")
            .env_remove("OMP_PLACES")
            .stdin(Stdio::null());
    };
    let mut plain = clean_cmd(&exe);
    base(&mut plain);
    let expected = String::from_utf8(run_ok(&mut plain).stdout).unwrap();
    assert!(expected.starts_with("sum="), "{expected}");

    let counts = dir.join("probe.txt");
    let mut tuned = clean_cmd(&exe);
    base(&mut tuned);
    tuned
        .env("KOKKOS_TUNE_INTERNALS", "1")
        .env(
            "KOKKOS_PROFILE_LIBRARY",
            format!("{};{}", kprof_lib().display(), probe.display()),
        )
        .env("TUNING_PROBE_OUT", &counts)
        .env("KPROF_TUNE", "1")
        .env("KPROF_OUTPUT_DIR", dir.join("out"));
    let out = run_ok(&mut tuned);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        expected,
        "same results"
    );
    let c = probe_counts(&counts);
    let t = tuning(&dir.join("out"));
    // Kokkos' team tuner declares <kernel>_vector_length and <kernel>_team_size.
    assert!(c["outputs_declared"] >= 2, "{c:?}");
    assert!(c["requests"] >= 300, "one per team kernel at least: {c:?}");
    assert_eq!(
        c["values"], c["in_set"],
        "values outside the declared sets: {c:?}"
    );
    assert_eq!(c["undeclared"], 0, "{c:?}");
    assert_eq!(u(&t["contexts"]), c["begin_contexts"], "contexts seen: {t}");
    assert!(c["distinct"] > 2, "kprof searched: {c:?}");
    let team = t["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .find(|p| p["inputs"]["kokkos.kernel_name"] == "team_rows")
        .unwrap_or_else(|| panic!("no team_rows problem: {t}"));
    let names: Vec<&str> = team["variables"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(names, ["team_rows_vector_length", "team_rows_team_size"]);
    assert_eq!(u(&team["contexts"]), 300);
    assert!(u(&team["search_contexts"]) > 0, "{team}");
    assert!(
        team["tried"].as_array().is_some_and(|t| t.len() > 2),
        "{team}"
    );
    assert!(
        stderr(&out)
            .contains("team_rows_vector_length, team_rows_team_size [kokkos.kernel_name=team_rows"),
        "summary:\n{}",
        stderr(&out)
    );
}

/// With `KPROF_TUNE=1` a tuning tool chained after kprof still gets every tuning
/// call with Kokkos' arguments, and kprof's choice (the default, first) before it:
/// its own answer wins, and kprof does not measure that context.
#[test]
fn tuning_calls_reach_the_chained_tool_with_kprof_tuning() {
    let dir = scratch("kokkos_tuning_chain");
    let second = compile(
        &[&test_file("harness/second_tool.c")],
        &dir.join("libsecond_tool.so"),
        &["-shared", "-fPIC"],
    );
    let counts = dir.join("second.txt");
    let mut cmd = tune_cmd(&dir, "out", &["tuning"]);
    cmd.env(
        "KOKKOS_TOOLS_LIBS",
        format!("{};{}", kprof_lib().display(), second.display()),
    )
    .env("SECOND_TOOL_OUT", &counts);
    let out = run_ok(&mut cmd);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "have_tuning_tool=1\ntuned=64\n",
        "stderr:\n{}",
        stderr(&out)
    );
    let text = std::fs::read_to_string(&counts).expect("the second tool's counts");
    for want in [
        "declare_output_type=1",
        "declare_input_type=1",
        "begin_context=1",
        "declare_optimization_goal=1",
        "request_values=1",
        "end_context=1",
        "tuning_mismatches=0",
    ] {
        assert!(text.lines().any(|l| l == want), "{want} in:\n{text}");
    }
    let t = tuning(&dir.join("out"));
    let p = &t["problems"][0];
    assert_eq!(p["variables"][0]["name"], "team_size");
    assert_eq!(u(&p["overridden_by_next_tool"]), 1, "{t}");
    assert_eq!(u(&p["search_contexts"]), 0, "{t}");
    // The scenario's goal names variable 3, never declared: counted, and the
    // context's duration stays the objective.
    assert_eq!(p["objective"], "duration", "{t}");
    assert_eq!(misuses(&t)["unknown_variables"], 1, "{t}");
}
