//! Pieces shared by the benchmark binaries in `tests/benches/`: settings from the
//! environment, medians, running a measured program, and checking that kprof saw
//! every event the program produced (a benchmark that dropped events measured
//! less work than it claims).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{clean_cmd, compile_with_core, nodes, read_profile, scratch, test_file};

/// A positive number from the environment variable `name`, or `default` (with one
/// line on stderr when the variable is set but invalid).
pub fn env_f64(name: &str, default: f64) -> f64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| *x > 0.0 && x.is_finite())
            .unwrap_or_else(|| {
                eprintln!("ignoring invalid {name}={v:?}, using {default}");
                default
            }),
        Err(_) => default,
    }
}

/// A comma-separated list of numbers from environment variable `name`, or `default`.
pub fn env_list(name: &str, default: &str) -> Vec<u64> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// The common knobs of the overhead benchmarks.
pub struct Settings {
    /// Multiplies the events per repetition (`KPROF_BENCH_SCALE`, default 1).
    pub scale: f64,
    /// Timed repetitions per run (`KPROF_BENCH_REPS`, default 7).
    pub reps: u64,
    /// Interleaved rounds per variant (`KPROF_BENCH_ROUNDS`, default `rounds`).
    pub rounds: usize,
}

impl Settings {
    /// The settings from the environment, or `None` when cargo only lists the
    /// benchmark (`--list`, as a plain `cargo test` does): then nothing runs.
    pub fn from_env(rounds: usize) -> Option<Settings> {
        if std::env::args().any(|a| a == "--list") {
            return None;
        }
        Some(Settings {
            scale: env_f64("KPROF_BENCH_SCALE", 1.0),
            reps: (env_f64("KPROF_BENCH_REPS", 7.0) as u64).max(1),
            rounds: (env_f64("KPROF_BENCH_ROUNDS", rounds as f64) as usize).max(1),
        })
    }

    /// `base` events scaled, at least `min`.
    pub fn scaled(&self, base: f64, min: u64) -> u64 {
        ((base * self.scale) as u64).max(min)
    }
}

/// The median of `v` (mean of the middle two for an even count; NaN when empty).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The median over rounds of `v[k] - base[k]`: a difference measured within each
/// round, so rounds that ran while the machine was slower for everyone (this VM
/// halves its vCPU speed for minutes at a time) do not pair a slow variant with a
/// fast baseline. Call before anything sorts the rounds.
pub fn paired_delta(v: &[f64], base: &[f64]) -> f64 {
    let mut d: Vec<f64> = v.iter().zip(base).map(|(x, b)| x - b).collect();
    median(&mut d)
}

/// The smallest of `v` (infinity when empty).
pub fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Runs `cmd` (described by `label` in messages) and returns the number the program
/// printed on its `"<key> <value>"` line; exits the benchmark when the program
/// fails or prints no such line.
pub fn run_for(cmd: &mut Command, label: &str, key: &str) -> f64 {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {label}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        eprintln!(
            "{label} failed: {:?}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1);
    }
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|x| x.trim().parse::<f64>().ok())
        .unwrap_or_else(|| {
            eprintln!("{label}: no {key} in the output: {stdout}");
            std::process::exit(1)
        })
}

/// Exits the benchmark unless the profile in `out_dir` dropped no record and
/// counted exactly `want` nodes' worth of `kind` (summed over the tree).
pub fn require_complete(out_dir: &Path, label: &str, kind: &str, want: u64) {
    let p = read_profile(out_dir);
    let dropped = p["dropped_records"].as_u64().unwrap_or(u64::MAX);
    if dropped != 0 {
        eprintln!("{label}: kprof dropped {dropped} records; raise KPROF_BUFFER_MB");
        std::process::exit(1);
    }
    let counted: u64 = nodes(&p)
        .iter()
        .filter(|(_, n)| n["kind"] == kind)
        .map(|(_, n)| n["count"].as_u64().unwrap_or(0))
        .sum();
    if counted != want {
        eprintln!("{label}: kprof counted {counted} {kind} events, the program ran {want}");
        std::process::exit(1);
    }
}

/// kprof's account of its own cost in the profile in `out_dir`: (time spent faulting
/// in buffer memory in ns, bytes of records).
pub fn buffer_cost(out_dir: &Path) -> (f64, f64) {
    let p = read_profile(out_dir);
    let k = &p["kprof"];
    let num = |key: &str| k[key].as_f64().unwrap_or(f64::NAN);
    (num("buffer_fault_ns"), num("record_bytes"))
}

/// The CPU time kprof's writer thread took while the program ran (before the
/// end), in ns, from `profile.json` in `out_dir`.
pub fn writer_run_cpu(out_dir: &Path) -> f64 {
    read_profile(out_dir)["kprof"]["writer_run_cpu_ns"]
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// `tests/harness/trace_driver.c` linked against the core, built in the scratch
/// directory `scratch_name`.
pub fn trace_driver(scratch_name: &str) -> PathBuf {
    compile_with_core(
        &[&test_file("harness/trace_driver.c")],
        &scratch(scratch_name).join("trace_driver"),
        &["-lpthread"],
    )
}

/// A `trace_driver bench <n>` command writing to `out_dir` with a `buffer_mb` MiB
/// buffer budget and no summary; the caller adds the variant's settings.
pub fn trace_driver_cmd(exe: &Path, n: u64, out_dir: &Path, buffer_mb: u64) -> Command {
    let mut cmd = clean_cmd(exe);
    cmd.args(["bench", &n.to_string()])
        .env("KPROF_OUTPUT_DIR", out_dir)
        .env("KPROF_SUMMARY", "0")
        .env("KPROF_BUFFER_MB", buffer_mb.to_string());
    cmd
}

/// What `trace_driver bench` reports about itself.
pub struct DriverCost {
    /// Wall time of the measured loop.
    pub wall_ns: f64,
    /// CPU time of the whole process (all threads, the writer included).
    pub cpu_ns: f64,
    /// Peak resident set size.
    pub maxrss_kib: f64,
}

impl DriverCost {
    /// Parses the driver's `key=value` lines; panics naming a missing key.
    pub fn parse(stdout: &str) -> DriverCost {
        let val = |key: &str| -> f64 {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {key} in driver output:\n{stdout}"))
        };
        DriverCost {
            wall_ns: val("wall_ns"),
            cpu_ns: val("cpu_ns"),
            maxrss_kib: val("maxrss_kb"),
        }
    }
}

/// Prints one row per variant: the median of its rounds and its difference from
/// the first row (the baseline, called `vs` in the header), the best round and its
/// difference from the baseline's best, and every round. Returns the medians, in
/// row order.
pub fn print_rounds(unit: &str, vs: &str, rows: &mut [(&str, Vec<f64>)]) -> Vec<f64> {
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(7);
    println!(
        "  {:<width$} {:>12} {:>12} {:>8} {:>12}  rounds",
        "variant",
        format!("ns/{unit}"),
        format!("vs {vs}"),
        "best",
        "best vs"
    );
    let medians: Vec<f64> = rows.iter_mut().map(|(_, l)| median(l)).collect();
    let bests: Vec<f64> = rows.iter().map(|(_, l)| best(l)).collect();
    for (i, (name, list)) in rows.iter().enumerate() {
        let rounds: Vec<String> = list.iter().map(|x| format!("{x:.0}")).collect();
        println!(
            "  {:<width$} {:>12.1} {:>+12.1} {:>8.1} {:>+12.1}  {}",
            name,
            medians[i],
            medians[i] - medians[0],
            bests[i],
            bests[i] - bests[0],
            rounds.join("/")
        );
    }
    medians
}
