//! Call-stack samples (`KPROF_SAMPLE_HZ`): programs whose time splits in known
//! shares between named functions (`tests/sampling/split.c`: 70/30 in region
//! `split`, a three-level chain with self shares 50/30/20 in region `chain`)
//! must show those shares within 5 points, under the right region, with 1 and 2
//! OpenMP threads, built with and without `-g` (source lines only with it); the
//! same program under Linux `perf record -e cpu-clock` must give the same
//! per-function shares within 5 points; a program with its own `SIGPROF`
//! profiler keeps it working and its results; a forked child and an exec'd
//! program inherit no timer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use kprof_tests::{
    assert_ok, clean_cmd, compile_with_core, lib, read_profile, run, scratch, skip_unless,
    test_file, u,
};
use serde_json::Value;

/// Samples per second asked for: more than the kernel's tick gives (CPU-time
/// timers fire at ticks; the expirations between are counted as overruns).
const HZ: &str = "1000";

/// The split program built with `-g` (`debug`) or without.
fn split(debug: bool) -> PathBuf {
    static G: OnceLock<PathBuf> = OnceLock::new();
    static PLAIN: OnceLock<PathBuf> = OnceLock::new();
    let cell = if debug { &G } else { &PLAIN };
    cell.get_or_init(|| {
        let dir = scratch(if debug {
            "stack_split_g"
        } else {
            "stack_split"
        });
        let src = test_file("sampling/split.c");
        // compile() passes -g; -g0 after it takes the debug information away.
        let mut args = vec!["-fopenmp"];
        if !debug {
            args.push("-g0");
        }
        compile_with_core(&[&src], &dir.join("split"), &args)
    })
    .clone()
}

fn build(name: &str) -> PathBuf {
    let dir = scratch(&format!("stack_{name}"));
    compile_with_core(
        &[&test_file(&format!("sampling/{name}.c"))],
        &dir.join(name),
        &[],
    )
}

/// Runs `exe args` with call-stack samples into `dir/out`.
fn sampled(exe: &Path, dir: &Path, args: &[&str]) -> (Output, Value) {
    let out_dir = dir.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut cmd: Command = clean_cmd(exe);
    cmd.args(args)
        .env("KPROF_SAMPLE_HZ", HZ)
        .env("KPROF_OUTPUT_DIR", &out_dir)
        .env("OMP_WAIT_POLICY", "passive");
    let out = run(&mut cmd);
    let profile = read_profile(&out_dir);
    (out, profile)
}

/// Runs `exe args` under `kprof run --sample-hz` into `dir/out`.
fn kprof_run(exe: &Path, dir: &Path, args: &[&str]) -> (Output, Value) {
    let out_dir = dir.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut cmd: Command = clean_cmd(&lib("kprof"));
    cmd.args(["run", "--sample-hz", HZ, "-o"])
        .arg(&out_dir)
        .arg("--")
        .arg(exe)
        .args(args)
        .env("OMP_WAIT_POLICY", "passive");
    let out = run(&mut cmd);
    let profile = read_profile(&out_dir);
    (out, profile)
}

/// The top-level node `name` of the profile's tree.
fn region<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["tree"]
        .as_array()
        .and_then(|t| t.iter().find(|n| n["name"] == name))
        .unwrap_or_else(|| panic!("no region {name} in {}", p["tree"]))
}

