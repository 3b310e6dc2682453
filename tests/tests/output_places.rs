//! Where results go (`kprof run -o`, `KPROF_OUTPUT_DIR`, `kprof merge -o`): an
//! output place that cannot be written stops `kprof run` before the program
//! starts; an explicit place that exists is refused unless `--force`, which
//! replaces it and says so; `KPROF_OUTPUT_DIR` is honoured; every option of the
//! settings table (docs/configuration.md) is one `kprof run` accepts. Real runs of the annotated
//! test program (`tests/cli/kernels.c`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kprof_tests::{
    assert_ok, clean_cmd, compile_with_core, lib, read_profile, run, scratch, test_file,
    workspace_root,
};

/// `kprof <args>` in `dir` with a clean tool environment.
fn kprof_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .env("KPROF_SUMMARY", "0");
    cmd
}

/// The annotated test program: `kernels N` prints `kernels N` at its end.
fn kernels_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = scratch("output_places_bin");
        compile_with_core(&[&test_file("cli/kernels.c")], &dir.join("kernels"), &[])
    })
}

/// `kprof run <args> -- kernels 1` in `dir`.
fn run_kernels(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = kprof_cmd(dir, &["run"]);
    cmd.args(args).arg("--").arg(kernels_bin()).arg("1");
    run(&mut cmd)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts exit status 2 and exactly one line on stderr, starting `kprof` and
/// containing each of `what`; returns it.
fn one_line_error(o: &Output, what: &[&str]) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr:\n{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected:\n{err}");
    assert!(lines[0].starts_with("kprof"), "{err}");
    for w in what {
        assert!(lines[0].contains(w), "{w:?} not in {err}");
    }
    lines[0].to_string()
}

/// An output place that cannot be written (`/proc`, a path under a regular
/// file: root passes permission bits, not these) stops `kprof run` before the
/// program starts: exit 2, one line with the system's reason, no program output.
#[test]
fn an_unwritable_output_place_stops_the_run_before_the_program_starts() {
    let dir = scratch("output_places_unwritable");
    std::fs::write(dir.join("afile"), "x").unwrap();
    for (place, why) in [
        ("/proc/kprof-x", "/proc: "),
        ("afile/sub", "afile is not a directory"),
        ("afile/run-%p", "afile is not a directory"),
    ] {
        let o = run_kernels(&dir, &["-o", place]);
        one_line_error(&o, &[why, "was not run"]);
        assert!(
            !stdout(&o).contains("kernels 1"),
            "the program ran for {place}"
        );
    }
    // The default place (the current directory) too.
    let o = run_kernels(Path::new("/proc"), &[]);
    one_line_error(&o, &["/proc", "was not run"]);
    assert!(!stdout(&o).contains("kernels 1"));
}

/// A second `kprof run -o same` does not go elsewhere (same.1): it is refused,
/// naming `--force`, before the program runs; with `--force` the old results are
/// replaced (their files gone) and kprof says so. A directory that holds no kprof
/// results is not replaced even with `--force`. A pattern expands per process and
/// is not checked.
#[test]
fn an_existing_output_directory_is_refused_unless_forced() {
    let dir = scratch("output_places_force");
    assert_ok(&run_kernels(&dir, &["-q", "-o", "same"]));
    let first = read_profile(&dir.join("same"));
    std::fs::write(dir.join("same/old.txt"), "stale").unwrap();

    let o = run_kernels(&dir, &["-q", "-o", "same"]);
    one_line_error(&o, &["same", "exists", "--force"]);
    assert!(!stdout(&o).contains("kernels 1"), "the program ran");
    assert!(!dir.join("same.1").exists(), "written elsewhere");

    let o = run_kernels(&dir, &["--force", "-o", "same"]);
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.lines()
            .any(|l| l.contains("replacing same") && l.contains("--force")),
        "{err}"
    );
    assert!(!dir.join("same/old.txt").exists(), "old files kept");
    assert!(!dir.join("same.1").exists(), "written elsewhere");
    let second = read_profile(&dir.join("same"));
    assert_ne!(
        first["program"]["pid"], second["program"]["pid"],
        "not a new profile"
    );

    std::fs::create_dir(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/keep.txt"), "data").unwrap();
    let o = run_kernels(&dir, &["--force", "-o", "mine"]);
    one_line_error(&o, &["not a kprof output directory"]);
    assert!(dir.join("mine/keep.txt").exists());

    for _ in 0..2 {
        assert_ok(&run_kernels(&dir, &["-q", "-o", "pat-%p"]));
    }
    let pats = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("pat-"))
        .count();
    assert_eq!(pats, 2);
}

