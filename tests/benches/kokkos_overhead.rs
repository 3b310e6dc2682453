//! Overhead of the Kokkos plugin on the hot path, against a no-tool run, an empty
//! tool (the loader's and indirect calls' cost), a floor tool (two TSC reads and
//! one 16-byte store per kernel: the least a tracing tool can do) and an in-place
//! floor tool (the least a tool that keeps a profile on the application thread can
//! do: a tree node per (enclosing node, name) and its count, sum, min, max and sum of
//! squares; it prints what it counted, which the benchmark checks). Two more rows keep
//! Kokkos' fences around every kernel callback, as the kokkos-tools tools (kernel-timer
//! among them) do: the floor tool with `FLOOR_TOOL_FENCES=1` (it leaves the fences
//! Kokkos runs for it out by name, as they do) against kprof with
//! `KPROF_KOKKOS_FENCES=1` (which folds them into the kernel they time).
//!
//! A benchmark, not a test: every number it prints is measured in the same run, on
//! the same machine, and the verdict is a ratio (kprof / floor), never an absolute
//! time. Run with
//!
//! ```text
//! cargo bench -p kprof-tests --bench kokkos_overhead
//! ```
//!
//! Two regimes, one table each:
//! - **burst**: 100,000 pairs per repetition, the threads sleeping 50 ms before each
//!   repetition (an application whose kernel bursts are separated by other work), kprof
//!   with `KPROF_FLUSH_MS=10`: kprof's writer catches up during the pauses, so the timed
//!   bursts measure the hot path (the append). The target applies here.
//! - **sustained**: 1,000,000 pairs per repetition back to back, no pauses, kprof's
//!   default flush period: the writer has to work while the application runs (~30M
//!   events/s, far beyond real Kokkos applications, whose kernels take microseconds).
//!   Where the machine's vCPUs share a physical core (SMT siblings), any busy second
//!   thread (a tool's writer, even a plain spin loop) roughly doubles the application
//!   thread's time per pair; this regime shows that cost, not the hot path's.
//!
//! Every row also reports `cpu_ns/pair`: the process's user+system CPU time (all
//! threads, so kprof's writer too) from the warm-up to the last repetition, per pair.
//! kprof runs with `KPROF_BUFFER_MB=1024` so that no records drop in either regime.
//!
//! Environment:
//! - `KPROF_BENCH_SCALE` (default `1`): multiplies the pairs per repetition per thread
//!   of both regimes (100,000 and 1,000,000), e.g. `0.01` for a quick smoke run.
//! - `KPROF_BENCH_REPS` (default `7`): timed repetitions (one more runs untimed first).
//! - `KPROF_BENCH_ROUNDS` (default `3`): every variant runs this many times per regime,
//!   the variants (and regimes) interleaved round by round so that background load hits
//!   them alike; a row reports the median of its rounds' medians.
//! - `KPROF_BENCH_ENFORCE=1`: exit 1 when kprof (profile-only) misses its target in the
//!   burst regime, with 1 or 2 threads.
//!
//! The driver (`tests/bench/kokkos_driver.c`) loads the tool as Kokkos does and
//! prints the median ns per pair over all threads' repetitions and the CPU time per
//! pair; see its header.
//! Exit status 1 when a run fails, its output cannot be read, or (with
//! `KPROF_BENCH_ENFORCE=1`) the target is missed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use kprof_tests::bench::{env_f64, median};
use kprof_tests::{compile, nodes, read_profile, target_dir, test_file};
use serde_json::Value;

/// kprof profile-only must cost at most this many times the floor tool (burst regime).
const TARGET_RATIO: f64 = 1.3;
const KERNEL: &str = "bench_kernel";
/// Event buffers for kprof: enough that no record drops in either regime.
const KPROF_BUFFER_MB: &str = "1024";

/// How the application calls kernels: in bursts with pauses, or back to back.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Regime {
    Burst,
    Sustained,
}

impl Regime {
    const ALL: [Regime; 2] = [Regime::Burst, Regime::Sustained];

