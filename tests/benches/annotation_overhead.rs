//! The annotation API's cost per region (a `kprof_region_begin` /
//! `kprof_region_end` pair), inert and measuring, against stand-ins measured in
//! the same run. The API measures only when asked (`kprof run`, a `KPROF_*`
//! setting, a loaded plugin); otherwise each call is a load and a branch. This
//! prints what that costs beyond the call itself.
//!
//! `tests/bench/annotation_driver.c` calls the pair 1,000,000 times (times
//! `KPROF_BENCH_SCALE`) per repetition through the addresses the loader resolved,
//! as a program linked with the library does: one untimed warm-up, then
//! `KPROF_BENCH_REPS` (default 7) timed repetitions, median ns per pair. Variants,
//! interleaved round by round (`KPROF_BENCH_ROUNDS`, default 5) so that background
//! load hits them alike; a row is the median of its rounds:
//!
//! - `no call`: the loop alone;
//! - `empty`: a library whose two functions return at once (the calls' own cost,
//!   the floor of the inert API);
//! - `kprof inert`: `libkprof_core.so` with no `KPROF_*` setting (nothing
//!   recorded nor written: checked);
//! - `floor`: a library whose begin reads the TSC and whose end reads it again and
//!   stores 16 bytes (the least a measuring library does);
//! - `kprof measuring`: `libkprof_core.so` with `KPROF_OUTPUT_DIR` (profile only;
//!   every region counted: checked).
//!
//! The verdicts are ratios: kprof inert / empty, kprof measuring / floor.
//!
//! ```text
//! cargo bench -p kprof-tests --bench annotation_overhead
//! ```

use std::path::{Path, PathBuf};

use kprof_tests::bench::{print_rounds, require_complete, run_for, Settings};
use kprof_tests::{clean_cmd, compile, lib, target_dir, test_file};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    NoCall,
    Empty,
    Inert,
    Floor,
    Measuring,
}

impl Variant {
    const ALL: [Variant; 5] = [
        Variant::NoCall,
        Variant::Empty,
        Variant::Inert,
        Variant::Floor,
        Variant::Measuring,
    ];

    fn name(self) -> &'static str {
        match self {
            Variant::NoCall => "no call",
            Variant::Empty => "empty",
            Variant::Inert => "kprof inert",
            Variant::Floor => "floor (2 TSC reads, 16 B)",
            Variant::Measuring => "kprof measuring",
        }
    }
}

struct Setup {
    driver: PathBuf,
    empty: PathBuf,
    floor: PathBuf,
    dir: PathBuf,
    pairs: u64,
    reps: u64,
}

/// One run in a directory of its own: ns per pair (median of the driver's
/// repetitions).
fn run_once(s: &Setup, v: Variant, round: usize) -> f64 {
    let dir = s.dir.join(format!("{v:?}-{round}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let out_dir = dir.join("out");
    let core = lib("libkprof_core.so");
    let library: &Path = match v {
        Variant::NoCall => Path::new("none"),
        Variant::Empty => &s.empty,
        Variant::Floor => &s.floor,
        Variant::Inert | Variant::Measuring => &core,
    };
    let mut cmd = clean_cmd(&s.driver);
    cmd.current_dir(&dir)
        .arg(library)
        .arg(s.pairs.to_string())
        .arg(s.reps.to_string());
    if v == Variant::Measuring {
        cmd.env("KPROF_OUTPUT_DIR", &out_dir)
            .env("KPROF_SUMMARY", "0");
    }
    let label = format!("{v:?}");
    let ns = run_for(&mut cmd, &label, "ns_per_pair");
    match v {
        Variant::Measuring => {
            require_complete(&out_dir, &label, "user_region", s.pairs * (s.reps + 1))
        }
        Variant::Inert => {
            let left: Vec<_> = std::fs::read_dir(&dir)
                .expect("run dir")
                .map(|e| e.expect("entry").file_name())
                .collect();
            if !left.is_empty() {
                eprintln!("{label}: the inert API wrote {left:?}");
                std::process::exit(1);
            }
        }
        _ => {}
    }
    let _ = std::fs::remove_dir_all(&dir);
    ns
}

fn main() {
    let Some(settings) = Settings::from_env(5) else {
        return;
    };
    let rounds = settings.rounds;
    let dir = target_dir().join("bench-annotation");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let tools = test_file("bench/annotation_tools.c");
    let s = Setup {
        driver: compile(
            &[&test_file("bench/annotation_driver.c")],
            &dir.join("annotation_driver"),
            &["-ldl"],
        ),
        empty: compile(
            &[&tools],
            &dir.join("libempty_annotations.so"),
            &["-shared", "-fPIC"],
        ),
        floor: compile(
            &[&tools],
            &dir.join("libfloor_annotations.so"),
            &["-shared", "-fPIC", "-DFLOOR"],
        ),
        dir: dir.clone(),
        pairs: settings.scaled(1_000_000.0, 1000),
        reps: settings.reps,
    };
    println!(
        "annotation API: {} region pairs x {} reps per run, {rounds} rounds, median ns per pair",
        s.pairs, s.reps
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
    let m = print_rounds("pair", "no call", &mut rows);
    let (empty, inert, floor, measuring) = (m[1], m[2], m[3], m[4]);
    println!(
        "  kprof inert / empty = {:.2} ({:+.2} ns per pair beyond the calls)",
        inert / empty,
        inert - empty
    );
    println!(
        "  kprof measuring / floor = {:.2} ({:+.1} ns per pair beyond the floor)",
        measuring / floor,
        measuring - floor
    );
}