/// Self samples by function of a node's (or the outside's) samples.
fn functions(s: &Value) -> BTreeMap<String, u64> {
    s["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), u(&f["samples"])))
        .collect()
}

/// Each function's share (in percent) of the samples of the named functions.
fn shares(counts: &BTreeMap<String, u64>, names: &[&str]) -> BTreeMap<String, f64> {
    let total: u64 = names
        .iter()
        .map(|n| counts.get(*n).copied().unwrap_or(0))
        .sum();
    assert!(total > 0, "no samples of {names:?} in {counts:?}");
    names
        .iter()
        .map(|n| {
            let c = counts.get(*n).copied().unwrap_or(0);
            (n.to_string(), 100.0 * c as f64 / total as f64)
        })
        .collect()
}

fn assert_shares(got: &BTreeMap<String, f64>, want: &[(&str, f64)], what: &str) {
    for (name, share) in want {
        let g = got[*name];
        assert!(
            (g - share).abs() <= 5.0,
            "{what}: {name} has {g:.1}% of the samples, expected {share}% (within 5 points): {got:?}"
        );
    }
}

/// The child named `name` of a list of sample paths.
fn path<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .and_then(|l| l.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no path {name} in {list}"))
}

fn check_split(threads: usize, debug: bool) {
    let exe = split(debug);
    let dir = scratch(&format!("stack_split_{threads}_{debug}"));
    let t = threads.to_string();
    // One case through `kprof run`'s flag, the others through the variable.
    let (out, p) = if threads == 1 && !debug {
        kprof_run(&exe, &dir, &[&t, "6"])
    } else {
        sampled(&exe, &dir, &[&t, "6"])
    };
    assert_ok(&out);
    // The program's own output is unchanged by the samples.
    let plain = run(clean_cmd(&exe)
        .args([&t, "6"])
        .env("OMP_WAIT_POLICY", "passive"));
    assert_ok(&plain);
    assert_eq!(out.stdout, plain.stdout, "the program's output");

    let info = &p["stack_samples"];
    assert_eq!(u(&info["hz"]), 1000, "{info}");
    assert_eq!(u(&info["threads"]), threads as u64, "{info}");
    assert_eq!(u(&info["lost"]), 0, "{info}");
    let taken = u(&info["samples"]);
    let what = format!("{threads} thread(s), -g {debug}");

    // Region split: 70/30 between its two functions, and nothing else to speak of.
    let s = &region(&p, "split")["stack_samples"];
    let f = functions(s);
    let shown = shares(&f, &["split_seventy", "split_thirty"]);
    assert_shares(
        &shown,
        &[("split_seventy", 70.0), ("split_thirty", 30.0)],
        &what,
    );
    let named = f["split_seventy"] + f["split_thirty"];
    assert!(named * 100 >= u(&s["samples"]) * 95, "{what}: split {s}");
    assert!(
        !f.contains_key("chain_inner"),
        "{what}: chain code under split: {f:?}"
    );

    // Region chain: self shares 50/30/20, and the call path outer / middle / inner.
    let c = &region(&p, "chain")["stack_samples"];
    let f = functions(c);
    assert!(
        !f.contains_key("split_seventy"),
        "{what}: split code under chain: {f:?}"
    );
    let shown = shares(&f, &["chain_inner", "chain_middle", "chain_outer"]);
    assert_shares(
        &shown,
        &[
            ("chain_inner", 50.0),
            ("chain_middle", 30.0),
            ("chain_outer", 20.0),
        ],
        &what,
    );
    // The paths start at the deepest function all of the region's stacks pass
    // through: chain_outer itself, which holds every chain sample (or the OpenMP
    // body above it).
    let outer = {
        let roots = &c["paths"];
        let top = &roots.as_array().expect("paths")[0];
        if top["name"] == "chain_outer" {
            top.clone()
        } else {
            path(&top["children"], "chain_outer").clone()
        }
    };
    let middle = path(&outer["children"], "chain_middle");
    let inner = path(&middle["children"], "chain_inner");
    assert_eq!(u(&inner["self_samples"]), f["chain_inner"], "{what}: {c}");
    assert_eq!(u(&middle["self_samples"]), f["chain_middle"], "{what}: {c}");
    assert_eq!(
        u(&outer["samples"]),
        f["chain_outer"] + f["chain_middle"] + f["chain_inner"],
        "{what}: {c}"
    );
    // The context: how one thread got there (main, or a worker's start).
    let context = c["context"].as_array().unwrap();
    assert!(
        context.iter().any(|x| x == "main" || x == "start_thread"),
        "{what}: the context: {context:?}"
    );

    // Every sample is somewhere: the regions, or outside them.
    let placed = u(&s["samples"]) + u(&c["samples"]) + u(&info["outside"]["samples"]);
    assert_eq!(placed, taken, "{what}: {info}");
    // About 1.4 s of CPU per thread at the kernel's tick (100 Hz at least).
    assert!(taken >= 100 * threads as u64, "{what}: {taken} samples");

    report_agrees(&dir.join("out"), &p);

    // Lines: the functions' loops in split.c with -g; none without.
    let lines = s["lines"].as_array().expect("lines");
    if debug {
        let l = lines
            .iter()
            .find(|l| l["function"] == "split_seventy")
            .unwrap_or_else(|| panic!("{what}: no line of split_seventy: {lines:?}"));
        assert!(l["file"].as_str().unwrap().ends_with("split.c"), "{l}");
        let src = std::fs::read_to_string(test_file("sampling/split.c")).unwrap();
        let line = src
            .lines()
            .nth(u(&l["line"]) as usize - 1)
            .unwrap_or_default();
        assert!(
            line.contains("STEPS(7")
                || line.contains("x = x * (a) + (b)")
                || line.contains("for (long i"),
            "{what}: line {} of split.c is {line:?}",
            l["line"]
        );
    } else {
        assert!(lines.is_empty(), "{what}: lines without -g: {lines:?}");
    }
}

/// `kprof report --samples` shows each region's samples and its functions'
/// counts as profile.json has them.
fn report_agrees(dir: &Path, p: &Value) {
    let o = run(clean_cmd(&lib("kprof"))
        .args(["report", "--samples"])
        .arg(dir));
    assert_ok(&o);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains(&format!(
            "Call-stack samples: {} at 1000 Hz",
            u(&p["stack_samples"]["samples"])
        )),
        "{text}"
    );
    for name in ["split", "chain"] {
        let s = &region(p, name)["stack_samples"];
        let head = format!("\n{name} (user_region): {} samples", u(&s["samples"]));
        let at = text
            .find(&head)
            .unwrap_or_else(|| panic!("no {head:?} in\n{text}"));
        let block = &text[at + 1..];
        let block = &block[..block.find("\n\n").unwrap_or(block.len())];
        for (f, n) in functions(s) {
            assert!(
                block
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(&n.to_string())
                        && l.trim_end().ends_with(&f)),
                "{f} with {n} samples in:\n{block}"
            );
        }
    }
}