    fn name(self) -> &'static str {
        match self {
            Regime::Burst => "burst",
            Regime::Sustained => "sustained",
        }
    }

    /// Begin/end pairs per repetition per thread, before `KPROF_BENCH_SCALE`.
    fn base_pairs(self) -> f64 {
        match self {
            Regime::Burst => 100_000.0,
            Regime::Sustained => 1_000_000.0,
        }
    }

    /// Sleep of every thread before each timed repetition (the driver's PAUSE_MS).
    fn pause_ms(self) -> u64 {
        match self {
            Regime::Burst => 50,
            Regime::Sustained => 0,
        }
    }

    /// `KPROF_FLUSH_MS` for the kprof variants (`None`: kprof's default).
    fn flush_ms(self) -> Option<&'static str> {
        match self {
            Regime::Burst => Some("10"),
            Regime::Sustained => None,
        }
    }

    /// Whether the target (and `KPROF_BENCH_ENFORCE`) applies.
    fn has_target(self) -> bool {
        self == Regime::Burst
    }

    fn explanation(self) -> [&'static str; 2] {
        match self {
            Regime::Burst => [
                "measures the hot path: kernel bursts separated by other work (50 ms sleep before \
                 each repetition, untimed); kprof runs with KPROF_FLUSH_MS=10,",
                "so its writer catches up during the pauses and ns/pair is the append cost; the \
                 target applies here",
            ],
            Regime::Sustained => [
                "measures a tool whose writer must work while the app runs: kernels back to back \
                 (~30M events/s, far beyond real Kokkos apps), kprof's default KPROF_FLUSH_MS;",
                "on a machine whose vCPUs share a physical core, any busy second thread (any \
                 tool's writer) roughly doubles the app thread's ns/pair; cpu_ns/pair = total cost",
            ],
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Variant {
    NoTool,
    Empty,
    Floor,
    InPlaceFloor,
    Kprof,
    KprofTrace,
    FloorFences,
    KprofFences,
}

impl Variant {
    const ALL: [Variant; 8] = [
        Variant::NoTool,
        Variant::Empty,
        Variant::Floor,
        Variant::InPlaceFloor,
        Variant::Kprof,
        Variant::KprofTrace,
        Variant::FloorFences,
        Variant::KprofFences,
    ];

    fn label(self) -> &'static str {
        match self {
            Variant::NoTool => "no tool",
            Variant::Empty => "empty tool",
            Variant::Floor => "floor tool",
            Variant::InPlaceFloor => "in-place floor tool",
            Variant::Kprof => "kprof profile-only",
            Variant::KprofTrace => "kprof + trace (KPROF_TRACE=perfetto)",
            Variant::FloorFences => "floor tool + Kokkos' fences",
            Variant::KprofFences => "kprof + fences (KPROF_KOKKOS_FENCES=1)",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Variant::NoTool => "none",
            Variant::Empty => "empty",
            Variant::Floor => "floor",
            Variant::InPlaceFloor => "inplace-floor",
            Variant::Kprof => "kprof",
            Variant::KprofTrace => "kprof-trace",
            Variant::FloorFences => "floor-fences",
            Variant::KprofFences => "kprof-fences",
        }
    }

    fn is_kprof(self) -> bool {
        matches!(
            self,
            Variant::Kprof | Variant::KprofTrace | Variant::KprofFences
        )
    }
}

/// A table row: regime, threads, variant.
type Key = (Regime, u32, Variant);

/// What kprof's profile.json says about one run.
struct ProfileInfo {
    dropped_records: Option<u64>,
    kernel_count: u64,
    kernel_nodes: usize,
    fence_nodes: usize,
    thread_records: Option<u64>,
    clock_source: String,
    anomalies: Vec<String>,
    files: Vec<String>,
}

struct Measured {
    ns_per_pair: f64,
    cpu_ns_per_pair: f64,
    min_ns: f64,
    max_ns: f64,
    fencing: bool,
    wall_s: f64,
    profile: Option<Result<ProfileInfo, String>>,
}

fn main() {
    let scale = env_f64("KPROF_BENCH_SCALE", 1.0);
    let reps = env_f64("KPROF_BENCH_REPS", 7.0).round().max(1.0) as u64;
    let rounds = env_f64("KPROF_BENCH_ROUNDS", 3.0).round().max(1.0) as u32;
    let enforce = std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1");
    let pairs_of = |regime: Regime| ((regime.base_pairs() * scale).round() as u64).max(1);

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
    let inplace_floor = compile(
        &[&test_file("bench/inplace_floor_tool.c")],
        &out_dir.join("libinplace_floor_tool.so"),
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
        "  {reps} timed repetitions (+1 untimed warm-up), median ns per pair over all threads' \
         repetitions; {rounds} interleaved round(s) per variant and regime, median of the rounds"
    );
    println!(
        "  target (burst regime): kprof profile-only <= {TARGET_RATIO}x floor tool (floor: 2 TSC \
         reads + one 16-byte store to a thread-local ring per pair)"
    );
    println!(
        "  cpu_ns/pair: process user+system CPU time (all threads, incl. a tool's background \
         threads) from warm-up to last repetition, per pair"
    );
    println!();

    let mut failed = false;
    let mut results: BTreeMap<Key, Vec<Measured>> = BTreeMap::new();
    for (round, regime, threads, variant) in (0..rounds).flat_map(|r| {
        Regime::ALL.into_iter().flat_map(move |g| {
            [1u32, 2]
                .into_iter()
                .flat_map(move |t| Variant::ALL.into_iter().map(move |v| (r, g, t, v)))
        })
    }) {
        let tool: Option<&Path> = match variant {
            Variant::NoTool => None,
            Variant::Empty => Some(&empty),
            Variant::Floor | Variant::FloorFences => Some(&floor),
            Variant::InPlaceFloor => Some(&inplace_floor),
            Variant::Kprof | Variant::KprofTrace | Variant::KprofFences => match &kprof {
                Some(p) => Some(p),
                None => continue,
            },
        };
        let out = runs_dir.join(format!(
            "{}-{}-t{threads}-r{round}",
            regime.name(),
            variant.slug()
        ));
        let run = Run {
            variant,
            regime,
            tool,
            threads,
            pairs: pairs_of(regime),
            reps,
        };
        match run_variant(&driver, &run, &out) {
            Ok(m) => {
                if let Some(Err(e)) = &m.profile {
                    eprintln!(
                        "kokkos_overhead: {} {} threads={threads}: {e}",
                        regime.name(),
                        variant.label()
                    );
                    failed = true;
                }
                results
                    .entry((regime, threads, variant))
                    .or_default()
                    .push(m);
            }
            Err(e) => {
                eprintln!(
                    "kokkos_overhead: {} {} threads={threads} failed: {e}",
                    regime.name(),
                    variant.label()
                );
                failed = true;
            }
        }
    }

    let ns_of = |ms: &[Measured]| median(&mut ms.iter().map(|m| m.ns_per_pair).collect::<Vec<_>>());
    let cpu_of =
        |ms: &[Measured]| median(&mut ms.iter().map(|m| m.cpu_ns_per_pair).collect::<Vec<_>>());
    let mut missed = false;
    for regime in Regime::ALL {
        let pairs = pairs_of(regime);
        println!(
            "== regime: {} ({pairs} pairs per repetition per thread, pause {} ms, kprof KPROF_FLUSH_MS={})",
            regime.name(),
            regime.pause_ms(),
            regime.flush_ms().unwrap_or("default")
        );
        for line in regime.explanation() {
            println!("  {line}");
        }
        println!();

        // Table of runs.
        println!(
            "{:<38} {:>7} {:>10} {:>9} {:>9} {:>11} {:>8} {:>8}  rounds (ns/pair)",
            "variant", "threads", "ns/pair", "min", "max", "cpu_ns/pair", "fencing", "wall_s"
        );
        let rows: Vec<(&Key, &Vec<Measured>)> = results
            .iter()
            .filter(|((g, _, _), _)| *g == regime)
            .collect();
        for ((_, threads, variant), ms) in &rows {
            let per_round: Vec<String> =
                ms.iter().map(|m| format!("{:.2}", m.ns_per_pair)).collect();
            println!(
                "{:<38} {:>7} {:>10.2} {:>9.2} {:>9.2} {:>11.2} {:>8} {:>8.2}  {}",
                variant.label(),
                threads,
                ns_of(ms),
                ms.iter().map(|m| m.min_ns).fold(f64::INFINITY, f64::min),
                ms.iter().map(|m| m.max_ns).fold(0.0, f64::max),
                cpu_of(ms),
                if ms.iter().any(|m| m.fencing) {
                    "yes*"
                } else {
                    "no"
                },
                median(&mut ms.iter().map(|m| m.wall_s).collect::<Vec<_>>()),
                per_round.join(" ")
            );
        }
        if rows.iter().flat_map(|(_, ms)| ms.iter()).any(|m| m.fencing) {
            println!("  * the tool kept requires_global_fencing: a stand-in fence (call + mfence) ran before every begin and end");
        }
        println!(
            "  (min/max: over all repetitions of all rounds; cpu_ns/pair: median over rounds, \
             warm-up included; wall_s: median over rounds of the whole process, including \
             loading, pauses and kprof's finalize/output)"
        );
        println!();

        // Ratios.
        println!(
            "{:<7} {:>13} {:>13} {:>11} {:>13} {:>15} {:>11} {:>13} {:>15}  target",
            "threads",
            "empty-none ns",
            "floor-none ns",
            "kprof/floor",
            "kprof-none ns",
            "kprof cpu/floor",
            "trace/floor",
            "trace-none ns",
            "trace-floor cpu",
        );
        for threads in [1u32, 2] {
            let get = |v: Variant| results.get(&(regime, threads, v));
            let none = get(Variant::NoTool).map(|ms| ns_of(ms));
            let diff = |v: Variant| diff_cell(get(v).map(|ms| ns_of(ms)), none);
            let cpu = |v: Variant| get(v).map(|ms| cpu_of(ms));
            let cpu_diff = |v: Variant| diff_cell(cpu(v), cpu(Variant::Floor));
            let ratio = |v: Variant| match (get(v), get(Variant::Floor)) {
                (Some(a), Some(f)) if ns_of(f) > 0.0 => Some(ns_of(a) / ns_of(f)),
                _ => None,
            };
            let fmt_ratio = |r: Option<f64>| r.map_or("-".into(), |r| format!("{r:.2}x"));
            let cpu_ratio = |v: Variant| ratio_cell(cpu(v), cpu(Variant::Floor));
            let kprof_ratio = ratio(Variant::Kprof);
            let verdict = match kprof_ratio {
                _ if !regime.has_target() => "none (informational)".into(),
                Some(r) if r <= TARGET_RATIO => format!("MET (<= {TARGET_RATIO}x)"),
                Some(_) => {
                    missed = true;
                    format!("MISSED (> {TARGET_RATIO}x)")
                }
                None => "not measured".into(),
            };
            println!(
                "{:<7} {:>13} {:>13} {:>11} {:>13} {:>15} {:>11} {:>13} {:>15}  {}",
                threads,
                diff(Variant::Empty),
                diff(Variant::Floor),
                fmt_ratio(kprof_ratio),
                diff(Variant::Kprof),
                cpu_ratio(Variant::Kprof),
                fmt_ratio(ratio(Variant::KprofTrace)),
                diff(Variant::KprofTrace),
                cpu_diff(Variant::KprofTrace),
                verdict
            );
        }
        println!(
            "  (x/floor: ns per pair; x-none: ns per pair over no tool; cpu/floor: process CPU per \
             pair against the floor tool's; x-floor cpu: CPU ns per pair over the floor tool, \
             kprof's writer included)"
        );
        println!();

        // What aggregating in place costs at the least, whoever does it.
        println!(
            "in-place floor tool (tests/bench/inplace_floor_tool.c: a node per (enclosing node, \
             name), its count/sum/min/max/sum of squares, nothing else):"
        );
        println!(
            "{:<7} {:>15} {:>19} {:>15}",
            "threads", "inplace/floor", "inplace-floor ns", "kprof/inplace"
        );
        for threads in [1u32, 2] {
            let get = |v: Variant| results.get(&(regime, threads, v)).map(|ms| ns_of(ms));
            let (floor, inplace, kprof) = (
                get(Variant::Floor),
                get(Variant::InPlaceFloor),
                get(Variant::Kprof),
            );
            println!(
                "{:<7} {:>15} {:>19} {:>15}",
                threads,
                ratio_cell(inplace, floor),
                diff_cell(inplace, floor),
                ratio_cell(kprof, inplace)
            );
        }
        println!();

        // With Kokkos' fences kept, as kokkos-tools' tools (kernel-timer) keep them.
        println!(
            "with Kokkos' fences (4 reported fence pairs per kernel; the floor tool leaves them \
             out by name as kokkos-tools' tools do, kprof folds them into the kernel):"
        );
        println!(
            "{:<7} {:>19} {:>19} {:>21} {:>19}",
            "threads",
            "floor+fences-none",
            "kprof+fences-none",
            "kprof+f/floor+f ns",
            "kprof+f-floor+f ns"
        );
        for threads in [1u32, 2] {
            let get = |v: Variant| results.get(&(regime, threads, v)).map(|ms| ns_of(ms));
            let none = get(Variant::NoTool);
            let (ff, kf) = (get(Variant::FloorFences), get(Variant::KprofFences));
            println!(
                "{:<7} {:>19} {:>19} {:>21} {:>19}",
                threads,
                diff_cell(ff, none),
                diff_cell(kf, none),
                ratio_cell(kf, ff),
                diff_cell(kf, ff),
            );
        }
        println!(
            "  (the stand-in fence is a call + mfence per back end, not a real Kokkos fence's \
             synchronisation: a real fence adds the same to every row)"
        );
        println!();

        // What kprof wrote: did the writer keep up?
        if kprof.is_some() {
            println!("kprof output (profile.json), {} regime:", regime.name());
            for ((&(_, threads, variant), round), m) in rows
                .iter()
                .flat_map(|(k, ms)| ms.iter().enumerate().map(move |(r, m)| ((*k, r), m)))
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
                             ({} node(s)), fence nodes={}, thread records={records}, clock={}: {kept}",
                            variant.label(),
                            p.kernel_count,
                            p.kernel_nodes,
                            p.fence_nodes,
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
            println!();
        }
    }
    if kprof.is_some() {
        println!("(kprof output directories under {})", runs_dir.display());
    } else {
        println!("kprof rows not run: libkprof.so did not build");
        failed = true;
    }

    if failed {
        std::process::exit(1);
    }
    if missed && enforce {
        eprintln!("kokkos_overhead: target missed (burst regime) and KPROF_BENCH_ENFORCE=1");
        std::process::exit(1);
    }
}

/// One driver run's parameters.
struct Run<'a> {
    variant: Variant,
    regime: Regime,
    tool: Option<&'a Path>,
    threads: u32,
    pairs: u64,
    reps: u64,
}

