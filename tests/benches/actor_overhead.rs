//! Cost of kprof's actor plugin per logical message: the histogram of
//! `tests/actor/histo.c` (8-byte items through the stand-in Conveyors, every
//! update a `convey_push` that returned OK and a `convey_pull` on the owner) on
//! 2 OpenSHMEM PEs (`KPROF_BENCH_PES`), 1,000,000 messages per PE (times `KPROF_BENCH_SCALE`). Each
//! run's time is the slower PE's phase as the program measures it itself
//! (`convey_begin` .. `convey_free`), divided by its messages.
//!
//! Variants, interleaved round by round (`KPROF_BENCH_ROUNDS`, default 5):
//! no tool (linked without the wrappers); the link-time wrappers without kprof
//! (their lookup found nothing: one branch per call); kprof counting messages
//! only (`KPROF_ACTOR_BREAKDOWN=0`); kprof with the MAIN/PROC/COMM breakdown
//! (the default); kprof with the breakdown on the program linked without the
//! wrappers (its entries hooked at load time, x86-64). The verdict is the paired median difference to "no tool"
//! within each round (`paired_delta`), in ns per message.
//!
//! ```text
//! cargo bench -p kprof-tests --bench actor_overhead
//! ```

use std::process::Output;

use kprof_tests::actor::{have_oshmem, oshrun, programs};
use kprof_tests::bench::{paired_delta, print_rounds, Settings};
use kprof_tests::{assert_ok, lib, scratch};

#[derive(Clone, Copy)]
enum Variant {
    NoTool,
    Wrapped,
    CountsOnly,
    Breakdown,
    Hooked,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::NoTool,
        Variant::Wrapped,
        Variant::CountsOnly,
        Variant::Breakdown,
        Variant::Hooked,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::NoTool => "no tool",
            Variant::Wrapped => "wrappers, no kprof",
            Variant::CountsOnly => "kprof --actor, KPROF_ACTOR_BREAKDOWN=0",
            Variant::Breakdown => "kprof --actor (breakdown)",
            Variant::Hooked => "kprof --actor, not relinked: load-time hooks (breakdown)",
        }
    }
}

/// ns per message of one run: the slower PE's phase over its messages.
fn per_message(out: &Output, np: usize, messages: u64) -> f64 {
    let text = String::from_utf8_lossy(&out.stdout);
    let phases: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("phase "))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(phases.len(), np, "{text}");
    *phases.iter().max().unwrap() as f64 / messages as f64
}

fn main() {
    let Some(settings) = Settings::from_env(5) else {
        return;
    };
    if !have_oshmem() {
        eprintln!("SKIP: OpenSHMEM (oshcc, oshrun) is not available");
        return;
    }
    let progs = programs();
    let kprof = lib("kprof").display().to_string();
    let n = settings.scaled(1_000_000.0, 1000);
    // PEs (`KPROF_BENCH_PES`, default 2; 1 leaves out the waiting on a peer).
    let np = kprof_tests::bench::env_f64("KPROF_BENCH_PES", 2.0) as usize;
    let n_arg = n.to_string();
    let dir = scratch("actor_bench");
    let mut rows: Vec<(&str, Vec<f64>)> = Variant::ALL.iter().map(|v| (v.name(), vec![])).collect();
    println!("actor plugin: histogram, 8-byte items, {np} PEs, {n} messages per PE");
    for round in 0..settings.rounds {
        for (i, v) in Variant::ALL.iter().enumerate() {
            let unwrapped = progs.histo_unwrapped.display().to_string();
            let wrapped = progs.histo.display().to_string();
            let out_dir = dir.join(format!("r{round}_{i}_pe%r")).display().to_string();
            let kprof_args = |exe: &str| -> Vec<String> {
                [
                    &kprof,
                    "run",
                    "--actor",
                    "--summary",
                    "0",
                    "-q",
                    "-o",
                    &out_dir,
                    "--",
                    exe,
                    &n_arg,
                ]
                .iter()
                .map(|s| s.to_string())
                .collect()
            };
            let (args, env): (Vec<String>, Vec<(&str, &str)>) = match v {
                Variant::NoTool => (vec![unwrapped, n_arg.clone()], vec![]),
                Variant::Wrapped => (vec![wrapped, n_arg.clone()], vec![]),
                Variant::CountsOnly => (kprof_args(&wrapped), vec![("KPROF_ACTOR_BREAKDOWN", "0")]),
                Variant::Breakdown => (kprof_args(&wrapped), vec![]),
                Variant::Hooked => (kprof_args(&unwrapped), vec![]),
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = oshrun(np, &args, &env);
            assert_ok(&out);
            rows[i].1.push(per_message(&out, np, n));
        }
    }
    let base = rows[0].1.clone();
    let deltas: Vec<f64> = rows.iter().map(|(_, l)| paired_delta(l, &base)).collect();
    let medians = print_rounds("message", "no tool", &mut rows);
    for (i, v) in Variant::ALL.iter().enumerate().skip(1) {
        println!(
            "  {}: {:+.1} ns per message vs no tool (paired median), ratio {:.2}",
            v.name(),
            deltas[i],
            medians[i] / medians[0]
        );
    }
}
