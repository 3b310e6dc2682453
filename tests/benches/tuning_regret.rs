//! What kprof's tuner costs a program before it settles, against a naive grid: the
//! `tune_bench` scenario of `tests/harness/kokkos_host.c` (loaded as Kokkos loads a
//! tool) has three tuning problems whose best values are known by construction (a set
//! of 9 values with its best at 32, the default 8; the same set with its best at 4,
//! the default 64; an integer range [1, 512] with its best at 300, the default 128;
//! 20 us at the best, more the further from it). Both strategies run the same
//! problems, the same number of contexts, in the same round of the benchmark:
//!
//! - **kprof**: `KPROF_TUNE=1`, kprof's tuner answers every request;
//! - **grid**: the scenario tunes itself (`TUNE_BENCH_GRID=1`, no tool): every
//!   candidate 3 times, round-robin (the range: 9 evenly spread points), then the
//!   lowest median of 3 for every later context.
//!
//! Per problem and strategy it prints the **regret**: the sum over the run's contexts
//! of (the context's time - the best value's time), from the times the values cost by
//! construction (the measured times add the machine's noise, which no strategy
//! controls); the regret until the strategy settled; the **contexts to
//! convergence** (the contexts before the value stops changing; for kprof also its
//! `search_contexts` in profile.json); and the values settled on. Then the totals over
//! the three problems as ratios kprof / grid, and how many settled values were slower
//! than the default (by construction) for each strategy.
//!
//! A benchmark, not a test: run with
//!
//! ```text
//! cargo bench -p kprof-tests --bench tuning_regret
//! ```
//!
//! Two regimes, one table each: **quiet** (the machine as it is) and **loaded**
//! (`n` competing busy processes per core, `sh -c 'while :; do :; done'`, started
//! before and ended after the regime's runs). The system's load average is printed
//! with each.
//!
//! Environment:
//! - `KPROF_BENCH_LOAD` (default `0,1`): the regimes, as busy processes per core.
//! - `KPROF_BENCH_ROUNDS` (default `5`): runs of each strategy per regime,
//!   interleaved; a row reports medians over the rounds (and every settled value).
//! - `KPROF_BENCH_CONTEXTS` (default `200`): contexts per problem in a run.
//! - `KPROF_BENCH_ENFORCE=1`: exit 1 when kprof's total regret exceeds the grid's
//!   (median over the rounds) in the quiet regime, or when any value kprof settled
//!   on in any regime is slower than the default.
//!
//! Exit status 1 when a run fails or its output cannot be read, or (with
//! `KPROF_BENCH_ENFORCE=1`) a target is missed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use kprof_tests::bench::{env_f64, env_list, median};
use kprof_tests::{build_kokkos_hosts, clean_cmd, lib, read_profile, scratch};

/// The problems of `tune_bench`, in the order it runs them.
const PROBLEMS: [&str; 3] = ["tile", "chunk", "rows"];
/// The best value's cost in every problem, by construction (ns).
const BEST_NS: f64 = 20_000.0;

/// A problem as the scenario declares it.
#[derive(Debug, Clone, Default)]
struct Declared {
    default: i64,
    default_ns: f64,
    best: i64,
}

/// One strategy's run of one problem.
#[derive(Debug, Clone, Default)]
struct Outcome {
    /// Sum over contexts of (cost - best cost), ns.
    regret: f64,
    /// The same until the value stopped changing, ns.
    search_regret: f64,
    /// Contexts before the value stopped changing.
    converged: usize,
    /// kprof's `search_contexts` (none for the grid).
    search_contexts: Option<u64>,
    settled: i64,
    settled_ns: f64,
}

fn fail(msg: String) -> ! {
    eprintln!("tuning_regret: {msg}");
    std::process::exit(1)
}

