//! `profile.cali` read by the tools Caliper's users read `.cali` files with:
//! caliper-reader, Hatchet (`GraphFrame.from_caliperreader`) and Thicket
//! (`Thicket.from_caliperreader`), as installed from PyPI by `tests/setup.sh`
//! into `target/deps/thicket`. Two runs of `tests/caliper/runs.c` under
//! `kprof run`, with different metadata, load into one Thicket, whose values
//! per node (times, count, min, max) and metadata must be those of each run's
//! `profile.json` (`tests/caliper/check_cali.py`). A run of
//! `tests/sampling/split.c` under `kprof run --sample-hz` has its call-stack
//! samples in the file: each sampled function a node under its region in
//! Hatchet and Thicket, with the self samples of `profile.json`
//! (`tests/caliper/check_samples.py`); `kprof merge` of two sampled ranks keeps
//! each rank's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kprof_tests::openmp::deps_dir;
use kprof_tests::{
    assert_ok, clean_cmd, compile_with_core, lib, read_profile, run, sample_functions, scratch,
    skip_unless, test_file,
};

/// Where `tests/setup.sh` installs caliper-reader, Hatchet and Thicket.
fn thicket_dir() -> PathBuf {
    deps_dir().join("thicket")
}

/// Whether Python can import the three from [`thicket_dir`].
fn have_thicket() -> bool {
    Command::new("python3")
        .args(["-c", "import caliperreader, hatchet, thicket"])
        .env("PYTHONPATH", thicket_dir())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `kprof <args>` in `dir` with a clean tool environment.
fn kprof_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    cmd
}

/// Runs `check_cali.py` with `args` in `dir`; its stdout.
fn check(dir: &Path, args: &[&str]) -> String {
    check_with("caliper/check_cali.py", dir, args)
}

