//! Throughput and memory of kprof's OTF2 writer (`KPROF_TRACE=otf2`).
//!
//! `tests/harness/trace_driver.c bench N` runs N kernels (begin/end of a
//! `parallel_for`, no work in between) on one thread through `libkprof_core.so`, then
//! finalizes and prints its wall time, process CPU time (all threads, kprof's writer
//! included) and peak RSS. Each kernel is an ENTER and a LEAVE in the archive, so
//! N = 5M is a 10M-event run. Variants per size:
//!
//! - `profile`: kprof without a trace (the baseline: the writer's cost without OTF2);
//! - `otf2`: `KPROF_TRACE=otf2`.
//!
//! Printed: events in the archive (the location's event count from `otf2-print -G`),
//! events per second = events / (CPU time of the otf2 run - CPU time of the profile
//! run), i.e. the extra process CPU OTF2 costs, and the peak RSS of both runs.
//! Bounded memory means the RSS growth over `profile` stays the same from 1M to 10M
//! events (OTF2's event buffers are capped and flushed to their files); target:
//! growth <= 16 MiB at every size, and at most 4 MiB more at 10M than at 1M events.
//!
//! Environment: `KPROF_BENCH_SCALE` (default 1): runs `SCALE` x 5M kernels as the
//! large size; `KPROF_BENCH_ENFORCE=1`: exit 1 when a target is missed. Skipped (exit
//! 0, a line says so) without otf2-tools.

use std::path::Path;
use std::process::Command;

use kprof_tests::bench::{trace_driver, trace_driver_cmd, DriverCost};
use kprof_tests::{assert_ok, scratch};

/// Large enough that the 10M-event run drops nothing (a tight loop outruns the
/// writer); the same in both variants, so RSS growth is the OTF2 writer's.
const BUFFER_MB: u64 = 1024;

struct RunResult {
    cost: DriverCost,
    /// Events in the archive, from its definitions.
    events: u64,
    archive_bytes: u64,
}

fn dir_bytes(p: &Path) -> u64 {
    std::fs::read_dir(p)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// Sum of `# Events` over the archive's LOCATION definitions.
fn archive_events(anchor: &Path) -> u64 {
    let out = Command::new("otf2-print")
        .arg("-G")
        .arg(anchor)
        .output()
        .expect("run otf2-print");
    assert_ok(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("LOCATION "))
        .filter_map(|l| {
            l.split_once("# Events: ")?
                .1
                .split(',')
                .next()?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .sum()
}

fn run_variant(exe: &Path, n: u64, variant: &str) -> RunResult {
    let dir = scratch(&format!("otf2_write_{variant}_{n}"));
    let out_dir = dir.join("out");
    let mut cmd = trace_driver_cmd(exe, n, &out_dir, BUFFER_MB);
    if variant == "otf2" {
        cmd.env("KPROF_TRACE", "otf2");
    }
    let out = cmd.output().expect("run trace_driver");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let (events, archive_bytes) = if variant == "otf2" {
        let anchor = out_dir.join("otf2/traces.otf2");
        assert!(
            anchor.is_file(),
            "no OTF2 archive; kprof said:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bytes = dir_bytes(&out_dir.join("otf2"));
        let events = archive_events(&anchor);
        // The archive is large: keep the disk free for the next run.
        let _ = std::fs::remove_dir_all(out_dir.join("otf2"));
        (events, bytes)
    } else {
        (0, 0)
    };
    RunResult {
        cost: DriverCost::parse(&text),
        events,
        archive_bytes,
    }
}

fn main() {
    let available = Command::new("otf2-print")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !available {
        println!("otf2_write: SKIP, otf2-tools (and the OTF2 library) are not installed");
        return;
    }
    let scale: f64 = std::env::var("KPROF_BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0_f64)
        .max(0.2);
    let enforce = std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1");
    let exe = trace_driver("otf2_write_bin");
    let sizes = [500_000u64, (scale * 5_000_000.0).round() as u64];
    println!(
        "otf2_write: N kernels (2N events) on one thread through libkprof_core.so \
         (tests/harness/trace_driver.c), KPROF_BUFFER_MB={BUFFER_MB}"
    );
    println!(
        "  events/s = events in the archive / (process CPU with otf2 - process CPU of \
         kprof without a trace); RSS growth over the profile-only run"
    );
    let mut growth = Vec::new();
    let mut missed = Vec::new();
    for &n in &sizes {
        println!("== N = {n} kernels ({} events)", 2 * n);
        let profile = run_variant(&exe, n, "profile");
        let r = run_variant(&exe, n, "otf2");
        println!(
            "  {:<8} wall {:>8.1} ms  cpu {:>8.1} ms  maxrss {:>7.1} MiB",
            "profile",
            profile.cost.wall_ns / 1e6,
            profile.cost.cpu_ns / 1e6,
            profile.cost.maxrss_kib / 1024.0
        );
        let extra_cpu = r.cost.cpu_ns - profile.cost.cpu_ns;
        let rate = if extra_cpu > 0.0 {
            format!("{:.1} M events/s", r.events as f64 / extra_cpu * 1e3)
        } else {
            "n/a (no measurable extra CPU)".into()
        };
        let g = (r.cost.maxrss_kib - profile.cost.maxrss_kib) / 1024.0;
        println!(
            "  {:<8} wall {:>8.1} ms  cpu {:>8.1} ms  maxrss {:>7.1} MiB (+{g:.1} MiB)  \
             {} events in the archive ({:.1} bytes/event)  writer {rate}",
            "otf2",
            r.cost.wall_ns / 1e6,
            r.cost.cpu_ns / 1e6,
            r.cost.maxrss_kib / 1024.0,
            r.events,
            r.archive_bytes as f64 / r.events.max(1) as f64,
        );
        if r.events == 0 || r.events > 2 * n + 2 {
            missed.push(format!("{} events in the archive for N={n}", r.events));
        }
        if g > 16.0 {
            missed.push(format!("RSS growth {g:.1} MiB > 16 MiB at N={n}"));
        }
        growth.push(g);
    }
    if let [small, large] = growth[..] {
        println!(
            "RSS growth over profile-only: {small:.1} MiB at 1M events, {large:.1} MiB at {} events",
            sizes[1] * 2
        );
        if large - small > 4.0 {
            missed.push(format!(
                "RSS grows with the run: {small:.1} -> {large:.1} MiB"
            ));
        }
    }
    println!("targets: RSS growth <= 16 MiB, and <= 4 MiB more at 10M than at 1M events");
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