fn run_variant(driver: &Path, run: &Run, out: &Path) -> Result<Measured, String> {
    let &Run {
        variant,
        regime,
        tool,
        threads,
        pairs,
        reps,
    } = run;
    let mut cmd = Command::new(driver);
    cmd.arg(threads.to_string())
        .arg(pairs.to_string())
        .arg(reps.to_string())
        .arg(regime.pause_ms().to_string());
    // Nothing from the caller's environment may change what a run measures.
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if (k.starts_with("KPROF_") && k != "KPROF_CORE_LIB")
            || k.starts_with("KOKKOS_")
            || k == "FLOOR_TOOL_FENCES"
        {
            cmd.env_remove(&key);
        }
    }
    if let Some(tool) = tool {
        cmd.env("KOKKOS_TOOLS_LIBS", tool);
    }
    if variant.is_kprof() {
        cmd.env("KPROF_OUTPUT_DIR", out)
            .env("KPROF_SUMMARY", "0")
            .env("KPROF_BUFFER_MB", KPROF_BUFFER_MB);
        if let Some(ms) = regime.flush_ms() {
            cmd.env("KPROF_FLUSH_MS", ms);
        }
        if variant == Variant::KprofTrace {
            cmd.env("KPROF_TRACE", "perfetto");
        }
        if variant == Variant::KprofFences {
            cmd.env("KPROF_KOKKOS_FENCES", "1");
        }
    }
    if variant == Variant::FloorFences {
        cmd.env("FLOOR_TOOL_FENCES", "1");
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
            "kokkos_overhead: {} {} threads={threads} stderr:\n{}",
            regime.name(),
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
    if variant == Variant::InPlaceFloor {
        // The tool counts what its trees hold: a tool that skipped its work would
        // look cheap.
        let expected = u64::from(threads) * pairs * (reps + 1);
        let counted = num("inplace_tool_count")?;
        if counted != expected as f64 {
            return Err(format!(
                "the in-place floor tool counted {counted} kernels, expected {expected}"
            ));
        }
    }
    let profile = variant.is_kprof().then(|| profile_info(out));
    Ok(Measured {
        ns_per_pair: num("ns_per_pair")?,
        cpu_ns_per_pair: num("cpu_ns_per_pair")?,
        min_ns: num("min_ns_per_pair")?,
        max_ns: num("max_ns_per_pair")?,
        fencing: kv.get("global_fencing") == Some(&"1"),
        wall_s,
        profile,
    })
}

/// A table cell: `a / b` as a ratio, or `-` when either is missing.
fn ratio_cell(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

/// A table cell: `a - b` in ns, or `-` when either is missing.
fn diff_cell(a: Option<f64>, b: Option<f64>) -> String {
    a.zip(b)
        .map_or("-".into(), |(a, b)| format!("{:.2}", a - b))
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
        fence_nodes: all.iter().filter(|(_, n)| n["kind"] == "fence").count(),
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
