//! `profile.cali` read by the tools Caliper's users read `.cali` files with:
//! caliper-reader, Hatchet (`GraphFrame.from_caliperreader`) and Thicket
//! (`Thicket.from_caliperreader`), as installed from PyPI by `tests/setup.sh`
//! into `target/deps/thicket`. Two runs of `tests/caliper/runs.c` under
//! `kprof run`, with different metadata, load into one Thicket, whose values
//! per node (times, count, min, max) and metadata must be those of each run's
//! `profile.json` (`tests/caliper/check_cali.py`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kprof_tests::openmp::deps_dir;
use kprof_tests::{
    assert_ok, clean_cmd, compile_with_core, lib, run, scratch, skip_unless, test_file,
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
    let mut cmd = Command::new("python3");
    cmd.current_dir(dir)
        .arg(test_file("caliper/check_cali.py"))
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
