//! Overhead of the Kokkos plugin on the hot path, against a no-tool run, an empty
//! tool (the loader's and indirect calls' cost) and a floor tool (two TSC reads and
//! one 16-byte store per kernel: the least a tracing tool can do).
//!
//! A benchmark, not a test: every number it prints is measured in the same run, on
//! the same machine, and the verdict is a ratio (kprof / floor), never an absolute
//! time. Run with
//!
//! ```text
//! cargo bench -p kprof-tests --bench kokkos_overhead
//! ```
//!
//! Environment:
//! - `KPROF_BENCH_SCALE` (default `1`): multiplies the 1,000,000 begin/end pairs per
//!   repetition per thread, e.g. `0.01` for a quick smoke run.
//! - `KPROF_BENCH_REPS` (default `7`): timed repetitions (one more runs untimed first).
//! - `KPROF_BENCH_ROUNDS` (default `3`): every variant runs this many times, the
//!   variants interleaved round by round so that background load hits them alike;
//!   a row reports the median of its rounds' medians.
//! - `KPROF_BENCH_ENFORCE=1`: exit 1 when kprof (profile-only) misses its target.
//!
//! The driver (`tests/bench/kokkos_driver.c`) loads the tool as Kokkos does and
//! prints the median ns per pair over all threads' repetitions; see its header.
//! Exit status 1 when a run fails, its output cannot be read, or (with
//! `KPROF_BENCH_ENFORCE=1`) the target is missed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kprof_tests::{compile, nodes, read_profile, target_dir, test_file};
use serde_json::Value;

/// kprof profile-only must cost at most this many times the floor tool.
const TARGET_RATIO: f64 = 1.5;
const BASE_PAIRS: f64 = 1_000_000.0;
const KERNEL: &str = "bench_kernel";

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Variant {
    NoTool,
    Empty,
    Floor,
    Kprof,
    KprofTrace,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::NoTool,
        Variant::Empty,
        Variant::Floor,
        Variant::Kprof,
        Variant::KprofTrace,
    ];

    fn label(self) -> &'static str {
        match self {
            Variant::NoTool => "no tool",
            Variant::Empty => "empty tool",
            Variant::Floor => "floor tool",
            Variant::Kprof => "kprof profile-only",
            Variant::KprofTrace => "kprof + trace (KPROF_TRACE=perfetto)",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Variant::NoTool => "none",
            Variant::Empty => "empty",
            Variant::Floor => "floor",
            Variant::Kprof => "kprof",
            Variant::KprofTrace => "kprof-trace",
        }
    }

    fn is_kprof(self) -> bool {
        matches!(self, Variant::Kprof | Variant::KprofTrace)
    }
}

/// What kprof's profile.json says about one run.
struct ProfileInfo {
    dropped_records: Option<u64>,
    kernel_count: u64,
    kernel_nodes: usize,
    thread_records: Option<u64>,
    clock_source: String,
    anomalies: Vec<String>,
    files: Vec<String>,
}

struct Measured {
    ns_per_pair: f64,
    min_ns: f64,
    max_ns: f64,
    fencing: bool,
    wall_s: f64,
    profile: Option<Result<ProfileInfo, String>>,
}

fn env_f64(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| *x > 0.0 && x.is_finite())
            .unwrap_or_else(|| {
                eprintln!("kokkos_overhead: ignoring invalid {name}={v:?}, using {default}");
                default
            }),
        Err(_) => default,
    }
}

