//! Overhead of kprof's RAJA plugin per kernel: `tests/raja/raja_host.cpp bench`
//! launches 100,000 (times `KPROF_BENCH_SCALE`) back-to-back host kernels with an
//! empty body through RAJA's plugin calls (preCapture, postCapture, preLaunch,
//! postLaunch: one capture slice and one launch slice per kernel), one untimed
//! warm-up, `KPROF_BENCH_REPS` (default 7) timed repetitions, median ns per kernel.
//!
//! Variants, interleaved round by round (`KPROF_BENCH_ROUNDS`, default 5) so that
//! background load hits them alike: no plugin; an empty `PluginStrategy` (RAJA's
//! virtual dispatch alone); the floor of a tracing plugin (TSC + a 16-byte store per
//! callback, `tests/raja/bench_plugin.cpp -DFLOOR`); kprof profile-only with named
//! kernels; kprof with unnamed kernels (the call site found by a short backtrace).
//! A row is the median of its rounds, with the best round beside it. The verdict:
//! kprof minus the empty plugin (kprof's own cost per kernel) and kprof over the
//! floor, measured in the same run.
//!
//! ```text
//! cargo bench -p kprof-tests --bench raja_overhead
//! ```

use std::path::{Path, PathBuf};

use kprof_tests::bench::{print_rounds, require_complete, run_for, Settings};
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
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::NoPlugin,
        Variant::Empty,
        Variant::Floor,
        Variant::Kprof,
        Variant::KprofUnnamed,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::NoPlugin => "no plugin",
            Variant::Empty => "empty PluginStrategy",
            Variant::Floor => "floor plugin (TSC + 16 B per callback)",
            Variant::Kprof => "kprof profile-only, named kernels",
            Variant::KprofUnnamed => "kprof profile-only, unnamed kernels",
        }
    }
}

struct Setup {
    host: PathBuf,
    empty: PathBuf,
    floor: PathBuf,
    kprof: PathBuf,
    dir: PathBuf,
    kernels: u64,
    reps: u64,
}

/// One run: ns per kernel (median of the program's repetitions).
fn run_once(s: &Setup, v: Variant, round: usize) -> f64 {
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
        Variant::Kprof | Variant::KprofUnnamed => Some(&s.kprof),
    };
    if let Some(p) = plugin {
        cmd.env("RAJA_PLUGINS", p);
    }
    if v == Variant::KprofUnnamed {
        cmd.arg("--unnamed");
    }
    let label = format!("{v:?}");
    let ns = run_for(&mut cmd, &label, "ns_per_kernel");
    if matches!(v, Variant::Kprof | Variant::KprofUnnamed) {
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
    let s = Setup {
        host: compile(&[&host_src], &dir.join("raja_host"), &["-ldl", "-pthread"]),
        empty: plugin("libempty_raja_plugin.so", &[]),
        floor: plugin("libfloor_raja_plugin.so", &["-DFLOOR"]),
        kprof: lib("libkprof_raja.so"),
        dir: dir.clone(),
        kernels: settings.scaled(100_000.0, 100),
        reps: settings.reps,
    };
    println!(
        "RAJA plugin overhead (raja_host bench, RAJA's loader and call order): {} empty \
         host kernels x {} reps per run, {rounds} rounds, median ns per kernel",
        s.kernels, s.reps
    );
    let mut rows: Vec<(&str, Vec<f64>)> = Variant::ALL
        .iter()
        .map(|v| (v.name(), Vec::new()))
        .collect();
    for round in 0..rounds {
        for (i, v) in Variant::ALL.into_iter().enumerate() {
            rows[i].1.push(run_once(&s, v, round));
        }
    }
    println!();
    let m = print_rounds("kernel", "no plugin", &mut rows);
    let (empty, floor, kprof, unnamed) = (m[1], m[2], m[3], m[4]);
    println!(
        "  kprof named - empty plugin = {:+.1} ns per kernel (2 slices; kprof's own cost); \
         kprof / floor = {:.2}x; unnamed kernels - empty = {:+.1} ns",
        kprof - empty,
        kprof / floor,
        unnamed - empty
    );
}
