//! `kprof diff` against run-to-run noise, on real runs of `tests/diff/phases.c`
//! under `kprof run`: several runs per side (a directory of runs, quoted
//! patterns, `A... -- B...`) compared with the Mann-Whitney U test and the
//! floors; identical runs never fail `--fail-above 10`, a phase made 3x slower
//! always does and no other phase is reported; one run per side says its noise
//! floor; jobs' merged profiles (`kprof merge`) compare their mean or slowest
//! rank; bad input is one line and exit status 2.
//!
//! The runs (made once, interleaved so that a change of the machine's load
//! falls on every side alike): `base/1..5` and `same/1..5` of `phases`, and
//! `slow/1..5` of `phases 3` (its "solve" phase 3x slower). The measured phases
//! are sleeps of 50 and 100 ms, whose ends a loaded machine delays by a few ms at
//! most: 10% of them is beyond what load does; "halo" is a tiny busy loop whose
//! relative noise is large and whose absolute time is below the 1 ms floor.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kprof_tests::{
    assert_ok, clean_cmd, compile_with_core, lib, run, scratch, test_file, text_block,
};

/// Runs per side.
const RUNS: usize = 5;

/// The directory holding `base/`, `same/` and `slow/`, each with the runs
/// `1..=RUNS`.
fn runs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = scratch("diff_noise_runs");
        let exe = compile_with_core(&[&test_file("diff/phases.c")], &dir.join("phases"), &[]);
        for side in ["base", "same", "slow"] {
            std::fs::create_dir_all(dir.join(side)).unwrap();
        }
        for i in 1..=RUNS {
            for (side, slow) in [("base", "1"), ("same", "1"), ("slow", "3")] {
                let out = format!("{side}/{i}");
                let o = run(
                    kprof_cmd(&dir, &["run", "-q", "--summary", "0", "-o", &out, "--"])
                        .arg(&exe)
                        .arg(slow),
                );
                assert_ok(&o);
            }
        }
        dir
    })
}

/// `kprof <args>` in `dir` with a clean tool environment.
fn kprof_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    cmd
}

