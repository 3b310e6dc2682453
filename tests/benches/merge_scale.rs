//! `kprof merge` at scale: time and peak memory against the number of ranks, on
//! synthetic rank directories this benchmark writes (each a `profile.json` of a
//! 1,000-node call-path tree, ranks differing in nodes, counts and times, with
//! message rows, GPU and system sections; `kprof_tests::synthetic`). Peak memory
//! is the `kprof merge` process's own (`wait4`'s `ru_maxrss`). The issue's target
//! on this machine: 10,000 ranks in at most 60 s and 512 MB.
//!
//! ```text
//! cargo bench -p kprof-tests --bench merge_scale
//! ```
//!
//! Environment: `KPROF_BENCH_RANKS` (default `100,1000,10000`),
//! `KPROF_BENCH_NODES` (default 1000); `KPROF_BENCH_ENFORCE=1` exits 1 when the
//! largest run misses the target; `KPROF_BENCH_BASELINE=<another kprof>` also
//! runs that one's merge on the same directories (an older build: the in-memory
//! merge), up to `KPROF_BENCH_BASELINE_MAX_RANKS` ranks (default 2000).

use std::ffi::OsString;
use std::path::Path;

use kprof_tests::bench::{env_f64, env_list};
use kprof_tests::synthetic::{measure_via, write_ranks};
use kprof_tests::{lib, read_profile, scratch};

/// The issue's target at 10,000 ranks.
const TARGET_S: f64 = 60.0;
const TARGET_MB: f64 = 512.0;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let ranks = env_list("KPROF_BENCH_RANKS", "100,1000,10000");
    let nodes = env_f64("KPROF_BENCH_NODES", 1000.0) as usize;
    let kprof = lib("kprof");
    println!("kprof merge, synthetic ranks of a {nodes}-node profile");
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>12} {:>14}",
        "ranks", "input MB", "time s", "peak MB", "ms per rank", "KB per rank"
    );
    let mut last = None;
    let peak_rss = Path::new(env!("CARGO_BIN_EXE_peak_rss"));
    for &n in &ranks {
        let dir = scratch(&format!("merge_scale_{n}"));
        let dirs = write_ranks(&dir, n, nodes);
        let input: u64 = dirs
            .iter()
            .map(|d| std::fs::metadata(d.join("profile.json")).map_or(0, |m| m.len()))
            .sum();
        let out = dir.join("merged");
        let mut args: Vec<OsString> = ["merge", "--no-trace", "-o"].map(OsString::from).into();
        args.push(out.clone().into());
        args.extend(dirs.iter().map(|d| d.clone().into_os_string()));
        let cost = measure_via(peak_rss, &kprof, &args);
        assert!(cost.success, "kprof merge of {n} ranks failed");
        let merged = read_profile(&out);
        assert_eq!(merged["ranks"].as_array().map(Vec::len), Some(n as usize));
        let mb = cost.peak_bytes as f64 / (1 << 20) as f64;
        println!(
            "{n:>8} {:>10.0} {:>10.2} {mb:>10.1} {:>12.3} {:>14.1}",
            input as f64 / 1e6,
            cost.seconds,
            1e3 * cost.seconds / n as f64,
            cost.peak_bytes as f64 / 1024.0 / n as f64
        );
        last = Some((n, cost.seconds, mb));
        if let Some(base) = std::env::var_os("KPROF_BENCH_BASELINE") {
            let max: u64 = std::env::var("KPROF_BENCH_BASELINE_MAX_RANKS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(2000);
            if n <= max {
                let out = dir.join("baseline");
                let mut args: Vec<OsString> =
                    ["merge", "--no-trace", "-o"].map(OsString::from).into();
                args.push(out.into());
                args.extend(dirs.iter().map(|d| d.clone().into_os_string()));
                let b = measure_via(peak_rss, Path::new(&base), &args);
                println!(
                    "{:>8} {:>10} {:>10.2} {:>10.1}   baseline {}{}",
                    "",
                    "",
                    b.seconds,
                    b.peak_bytes as f64 / (1 << 20) as f64,
                    Path::new(&base).display(),
                    if b.success { "" } else { " (failed)" }
                );
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    if let Some((n, s, mb)) = last {
        let scaled = n as f64 / 10_000.0;
        let ok = s <= TARGET_S * scaled.max(1.0) && mb <= TARGET_MB;
        println!(
            "target: 10,000 ranks in at most {TARGET_S} s and {TARGET_MB} MB; largest run: {n} ranks, {s:.1} s, {mb:.0} MB: {}",
            if n < 10_000 {
                "not at the target's size"
            } else if ok {
                "met"
            } else {
                "missed"
            }
        );
        if std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1") && n >= 10_000 && !ok {
            std::process::exit(1);
        }
    }
}
