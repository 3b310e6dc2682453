//! Overhead of kprof's RAJA plugin per kernel: `tests/raja/raja_host.cpp bench`
//! launches 100,000 (times `KPROF_BENCH_SCALE`) back-to-back host kernels with an
//! empty body through RAJA's plugin calls (preCapture, postCapture, preLaunch,
//! postLaunch; kprof records one launch slice per kernel), one untimed warm-up,
//! `KPROF_BENCH_REPS` (default 7) timed repetitions, median ns per kernel.
//!
//! Variants, interleaved round by round (`KPROF_BENCH_ROUNDS`, default 5) so that
//! background load hits them alike: no plugin; an empty `PluginStrategy` (RAJA's
//! virtual dispatch alone); the floor of a tracing plugin recording one slice per
//! kernel (TSC + a 16-byte store in preLaunch and postLaunch,
//! `tests/raja/bench_plugin.cpp -DFLOOR`); kprof profile-only with named kernels,
//! with unnamed kernels (named after their launch site), and named with
//! `KPROF_RAJA_CAPTURE=1`. With `KPROF_BENCH_RAJA_BASELINE=<dir>` holding another
//! build's `libkprof_raja.so` (and its `libkprof_core.so`), that plugin runs too,
//! named and unnamed, in the same rounds: before/after ratios from one run.
//! A row is the median of its rounds, with the best round beside it. Two tables
//! from the same runs: wall time per kernel, and the launching thread's CPU time
//! per kernel (which leaves out time other processes held the CPU: steadier on a
//! shared machine; kprof's writer thread is not in it). The verdict: kprof minus
//! the empty plugin (kprof's own cost per kernel, paired within each round) and
//! kprof over the floor.
//!
//! ```text
//! cargo bench -p kprof-tests --bench raja_overhead
//! KPROF_BENCH_RAJA_BASELINE=/path/to/old/lib cargo bench -p kprof-tests --bench raja_overhead
//! ```

use std::path::{Path, PathBuf};

use std::process::Command;

use kprof_tests::bench::{paired_delta, print_rounds, require_complete, Settings};
use kprof_tests::{clean_cmd, compile, lib, target_dir, test_file};

/// Event buffers for kprof: enough that no record drops.
const KPROF_BUFFER_MB: &str = "1024";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    NoPlugin,
    Empty,
    Floor,
    Kprof,
    KprofUnnamed,
    KprofCapture,
    Baseline,
    BaselineUnnamed,
}

impl Variant {
    const ALL: [Variant; 8] = [
        Variant::NoPlugin,
        Variant::Empty,
        Variant::Floor,
        Variant::Kprof,
        Variant::KprofUnnamed,
        Variant::KprofCapture,
        Variant::Baseline,
        Variant::BaselineUnnamed,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::NoPlugin => "no plugin",
            Variant::Empty => "empty PluginStrategy",
            Variant::Floor => "floor plugin (TSC + 16 B at launch begin/end)",
            Variant::Kprof => "kprof profile-only, named kernels",
            Variant::KprofUnnamed => "kprof profile-only, unnamed kernels",
            Variant::KprofCapture => "kprof named, KPROF_RAJA_CAPTURE=1",
            Variant::Baseline => "baseline plugin, named kernels",
            Variant::BaselineUnnamed => "baseline plugin, unnamed kernels",
        }
    }

    fn unnamed(self) -> bool {
        matches!(self, Variant::KprofUnnamed | Variant::BaselineUnnamed)
    }
}

struct Setup {
    host: PathBuf,
    empty: PathBuf,
    floor: PathBuf,
    kprof: PathBuf,
    baseline: Option<PathBuf>,
    dir: PathBuf,
    kernels: u64,
    reps: u64,
}

/// Runs `cmd` and returns its (wall, thread CPU) ns per kernel; exits the
/// benchmark when the program fails or prints no such lines.
fn measure(cmd: &mut Command, label: &str) -> (f64, f64) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {label}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let get = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .and_then(|x| x.trim().parse::<f64>().ok())
    };
    match (
        out.status.success(),
        get("ns_per_kernel"),
        get("cpu_ns_per_kernel"),
    ) {
        (true, Some(wall), Some(cpu)) => (wall, cpu),
        _ => {
            eprintln!(
                "{label} failed: {:?}\n{stdout}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            std::process::exit(1);
        }
    }
}

