//! kprof's added wall time on a real OpenMP proxy application, LULESH 2.0 (LLNL's
//! shock-hydrodynamics proxy of the ECP proxy-application suite), as a ratio to
//! what the least recording OMPT tool adds in the same run.
//!
//! LULESH is not part of this repository: the benchmark builds a checkout given in
//! `KPROF_BENCH_LULESH` (a directory with `lulesh.cc`, for example a clone of
//! LLNL's LULESH repository, kept outside this one) with
//! `clang++ -O2 -fopenmp -DUSE_MPI=0` into `target/bench-lulesh/`, and runs it on 2
//! threads with libomp 14: `lulesh2.0 -s 8 -q` (about 80,000 parallel regions,
//! 200,000 worksharing loops and 180,000 barriers in about 0.3 s).
//!
//! Variants, interleaved round by round (`KPROF_BENCH_ROUNDS`, default 7): no tool
//! (`OMP_TOOL=disabled`); the floor tool (`tests/openmp/bench_tool.c` built with
//! `-DRDTSC -DCOUNTS`: a TSC read and a 16-byte store per callback for the same 16
//! callbacks, and a count of the parallel regions the runtime reported); kprof's
//! OMPT plugin, profile only (the default). Each run's wall time is the whole
//! process, start to exit (kprof's start and its profile written at exit
//! included). Each kprof run must count exactly the parallel regions the floor
//! tool's runtime reported.
//!
//! The verdict: (kprof - no tool) / (floor - no tool), each difference the median
//! over rounds of the difference within a round. Target: at most 1.3.
//!
//! ```text
//! KPROF_BENCH_LULESH=/path/to/LULESH cargo bench -p kprof-tests --bench openmp_app
//! ```
//!
//! `KPROF_BENCH_LULESH_ARGS` replaces `-s 8` (for example `-s 12` for a longer run).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use kprof_tests::bench::{median, paired_delta, require_complete, Settings};
use kprof_tests::openmp::{bare_cmd, ompt_lib, Runtime};
use kprof_tests::{compile_with, target_dir, test_file};

/// The target on (kprof's added time) / (the floor tool's added time).
const TARGET_RATIO: f64 = 1.3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    NoTool,
    Floor,
    Kprof,
}

impl Variant {
    const ALL: [Variant; 3] = [Variant::NoTool, Variant::Floor, Variant::Kprof];

    fn name(self) -> &'static str {
        match self {
            Variant::NoTool => "no tool",
            Variant::Floor => "floor tool (TSC + 16 B per callback)",
            Variant::Kprof => "kprof profile-only (in place)",
        }
    }
}

/// Builds LULESH from `src` into `dir`; exits the benchmark when it cannot.
fn build_lulesh(src: &Path, dir: &Path) -> PathBuf {
    let exe = dir.join("lulesh2.0");
    let sources = [
        "lulesh.cc",
        "lulesh-comm.cc",
        "lulesh-viz.cc",
        "lulesh-util.cc",
        "lulesh-init.cc",
    ];
    let out = Command::new("clang++")
        .args(["-O2", "-fopenmp", "-DUSE_MPI=0"])
        .args(sources.iter().map(|s| src.join(s)))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run clang++: {e}"));
    if !out.status.success() {
        eprintln!(
            "openmp_app: building LULESH from {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1);
    }
    exe
}

/// One run of `v`: its wall ms, and the floor tool's count of parallel regions.
fn run_once(
    exe: &Path,
    args: &[String],
    tools: (&Path, &Path),
    dir: &Path,
    v: Variant,
) -> (f64, Option<u64>) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("scratch dir");
    let mut cmd = bare_cmd(exe, dir, Runtime::Llvm14, false);
    cmd.args(args);
    let out_dir = dir.join("out");
    match v {
        Variant::NoTool => {
            cmd.env("OMP_TOOL", "disabled");
        }
        Variant::Floor => {
            cmd.env("OMP_TOOL_LIBRARIES", tools.0);
        }
        Variant::Kprof => {
            cmd.env("OMP_TOOL_LIBRARIES", tools.1)
                .env("KPROF_OUTPUT_DIR", &out_dir)
                .env("KPROF_SUMMARY", "0");
        }
    }
    let t = Instant::now();
    let out = cmd.output().expect("run LULESH");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        eprintln!(
            "openmp_app: LULESH ({v:?}) failed: {:?}\n{stderr}",
            out.status
        );
        std::process::exit(1);
    }
    let count = stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("bench_tool: ")?
                .strip_suffix(" parallel regions")
        })
        .and_then(|n| n.parse().ok());
    (ms, count)
}