#[test]
fn shares_one_thread_with_debug_information() {
    check_split(1, true);
}

#[test]
fn shares_two_threads_with_debug_information() {
    check_split(2, true);
}

#[test]
fn shares_one_thread_without_debug_information() {
    check_split(1, false);
}

#[test]
fn shares_two_threads_without_debug_information() {
    check_split(2, false);
}

/// Whether `perf record -e cpu-clock` works here (installed, and allowed).
fn perf_works(dir: &Path) -> bool {
    Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(dir.join("probe.data"))
        .arg("true")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Per-function shares of the same program: kprof's samples against perf's.
#[test]
fn shares_agree_with_perf() {
    let dir = scratch("stack_perf");
    if skip_unless(
        perf_works(&dir),
        "Linux perf with the cpu-clock software event (linux-perf; perf_event_paranoid <= 1 or root)",
    ) {
        return;
    }
    let exe = split(true);
    let names = [
        "split_seventy",
        "split_thirty",
        "chain_inner",
        "chain_middle",
        "chain_outer",
    ];
    let data = dir.join("perf.data");
    let rec = run(Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "1000", "-o"])
        .arg(&data)
        .arg(&exe)
        .args(["1", "6"])
        .env("OMP_WAIT_POLICY", "passive"));
    assert_ok(&rec);
    let rep = run(Command::new("perf")
        .args(["report", "--stdio", "--sort", "sym", "-i"])
        .arg(&data));
    assert_ok(&rep);
    let text = String::from_utf8_lossy(&rep.stdout);
    let mut perf: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut w = line.split_whitespace();
        let (Some(pct), Some(_), Some(sym)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if let Ok(v) = pct.trim_end_matches('%').parse::<f64>() {
            // Hundredths of a percent, as counts.
            perf.insert(sym.to_string(), (v * 100.0).round() as u64);
        }
    }
    let (out, p) = sampled(&exe, &dir, &["1", "6"]);
    assert_ok(&out);
    let mut kprof: BTreeMap<String, u64> = BTreeMap::new();
    for s in [
        &region(&p, "split")["stack_samples"],
        &region(&p, "chain")["stack_samples"],
        &p["stack_samples"]["outside"],
    ] {
        for (k, v) in functions(s) {
            *kprof.entry(k).or_default() += v;
        }
    }
    let perf_shares = shares(&perf, &names);
    let kprof_shares = shares(&kprof, &names);
    for n in names {
        assert!(
            (perf_shares[n] - kprof_shares[n]).abs() <= 5.0,
            "{n}: kprof {:.1}%, perf {:.1}%\nkprof {kprof_shares:?}\nperf {perf_shares:?}",
            kprof_shares[n],
            perf_shares[n]
        );
    }
}

