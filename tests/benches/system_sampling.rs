//! What the system sampler (`KPROF_SAMPLE_MS`) costs: the writer thread's CPU time
//! per sample.
//!
//! `tests/harness/system_sampling.c idle MS` sleeps MS ms inside one annotation
//! region, so the writer thread has nothing to do but sample. Variants, interleaved
//! in every round:
//!
//! - `off`: no sampling (the baseline: the writer naps, stocking buffers);
//! - `100ms`, `10ms`: `KPROF_SAMPLE_MS` 100 and 10, the profile aggregated in place;
//! - `10ms+trace`: `KPROF_SAMPLE_MS=10` and a Perfetto trace (every sample also
//!   encoded into the trace; the rounds every `KPROF_FLUSH_MS` are the baseline's
//!   own cost, measured by `off+trace`).
//!
//! Printed per variant (medians over rounds): samples, the sampler's own CPU per
//! sample (`system.sampler_cpu_ns`: reading and parsing the files, the rates and
//! ranges), the writer's whole extra CPU per sample over its baseline in the same
//! round (`kprof.writer_run_cpu_ns`: also the wake-ups and the traces' encoding),
//! and that extra as a share of one core.
//!
//! Environment: `KPROF_BENCH_ROUNDS` (default 5), `KPROF_BENCH_RUN_MS` (default 2000).

use std::path::{Path, PathBuf};

use kprof_tests::bench::{env_f64, median, paired_delta};
use kprof_tests::{assert_ok, clean_cmd, compile_with_core, read_profile, scratch, test_file};

struct Variant {
    name: &'static str,
    sample_ms: Option<&'static str>,
    trace: bool,
    /// Index of its baseline in [`VARIANTS`].
    base: usize,
}

const VARIANTS: [Variant; 5] = [
    Variant {
        name: "off",
        sample_ms: None,
        trace: false,
        base: 0,
    },
    Variant {
        name: "100ms",
        sample_ms: Some("100"),
        trace: false,
        base: 0,
    },
    Variant {
        name: "10ms",
        sample_ms: Some("10"),
        trace: false,
        base: 0,
    },
    Variant {
        name: "off+trace",
        sample_ms: None,
        trace: true,
        base: 3,
    },
    Variant {
        name: "10ms+trace",
        sample_ms: Some("10"),
        trace: true,
        base: 3,
    },
];

/// One run: (writer CPU while the program ran, samples, sampler CPU), ns.
fn run_once(exe: &Path, v: &Variant, run_ms: u64, round: usize) -> (f64, f64, f64) {
    let dir = scratch(&format!(
        "bench_system_sampling_{}_{round}",
        v.name.replace('+', "_")
    ));
    let mut cmd = clean_cmd(exe);
    cmd.args(["idle", &run_ms.to_string()])
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_SUMMARY", "0");
    if let Some(ms) = v.sample_ms {
        cmd.env("KPROF_SAMPLE_MS", ms);
    }
    if v.trace {
        cmd.env("KPROF_TRACE", "perfetto");
    }
    let out = cmd.output().expect("run the harness");
    assert_ok(&out);
    let p = read_profile(&dir.join("out"));
    let writer = p["kprof"]["writer_run_cpu_ns"].as_f64().unwrap_or(f64::NAN);
    let sys = &p["system"];
    let samples = sys["samples"].as_f64().unwrap_or(0.0);
    let sampler = sys["sampler_cpu_ns"].as_f64().unwrap_or(0.0);
    (writer, samples, sampler)
}

fn main() {
    let rounds = env_f64("KPROF_BENCH_ROUNDS", 5.0).max(1.0) as usize;
    let run_ms = env_f64("KPROF_BENCH_RUN_MS", 2000.0).max(100.0) as u64;
    let exe: PathBuf = compile_with_core(
        &[&test_file("harness/system_sampling.c")],
        &scratch("bench_system_sampling_build").join("system_sampling"),
        &[],
    );
    let mut writer = vec![Vec::new(); VARIANTS.len()];
    let mut samples = vec![Vec::new(); VARIANTS.len()];
    let mut sampler = vec![Vec::new(); VARIANTS.len()];
    for round in 0..rounds {
        for (i, v) in VARIANTS.iter().enumerate() {
            let (w, n, s) = run_once(&exe, v, run_ms, round);
            writer[i].push(w);
            samples[i].push(n);
            sampler[i].push(s);
        }
    }
    println!(
        "system sampling: an idle program of {run_ms} ms, {rounds} rounds (medians)\n\
         {:<11} {:>8} {:>14} {:>18} {:>18} {:>12}",
        "variant", "samples", "writer CPU", "sampler CPU/smp", "writer +CPU/smp", "+% of core"
    );
    for (i, v) in VARIANTS.iter().enumerate() {
        let n = median(&mut samples[i].clone());
        let w = median(&mut writer[i].clone());
        let per: Vec<f64> = sampler[i]
            .iter()
            .zip(&samples[i])
            .map(|(s, n)| if *n > 0.0 { s / n } else { f64::NAN })
            .collect();
        let own = median(&mut per.clone());
        let extra = paired_delta(&writer[i], &writer[v.base]);
        let base = median(&mut writer[v.base].clone());
        if v.sample_ms.is_none() {
            println!("{:<11} {:>8} {:>11.3} ms", v.name, "-", w / 1e6);
            continue;
        }
        println!(
            "{:<11} {:>8.0} {:>11.3} ms {:>15.1} us {:>15.1} us {:>11.3}%   (writer CPU {:.2}x {})",
            v.name,
            n,
            w / 1e6,
            own / 1e3,
            extra / n / 1e3,
            100.0 * extra / (run_ms as f64 * 1e6),
            w / base,
            VARIANTS[v.base].name
        );
    }
}
