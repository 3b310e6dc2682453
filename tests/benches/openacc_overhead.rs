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

use std::path::PathBuf;
use std::process::Command;

use kprof_tests::bench::{print_rounds, require_complete, run_for, Settings};
use kprof_tests::{compile, lib, target_dir, test_file};

/// Event buffers for kprof: enough that no record drops.
const KPROF_BUFFER_MB: &str = "1024";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
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
    let label = format!("{v:?}");
    let ns = run_for(&mut cmd, &label, "ns_per_construct");
    if matches!(v, Variant::Kprof | Variant::KprofPerfetto) {
        // kprof measured what ran: every construct, none dropped.
        require_complete(&out_dir, &label, "acc_compute", s.constructs * (s.reps + 1));
    }
    let _ = std::fs::remove_dir_all(&dir);
    ns
}

fn main() {
    let Some(settings) = Settings::from_env(5) else {
        return;
    };
    let rounds = settings.rounds;
    let dir = target_dir().join("bench-openacc");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let program_src = test_file("openacc/bench_constructs.c");
    let tool_src = test_file("openacc/bench_tool.c");
    let kprof = lib("libkprof_acc.so");
    let s = Setup {
        program: compile(
            &[&program_src],
            &dir.join("bench_constructs"),
            &["-fopenacc"],
        ),
        empty: compile(
            &[&tool_src],
            &dir.join("empty_acc_tool.so"),
            &["-shared", "-fPIC"],
        ),
        kprof,
        dir: dir.clone(),
        constructs: settings.scaled(200_000.0, 100),
        reps: settings.reps,
    };
    println!(
        "OpenACC overhead (GCC libgomp, host fallback): {} constructs x {} reps per run \
         (64-iteration parallel loop), {rounds} rounds, median ns per construct",
        s.constructs, s.reps
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
    let m = print_rounds("construct", "no tool", &mut rows);
    let (base, empty, kprof) = (m[0], m[1], m[2]);
    println!(
        "  kprof profile-only - no tool = {:+.1} ns per construct; - empty tool = {:+.1} ns \
         per event pair (kprof's own cost)",
        kprof - base,
        kprof - empty
    );
}