/// The value after `key ` on the program's stdout.
fn stdout_value(out: &Output, key: &str) -> i64 {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key} ")))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {text}"))
}

/// kprof's samples come with a real-time signal of their own: the program's
/// SIGPROF profiler keeps counting, and its results and exit status stay.
#[test]
fn a_programs_own_sigprof_keeps_working() {
    let exe = build("own_sigprof");
    let dir = scratch("stack_sigprof");
    let plain = run(&mut clean_cmd(&exe));
    let (out, p) = sampled(&exe, &dir, &[]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(plain.status.code(), Some(3));
    let result = |o: &Output| {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .find(|l| l.starts_with("result "))
            .map(str::to_string)
    };
    assert_eq!(result(&out), result(&plain));
    assert!(result(&out).is_some());
    let ticks = stdout_value(&out, "ticks");
    let plain_ticks = stdout_value(&plain, "ticks");
    // ITIMER_PROF fires at the kernel's tick: at least 100 Hz of the CPU time.
    let cpu_ms = stdout_value(&out, "cpu_ms");
    assert!(
        ticks * 10 >= cpu_ms * 9 / 10 && ticks * 2 >= plain_ticks,
        "SIGPROF ticks under kprof {ticks} ({cpu_ms} ms of CPU), without {plain_ticks}"
    );
    let info = &p["stack_samples"];
    let signal = info["signal"].as_i64().unwrap();
    assert!(
        signal > libc::SIGPROF as i64 && signal >= libc::SIGRTMIN() as i64,
        "{info}"
    );
    let f = functions(&region(&p, "work")["stack_samples"]);
    assert!(f.get("compute").copied().unwrap_or(0) > 0, "{f:?}");
}

/// A forked child has no timer (POSIX timers are not inherited) and survives
/// its CPU time; an exec'd program has none either.
#[test]
fn fork_and_exec_leave_no_timer() {
    let exe = build("forks");
    let dir = scratch("stack_fork");
    let (out, p) = sampled(&exe, &dir, &[]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(stdout_value(&out, "parent_timers"), 1, "{text}");
    assert_eq!(stdout_value(&out, "child_timers"), 0, "{text}");
    assert_eq!(stdout_value(&out, "child_status"), 0, "{text}");
    let after_exec = text.split("exec:\n").nth(1).unwrap_or_default();
    assert!(
        !after_exec.contains("ID:"),
        "the exec'd program has a timer: {after_exec}"
    );
    assert!(
        u(&p["stack_samples"]["samples"]) > 0,
        "{}",
        p["stack_samples"]
    );
}