/// Parses the scenario's stdout: the declared problems and each problem's outcome.
fn parse(stdout: &str) -> (BTreeMap<String, Declared>, BTreeMap<String, Outcome>) {
    let mut declared = BTreeMap::new();
    let mut runs: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
    for line in stdout.lines() {
        let fields: BTreeMap<&str, &str> = line
            .split_whitespace()
            .filter_map(|f| f.split_once('='))
            .collect();
        let num = |k: &str| -> f64 {
            fields
                .get(k)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| fail(format!("no {k} in {line:?}")))
        };
        if let Some(rest) = line.strip_prefix("problem ") {
            let name = rest.split_whitespace().next().unwrap_or_default();
            declared.insert(
                name.to_string(),
                Declared {
                    default: num("default") as i64,
                    default_ns: num("default_ns"),
                    best: num("best") as i64,
                },
            );
            continue;
        }
        let Some((name, value)) = line
            .split_whitespace()
            .next()
            .and_then(|f| f.split_once('='))
        else {
            fail(format!("unexpected line {line:?}"))
        };
        let value: i64 = value
            .parse()
            .unwrap_or_else(|_| fail(format!("unexpected line {line:?}")));
        runs.entry(name.to_string())
            .or_default()
            .push((value, num("ns")));
    }
    let outcomes = runs
        .into_iter()
        .map(|(name, seq)| {
            let last = seq.last().copied().unwrap_or_default();
            let converged = seq
                .iter()
                .rposition(|&(v, _)| v != last.0)
                .map_or(0, |i| i + 1);
            let regret = |s: &[(i64, f64)]| s.iter().map(|&(_, ns)| ns - BEST_NS).sum::<f64>();
            let o = Outcome {
                regret: regret(&seq),
                search_regret: regret(&seq[..converged]),
                converged,
                search_contexts: None,
                settled: last.0,
                settled_ns: last.1,
            };
            (name, o)
        })
        .collect();
    (declared, outcomes)
}

