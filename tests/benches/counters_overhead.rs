//! The cost of PAPI counters on a region begin/end pair (`KPROF_COUNTERS`): kprof
//! with 2 and 4 events against the same pair without counters, and against a
//! minimal C tool that calls `PAPI_read` at begin and end with the same events and
//! keeps per-region totals (the least a counting tool can do). The events are PAPI
//! software-defined events (SDE) the driver registers, read through PAPI's normal
//! path, so that the benchmark runs where there is no hardware PMU; a hardware
//! event's `PAPI_read` costs what it costs for both tools alike.
//!
//! A benchmark, not a test: every number is measured in the same run, and the
//! verdict is a ratio. Run with
//!
//! ```text
//! cargo bench -p kprof-tests --bench counters_overhead
//! ```
//!
//! Environment: `KPROF_BENCH_SCALE` (default 1: 200,000 pairs per repetition),
//! `KPROF_BENCH_REPS` (default 7), `KPROF_BENCH_ROUNDS` (default 5: the variants
//! interleaved round by round); `KPROF_BENCH_ENFORCE=1` exits 1 when kprof with
//! counters costs more than 1.2x the C tool with the same events. The driver is
//! `tests/bench/counters_driver.c`.

use std::path::Path;

use kprof_tests::bench::{best, median, paired_delta, print_rounds, run_for, Settings};
use kprof_tests::{clean_cmd, compile_with_core, nodes, read_profile, scratch, test_file};

/// kprof with counters must cost at most this many times the C tool.
const TARGET_RATIO: f64 = 1.2;

fn main() {
    let Some(s) = Settings::from_env(5) else {
        return;
    };
    if !Path::new("/usr/include/sde_lib.h").exists() {
        eprintln!("counters_overhead: needs PAPI's development files (apt install libpapi-dev)");
        std::process::exit(1);
    }
    let dir = scratch("bench_counters");
    let inc = format!("-I{}", test_file("bench").display());
    let exe = compile_with_core(
        &[&test_file("bench/counters_driver.c")],
        &dir.join("counters_driver"),
        &[&inc, "-lpapi", "-lsde"],
    );
    let pairs = s.scaled(200_000.0, 1000);
    let reps = s.reps.to_string();
    let run = |mode: &str, events: usize, out: &str| -> f64 {
        let mut cmd = clean_cmd(&exe);
        cmd.args([mode, &events.to_string(), &pairs.to_string(), &reps]);
        cmd.env("KPROF_SUMMARY", "0")
            .env("KPROF_OUTPUT_DIR", dir.join(out));
        if mode == "kprof" && events > 0 {
            let list: Vec<String> = (0..events)
                .map(|i| format!("sde:::kpbench::c{i}"))
                .collect();
            cmd.env("KPROF_COUNTERS", list.join(","));
        }
        if mode != "kprof" {
            cmd.env("KPROF_ENABLE", "0");
        }
        let _ = std::fs::remove_dir_all(dir.join(out));
        let label = format!("{mode} with {events} events");
        let ns = run_for(&mut cmd, &label, "ns_per_pair");
        if mode == "kprof" {
            check(&dir.join(out), events, pairs * (s.reps + 1));
        }
        ns
    };
    let variants: [(&str, &str, usize); 6] = [
        ("no tool", "none", 0),
        ("kprof, no counters", "kprof", 0),
        ("C tool, 2 events", "ctool", 2),
        ("kprof, 2 events", "kprof", 2),
        ("C tool, 4 events", "ctool", 4),
        ("kprof, 4 events", "kprof", 4),
    ];
    let mut rows: Vec<(&str, Vec<f64>)> = variants.iter().map(|v| (v.0, Vec::new())).collect();
    for round in 0..s.rounds {
        for (i, &(_, mode, events)) in variants.iter().enumerate() {
            let ns = run(mode, events, &format!("out-{round}-{i}"));
            rows[i].1.push(ns);
        }
    }
    println!("counters_overhead: {pairs} region begin/end pairs per repetition, 1 thread");
    let raw: Vec<Vec<f64>> = rows.iter().map(|r| r.1.clone()).collect();
    let medians = print_rounds("pair", "no tool", &mut rows);
    let mut ok = true;
    for (c, k, events) in [(2usize, 3usize, 2), (4, 5, 4)] {
        // The ratio within each round (the variants of a round run back to
        // back, so a slower stretch of this VM hits both alike), then its median.
        let mut ratios: Vec<f64> = raw[k].iter().zip(&raw[c]).map(|(a, b)| a / b).collect();
        let ratio = median(&mut ratios);
        let added = paired_delta(&raw[k], &raw[c]);
        println!(
            "  {events} events: kprof {:.1} ns/pair against the C tool's {:.1} ns (medians): \
             {ratio:.2}x, the median of the rounds' ratios (target <= {TARGET_RATIO}x), \
             best rounds {:.2}x; kprof adds {added:+.1} ns over it (paired by round); \
             counters add {:+.1} ns to kprof's own pair",
            medians[k],
            medians[c],
            best(&raw[k]) / best(&raw[c]),
            paired_delta(&raw[k], &raw[1])
        );
        ok &= ratio <= TARGET_RATIO;
    }
    if std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1") && !ok {
        eprintln!("counters_overhead: target missed");
        std::process::exit(1);
    }
}

/// The run's profile holds every pair, counted, with the program's exact amount
/// (each pair adds 1 to the first counter): a benchmark that lost events, or read
/// nothing, measured less than it claims.
fn check(out: &Path, events: usize, want: u64) {
    let p = read_profile(out);
    let all = nodes(&p);
    let Some((_, n)) = all.iter().find(|(path, _)| path == &["bench_region"]) else {
        eprintln!("counters_overhead: no bench_region in {}", out.display());
        std::process::exit(1);
    };
    let count = n["count"].as_u64().unwrap_or(0);
    let counted = if events == 0 {
        want
    } else {
        n["counters"]["events"]["sde:::kpbench::c0"]["inclusive"]
            .as_u64()
            .unwrap_or(0)
    };
    if count != want || counted != want {
        eprintln!(
            "counters_overhead: {}: {count} pairs and {counted} counted, want {want}",
            out.display()
        );
        std::process::exit(1);
    }
}
