//! The cost of the job's reduction at `MPI_Finalize` against the number of ranks,
//! simulated in one process with the functions the MPI plugin calls through the
//! core's table (`kprof_core::control::job::fold`: decode two forms, fold, encode)
//! on the forms of synthetic ranks (`kprof_tests::synthetic`, a 1,000-node
//! profile each). Along the binomial tree the ranks of one level fold at the same
//! time, so the job waits, per level, for its slowest fold: the critical path is
//! the sum over the log2 P levels of each level's slowest fold, then rank 0's
//! rendering of the job's profile. Message transfer is not included (shared
//! memory moves the largest form, printed, in well under a millisecond).
//!
//! Memory: rank 0's last step (decode the job's form, render the profile and
//! its text) is run again in a process of its own, which prints its high-water
//! mark (`VmHWM`): what rank 0 holds at `MPI_Finalize` at most, the process's
//! own few MB included. Every other rank holds less: its own form and the
//! folded forms of its subtree, the largest message at most, twice.
//!
//! ```text
//! cargo bench -p kprof-tests --bench reduce_tree
//! ```
//!
//! Environment: `KPROF_BENCH_RANKS` (default `4,8,64,512,4096`),
//! `KPROF_BENCH_NODES` (default 1000).

use std::time::Instant;

use kprof_core::control::job;
use kprof_core::output::report::Report;
use kprof_core::reduce::{from_report, render, Fold};
use kprof_tests::bench::{env_f64, env_list};
use kprof_tests::synthetic::profile;
use prost::Message;

/// Set to a file holding a job's encoded form: decode and render it, print
/// the process's high-water mark (bytes), and exit.
const RENDER_ONLY: &str = "KPROF_BENCH_RENDER_FORM";

/// This process's high-water mark of resident memory (bytes), from
/// `/proc/self/status`.
fn high_water() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Rank 0's last step on the form in `file`, in this process; its high-water
/// mark on stdout.
fn render_only(file: &str) {
    let bytes = std::fs::read(file).expect("the job's form");
    let fold = Fold::decode(&bytes).expect("the job's form");
    let text = serde_json::to_vec(&render(fold.form())).expect("render");
    assert!(!text.is_empty());
    println!("{}", high_water());
}

/// Rank 0's high-water mark (bytes) for the job's form `form`, measured in a
/// process of its own.
fn rank0_memory(form: &[u8]) -> u64 {
    let file = std::env::temp_dir().join(format!("kprof-bench-form-{}", std::process::id()));
    std::fs::write(&file, form).expect("write the job's form");
    let out = std::process::Command::new(std::env::current_exe().expect("this bench"))
        .env(RENDER_ONLY, &file)
        .output()
        .expect("run rank 0's last step");
    let _ = std::fs::remove_file(&file);
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Ok(file) = std::env::var(RENDER_ONLY) {
        render_only(&file);
        return;
    }
    let ranks = env_list("KPROF_BENCH_RANKS", "4,8,64,512,4096");
    let nodes = env_f64("KPROF_BENCH_NODES", 1000.0) as usize;
    println!("the job's reduction along a binomial tree, ranks of a {nodes}-node profile");
    println!(
        "{:>7} {:>7} {:>14} {:>15} {:>13} {:>11} {:>15} {:>14} {:>14}",
        "ranks",
        "levels",
        "one form KB",
        "critical ms",
        "ms per level",
        "render ms",
        "largest KB",
        "profile MB",
        "rank 0 MB"
    );
    for &p in &ranks {
        let forms: Vec<Vec<u8>> = (0..p)
            .map(|r| {
                let r_: Report =
                    serde_json::from_str(&profile(r, p, nodes)).expect("a synthetic profile");
                from_report(&r_, &r_.tree, r as u32, None, false).encode_to_vec()
            })
            .collect();
        let one_kb = forms[0].len() as f64 / 1024.0;
        let mut cur = forms;
        let (mut critical, mut levels, mut largest) = (0.0f64, 0u32, 0usize);
        let mut mask = 1usize;
        let n = p as usize;
        while mask < n {
            let mut slowest = 0.0f64;
            for r in (0..n).step_by(2 * mask) {
                let c = r + mask;
                if c < n {
                    largest = largest.max(cur[c].len());
                    let t = Instant::now();
                    let f = job::fold(&cur[r], &cur[c]).expect("valid forms");
                    slowest = slowest.max(t.elapsed().as_secs_f64());
                    cur[r] = f;
                    cur[c] = Vec::new();
                }
            }
            critical += slowest;
            levels += 1;
            mask <<= 1;
        }
        let t = Instant::now();
        let fold = Fold::decode(&cur[0]).expect("the job's form");
        assert_eq!(fold.processes(), n);
        let text = serde_json::to_vec(&render(fold.form())).expect("render");
        let render_ms = 1e3 * t.elapsed().as_secs_f64();
        assert!(!text.is_empty());
        let mb = |b: u64| b as f64 / (1024.0 * 1024.0);
        println!(
            "{p:>7} {levels:>7} {one_kb:>14.1} {:>15.2} {:>13.2} {render_ms:>11.2} {:>15.1} \
             {:>14.1} {:>14.1}",
            1e3 * critical,
            1e3 * critical / f64::from(levels.max(1)),
            largest as f64 / 1024.0,
            mb(text.len() as u64),
            mb(rank0_memory(&cur[0]))
        );
    }
}
