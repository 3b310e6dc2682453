//! Size, writer throughput and memory of kprof's timeline traces.
//!
//! `tests/harness/trace_driver.c bench N` runs N kernels (begin/end pairs of a
//! `parallel_for` on device OpenMP/0/1, no work in between) on one thread through
//! `libkprof_core.so`'s plugin table, then finalizes and prints its wall time,
//! process CPU time (all threads, kprof's writer included) and peak RSS
//! (`getrusage` `ru_maxrss`). Variants per size:
//!
//! - `off`: `KPROF_ENABLE=0` (the baseline for RSS);
//! - `profile`: kprof without a trace (the baseline for the writer's cost);
//! - `perfetto`: `KPROF_TRACE=perfetto`; `json`: `KPROF_TRACE=json`.
//!
//! Printed per trace format: bytes per slice (file size / N), writer throughput in
//! slices per second = N / (CPU time of the traced run - CPU time of the `profile`
//! run), i.e. the extra process CPU the trace costs, and RSS growth over `off`.
//! Targets: Perfetto <= 12 bytes/slice; RSS growth <= KPROF_BUFFER_MB + 16 MiB.
//!
//! Environment: `KPROF_BENCH_SCALE` (default 1): also runs `SCALE` million kernels
//! when > 1; `KPROF_BENCH_ENFORCE=1`: exit 1 when a target is missed.

use std::path::Path;

use kprof_tests::bench::{trace_driver, trace_driver_cmd, DriverCost};
use kprof_tests::{assert_ok, nodes, read_profile, scratch};

const BUFFER_MB: u64 = 64;

struct RunResult {
    cost: DriverCost,
    trace_bytes: Option<u64>,
    dropped: u64,
    kernels_in_profile: u64,
}

fn run_variant(exe: &Path, n: u64, variant: &str) -> RunResult {
    let dir = scratch(&format!("trace_size_{variant}_{n}"));
    let out_dir = dir.join("out");
    let mut cmd = trace_driver_cmd(exe, n, &out_dir, BUFFER_MB);
    match variant {
        "off" => {
            cmd.env("KPROF_ENABLE", "0");
        }
        "perfetto" | "json" => {
            cmd.env("KPROF_TRACE", variant);
        }
        _ => {}
    }
    let out = cmd.output().expect("run trace_driver");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let (dropped, kernels) = if variant == "off" {
        (0, n)
    } else {
        let p = read_profile(&out_dir);
        let count = nodes(&p)
            .iter()
            .filter(|(path, _)| path.len() == 1 && path[0] == "bench_kernel")
            .map(|(_, node)| node["count"].as_u64().unwrap_or(0))
            .sum();
        (p["dropped_records"].as_u64().unwrap_or(0), count)
    };
    let trace_bytes = match variant {
        "perfetto" => std::fs::metadata(out_dir.join("trace.pftrace")).ok(),
        "json" => std::fs::metadata(out_dir.join("trace.json")).ok(),
        _ => None,
    }
    .map(|m| m.len());
    RunResult {
        cost: DriverCost::parse(&text),
        trace_bytes,
        dropped,
        kernels_in_profile: kernels,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let scale: f64 = std::env::var("KPROF_BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let enforce = std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1");
    let exe = trace_driver("trace_size_bin");
    let mut sizes = vec![1_000_000u64];
    if scale > 1.0 {
        sizes.push((scale * 1_000_000.0).round() as u64);
    }
    let mut missed = Vec::new();
    println!(
        "trace_size: N kernels on one thread through libkprof_core.so (tests/harness/trace_driver.c), \
         KPROF_BUFFER_MB={BUFFER_MB}"
    );
    println!(
        "  throughput = N / (process CPU time with the trace - process CPU time of kprof \
         without a trace); RSS growth over KPROF_ENABLE=0"
    );
    for &n in &sizes {
        println!("== N = {n}");
        let off = run_variant(&exe, n, "off");
        let profile = run_variant(&exe, n, "profile");
        println!(
            "  {:<9} wall {:>8.1} ms  cpu {:>8.1} ms  maxrss {:>8.1} MiB",
            "off",
            off.cost.wall_ns / 1e6,
            off.cost.cpu_ns / 1e6,
            off.cost.maxrss_kib / 1024.0
        );
        println!(
            "  {:<9} wall {:>8.1} ms  cpu {:>8.1} ms  maxrss {:>8.1} MiB  (+{:.1} MiB)  dropped {}",
            "profile",
            profile.cost.wall_ns / 1e6,
            profile.cost.cpu_ns / 1e6,
            profile.cost.maxrss_kib / 1024.0,
            (profile.cost.maxrss_kib - off.cost.maxrss_kib) / 1024.0,
            profile.dropped
        );
        for fmt in ["perfetto", "json"] {
            let r = run_variant(&exe, n, fmt);
            let Some(bytes) = r.trace_bytes else {
                println!("  {fmt:<9} NO TRACE FILE written");
                missed.push(format!("{fmt}: no trace file at N={n}"));
                continue;
            };
            // Per slice actually in the trace (the kernels the profile counted too).
            let per_slice = bytes as f64 / r.kernels_in_profile.max(1) as f64;
            let extra_cpu = r.cost.cpu_ns - profile.cost.cpu_ns;
            let throughput = if extra_cpu > 0.0 {
                format!("{:.1} M slices/s", n as f64 / extra_cpu * 1e3)
            } else {
                "n/a (no measurable extra CPU)".into()
            };
            let growth_mib = (r.cost.maxrss_kib - off.cost.maxrss_kib) / 1024.0;
            println!(
                "  {fmt:<9} wall {:>8.1} ms  cpu {:>8.1} ms  maxrss {:>8.1} MiB  (+{growth_mib:.1} MiB)  \
                 {bytes} bytes = {per_slice:.2} bytes/slice  writer {throughput}  dropped {}  \
                 kernels in profile {}",
                r.cost.wall_ns / 1e6,
                r.cost.cpu_ns / 1e6,
                r.cost.maxrss_kib / 1024.0,
                r.dropped,
                r.kernels_in_profile
            );
            if fmt == "perfetto" && per_slice > 12.0 {
                missed.push(format!("perfetto {per_slice:.2} bytes/slice > 12 at N={n}"));
            }
            let limit = (BUFFER_MB + 16) as f64;
            if growth_mib > limit {
                missed.push(format!(
                    "{fmt}: RSS growth {growth_mib:.1} MiB > KPROF_BUFFER_MB + 16 = {limit} MiB at N={n}"
                ));
            }
            // A tight loop may outrun the writer; then events are dropped within the
            // budget, by design. What must hold is the accounting: every kernel
            // missing from the profile lost its begin, its end or both.
            let missing = n.saturating_sub(r.kernels_in_profile);
            if r.kernels_in_profile > n || missing > r.dropped || r.dropped > 2 * missing {
                missed.push(format!(
                    "{fmt}: {} events dropped but {missing} of {n} kernels missing from the profile",
                    r.dropped
                ));
            }
        }
    }
    println!(
        "targets: perfetto <= 12 bytes/slice; RSS growth <= KPROF_BUFFER_MB + 16 MiB = {} MiB",
        BUFFER_MB + 16
    );
    if missed.is_empty() {
        println!("all targets met");
    } else {
        for m in &missed {
            println!("MISSED: {m}");
        }
        if enforce {
            std::process::exit(1);
        }
    }
}
