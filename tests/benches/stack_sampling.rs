//! What the call-stack samples (`KPROF_SAMPLE_HZ`) cost a compute-bound program.
//!
//! `tests/sampling/cost.c UNITS` computes UNITS x ~10 ms on one thread inside one
//! annotation region (a call chain three deep) and prints the CPU time that took
//! on its thread (the sampling handler runs on that thread, so its time is in
//! it), after timing a bare signal delivery (`tgkill` to itself, an empty
//! handler) in the same process. Variants, interleaved in every round, all under
//! kprof: `off` (no sampling), `100Hz` and `1000Hz` (`KPROF_SAMPLE_HZ`; the kernel
//! fires CPU-time timers at its tick, so 1000 Hz gets the tick's rate with the
//! rest as overruns).
//!
//! Printed (medians over rounds): each variant's compute CPU time and its ratio
//! to `off` in the same round (on a shared VM this moves by a percent or two from
//! run to run either way), the signals handled, the handler's own time per signal
//! (`stack_samples.handler_ns_mean`: unwind and record, measured inside the
//! handler) beside the bare delivery's time measured in the same run, and what
//! those add up to as a share of the compute time: signals x (handler + bare
//! delivery) / compute CPU.
//!
//! Environment: `KPROF_BENCH_ROUNDS` (default 5), `KPROF_BENCH_UNITS` (default 100).

use std::path::{Path, PathBuf};

use kprof_tests::bench::{env_f64, median};
use kprof_tests::{assert_ok, clean_cmd, compile_with_core, read_profile, scratch, test_file};

const VARIANTS: [(&str, Option<&str>); 3] = [
    ("off", None),
    ("100Hz", Some("100")),
    ("1000Hz", Some("1000")),
];

/// The value after `key ` on `text`'s lines.
fn value(text: &str, key: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(f64::NAN)
}

/// One run: (compute CPU ns, signals handled, handler ns per signal, bare signal ns).
fn run_once(exe: &Path, hz: Option<&str>, units: u64, dir: &Path) -> (f64, f64, f64, f64) {
    let out_dir = dir.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut cmd = clean_cmd(exe);
    cmd.arg(units.to_string())
        .env("KPROF_OUTPUT_DIR", &out_dir)
        .env("KPROF_SUMMARY", "0");
    if let Some(hz) = hz {
        cmd.env("KPROF_SAMPLE_HZ", hz);
    }
    let out = cmd.output().expect("run the cost program");
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let p = read_profile(&out_dir);
    let s = &p["stack_samples"];
    (
        value(&text, "compute_cpu_ns"),
        s["signals"].as_f64().unwrap_or(0.0),
        s["handler_ns_mean"].as_f64().unwrap_or(f64::NAN),
        value(&text, "bare_signal_ns"),
    )
}

fn main() {
    let rounds = env_f64("KPROF_BENCH_ROUNDS", 5.0).max(1.0) as usize;
    let units = env_f64("KPROF_BENCH_UNITS", 100.0).max(1.0) as u64;
    let exe: PathBuf = compile_with_core(
        &[&test_file("sampling/cost.c")],
        &scratch("bench_stack_sampling_build").join("cost"),
        &[],
    );
    let dir = scratch("bench_stack_sampling");
    let mut cpu = vec![Vec::new(); VARIANTS.len()];
    let mut ratio = vec![Vec::new(); VARIANTS.len()];
    let mut samples = vec![Vec::new(); VARIANTS.len()];
    let mut handler = vec![Vec::new(); VARIANTS.len()];
    let mut bare = Vec::new();
    for _ in 0..rounds {
        let mut base = f64::NAN;
        for (i, (_, hz)) in VARIANTS.iter().enumerate() {
            let (c, n, h, b) = run_once(&exe, *hz, units, &dir);
            if i == 0 {
                base = c;
            }
            cpu[i].push(c);
            ratio[i].push(c / base);
            samples[i].push(n);
            handler[i].push(h);
            bare.push(b);
        }
    }
    println!(
        "call-stack samples: a compute-bound thread, {units} x ~10 ms, {rounds} rounds (medians)\n\
         bare signal delivery (tgkill to itself, empty handler), same runs: {:.0} ns\n\
         {:<8} {:>14} {:>10} {:>9} {:>18} {:>12}",
        median(&mut bare.clone()),
        "variant",
        "compute CPU",
        "x off",
        "signals",
        "handler ns/signal",
        "added"
    );
    let bare_ns = median(&mut bare.clone());
    for (i, (name, hz)) in VARIANTS.iter().enumerate() {
        let c = median(&mut cpu[i].clone());
        let r = median(&mut ratio[i].clone());
        if hz.is_none() {
            println!("{name:<8} {:>11.1} ms {:>10}", c / 1e6, "1");
            continue;
        }
        let n = median(&mut samples[i].clone());
        let h = median(&mut handler[i].clone());
        println!(
            "{name:<8} {:>11.1} ms {:>10.4} {:>9.0} {:>18.0} {:>11.3}%",
            c / 1e6,
            r,
            n,
            h,
            100.0 * n * (h + bare_ns) / c
        );
    }
}