/// Runs the scenario once with `strategy` ("kprof" or "grid").
fn run_once(
    host: &Path,
    dir: &Path,
    strategy: &str,
    contexts: u64,
    round: usize,
) -> (BTreeMap<String, Declared>, BTreeMap<String, Outcome>) {
    let out_dir = dir.join(format!("{strategy}-{round}"));
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut cmd = clean_cmd(host);
    cmd.args(["4", "tune_bench", &contexts.to_string()])
        .stdin(Stdio::null());
    if strategy == "kprof" {
        cmd.env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
            .env("KPROF_OUTPUT_DIR", &out_dir)
            .env("KPROF_TUNE", "1");
    } else {
        cmd.env("TUNE_BENCH_GRID", "1");
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| fail(format!("{}: {e}", host.display())));
    if !out.status.success() {
        fail(format!(
            "{strategy} run failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let (declared, mut outcomes) = parse(&String::from_utf8_lossy(&out.stdout));
    if strategy == "kprof" {
        let profile = read_profile(&out_dir);
        let problems = profile["extensions"]["tuning"]["problems"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| fail(format!("no tuning block in {}", out_dir.display())));
        for p in problems {
            let name = p["variables"][0]["name"].as_str().unwrap_or_default();
            if let Some(o) = outcomes.get_mut(name) {
                o.search_contexts = p["search_contexts"].as_u64();
            }
        }
    }
    if PROBLEMS.iter().any(|p| !outcomes.contains_key(*p)) {
        fail(format!("{strategy}: a problem is missing: {outcomes:?}"));
    }
    (declared, outcomes)
}

/// Busy processes competing for the cores, ended when dropped.
struct Load(Vec<Child>);

impl Load {
    fn start(per_core: u64) -> Load {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
        let children = (0..per_core * cores)
            .map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|e| fail(format!("sh: {e}")))
            })
            .collect();
        // Let the scheduler spread them.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Load(children)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn ms(ns: f64) -> String {
    format!("{:.2}", ns / 1e6)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let loads = env_list("KPROF_BENCH_LOAD", "0,1");
    let rounds = (env_f64("KPROF_BENCH_ROUNDS", 5.0) as usize).max(1);
    let contexts = (env_f64("KPROF_BENCH_CONTEXTS", 200.0) as u64).max(30);
    let enforce = std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1");
    if !lib("libkprof.so").is_file() {
        fail(format!(
            "{} was not built (cargo build --release -p kprof-kokkos)",
            lib("libkprof.so").display()
        ));
    }
    let dir = scratch("tuning_regret");
    let host = build_kokkos_hosts(&dir).0;
    println!(
        "tuning regret: 3 problems x {contexts} contexts, {rounds} round(s) per regime; \
         regret in ms (sum of time - best time over contexts), medians over rounds"
    );
    let mut missed = Vec::new();
    for &per_core in &loads {
        let load = (per_core > 0).then(|| Load::start(per_core));
        let regime = if per_core == 0 {
            "quiet".to_string()
        } else {
            format!("loaded ({per_core} busy process(es) per core)")
        };
        // [strategy][round] -> outcomes
        let mut all: BTreeMap<&str, Vec<BTreeMap<String, Outcome>>> = BTreeMap::new();
        let mut declared = BTreeMap::new();
        let before = loadavg();
        for round in 0..rounds {
            for strategy in ["kprof", "grid"] {
                let (d, o) = run_once(&host, &dir, strategy, contexts, round);
                declared = d;
                all.entry(strategy).or_default().push(o);
            }
        }
        println!(
            "\n## {regime}; load average before {before}, after {}",
            loadavg()
        );
        println!(
            "{:<6} {:<6} {:>10} {:>14} {:>10} {:>9}  settled (default, best)",
            "", "", "regret ms", "until settled", "contexts", "searched"
        );
        let mut totals: BTreeMap<&str, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
        let mut worse: BTreeMap<&str, usize> = BTreeMap::new();
        for problem in PROBLEMS {
            let d = declared.get(problem).cloned().unwrap_or_default();
            for strategy in ["kprof", "grid"] {
                let runs: Vec<&Outcome> = all[strategy].iter().map(|r| &r[problem]).collect();
                let mut regret: Vec<f64> = runs.iter().map(|o| o.regret).collect();
                let mut search: Vec<f64> = runs.iter().map(|o| o.search_regret).collect();
                let mut conv: Vec<f64> = runs.iter().map(|o| o.converged as f64).collect();
                let searched = runs
                    .iter()
                    .filter_map(|o| o.search_contexts)
                    .map(|n| n as f64)
                    .collect::<Vec<_>>();
                let settled: Vec<String> = runs.iter().map(|o| o.settled.to_string()).collect();
                let n_worse = runs.iter().filter(|o| o.settled_ns > d.default_ns).count();
                *worse.entry(strategy).or_default() += n_worse;
                println!(
                    "{problem:<6} {strategy:<6} {:>10} {:>14} {:>10} {:>9}  {} ({}, {}){}",
                    ms(median(&mut regret)),
                    ms(median(&mut search)),
                    median(&mut conv),
                    if searched.is_empty() {
                        "-".to_string()
                    } else {
                        median(&mut searched.clone()).to_string()
                    },
                    settled.join(" "),
                    d.default,
                    d.best,
                    if n_worse > 0 {
                        format!(": {n_worse} slower than the default")
                    } else {
                        String::new()
                    }
                );
            }
        }
        for strategy in ["kprof", "grid"] {
            for round in &all[strategy] {
                let t = totals.entry(strategy).or_default();
                t.0.push(round.values().map(|o| o.regret).sum());
                t.1.push(round.values().map(|o| o.converged as f64).sum());
            }
        }
        let mut med = |s: &str, k: usize| {
            let t = totals.get_mut(s).expect("both ran");
            median(if k == 0 { &mut t.0 } else { &mut t.1 })
        };
        let (kr, gr) = (med("kprof", 0), med("grid", 0));
        let (kc, gc) = (med("kprof", 1), med("grid", 1));
        println!(
            "total  regret: kprof {} ms, grid {} ms, kprof/grid {:.2}; contexts to \
             convergence: kprof {kc}, grid {gc}, kprof/grid {:.2}",
            ms(kr),
            ms(gr),
            kr / gr,
            kc / gc
        );
        println!(
            "settled slower than the default: kprof {} of {}, grid {} of {}",
            worse["kprof"],
            3 * rounds,
            worse["grid"],
            3 * rounds
        );
        if per_core == 0 && kr > gr {
            missed.push(format!(
                "{regime}: regret {} ms > grid {} ms",
                ms(kr),
                ms(gr)
            ));
        }
        if worse["kprof"] > 0 {
            missed.push(format!(
                "{regime}: {} value(s) settled slower than the default",
                worse["kprof"]
            ));
        }
        drop(load);
    }
    if !missed.is_empty() {
        println!("\ntargets missed: {}", missed.join("; "));
        if enforce {
            std::process::exit(1);
        }
    } else {
        println!(
            "\ntargets met: quiet regret at most the grid's; no value slower than the default"
        );
    }
}
