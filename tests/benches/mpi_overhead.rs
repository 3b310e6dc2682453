//! The cost kprof's MPI plugin adds to an MPI call, on 2 ranks of Open MPI over
//! shared memory: `MPI_Irecv` + `MPI_Isend` + `MPI_Waitall` of 8 bytes (3 calls
//! per iteration) and `MPI_Allreduce` of one double (1 call). Variants, interleaved
//! round by round: no tool; the least a PMPI tool can do (a preloaded C wrapper
//! that counts each call in a thread-local counter and forwards,
//! `tests/bench/mpi_count_tool.c`); the least a tool that times each call can do
//! (the same, built with `-DTIME_CALLS`: two TSC reads per call, the clock kprof
//! reads; on this VM a TSC read costs 15-30 ns, most of the target); kprof
//! (`libkprof_mpi.so` preloaded: a node per call, its byte arguments, and a
//! matrix row per message). The program is
//! `tests/bench/mpi_driver.c`; each run checks that kprof counted every call and
//! message. The same two loops also run on 1 rank (messages to itself): no partner
//! to wait for, so the figure is kprof's own cost without the scheduling noise of
//! two busy-polling ranks on a shared machine.
//!
//! A benchmark, not a test: every number is measured in the same run, and the
//! verdict is a difference against the baselines. Run with
//!
//! ```text
//! cargo bench -p kprof-tests --bench mpi_overhead
//! ```
//!
//! Environment: `KPROF_BENCH_SCALE` (default 1: 100,000 iterations per
//! repetition), `KPROF_BENCH_REPS` (default 5), `KPROF_BENCH_ROUNDS` (default 5);
//! `KPROF_BENCH_ENFORCE=1` exits 1 when kprof adds more than the target per call;
//! `KPROF_BENCH_BASELINE_PLUGIN=<path of another build's libkprof_mpi.so>` adds
//! that build as a fifth variant (before/after a change in one run);
//! `KPROF_BENCH_CLOCK=cpu` compares the rank's CPU time per call instead of wall
//! time (on a machine shared with other work: it leaves out the time a rank
//! waited for a core).

use std::path::{Path, PathBuf};

use kprof_tests::bench::{paired_delta, print_rounds, run_for, Settings};
use kprof_tests::openmp::have;
use kprof_tests::{clean_cmd, compile_with, lib, nodes, read_profile, scratch, test_file};

/// ns kprof may add to one MPI call (the issue's target).
const TARGET_NS: f64 = 40.0;

