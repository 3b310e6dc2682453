//! The end of a run with a million call paths: what kprof's exit (merging the
//! threads' trees, writing `profile.json` and `profile.csv`, the summary) costs in
//! time and memory when every region has its own name (one kernel name per problem
//! size, say).
//!
//! `tests/harness/names_driver.c N` runs N annotation regions named `kernel_<i>`
//! on one thread. Variants, interleaved over the rounds:
//!
//! - `off`: `KPROF_ENABLE=0` (the program alone: its memory is the baseline);
//! - `files`: profile files, no summary (`KPROF_SUMMARY=0`);
//! - `summary`: profile files and the summary (the default).
//!
//! Printed per variant: the time beyond the program's loop (process wall time from
//! spawn to exit, minus the loop: the run's start and end) and peak RSS (`wait4`),
//! medians of the rounds. Targets (the issue's): at most 1.5 s and 300 MB more than
//! the program at 10^6 names.
//!
//! Environment: `KPROF_BENCH_NAMES` (default 1000000), `KPROF_BENCH_ROUNDS`
//! (default 3).

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use kprof_tests::bench::{env_f64, median};
use kprof_tests::{clean_cmd, compile_with_core, scratch, test_file};

/// One run: (time beyond the loop in s, peak RSS in MB).
fn run(exe: &Path, n: u64, variant: &str, out: &Path) -> (f64, f64) {
    let _ = std::fs::remove_dir_all(out);
    let mut cmd: Command = clean_cmd(exe);
    cmd.arg(n.to_string())
        .env("KPROF_OUTPUT_DIR", out)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    match variant {
        "off" => {
            cmd.env("KPROF_ENABLE", "0");
        }
        "files" => {
            cmd.env("KPROF_SUMMARY", "0");
        }
        _ => {
            cmd.env("KPROF_SUMMARY", "1");
        }
    }
    let start = Instant::now();
    // Reaped by wait4 below, which also gives its peak memory.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().expect("run names_driver");
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child with valid pointers.
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed().as_secs_f64();
    assert_eq!(r, pid, "wait4");
    let exit = std::process::ExitStatus::from_raw(status);
    assert!(exit.success(), "names_driver {variant}: {exit}");
    let mut stdout = String::new();
    use std::io::Read;
    child
        .stdout
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let loop_ns: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("loop_ns="))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no loop_ns in {stdout}"));
    (wall - loop_ns / 1e9, usage.ru_maxrss as f64 / 1024.0)
}

fn main() {
    let n = env_f64("KPROF_BENCH_NAMES", 1e6) as u64;
    let rounds = env_f64("KPROF_BENCH_ROUNDS", 3.0).max(1.0) as usize;
    let dir = scratch("names_exit");
    let exe = compile_with_core(
        &[&test_file("harness/names_driver.c")],
        &dir.join("names_driver"),
        &[],
    );
    let variants = ["off", "files", "summary"];
    let mut results: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); 3];
    for round in 0..rounds {
        for (i, v) in variants.iter().enumerate() {
            let (t, rss) = run(&exe, n, v, &dir.join(format!("out-{v}")));
            eprintln!("round {round} {v}: {t:.3} s beyond the loop, {rss:.1} MB peak");
            results[i].0.push(t);
            results[i].1.push(rss);
        }
    }
    println!("\n{n} distinct names, medians of {rounds} rounds:");
    println!(
        "{:<8} {:>16} {:>12} {:>14}",
        "variant", "start+end (s)", "peak (MB)", "over off (MB)"
    );
    let base = median(&mut results[0].1.clone());
    for (i, v) in variants.iter().enumerate() {
        let t = median(&mut results[i].0);
        let m = median(&mut results[i].1);
        println!("{v:<8} {t:>16.3} {m:>12.1} {:>14.1}", m - base);
    }
    println!("targets: start+end <= 1.5 s, <= 300 MB over off");
}