fn main() {
    let Some(settings) = Settings::from_env(7) else {
        return;
    };
    let Some(src) = std::env::var_os("KPROF_BENCH_LULESH").map(PathBuf::from) else {
        eprintln!(
            "openmp_app: set KPROF_BENCH_LULESH to a LULESH 2.0 checkout (a directory with \
             lulesh.cc), kept outside this repository"
        );
        std::process::exit(1);
    };
    let args: Vec<String> = std::env::var("KPROF_BENCH_LULESH_ARGS")
        .unwrap_or_else(|_| "-s 8".into())
        .split_whitespace()
        .map(String::from)
        .chain(["-q".to_string()])
        .collect();
    let dir = target_dir().join("bench-lulesh");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let exe = build_lulesh(&src, &dir);
    let floor = compile_with(
        "clang",
        &[&test_file("openmp/bench_tool.c")],
        &dir.join("floor_tool.so"),
        &["-shared", "-fPIC", "-DRDTSC", "-DCOUNTS"],
    );
    let kprof = ompt_lib();
    println!(
        "openmp_app: LULESH 2.0 {} on 2 threads (libomp 14), {} rounds, wall ms per run",
        args.join(" "),
        settings.rounds
    );
    let mut rows: Vec<(&str, Vec<f64>)> = Variant::ALL.iter().map(|v| (v.name(), vec![])).collect();
    let mut regions = None;
    for round in 0..settings.rounds {
        for (i, v) in Variant::ALL.into_iter().enumerate() {
            let run_dir = dir.join(format!("{v:?}-{round}"));
            let (ms, count) = run_once(&exe, &args, (&floor, &kprof), &run_dir, v);
            rows[i].1.push(ms);
            if v == Variant::Floor {
                let n = count.unwrap_or_else(|| {
                    eprintln!("openmp_app: the floor tool printed no count");
                    std::process::exit(1)
                });
                if regions.is_some_and(|r| r != n) {
                    eprintln!("openmp_app: LULESH ran {n} regions, earlier {regions:?}");
                    std::process::exit(1);
                }
                regions = Some(n);
            }
            if v == Variant::Kprof {
                if let Some(n) = regions {
                    // kprof counted every parallel region the runtime reported.
                    require_complete(&run_dir.join("out"), "LULESH kprof", "omp_parallel", n);
                }
            }
            let _ = std::fs::remove_dir_all(&run_dir);
        }
    }
    let regions = regions.unwrap_or(0);
    println!("parallel regions per run: {regions} (the runtime's, as the floor tool counted them; kprof's equal)");
    let floor_added = paired_delta(&rows[1].1, &rows[0].1);
    let kprof_added = paired_delta(&rows[2].1, &rows[0].1);
    let ratio = kprof_added / floor_added;
    let mut ratios: Vec<f64> = rows[2]
        .1
        .iter()
        .zip(&rows[1].1)
        .zip(&rows[0].1)
        .map(|((k, f), n)| (k - n) / (f - n))
        .collect();
    let round_ratio = median(&mut ratios);
    println!(
        "  {:<38} {:>10} {:>12}  rounds",
        "variant", "wall ms", "vs no tool"
    );
    for (name, list) in &rows {
        let ms = median(&mut list.clone());
        let rounds: Vec<String> = list.iter().map(|x| format!("{x:.1}")).collect();
        let vs = paired_delta(list, &rows[0].1);
        println!("  {name:<38} {ms:>10.1} {vs:>+12.2}  {}", rounds.join("/"));
    }
    println!(
        "added wall time: floor tool {floor_added:+.2} ms, kprof {kprof_added:+.2} ms \
         ({:+.0} ns per parallel region)",
        kprof_added * 1e6 / regions.max(1) as f64
    );
    println!(
        "kprof / floor tool added time: {ratio:.2}x (median of per-round ratios {round_ratio:.2}x; \
         target <= {TARGET_RATIO}x)"
    );
    if std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1") && ratio > TARGET_RATIO {
        std::process::exit(1);
    }
}