fn main() {
    let Some(s) = Settings::from_env(5) else {
        return;
    };
    if !(have("mpicc") && have("mpirun")) {
        eprintln!("mpi_overhead: needs Open MPI (apt install openmpi-bin libopenmpi-dev)");
        std::process::exit(1);
    }
    let dir = scratch("bench_mpi");
    let inc = format!("-I{}", test_file("bench").display());
    let exe = compile_with(
        "mpicc",
        &[&test_file("bench/mpi_driver.c")],
        &dir.join("mpi_driver"),
        &[&inc],
    );
    let count_tool = compile_with(
        "mpicc",
        &[&test_file("bench/mpi_count_tool.c")],
        &dir.join("libmpi_count_tool.so"),
        &["-shared", "-fPIC"],
    );
    let time_tool = compile_with(
        "mpicc",
        &[&test_file("bench/mpi_count_tool.c")],
        &dir.join("libmpi_time_tool.so"),
        &["-shared", "-fPIC", "-DTIME_CALLS"],
    );
    let plugin = lib("libkprof_mpi.so");
    let key = match std::env::var("KPROF_BENCH_CLOCK").as_deref() {
        Ok("cpu") => "cpu_ns_per_call",
        _ => "ns_per_call",
    };
    let iters = s.scaled(100_000.0, 1000);
    // Another build of the plugin (its own core beside it), compared in the
    // same run: before and after a change, on a machine too noisy for two runs.
    let baseline = std::env::var_os("KPROF_BENCH_BASELINE_PLUGIN").map(PathBuf::from);
    let mut variants: Vec<(&str, Option<&PathBuf>)> = vec![
        ("no tool", None),
        ("PMPI count tool", Some(&count_tool)),
        ("PMPI timing tool", Some(&time_tool)),
        ("kprof", Some(&plugin)),
    ];
    if let Some(b) = &baseline {
        variants.push(("kprof baseline", Some(b)));
    }
    for (ranks, mode, calls_per_iter) in [
        (2, "p2p", 3u64),
        (2, "allreduce", 1),
        (1, "p2p", 3),
        (1, "allreduce", 1),
    ] {
        let mut rows: Vec<(&str, Vec<f64>)> = variants.iter().map(|v| (v.0, Vec::new())).collect();
        for round in 0..s.rounds {
            for (i, &(name, preload)) in variants.iter().enumerate() {
                let out = dir.join(format!("{ranks}-{mode}-{round}-{i}"));
                let mut cmd = clean_cmd(Path::new("mpirun"));
                cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                    .env("KPROF_SUMMARY", "0")
                    // Rank 0's own profile is what `check` reads (the job's
                    // reduction at MPI_Finalize removes it otherwise).
                    .env("KPROF_PER_RANK", "1")
                    .env("KPROF_OUTPUT_DIR", out.join("r%r"))
                    .env("KPROF_JOB_OUTPUT_DIR", out.join("job"))
                    .args(["-np", &ranks.to_string()]);
                if let Some(p) = preload {
                    cmd.arg("-x").arg(format!("LD_PRELOAD={}", p.display()));
                }
                cmd.arg(&exe)
                    .args([mode, &iters.to_string(), &s.reps.to_string()]);
                let label = format!("{mode} on {ranks} rank(s), {name}");
                let ns = run_for(&mut cmd, &label, key);
                if name == "kprof" {
                    check(&out, mode, iters * (s.reps + 1));
                }
                rows[i].1.push(ns);
            }
        }
        println!(
            "mpi_overhead {mode}: {iters} iterations x {calls_per_iter} MPI call(s) per \
             repetition, {ranks} rank(s), shared memory ({key})"
        );
        let raw: Vec<Vec<f64>> = rows.iter().map(|r| r.1.clone()).collect();
        print_rounds("call", "no tool", &mut rows);
        let added = paired_delta(&raw[3], &raw[0]);
        let floor = paired_delta(&raw[1], &raw[0]);
        let timing = paired_delta(&raw[2], &raw[0]);
        let over_timing = paired_delta(&raw[3], &raw[2]);
        println!(
            "  kprof adds {added:+.1} ns per call over no tool (target <= +{TARGET_NS}), \
             {over_timing:+.1} over the timing PMPI tool (which adds {timing:+.1}; the \
             counting one {floor:+.1}); medians of differences paired by round"
        );
        if let Some(b) = raw.get(4) {
            println!(
                "  the baseline build adds {:+.1} ns per call over no tool",
                paired_delta(b, &raw[0])
            );
        }
        if std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1") && added > TARGET_NS {
            eprintln!("mpi_overhead: target missed");
            std::process::exit(1);
        }
    }
}

/// Rank 0's profile holds every call and message of the timed loop exactly (a
/// benchmark that lost events measured less than it claims).
fn check(out: &Path, mode: &str, iterations: u64) {
    let p = read_profile(&out.join("r0"));
    let all = nodes(&p);
    let count = |name: &str| -> u64 {
        all.iter()
            .filter(|(path, n)| path.last().is_some_and(|l| l == name) && n["kind"] == "mpi")
            .map(|(_, n)| n["count"].as_u64().unwrap_or(0))
            .sum()
    };
    let messages: u64 = p["messages"]
        .as_array()
        .map(|m| m.iter().map(|x| x["count"].as_u64().unwrap_or(0)).sum())
        .unwrap_or(0);
    let (got, want) = if mode == "p2p" {
        (
            [
                count("MPI_Irecv"),
                count("MPI_Isend"),
                count("MPI_Waitall"),
                messages,
            ],
            [iterations, iterations, iterations, 2 * iterations],
        )
    } else {
        (
            [count("MPI_Allreduce"), 0, 0, messages],
            [iterations, 0, 0, 0],
        )
    };
    if got != want {
        eprintln!(
            "mpi_overhead: {}: counted {got:?} (Irecv, Isend, Waitall, messages), want {want:?}",
            out.display()
        );
        std::process::exit(1);
    }
}