/// `KPROF_OUTPUT_DIR=envdir kprof run` writes to envdir (the runtime's rule: a
/// new name when it exists, which kprof names at the end); `-o` overrides it,
/// in one line.
#[test]
fn kprof_output_dir_is_honoured_and_o_overrides_it_in_one_line() {
    let dir = scratch("output_places_env");
    let mut cmd = kprof_cmd(&dir, &["run", "--"]);
    cmd.env("KPROF_OUTPUT_DIR", "envdir")
        .arg(kernels_bin())
        .arg("1");
    let o = run(&mut cmd);
    assert_ok(&o);
    assert!(dir.join("envdir/profile.json").is_file(), "{}", stderr(&o));
    assert!(stderr(&o).contains("results in envdir "), "{}", stderr(&o));
    let o = run(&mut cmd);
    assert_ok(&o);
    assert!(dir.join("envdir.1/profile.json").is_file());
    assert!(
        stderr(&o).contains("results in envdir.1 "),
        "{}",
        stderr(&o)
    );

    let mut cmd = kprof_cmd(&dir, &["run", "-o", "given", "--"]);
    cmd.env("KPROF_OUTPUT_DIR", "envdir")
        .arg(kernels_bin())
        .arg("1");
    let o = run(&mut cmd);
    assert_ok(&o);
    assert!(dir.join("given/profile.json").is_file());
    assert!(!dir.join("envdir.2").exists());
    let notes: Vec<String> = stderr(&o)
        .lines()
        .filter(|l| l.contains("KPROF_OUTPUT_DIR"))
        .map(str::to_string)
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("-o given overrides"), "{notes:?}");
}

/// `kprof merge -o OUT` with OUT existing is refused, naming `--force`; with it
/// OUT is replaced.
#[test]
fn merge_refuses_an_existing_output_unless_forced() {
    let dir = scratch("output_places_merge");
    let ranks: Vec<PathBuf> = (0..2)
        .map(|r| test_file(&format!("cli/fixtures/rank{r}")))
        .collect();
    let merge = |extra: &[&str]| {
        let mut cmd = kprof_cmd(&dir, &["merge"]);
        cmd.args(&ranks).args(["-o", "m"]).args(extra);
        run(&mut cmd)
    };
    assert_ok(&merge(&[]));
    std::fs::write(dir.join("m/old.txt"), "stale").unwrap();
    one_line_error(&merge(&[]), &["m exists", "--force"]);
    assert!(dir.join("m/old.txt").exists());
    let o = merge(&["--force"]);
    assert_ok(&o);
    assert!(
        stderr(&o).contains("replacing m (--force)"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("m/old.txt").exists());
    assert!(dir.join("m/profile.json").is_file());
}

/// `kprof plot -o FILE` never silently overwrites FILE: refused, or replaced
/// with --force, saying so. Without -o, `plot.html` in the directory is
/// written anew each time.
#[test]
fn plot_refuses_an_existing_page_unless_forced() {
    let dir = scratch("output_places_plot");
    let rank = test_file("cli/fixtures/rank0");
    let plot = |extra: &[&str]| {
        let mut cmd = kprof_cmd(&dir, &["plot"]);
        cmd.arg(&rank).args(["-o", "page.html"]).args(extra);
        run(&mut cmd)
    };
    std::fs::write(dir.join("page.html"), "mine").unwrap();
    one_line_error(&plot(&[]), &["page.html exists", "--force"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("page.html")).unwrap(),
        "mine"
    );
    let o = plot(&["--force"]);
    assert_ok(&o);
    assert!(
        stderr(&o).contains("replacing page.html (--force)"),
        "{}",
        stderr(&o)
    );
    assert!(std::fs::read_to_string(dir.join("page.html"))
        .unwrap()
        .contains("<svg"));
}

/// Every option the settings table (docs/configuration.md) lists is accepted by `kprof run`
/// (with a valid value: the documented default, or an example).
#[test]
fn every_option_of_the_settings_table_is_accepted_by_kprof_run() {
    let dir = scratch("output_places_readme");
    let table = std::fs::read_to_string(workspace_root().join("docs/configuration.md")).unwrap();
    let mut seen = 0;
    for line in table.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 5 || !cells[1].starts_with("`KPROF_") {
            continue;
        }
        let Some(flag) = cells[2]
            .strip_prefix('`')
            .and_then(|c| c.split('`').next())
            .filter(|f| f.starts_with("--"))
        else {
            continue;
        };
        let default = cells[3].split('`').nth(1).unwrap_or("");
        let value = match flag {
            "--trace" => "json",
            "--output-dir" => "od",
            "--job-output-dir" => "jd",
            "--counters" => "PAPI_TOT_INS",
            _ => default,
        };
        assert!(!value.is_empty(), "no value for {flag}");
        let o = run(&mut kprof_cmd(
            &dir,
            &["run", "-q", flag, value, "--", "true"],
        ));
        assert_ok(&o);
        assert_eq!(stderr(&o), "", "{flag} {value}");
        seen += 1;
    }
    assert!(
        seen >= 20,
        "only {seen} options found in the settings table"
    );
}