/// `kprof diff <args>` in the runs' directory.
fn diff(args: &[&str]) -> Output {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    run(&mut kprof_cmd(runs(), &all))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The whole text with every run of white space one space (wrapped sentences
/// read as one line).
fn prose(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Asserts the exit status, printing the output otherwise.
fn assert_status(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "--- stdout\n{}\n--- stderr\n{}",
        stdout(o),
        stderr(o)
    );
}

/// A row of the table of changes: its cells split at white space.
struct Row(Vec<String>);

impl Row {
    /// The row of call path `path` (a one-word name), if shown.
    fn find(text: &str, path: &str) -> Option<Row> {
        text.lines()
            .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
            .find(|c| {
                c.last().is_some_and(|l| l == path)
                    && c.first().is_some_and(|f| f.starts_with(['+', '-']))
            })
            .map(Row)
    }

    fn of(text: &str, path: &str) -> Row {
        Row::find(text, path).unwrap_or_else(|| panic!("no row of {path}:\n{text}"))
    }

    fn status(&self) -> &str {
        &self.0[self.0.len() - 2]
    }

    /// The change of the median time per call, in percent (after the change of
    /// time per run, a number and its unit).
    fn rel(&self) -> f64 {
        self.0[2].trim_end_matches('%').parse().unwrap()
    }

    /// The p-value (tables with a p column).
    fn p(&self) -> f64 {
        self.0[self.0.len() - 3].parse().unwrap()
    }

    fn has(&self, cells: &str) -> bool {
        self.0.join(" ").contains(cells)
    }
}

/// Asserts no call path but `except` is a regression (slower by more than 10%).
fn no_regression_but(text: &str, except: Option<&str>) {
    for path in ["setup", "solve", "halo"] {
        if Some(path) == except {
            continue;
        }
        if let Some(r) = Row::find(text, path) {
            assert!(
                !(r.status() == "slower" && r.rel() > 10.0),
                "{path} reported:\n{text}"
            );
        }
    }
}

#[test]
fn identical_runs_never_fail() {
    // A directory holding run directories, each side.
    let o = diff(&["base", "same", "--fail-above", "10", "--all"]);
    assert_status(&o, 0);
    let text = stdout(&o);
    let all = prose(&text);
    assert!(
        text.starts_with(
            "kprof diff: A = 5 runs: base/1 base/2 base/3 base/4 base/5\n            \
             B = 5 runs: same/1 same/2 same/3 same/4 same/5\n"
        ),
        "{text}"
    );
    assert!(
        all.contains(
            "a change counts when the Mann-Whitney U test of A's runs against B's \
             (two-sided, exact) gives p < 0.05 (--alpha), and the medians of the time per \
             call moved by more than 5% (--threshold) and the time per run by more than \
             1.00 ms (--min-time)."
        ),
        "{text}"
    );
    assert!(
        text.contains("spread A") && text.contains("spread B"),
        "{text}"
    );
    for (path, calls) in [("setup", "1 -> 1"), ("solve", "3 -> 3"), ("halo", "6 -> 6")] {
        let r = Row::of(&text, path);
        assert!(r.has(calls), "{path}: {text}");
        // Each side's spread (min..max over its runs) and a p-value.
        assert_eq!(r.0.iter().filter(|c| c.contains("..")).count(), 2, "{text}");
        assert!((0.0..=1.0).contains(&r.p()), "{text}");
    }
    // The tiny busy phase is below the 1 ms floor, however its relative noise.
    assert_eq!(Row::of(&text, "halo").status(), "noise", "{text}");
    no_regression_but(&text, None);
    assert!(
        text.ends_with("\nOK: no call path slower by more than 10% beyond the noise\n")
            || text.contains("\nOK: no call path slower by more than 10% beyond the noise ("),
        "{text}"
    );

    // The other way round, as quoted patterns, and as lists around --.
    let o = diff(&["same/*", "base/*", "--fail-above", "10"]);
    assert_status(&o, 0);
    no_regression_but(&stdout(&o), None);
    let mut args = vec!["--fail-above", "10"];
    let base: Vec<String> = (1..=RUNS).map(|i| format!("base/{i}")).collect();
    let same: Vec<String> = (1..=RUNS).map(|i| format!("same/{i}")).collect();
    args.extend(base.iter().map(String::as_str));
    args.push("--");
    args.extend(same.iter().map(String::as_str));
    let o = diff(&args);
    assert_status(&o, 0);
    assert!(
        stdout(&o).contains("A = 5 runs: base/1 base/2 base/3 base/4 base/5\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_phase_made_three_times_slower_always_fails() {
    let o = diff(&["base/*", "slow/*", "--fail-above", "10", "--all"]);
    assert_status(&o, 1);
    let text = stdout(&o);
    let solve = Row::of(&text, "solve");
    assert_eq!(solve.status(), "slower", "{text}");
    // 50 ms -> 150 ms per call, give or take a few ms of wake-up.
    assert!((150.0..250.0).contains(&solve.rel()), "{text}");
    assert!(solve.p() < 0.05, "{text}");
    assert!(solve.has("3 -> 3"), "{text}");
    no_regression_but(&text, Some("solve"));
    assert!(
        text.contains(&format!(
            "\nREGRESSION: 1 call path slower by more than 10% beyond the noise (largest: \
             solve {:+.1}%, p = ",
            solve.rel()
        )),
        "{text}"
    );

    // The floors are the user's: 300 ms more per run is below --min-time 1s, and
    // +200% below --threshold 400.
    for floor in [["--min-time", "1s"], ["--threshold", "400"]] {
        let mut args = vec!["base", "slow", "--fail-above", "10"];
        args.extend(floor);
        let o = diff(&args);
        assert_status(&o, 0);
        assert!(
            prose(&stdout(&o)).contains(if floor[0] == "--min-time" {
                "by more than 1.000 s (--min-time)"
            } else {
                "by more than 400% (--threshold)"
            }),
            "{}",
            stdout(&o)
        );
    }
}

#[test]
fn three_runs_per_side_need_every_run_apart() {
    // With 3 and 3 runs no p-value is below 0.05 (the smallest is 0.1): the
    // change counts when the sides do not overlap.
    let o = diff(&[
        "--fail-above",
        "10",
        "base/1",
        "base/2",
        "base/3",
        "--",
        "slow/1",
        "slow/2",
        "slow/3",
    ]);
    assert_status(&o, 1);
    let text = stdout(&o);
    assert!(
        prose(&text).contains(
            "Noise: with 3 and 3 runs the Mann-Whitney U test cannot reach p < 0.05 (--alpha; \
             its smallest p is 0.100, 4 runs per side can): a change counts when every run of \
             one side is beyond every run of the other"
        ),
        "{text}"
    );
    let solve = Row::of(&text, "solve");
    assert_eq!((solve.status(), solve.p()), ("slower", 0.1), "{text}");
    no_regression_but(&text, Some("solve"));
}

#[test]
fn one_run_per_side_says_its_noise_floor() {
    let o = diff(&["base/1", "slow/1", "--fail-above", "10"]);
    assert_status(&o, 1);
    let text = stdout(&o);
    assert!(
        text.starts_with(
            "kprof diff: A = base/1/profile.json\n            B = slow/1/profile.json\n"
        ),
        "{text}"
    );
    assert!(
        prose(&text).contains(
            "Noise: one run per side, so the run-to-run spread is unknown; the noise floor: a \
             change counts when the time per call moved by more than 5% (--threshold) and the \
             time per run by more than 1.00 ms (--min-time)."
        ),
        "{text}"
    );
    // No spread, no p-value: one value per side.
    assert!(
        !text.contains("spread A") && !text.contains(" p "),
        "{text}"
    );
    let solve = Row::of(&text, "solve");
    assert_eq!(solve.status(), "slower", "{text}");
    assert!((150.0..250.0).contains(&solve.rel()), "{text}");
    assert!(
        text.contains(
            "\nREGRESSION: 1 call path slower by more than 10% beyond the noise (largest: solve +"
        ) || text
            .contains(" call paths slower by more than 10% beyond the noise (largest: solve +"),
        "{text}"
    );

    // Below a floor the user set: noise.
    let o = diff(&[
        "base/1",
        "slow/1",
        "--fail-above",
        "10",
        "--min-time",
        "800",
    ]);
    assert_status(&o, 0);
    assert!(
        prose(&stdout(&o)).contains("by more than 800.00 ms (--min-time)"),
        "{}",
        stdout(&o)
    );

    // A run against itself.
    let o = diff(&["base/1", "base/1", "--fail-above", "10"]);
    assert_status(&o, 0);
    assert!(
        stdout(&o).contains("(0 beyond the noise; 3 noise)\n  (no change beyond the noise)\n"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn jobs_compare_the_mean_or_the_slowest_rank() {
    // Jobs of two ranks: A's ranks both ordinary, B's one slow and one not.
    let dir = runs();
    let _ = std::fs::remove_dir_all(dir.join("jobs-a"));
    let _ = std::fs::remove_dir_all(dir.join("jobs-b"));
    for i in 1..=4 {
        for (job, ranks) in [("jobs-a", ["base", "same"]), ("jobs-b", ["slow", "same"])] {
            let o = run(&mut kprof_cmd(
                dir,
                &[
                    "merge",
                    &format!("{}/{i}", ranks[0]),
                    &format!("{}/{i}", ranks[1]),
                    "--no-trace",
                    "-o",
                    &format!("{job}/{i}"),
                ],
            ));
            assert_ok(&o);
        }
    }
    // Mean over ranks: (150 + 50) / 2 against 50 ms per call.
    let o = diff(&["jobs-a", "jobs-b", "--fail-above", "10"]);
    assert_status(&o, 1);
    let text = stdout(&o);
    assert!(
        text.starts_with("kprof diff: A = 4 runs (jobs): jobs-a/1 jobs-a/2 jobs-a/3 jobs-a/4\n"),
        "{text}"
    );
    assert!(
        prose(&text).contains(
            "Jobs: each call path's time and calls per rank, the mean over the ranks \
             (--ranks). After the call paths: each MPI function over all its call paths, each \
             call path's imbalance over the ranks, and the job's messages."
        ),
        "{text}"
    );
    let solve = Row::of(&text, "solve");
    assert_eq!(solve.status(), "slower", "{text}");
    assert!((60.0..140.0).contains(&solve.rel()), "{text}");
    no_regression_but(&text, Some("solve"));
    // Imbalance: A's two ranks alike (1.0), B's slowest 150 against a mean of
    // 100 ms per call: 1.5, losing 3 x 50 ms per run.
    let imbalance = text_block(&text, "Imbalance over the ranks");
    let solve = Row::of(imbalance, "solve");
    assert_eq!(solve.status(), "higher", "{text}");
    let ratios: Vec<f64> = solve
        .0
        .iter()
        .filter_map(|c| c.strip_suffix('x')?.parse().ok())
        .collect();
    assert_eq!(ratios.len(), 2, "{text}");
    assert!((0.95..1.1).contains(&ratios[0]), "{text}");
    assert!((1.4..1.6).contains(&ratios[1]), "{text}");
    let lost: f64 = solve.0[0].trim_start_matches('+').parse().unwrap();
    assert!(
        solve.0[1] == "ms" && (130.0..170.0).contains(&lost),
        "{text}"
    );
    // Neither job made an MPI call nor sent a message: no such blocks.
    assert!(!text.contains("MPI functions over"), "{text}");
    assert!(!text.contains("Messages of the job"), "{text}");
    // The slowest rank: 150 against 50 ms per call.
    let o = diff(&["jobs-a", "jobs-b", "--fail-above", "10", "--ranks", "max"]);
    assert_status(&o, 1);
    let text = stdout(&o);
    let solve = Row::of(&text, "solve");
    assert!((150.0..250.0).contains(&solve.rel()), "{text}");
    // The same jobs: nothing.
    let o = diff(&["jobs-a", "jobs-a", "--fail-above", "10"]);
    assert_status(&o, 0);
    assert!(
        text_block(&stdout(&o), "Imbalance over the ranks")
            .contains("(no change beyond the noise)"),
        "{}",
        stdout(&o)
    );
    // Jobs against processes: refused.
    let o = diff(&["jobs-a/1", "base/1"]);
    one_line_error(&o, "compare jobs with jobs, processes with processes");
}

/// Asserts exit status 2 and exactly one line on stderr, `kprof: ` and `what`.
fn one_line_error(o: &Output, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr:\n{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected:\n{err}");
    assert!(lines[0].starts_with("kprof: "), "{err}");
    assert!(lines[0].contains(what), "{what:?} not in {err}");
    assert!(stdout(o).is_empty(), "{}", stdout(o));
}

#[test]
fn bad_input_is_one_line_and_status_2() {
    let dir = scratch("diff_noise_bad");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let one = runs().join("base/1");
    let one = one.to_str().unwrap();
    for (args, what) in [
        (vec!["missing", one], "kprof: missing: no such directory"),
        (
            vec!["nothing-*", one],
            "kprof: nothing-*: the pattern matches nothing",
        ),
        (
            vec![one, "empty"],
            "kprof: empty: no profile.json in this directory nor in a directory in it",
        ),
        (
            vec![one, one, one],
            "kprof: diff: 3 paths and no --: give A B (each a run directory, a directory of \
             runs or a quoted pattern such as 'base-*'), or A... -- B...",
        ),
        (
            vec![one, "--", one, "--fail-above", "10"],
            "kprof: diff: --fail-above after --: options go before --, which starts B's runs",
        ),
    ] {
        let mut all = vec!["diff"];
        all.extend(args);
        let o = run(&mut kprof_cmd(&dir, &all));
        one_line_error(&o, what);
    }
}