/// One run: (wall, thread CPU) ns per kernel (medians of the program's
/// repetitions).
fn run_once(s: &Setup, v: Variant, round: usize) -> (f64, f64) {
    let dir = s.dir.join(format!("{v:?}-{round}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let out_dir = dir.join("out");
    let mut cmd = clean_cmd(&s.host);
    cmd.current_dir(&dir)
        .arg("bench")
        .arg(format!("--kernels={}", s.kernels))
        .arg(format!("--reps={}", s.reps))
        .env_remove("KOKKOS_PLUGINS")
        .env("KPROF_OUTPUT_DIR", &out_dir)
        .env("KPROF_SUMMARY", "0")
        .env("KPROF_BUFFER_MB", KPROF_BUFFER_MB);
    let plugin: Option<&Path> = match v {
        Variant::NoPlugin => None,
        Variant::Empty => Some(&s.empty),
        Variant::Floor => Some(&s.floor),
        Variant::Kprof | Variant::KprofUnnamed | Variant::KprofCapture => Some(&s.kprof),
        Variant::Baseline | Variant::BaselineUnnamed => s.baseline.as_deref(),
    };
    if let Some(p) = plugin {
        cmd.env("RAJA_PLUGINS", p);
    }
    if v.unnamed() {
        cmd.arg("--unnamed");
    }
    if v == Variant::KprofCapture {
        cmd.env("KPROF_RAJA_CAPTURE", "1");
    }
    let label = format!("{v:?}");
    let ns = measure(&mut cmd, &label);
    if matches!(
        v,
        Variant::Kprof | Variant::KprofUnnamed | Variant::KprofCapture
    ) {
        // kprof measured what ran: every launch, none dropped.
        require_complete(&out_dir, &label, "raja_launch", s.kernels * (s.reps + 1));
    }
    let _ = std::fs::remove_dir_all(&dir);
    ns
}

fn main() {
    let Some(settings) = Settings::from_env(5) else {
        return;
    };
    let rounds = settings.rounds;
    let dir = target_dir().join("bench-raja");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let host_src = test_file("raja/raja_host.cpp");
    let plugin_src = test_file("raja/bench_plugin.cpp");
    let plugin = |name: &str, args: &[&str]| {
        let mut all = vec!["-shared", "-fPIC"];
        all.extend_from_slice(args);
        compile(&[&plugin_src], &dir.join(name), &all)
    };
    let baseline = std::env::var_os("KPROF_BENCH_RAJA_BASELINE")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("libkprof_raja.so"));
    if let Some(b) = &baseline {
        if !b.is_file() {
            eprintln!("KPROF_BENCH_RAJA_BASELINE: no {}", b.display());
            std::process::exit(1);
        }
    }
    let s = Setup {
        host: compile(&[&host_src], &dir.join("raja_host"), &["-ldl", "-pthread"]),
        empty: plugin("libempty_raja_plugin.so", &[]),
        floor: plugin("libfloor_raja_plugin.so", &["-DFLOOR"]),
        kprof: lib("libkprof_raja.so"),
        baseline,
        dir: dir.clone(),
        kernels: settings.scaled(100_000.0, 100),
        reps: settings.reps,
    };
    let variants: Vec<Variant> = Variant::ALL
        .into_iter()
        .filter(|v| {
            s.baseline.is_some() || !matches!(v, Variant::Baseline | Variant::BaselineUnnamed)
        })
        .collect();
    println!(
        "RAJA plugin overhead (raja_host bench, RAJA's loader and call order): {} empty \
         host kernels x {} reps per run, {rounds} rounds, median ns per kernel",
        s.kernels, s.reps
    );
    if let Some(b) = &s.baseline {
        println!("baseline plugin: {}", b.display());
    }
    let mut wall: Vec<(&str, Vec<f64>)> = variants.iter().map(|v| (v.name(), Vec::new())).collect();
    let mut cpu = wall.clone();
    for round in 0..rounds {
        for (i, &v) in variants.iter().enumerate() {
            let (w, c) = run_once(&s, v, round);
            wall[i].1.push(w);
            cpu[i].1.push(c);
        }
    }
    for (what, rows) in [
        ("wall time", &mut wall),
        ("launching thread's CPU time", &mut cpu),
    ] {
        println!();
        println!("{what}:");
        verdict(&variants, rows);
    }
}

/// Prints one table and its verdict.
fn verdict(variants: &[Variant], rows: &mut [(&str, Vec<f64>)]) {
    // Differences paired within each round, before print_rounds sorts the rounds.
    let at = |v: Variant| variants.iter().position(|&x| x == v);
    let over_empty = |v: Variant| at(v).map(|i| paired_delta(&rows[i].1, &rows[1].1));
    let own: Vec<(Variant, f64)> = variants[3..]
        .iter()
        .filter_map(|&v| Some((v, over_empty(v)?)))
        .collect();
    let m = print_rounds("kernel", "no plugin", rows);
    let (empty, floor, kprof) = (m[1], m[2], m[3]);
    println!(
        "  kprof named / floor = {:.2}x (floor - empty = {:+.1} ns)",
        kprof / floor,
        floor - empty
    );
    println!("  own cost per kernel (variant - empty plugin, paired per round):");
    for (v, d) in &own {
        println!("    {:<40} {:+8.1} ns", v.name(), d);
    }
    let get = |v: Variant| own.iter().find(|(x, _)| *x == v).map(|&(_, d)| d);
    for (new, old, what) in [
        (Variant::Kprof, Variant::Baseline, "named"),
        (Variant::KprofUnnamed, Variant::BaselineUnnamed, "unnamed"),
    ] {
        if let (Some(n), Some(o)) = (get(new), get(old)) {
            println!(
                "  {what} kernels: baseline {o:+.1} ns -> {n:+.1} ns over the empty plugin \
                 ({:.2}x less)",
                o / n
            );
        }
    }
}
