//! Overhead of kprof's OpenACC plugin per compute construct on GCC's libgomp (host
//! fallback): a tiny `parallel loop` (64 iterations of a trivial body) run
//! 200,000 times (times `KPROF_BENCH_SCALE`) per repetition, one untimed warm-up,
//! `KPROF_BENCH_REPS` (default 7) timed repetitions, median ns per construct
//! (`tests/openacc/bench_constructs.c`).
//!
//! Variants, interleaved round by round (`KPROF_BENCH_ROUNDS`, default 5) so that
//! background load hits them alike: no tool; an empty tool (`ACC_PROFLIB` with
//! empty callbacks for events 1..25: libgomp's own dispatch, the floor of any
//! tool); kprof profile-only; kprof with `KPROF_TRACE=perfetto`. A row is the
//! median of its rounds, with the best round beside it. Each construct is one
//! event pair (compute_construct start/end) on the host. The verdict is kprof
//! profile-only minus no tool, and minus the empty tool (kprof's own cost per
//! event pair), measured in the same run.
//!
//! ```text
//! cargo bench -p kprof-tests --bench openacc_overhead
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use kprof_tests::{lib, read_profile, target_dir, test_file, workspace_root};

/// Event buffers for kprof: enough that no record drops.
const KPROF_BUFFER_MB: &str = "1024";

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Variant {
    NoTool,
    Empty,
    Kprof,
    KprofPerfetto,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::NoTool,
        Variant::Empty,
        Variant::Kprof,
        Variant::KprofPerfetto,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::NoTool => "no tool",
            Variant::Empty => "empty OpenACC tool (25 callbacks)",
            Variant::Kprof => "kprof profile-only",
            Variant::KprofPerfetto => "kprof + KPROF_TRACE=perfetto",
        }
    }
}

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| *v > 0.0)
        .unwrap_or(default)
}

fn gcc(args: &[&str], out: &Path) -> PathBuf {
    let res = Command::new("gcc")
        .args(["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(workspace_root().join("ffi-headers"))
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run gcc: {e}"));
    if !res.status.success() {
        eprintln!(
            "gcc {args:?} failed:\n{}",
            String::from_utf8_lossy(&res.stderr)
        );
        std::process::exit(1);
    }
    out.to_path_buf()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

struct Setup {
    program: PathBuf,
    empty: PathBuf,
    kprof: PathBuf,
    dir: PathBuf,
    constructs: u64,
    reps: u64,
}

/// One run: ns per construct (median of the program's repetitions).
fn run_once(s: &Setup, v: Variant, round: usize) -> f64 {
    let dir = s.dir.join(format!("{v:?}-{round}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let out_dir = dir.join("out");
    let mut cmd = Command::new(&s.program);
    cmd.arg(s.constructs.to_string())
        .arg(s.reps.to_string())
        .env_remove("ACC_PROFLIB")
        .env_remove("LD_PRELOAD");
    match v {
        Variant::NoTool => {}
        Variant::Empty => {
            cmd.env("ACC_PROFLIB", &s.empty);
        }
        Variant::Kprof | Variant::KprofPerfetto => {
            cmd.env("ACC_PROFLIB", &s.kprof)
                .env("KPROF_OUTPUT_DIR", &out_dir)
                .env("KPROF_SUMMARY", "0")
                .env("KPROF_BUFFER_MB", KPROF_BUFFER_MB);
            if v == Variant::KprofPerfetto {
                cmd.env("KPROF_TRACE", "perfetto");
            }
        }
    }
    let out = cmd.output().expect("run bench_constructs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        eprintln!(
            "{v:?} failed: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1);
    }
    let ns = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ns_per_construct "))
        .and_then(|x| x.trim().parse::<f64>().ok())
        .unwrap_or_else(|| {
            eprintln!("no ns_per_construct in the output: {stdout}");
            std::process::exit(1)
        });
    if matches!(v, Variant::Kprof | Variant::KprofPerfetto) {
        // kprof measured what ran: every construct, none dropped.
        let p = read_profile(&out_dir);
        let dropped = p["dropped_records"].as_u64().unwrap_or(u64::MAX);
        if dropped != 0 {
            eprintln!("{v:?}: kprof dropped {dropped} records; raise KPROF_BUFFER_MB");
            std::process::exit(1);
        }
        let counted: u64 = kprof_tests::nodes(&p)
            .iter()
            .filter(|(_, n)| n["kind"] == "acc_compute")
            .map(|(_, n)| n["count"].as_u64().unwrap_or(0))
            .sum();
        let want = s.constructs * (s.reps + 1);
        if counted != want {
            eprintln!("{v:?}: kprof counted {counted} compute constructs, the program ran {want}");
            std::process::exit(1);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    ns
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let scale = env_f64("KPROF_BENCH_SCALE", 1.0);
    let reps = env_f64("KPROF_BENCH_REPS", 7.0) as u64;
    let rounds = env_f64("KPROF_BENCH_ROUNDS", 5.0) as usize;
    let dir = target_dir().join("bench-openacc");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let program_src = test_file("openacc/bench_constructs.c");
    let tool_src = test_file("openacc/bench_tool.c");
    let kprof = lib("libkprof_acc.so");
    let s = Setup {
        program: gcc(
            &["-fopenacc", program_src.to_str().unwrap()],
            &dir.join("bench_constructs"),
        ),
        empty: gcc(
            &["-shared", "-fPIC", tool_src.to_str().unwrap()],
            &dir.join("empty_acc_tool.so"),
        ),
        kprof,
        dir: dir.clone(),
        constructs: ((200_000.0 * scale) as u64).max(100),
        reps: reps.max(1),
    };
    println!(
        "OpenACC overhead (GCC libgomp, host fallback): {} constructs x {} reps per run \
         (64-iteration parallel loop), {rounds} rounds, median ns per construct",
        s.constructs, s.reps
    );
    let mut results: BTreeMap<Variant, Vec<f64>> = BTreeMap::new();
    for round in 0..rounds {
        for v in Variant::ALL {
            let ns = run_once(&s, v, round);
            results.entry(v).or_default().push(ns);
        }
    }
    let best = |l: &[f64]| l.iter().copied().fold(f64::INFINITY, f64::min);
    let base_best = best(&results[&Variant::NoTool]);
    let base = median(results.get_mut(&Variant::NoTool).unwrap());
    println!();
    println!(
        "  {:<36} {:>12} {:>12} {:>8} {:>12}  rounds",
        "variant", "ns/construct", "vs no tool", "best", "best vs no"
    );
    for v in Variant::ALL {
        let list = results.get_mut(&v).unwrap();
        let m = median(list);
        let b = best(list);
        let rounds: Vec<String> = list.iter().map(|x| format!("{x:.0}")).collect();
        println!(
            "  {:<36} {:>12.1} {:>+12.1} {:>8.1} {:>+12.1}  {}",
            v.name(),
            m,
            m - base,
            b,
            b - base_best,
            rounds.join("/")
        );
    }
    let empty = median(results.get_mut(&Variant::Empty).unwrap());
    let kprof = median(results.get_mut(&Variant::Kprof).unwrap());
    println!(
        "  kprof profile-only - no tool = {:+.1} ns per construct; - empty tool = {:+.1} ns \
         per event pair (kprof's own cost)",
        kprof - base,
        kprof - empty
    );
}