/// Runs the script `script` (under `tests/`) with `args` in `dir`; its stdout.
fn check_with(script: &str, dir: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new("python3");
    cmd.current_dir(dir)
        .arg(test_file(script))
        .args(args)
        .env("PYTHONPATH", thicket_dir());
    let out = run(&mut cmd);
    assert_ok(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn two_runs_load_into_one_thicket_with_their_metadata() {
    if skip_unless(
        have_thicket(),
        "caliper-reader, llnl-hatchet and llnl-thicket (bash tests/setup.sh)",
    ) {
        return;
    }
    let dir = scratch("caliper_two_runs");
    let exe = compile_with_core(&[&test_file("caliper/runs.c")], &dir.join("runs"), &[]);
    for (out, problem) in [("small", "small"), ("large", "large")] {
        let o = run(
            kprof_cmd(&dir, &["run", "-q", "--summary", "0", "-o", out, "--"])
                .arg(&exe)
                .arg(problem),
        );
        assert_ok(&o);
    }
    let text = check(
        &dir,
        &[
            "small",
            "large",
            "--meta",
            "small:problem=small",
            "--meta",
            "large:problem=large",
            "--meta",
            r"small:note=a, b = c\d",
            "--meta",
            "small:KPROF_SUMMARY=0",
        ],
    );
    // Five call paths per run, each checked by every reader.
    for line in [
        "caliper-reader: 10 records of 2 files match profile.json",
        "hatchet: 10 rows match profile.json",
        "thicket: 2 profiles, 10 rows",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
}

#[test]
fn a_jobs_ranks_merged_load_with_a_rank_column() {
    if skip_unless(
        have_thicket(),
        "caliper-reader, llnl-hatchet and llnl-thicket (bash tests/setup.sh)",
    ) {
        return;
    }
    let dir = scratch("caliper_job");
    let exe = compile_with_core(&[&test_file("caliper/runs.c")], &dir.join("runs"), &[]);
    // Two ranks of a job as a launcher starts them: the rank in Open MPI's
    // variable, each rank its own directory (`-o r` becomes `r-rank<N>`).
    let mut ranks = Vec::new();
    for rank in ["0", "1"] {
        let o = run(
            kprof_cmd(&dir, &["run", "-q", "--summary", "0", "-o", "r", "--"])
                .env("OMPI_COMM_WORLD_RANK", rank)
                .arg(&exe)
                .arg("job"),
        );
        assert_ok(&o);
        ranks.push(format!("r-rank{rank}"));
    }
    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", &ranks[0], &ranks[1], "-o", "job"],
    ));
    assert_ok(&o);
    let joined = ranks.join(",");
    let text = check(
        &dir,
        &["job", "--ranks", &joined, "--meta", "job:problem=job"],
    );
    // Five call paths of each of two ranks, one record each.
    for line in [
        "caliper-reader: 10 records of 1 files match profile.json",
        "hatchet: 10 rows match profile.json",
        "thicket: 1 profiles, 10 rows",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
    // Each rank's own file has its rank on every record.
    let text = check(&dir, &[&ranks[1], "--ranks-of", "1"]);
    assert!(
        text.contains("hatchet: 5 rows match profile.json"),
        "{text}"
    );
}

/// `tests/sampling/split.c` built into `dir`.
fn split_program(dir: &Path) -> PathBuf {
    compile_with_core(
        &[&test_file("sampling/split.c")],
        &dir.join("split"),
        &["-fopenmp"],
    )
}

/// Runs `exe` (one thread, `units` units: about 0.1 s per unit in each of its
/// two regions) under `kprof run --sample-hz 1000 -o out` in `dir`, as rank
/// `rank` of a job when given (Open MPI's variable: `out-rank<N>`).
fn sampled_split(dir: &Path, exe: &Path, out: &str, units: &str, rank: Option<&str>) {
    let mut cmd = kprof_cmd(
        dir,
        &[
            "run",
            "-q",
            "--summary",
            "0",
            "--sample-hz",
            "1000",
            "-o",
            out,
            "--",
        ],
    );
    cmd.arg(exe)
        .args(["1", units])
        .env("OMP_WAIT_POLICY", "passive");
    if let Some(rank) = rank {
        cmd.env("OMPI_COMM_WORLD_RANK", rank);
    }
    assert_ok(&run(&mut cmd));
}

/// The self samples of `function` under the top-level `region` of the profile
/// in `dir`; panics when there are none.
fn samples_of(dir: &Path, region: &str, function: &str) -> u64 {
    let p = read_profile(dir);
    let node = p["tree"]
        .as_array()
        .and_then(|t| t.iter().find(|n| n["name"] == region))
        .unwrap_or_else(|| panic!("no region {region} in {}", p["tree"]));
    let n = sample_functions(&node["stack_samples"])
        .get(function)
        .copied()
        .unwrap_or(0);
    assert!(n > 0, "no samples of {function} in {region}: {node}");
    n
}

/// The program's functions and the regions they run in.
const SAMPLED: [(&str, &str); 4] = [
    ("split", "split_seventy"),
    ("split", "split_thirty"),
    ("chain", "chain_inner"),
    ("chain", "chain_middle"),
];

#[test]
fn call_stack_samples_load_as_functions_under_their_region() {
    if skip_unless(
        have_thicket(),
        "caliper-reader, llnl-hatchet and llnl-thicket (bash tests/setup.sh)",
    ) {
        return;
    }
    let dir = scratch("caliper_samples");
    let exe = split_program(&dir);
    sampled_split(&dir, &exe, "out", "3", None);
    let text = check_with("caliper/check_samples.py", &dir, &["out"]);
    for loader in ["caliper-reader", "hatchet", "thicket"] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{loader}: "))
                && l.ends_with(" sampled functions match profile.json")),
            "{loader} not in\n{text}"
        );
    }
    // The program's functions under their regions, with profile.json's counts.
    for (region, function) in SAMPLED {
        let n = samples_of(&dir.join("out"), region, function);
        let line = format!("hatchet: {region}/{function} {n}\n");
        assert!(text.contains(&line), "{line:?} not in\n{text}");
    }
}

#[test]
fn a_jobs_merged_ranks_keep_each_ranks_samples() {
    if skip_unless(
        have_thicket(),
        "caliper-reader, llnl-hatchet and llnl-thicket (bash tests/setup.sh)",
    ) {
        return;
    }
    let dir = scratch("caliper_job_samples");
    let exe = split_program(&dir);
    let ranks = ["r-rank0", "r-rank1"];
    for rank in ["0", "1"] {
        sampled_split(&dir, &exe, "r", "1", Some(rank));
    }
    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", ranks[0], ranks[1], "-o", "job"],
    ));
    assert_ok(&o);
    let text = check_with(
        "caliper/check_samples.py",
        &dir,
        &["job", "--ranks", &ranks.join(",")],
    );
    for loader in ["caliper-reader", "hatchet"] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{loader}: "))
                && l.ends_with(" sampled functions match profile.json")),
            "{loader} not in\n{text}"
        );
    }
    for (rank, rank_dir) in ranks.iter().enumerate() {
        for (region, function) in SAMPLED {
            let n = samples_of(&dir.join(rank_dir), region, function);
            let line = format!("hatchet: rank {rank}: {region}/{function} {n}\n");
            assert!(text.contains(&line), "{line:?} not in\n{text}");
        }
    }
}
