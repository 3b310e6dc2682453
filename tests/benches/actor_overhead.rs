//! Cost of kprof's actor plugin per logical message: the histogram of
//! `tests/actor/histo.c` (8-byte items through the stand-in Conveyors, every
//! update a `convey_push` that returned OK and a `convey_pull` on the owner) on
//! 2 OpenSHMEM PEs (`KPROF_BENCH_PES`), 1,000,000 messages per PE (times `KPROF_BENCH_SCALE`). Each
//! run's time is the slower PE's phase as the program measures it itself
//! (`convey_begin` .. `convey_free`), divided by its messages.
//!
//! Variants, interleaved round by round (`KPROF_BENCH_ROUNDS`, default 5):
//! no tool (linked without the wrappers); the link-time wrappers without kprof
//! (their lookup found nothing: one branch per call); the floor of an exact
//! breakdown through the wrappers (`tests/bench/actor_floor_tool.c` preloaded
//! in place of kprof: the wrappers read the TSC before every Conveyors entry, its
//! `leave` reads it after and stores the pair, 16 bytes, in a ring; nothing
//! else); kprof counting messages only (`KPROF_ACTOR_BREAKDOWN=0`); kprof with
//! the MAIN/PROC/COMM breakdown (the default); kprof with the breakdown on the
//! program linked without the wrappers (its entries hooked at load time,
//! x86-64). The verdict is the paired median difference to "no tool" within
//! each round (`paired_delta`), in ns per message, and the breakdown's beside
//! the floor's: what no exact breakdown through these wrappers can go below.
//!
//! Every run must exit 0 and print, on every PE, its phase and the histogram's
//! result, the same in every variant as with no tool (the items handled and the
//! table's checksum); the floor's runs must also report their entries from every
//! PE (the preload reached each), and their count per message is printed.
//!
//! ```text
//! cargo bench -p kprof-tests --bench actor_overhead
//! ```

use std::process::Output;

use kprof_tests::actor::{have_oshmem, oshrun, programs};
use kprof_tests::bench::{median, paired_delta, print_rounds, Settings};
use kprof_tests::{assert_ok, compile, lib, scratch, target_dir, test_file};

/// ns per message kprof's breakdown may add (the issue's target).
const TARGET_NS: f64 = 15.0;

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    NoTool,
    Wrapped,
    Floor,
    CountsOnly,
    Breakdown,
    Hooked,
}

impl Variant {
    const ALL: [Variant; 6] = [
        Variant::NoTool,
        Variant::Wrapped,
        Variant::Floor,
        Variant::CountsOnly,
        Variant::Breakdown,
        Variant::Hooked,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::NoTool => "no tool",
            Variant::Wrapped => "wrappers, no kprof",
            Variant::Floor => "floor: TSC around each entry + 16 B (wrappers)",
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

/// The histogram's result lines (`result <pe> <handled> <checksum>`), sorted by
/// PE: the same in every run of one size (the random streams are fixed), so a
/// tool that changed what the program computed shows here.
fn results(out: &Output, np: usize, messages: u64) -> Vec<String> {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("result "))
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines.len(), np, "a PE printed no result:\n{text}");
    let handled: u64 = lines
        .iter()
        .map(|l| l.split_whitespace().nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(handled, np as u64 * messages, "messages lost:\n{text}");
    lines
}

/// The floor library's count of wrapped entries, summed over the PEs; panics
/// unless every PE reported (the preload reached each PE).
fn floor_entries(out: &Output, np: usize) -> u64 {
    let text = String::from_utf8_lossy(&out.stderr);
    let counts: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("actor floor: "))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        counts.len(),
        np,
        "not every PE ran the floor library:\n{text}"
    );
    counts.iter().sum()
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
    let tool_dir = target_dir().join("bench-actor");
    std::fs::create_dir_all(&tool_dir).expect("create target/bench-actor");
    let floor = compile(
        &[&test_file("bench/actor_floor_tool.c")],
        &tool_dir.join("libactor_floor_tool.so"),
        &["-shared", "-fPIC"],
    );
    let floor = floor.display().to_string();
    let n = settings.scaled(1_000_000.0, 1000);
    // PEs (`KPROF_BENCH_PES`, default 2; 1 leaves out the waiting on a peer).
    let np = kprof_tests::bench::env_f64("KPROF_BENCH_PES", 2.0) as usize;
    let n_arg = n.to_string();
    let dir = scratch("actor_bench");
    let mut rows: Vec<(&str, Vec<f64>)> = Variant::ALL.iter().map(|v| (v.name(), vec![])).collect();
    println!("actor plugin: histogram, 8-byte items, {np} PEs, {n} messages per PE");
    let mut entries_per_message = vec![];
    for round in 0..settings.rounds {
        let mut expected: Option<Vec<String>> = None;
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
                Variant::Floor => (vec![wrapped, n_arg.clone()], vec![("LD_PRELOAD", &floor)]),
                Variant::CountsOnly => (kprof_args(&wrapped), vec![("KPROF_ACTOR_BREAKDOWN", "0")]),
                Variant::Breakdown => (kprof_args(&wrapped), vec![]),
                Variant::Hooked => (kprof_args(&unwrapped), vec![]),
            };
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = oshrun(np, &args, &env);
            assert_ok(&out);
            rows[i].1.push(per_message(&out, np, n));
            let got = results(&out, np, n);
            match &expected {
                None => expected = Some(got),
                Some(want) => {
                    assert_eq!(&got, want, "{}: another histogram than no tool's", v.name())
                }
            }
            if *v == Variant::Floor {
                entries_per_message.push(floor_entries(&out, np) as f64 / (np as u64 * n) as f64);
            }
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
    let at = |w: Variant| Variant::ALL.iter().position(|v| *v == w).unwrap();
    let spread: Vec<String> = entries_per_message
        .iter()
        .map(|x| format!("{x:.3}"))
        .collect();
    println!(
        "  wrapped Conveyors entries per message (the floor's count, all PEs): median {:.3} ({})",
        median(&mut entries_per_message.clone()),
        spread.join("/")
    );
    println!(
        "  kprof breakdown: {:+.1} ns per message; the floor of an exact breakdown (TSC around \
         each entry + 16 B): {:+.1} ns; target +{TARGET_NS:.0}",
        deltas[at(Variant::Breakdown)],
        deltas[at(Variant::Floor)]
    );
}