fn main() {
    let scale = env_f64("KPROF_BENCH_SCALE", 1.0);
    let reps = env_f64("KPROF_BENCH_REPS", 7.0).round().max(1.0) as u64;
    let rounds = env_f64("KPROF_BENCH_ROUNDS", 3.0).round().max(1.0) as u32;
    let enforce = std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1");
    let pairs = ((BASE_PAIRS * scale).round() as u64).max(1);

    // Build the C parts.
    let out_dir = target_dir().join("bench-kokkos");
    std::fs::create_dir_all(&out_dir).expect("create target/bench-kokkos");
    let driver = compile(
        &[&test_file("bench/kokkos_driver.c")],
        &out_dir.join("kokkos_driver"),
        &["-ldl", "-lpthread"],
    );
    let empty = compile(
        &[&test_file("bench/empty_tool.c")],
        &out_dir.join("libempty_tool.so"),
        &["-shared", "-fPIC"],
    );
    let floor = compile(
        &[&test_file("bench/floor_tool.c")],
        &out_dir.join("libfloor_tool.so"),
        &["-shared", "-fPIC"],
    );
    let runs_dir = out_dir.join("runs");
    let _ = std::fs::remove_dir_all(&runs_dir);
    std::fs::create_dir_all(&runs_dir).expect("create target/bench-kokkos/runs");

    // Build kprof (release); the C rows still run when it does not build.
    let kprof = match std::panic::catch_unwind(|| kprof_tests::lib("libkprof.so")) {
        Ok(p) if p.is_file() => Some(p),
        Ok(p) => {
            eprintln!("kokkos_overhead: {} missing after the build", p.display());
            None
        }
        Err(_) => {
            eprintln!("kokkos_overhead: building libkprof.so failed; kprof rows skipped");
            None
        }
    };

    println!(
        "kokkos_overhead: Kokkos tool overhead per kernel (begin_parallel_for + end_parallel_for)"
    );
    println!(
        "  {pairs} pairs per repetition per thread, {reps} timed repetitions (+1 untimed warm-up), \
         median ns per pair over all threads' repetitions; {rounds} interleaved round(s) per \
         variant, median of the rounds"
    );
    println!(
        "  target: kprof profile-only <= {TARGET_RATIO}x floor tool (floor: 2 TSC reads + one 16-byte \
         store to a thread-local ring per pair)"
    );
    println!();

    let mut failed = false;
    let mut results: BTreeMap<(u32, Variant), Vec<Measured>> = BTreeMap::new();
    for (round, threads, variant) in (0..rounds).flat_map(|r| {
        [1u32, 2]
            .into_iter()
            .flat_map(move |t| Variant::ALL.into_iter().map(move |v| (r, t, v)))
    }) {
        let tool: Option<&Path> = match variant {
            Variant::NoTool => None,
            Variant::Empty => Some(&empty),
            Variant::Floor => Some(&floor),
            Variant::Kprof | Variant::KprofTrace => match &kprof {
                Some(p) => Some(p),
                None => continue,
            },
        };
        let out = runs_dir.join(format!("{}-t{threads}-r{round}", variant.slug()));
        match run_variant(&driver, variant, tool, threads, pairs, reps, &out) {
            Ok(m) => {
                if let Some(Err(e)) = &m.profile {
                    eprintln!(
                        "kokkos_overhead: {} threads={threads}: {e}",
                        variant.label()
                    );
                    failed = true;
                }
                results.entry((threads, variant)).or_default().push(m);
            }
            Err(e) => {
                eprintln!(
                    "kokkos_overhead: {} threads={threads} failed: {e}",
                    variant.label()
                );
                failed = true;
            }
        }
    }

    // Table of runs.
    println!(
        "{:<38} {:>7} {:>10} {:>9} {:>9} {:>8} {:>8}  rounds (ns/pair)",
        "variant", "threads", "ns/pair", "min", "max", "fencing", "wall_s"
    );
    let ns_of = |ms: &[Measured]| median(ms.iter().map(|m| m.ns_per_pair).collect());
    for ((threads, variant), ms) in &results {
        let per_round: Vec<String> = ms.iter().map(|m| format!("{:.2}", m.ns_per_pair)).collect();
        println!(
            "{:<38} {:>7} {:>10.2} {:>9.2} {:>9.2} {:>8} {:>8.2}  {}",
            variant.label(),
            threads,
            ns_of(ms),
            ms.iter().map(|m| m.min_ns).fold(f64::INFINITY, f64::min),
            ms.iter().map(|m| m.max_ns).fold(0.0, f64::max),
            if ms.iter().any(|m| m.fencing) {
                "yes*"
            } else {
                "no"
            },
            median(ms.iter().map(|m| m.wall_s).collect()),
            per_round.join(" ")
        );
    }
    if results.values().flatten().any(|m| m.fencing) {
        println!("  * the tool kept requires_global_fencing: a stand-in fence (call + mfence) ran before every begin and end");
    }
    println!(
        "  (min/max: over all repetitions of all rounds; wall_s: median over rounds of the whole \
         process, including loading and kprof's finalize/output)"
    );
    println!();

    // Ratios.
    println!(
        "{:<7} {:>14} {:>14} {:>13} {:>15} {:>13} {:>15}  target",
        "threads",
        "empty-none ns",
        "floor-none ns",
        "kprof/floor",
        "kprof-none ns",
        "trace/floor",
        "trace-none ns",
    );
    let mut missed = false;
    for threads in [1u32, 2] {
        let get = |v: Variant| results.get(&(threads, v)).map(|ms| ns_of(ms));
        let none = get(Variant::NoTool);
        let diff = |v: Variant| match (get(v), none) {
            (Some(a), Some(b)) => format!("{:.2}", a - b),
            _ => "-".into(),
        };
        let ratio = |v: Variant| match (get(v), get(Variant::Floor)) {
            (Some(a), Some(f)) if f > 0.0 => Some(a / f),
            _ => None,
        };
        let fmt_ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}x"));
        let kprof_ratio = ratio(Variant::Kprof);
        let verdict = match kprof_ratio {
            Some(r) if r <= TARGET_RATIO => format!("MET (<= {TARGET_RATIO}x)"),
            Some(_) => {
                missed = true;
                format!("MISSED (> {TARGET_RATIO}x)")
            }
            None => "not measured".into(),
        };
        println!(
            "{:<7} {:>14} {:>14} {:>13} {:>15} {:>13} {:>15}  {}",
            threads,
            diff(Variant::Empty),
            diff(Variant::Floor),
            fmt_ratio(kprof_ratio),
            diff(Variant::Kprof),
            fmt_ratio(ratio(Variant::KprofTrace)),
            diff(Variant::KprofTrace),
            verdict
        );
    }
    println!();

    // What kprof wrote: did the writer keep up?
    if kprof.is_some() {
        println!("kprof output (profile.json):");
        for ((&(threads, variant), round), m) in results
            .iter()
            .flat_map(|(k, ms)| ms.iter().enumerate().map(move |(r, m)| ((k, r), m)))
        {
            let Some(profile) = &m.profile else { continue };
            let expected = u64::from(threads) * (reps + 1) * pairs;
            match profile {
                Ok(p) => {
                    let dropped = p
                        .dropped_records
                        .map_or("absent".to_string(), |d| d.to_string());
                    let records = p.thread_records.map_or("-".to_string(), |r| r.to_string());
                    let kept = if p.kernel_count == expected && p.dropped_records == Some(0) {
                        "writer kept up"
                    } else if p.dropped_records.is_some_and(|d| d > 0) {
                        "WRITER FELL BEHIND (records dropped)"
                    } else {
                        "KERNEL COUNT DIFFERS"
                    };
                    println!(
                        "  {:<38} threads={threads} round={round}: dropped_records={dropped}, {KERNEL} count={} of {expected} \
                         ({} node(s)), thread records={records}, clock={}: {kept}",
                        variant.label(),
                        p.kernel_count,
                        p.kernel_nodes,
                        p.clock_source
                    );
                    if !p.anomalies.is_empty() {
                        println!("      anomalies: {}", p.anomalies.join(", "));
                    }
                    println!("      files: {}", p.files.join(", "));
                }
                Err(e) => println!(
                    "  {:<38} threads={threads} round={round}: {e}",
                    variant.label()
                ),
            }
        }
        println!("  (output directories under {})", runs_dir.display());
    } else {
        println!("kprof rows not run: libkprof.so did not build");
        failed = true;
    }

    if failed {
        std::process::exit(1);
    }
    if missed && enforce {
        eprintln!("kokkos_overhead: target missed and KPROF_BENCH_ENFORCE=1");
        std::process::exit(1);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn run_variant(
    driver: &Path,
    variant: Variant,
    tool: Option<&Path>,
    threads: u32,
    pairs: u64,
    reps: u64,
    out: &Path,
) -> Result<Measured, String> {
    let mut cmd = Command::new(driver);
    cmd.arg(threads.to_string())
        .arg(pairs.to_string())
        .arg(reps.to_string());
    // Nothing from the caller's environment may change what a run measures.
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if (k.starts_with("KPROF_") && k != "KPROF_CORE_LIB") || k.starts_with("KOKKOS_") {
            cmd.env_remove(&key);
        }
    }
    if let Some(tool) = tool {
        cmd.env("KOKKOS_TOOLS_LIBS", tool);
    }
    if variant.is_kprof() {
        cmd.env("KPROF_OUTPUT_DIR", out)
            .env("KPROF_SUMMARY", "0")
            .env("KPROF_BUFFER_MB", "512");
        if variant == Variant::KprofTrace {
            cmd.env("KPROF_TRACE", "perfetto");
        }
    }
    let start = Instant::now();
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", driver.display()))?;
    let wall_s = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!(
            "exit {:?}\n--- stdout\n{stdout}--- stderr\n{stderr}",
            output.status
        ));
    }
    if !stderr.trim().is_empty() {
        eprintln!(
            "kokkos_overhead: {} threads={threads} stderr:\n{}",
            variant.label(),
            stderr.trim_end()
        );
    }
    let kv: BTreeMap<&str, &str> = stdout.lines().filter_map(|l| l.split_once('=')).collect();
    let num = |k: &str| -> Result<f64, String> {
        kv.get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .ok_or_else(|| format!("driver output lacks {k}=:\n{stdout}"))
    };
    let profile = variant.is_kprof().then(|| profile_info(out));
    Ok(Measured {
        ns_per_pair: num("ns_per_pair")?,
        min_ns: num("min_ns_per_pair")?,
        max_ns: num("max_ns_per_pair")?,
        fencing: kv.get("global_fencing") == Some(&"1"),
        wall_s,
        profile,
    })
}

