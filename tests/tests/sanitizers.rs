//! The C harnesses and a real OpenMP program under AddressSanitizer,
//! LeakSanitizer and UndefinedBehaviorSanitizer (`gcc`/`clang -fsanitize=...`), with
//! kprof loaded as each runtime loads it: every heap access and free of the process
//! goes through ASan's allocator, kprof's (Rust) included, so a use after free, a
//! double free, an overflow of a C buffer kprof fills or a leak fails the test. Each
//! run must exit 0 with nothing from a sanitizer on stderr, and its profile must hold
//! what the scenario recorded.

use std::path::{Path, PathBuf};
use std::process::Command;

use kprof_tests::openmp::{have, ompt_lib};
use kprof_tests::{
    clean_cmd, compile, compile_with, compile_with_core, lib, lib_dir, node, nodes, read_profile,
    run, scratch, skip_unless, test_file, u,
};

const SANITIZE: [&str; 4] = [
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
    "-O1",
];

/// `cmd` with the sanitizers' settings: errors exit 1, leaks are checked (with the
/// suppressions of tests/sanitizers/lsan.supp).
fn sanitized(mut cmd: Command, dir: &Path) -> Command {
    let supp = test_file("sanitizers/lsan.supp");
    cmd.current_dir(dir)
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=1")
        .env("LSAN_OPTIONS", format!("suppressions={}", supp.display()))
        .env("UBSAN_OPTIONS", "print_stacktrace=1")
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_TRACE", "perfetto,json");
    cmd
}

/// Runs `cmd`, asserting a clean exit and no sanitizer report.
fn run_clean(cmd: &mut Command) -> String {
    let out = run(cmd);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    for word in [
        "AddressSanitizer",
        "LeakSanitizer",
        "runtime error:",
        "SUMMARY:",
    ] {
        assert!(!err.contains(word), "{word} in:\n{err}");
    }
    assert!(out.status.success(), "status {:?}:\n{err}", out.status);
    err
}

#[test]
fn kokkos_harness_under_asan_and_ubsan() {
    let dir = scratch("sanitize_kokkos");
    let host = compile(
        &[&test_file("harness/kokkos_host.c")],
        &dir.join("kokkos_host"),
        &[&SANITIZE[..], &["-ldl", "-lpthread"]].concat(),
    );
    let tool = lib("libkprof.so");
    for (scenario, n) in [("basic", "50"), ("threads", "500"), ("bad", "1")] {
        let d = dir.join(scenario);
        std::fs::create_dir_all(&d).unwrap();
        let mut cmd = sanitized(clean_cmd(&host), &d);
        cmd.args(["4", scenario, n]).env("KOKKOS_TOOLS_LIBS", &tool);
        run_clean(&mut cmd);
        let p = read_profile(&d.join("out"));
        assert!(!nodes(&p).is_empty(), "{scenario}: an empty profile");
        assert_eq!(u(&p["anomalies"]["internal_errors"]), 0, "{scenario}");
    }
}

#[test]
fn trace_driver_under_asan_and_ubsan() {
    let dir = scratch("sanitize_driver");
    let driver = compile_with_core(
        &[&test_file("harness/trace_driver.c")],
        &dir.join("trace_driver"),
        &[&SANITIZE[..], &["-lpthread"]].concat(),
    );
    let mut cmd = sanitized(clean_cmd(&driver), &dir);
    cmd.arg("flows");
    run_clean(&mut cmd);
    let p = read_profile(&dir.join("out"));
    let all = nodes(&p);
    assert_eq!(u(&node(&all, &["parent", "child"])["count"]), 4);
}

#[test]
fn openmp_loops_under_asan_and_ubsan() {
    if skip_unless(have("clang"), "clang") {
        return;
    }
    let dir = scratch("sanitize_openmp");
    let exe: PathBuf = compile_with(
        "clang",
        &[&test_file("openmp/loops.c")],
        &dir.join("loops"),
        &[&SANITIZE[..], &["-fopenmp"]].concat(),
    );
    let mut cmd = sanitized(clean_cmd(&exe), &dir);
    cmd.env("OMP_TOOL_LIBRARIES", ompt_lib())
        .env("OMP_NUM_THREADS", "2")
        .env("LD_LIBRARY_PATH", lib_dir());
    run_clean(&mut cmd);
    let p = read_profile(&dir.join("out"));
    let loops = nodes(&p)
        .iter()
        .filter(|(_, n)| n["kind"] == "omp_loop")
        .map(|(_, n)| u(&n["count"]))
        .sum::<u64>();
    // 4 constructs x 3 repetitions x 2 threads.
    assert_eq!(loops, 24);
}