fn profile_info(dir: &Path) -> Result<ProfileInfo, String> {
    if !dir.join("profile.json").is_file() {
        return Err(format!("no profile.json in {}", dir.display()));
    }
    let profile: Value = std::panic::catch_unwind(|| read_profile(dir))
        .map_err(|_| format!("cannot read {}/profile.json", dir.display()))?;
    let all = nodes(&profile);
    let kernels: Vec<&Value> = all
        .iter()
        .filter(|(path, _)| path.last().is_some_and(|n| n == KERNEL))
        .map(|(_, v)| v)
        .collect();
    let anomalies = profile["anomalies"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(_, v)| v.as_u64().is_some_and(|n| n > 0))
                .map(|(k, v)| format!("{k}={v}"))
                .collect()
        })
        .unwrap_or_default();
    let thread_records = profile["threads"]
        .as_array()
        .map(|ts| ts.iter().filter_map(|t| t["records"].as_u64()).sum::<u64>());
    Ok(ProfileInfo {
        dropped_records: profile["dropped_records"].as_u64(),
        kernel_count: kernels.iter().filter_map(|n| n["count"].as_u64()).sum(),
        kernel_nodes: kernels.len(),
        thread_records,
        clock_source: profile["clock"]["source"]
            .as_str()
            .unwrap_or("?")
            .to_string(),
        anomalies,
        files: list_files(dir),
    })
}

fn list_files(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let size = e.metadata().map(|m| m.len()).unwrap_or(0);
            format!("{} ({size} B)", e.file_name().to_string_lossy())
        })
        .collect();
    files.sort();
    files
}
