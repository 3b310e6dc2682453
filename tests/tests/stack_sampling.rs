//! Call-stack samples (`KPROF_SAMPLE_HZ`): programs whose time splits in known
//! shares between named functions (`tests/sampling/split.c`: 70/30 in region
//! `split`, a three-level chain with self shares 50/30/20 in region `chain`)
//! must show those shares within 5 points, under the right region, with 1 and 2
//! OpenMP threads, built with and without `-g` (source lines only with it); the
//! same program under Linux `perf record -e cpu-clock` must give the same
//! per-function shares within 5 points; a program with its own `SIGPROF`
//! profiler keeps it working and its results; a forked child and an exec'd
//! program inherit no timer. The same shares inside real Kokkos kernels
//! (`tests/kokkos/sampling_split.cpp`, under `kprof run --sample-hz`), on
//! libgomp and on libomp; OpenMP programs that know nothing of kprof
//! (`tests/sampling/omp_hot.c`) run unchanged, their samples under their
//! parallel region; threads that never reach kprof (libgomp's workers, a
//! helper pthread: `tests/sampling/unseen.c`) are sampled, under the root, as
//! much as their own CPU clocks say; `kprof plot` draws the samples as frames
//! below their construct. (MPI: `tests/tests/mpi.rs`.)

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
    kprof_tests::sample_functions(s)
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
        // kprof's own libraries carry debug information: a sample taken in
        // the region's begin or end has a line there, but none in split.c.
        assert!(
            !lines
                .iter()
                .any(|l| l["file"].as_str().unwrap_or_default().ends_with("split.c")),
            "{what}: lines of split.c without -g: {lines:?}"
        );
    }
}

/// Whether a report line ends with the function name `f`, or with the start of
/// it cut by the report (a long name ends in `…`).
fn shows_name(line: &str, f: &str) -> bool {
    let line = line.trim_end();
    if line.ends_with(f) {
        return true;
    }
    let Some(cut) = line.strip_suffix('…') else {
        return false;
    };
    // The name is the line's text after its count and its share.
    let shown = cut.split_whitespace().skip(2).collect::<Vec<_>>().join(" ");
    !shown.is_empty() && f.starts_with(&shown)
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
                        && shows_name(l, &f)),
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

// ---- Kokkos: the same shares inside real Kokkos kernels ----

/// The OpenMP runtime a Kokkos program runs on: GCC's libgomp (no OpenMP tool
/// interface: only the thread that launches the kernels reaches kprof), or LLVM's
/// libomp 19 under libgomp's name (its workers reach kprof as OpenMP threads).
#[derive(Clone, Copy, Debug, PartialEq)]
enum KokkosOmp {
    Libgomp,
    Libomp19,
}

/// `tests/kokkos/sampling_split.cpp` built against the Kokkos 3.4.01 install
/// of tests/scripts/build-kokkos.sh (Serial + OpenMP, static), with `-g` or
/// without (`-g0`: functions from the symbol table only); None (skipped)
/// where that Kokkos is not built.
fn kokkos_split(debug: bool) -> Option<PathBuf> {
    static G: OnceLock<Option<PathBuf>> = OnceLock::new();
    static PLAIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    let cell = if debug { &G } else { &PLAIN };
    cell.get_or_init(|| {
        let install = kprof_tests::openmp::deps_dir().join("kokkos-3.4.01/install");
        let (core, containers) = (
            install.join("lib/libkokkoscore.a"),
            install.join("lib/libkokkoscontainers.a"),
        );
        if skip_unless(
            core.is_file(),
            "real Kokkos (run tests/scripts/build-kokkos.sh)",
        ) {
            return None;
        }
        let dir = scratch(if debug {
            "stack_kokkos_g"
        } else {
            "stack_kokkos"
        });
        let include = install.join("include");
        let mut args = vec![
            "-std=c++14",
            "-fopenmp",
            "-isystem",
            include.to_str().expect("UTF-8 path"),
            containers.to_str().expect("UTF-8 path"),
            core.to_str().expect("UTF-8 path"),
            "-ldl",
        ];
        // compile() passes -g; -g0 after it takes the debug information away.
        if !debug {
            args.push("-g0");
        }
        Some(kprof_tests::compile(
            &[&test_file("kokkos/sampling_split.cpp")],
            &dir.join("sampling_split"),
            &args,
        ))
    })
    .clone()
}

/// The environment of a Kokkos or OpenMP run: `threads` OpenMP threads, no
/// inherited OpenMP or loader setting, and libomp 19 first on the library
/// path as `libgomp.so.1` where asked.
fn omp_env(cmd: &mut Command, threads: usize, on_libomp19: bool) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("OMP_") || k.starts_with("KMP_") || k == "LD_LIBRARY_PATH" {
            cmd.env_remove(k);
        }
    }
    cmd.env("OMP_NUM_THREADS", threads.to_string())
        .env("OMP_PROC_BIND", "false")
        .env("OMP_WAIT_POLICY", "passive");
    if on_libomp19 {
        cmd.env(
            "LD_LIBRARY_PATH",
            kprof_tests::openmp::gomp_shim(kprof_tests::openmp::Runtime::Llvm19),
        );
    }
    cmd
}

/// Self samples by function, summed over the subtree of every top-level node
/// named `name` (the kernel, and the OpenMP region and implicit tasks Kokkos
/// runs it in), and their samples; panics when there is no such node.
fn subtree_samples(p: &Value, name: &str) -> (BTreeMap<String, u64>, u64, Vec<Value>) {
    let all = kprof_tests::nodes(p);
    let under: Vec<&(Vec<String>, Value)> =
        all.iter().filter(|(path, _)| path[0] == name).collect();
    assert!(!under.is_empty(), "no node {name} in {}", p["tree"]);
    let mut f: BTreeMap<String, u64> = BTreeMap::new();
    let mut samples = 0;
    let mut sampled = Vec::new();
    for (_, n) in under {
        let s = &n["stack_samples"];
        if s.is_null() {
            continue;
        }
        samples += u(&s["samples"]);
        for (k, v) in functions(s) {
            *f.entry(k).or_default() += v;
        }
        sampled.push(s.clone());
    }
    (f, samples, sampled)
}

/// Every outermost frame named `name` in a forest of sampled call paths (one
/// per thread's stack: a team's threads start from different roots).
fn find_paths<'a>(list: &'a Value, name: &str, found: &mut Vec<&'a Value>) {
    for p in list.as_array().into_iter().flatten() {
        if p["name"] == name {
            found.push(p);
        } else {
            find_paths(&p["children"], name, found);
        }
    }
}

const SEVENTY: &str = "split_seventy(double)";
const THIRTY: &str = "split_thirty(double)";
const INNER: &str = "chain_inner(double)";
const MIDDLE: &str = "chain_middle(double)";
const OUTER: &str = "chain_outer(double)";

/// `tests/kokkos/sampling_split.cpp` under `kprof run --sample-hz 1000` with
/// `threads` OpenMP threads on `omp`: its output and status unchanged; in
/// kernel `split` 70/30 between its two functions, in kernel `chain` self
/// shares 50/30/20 on the call path outer / middle / inner, each within 5
/// points, neither kernel's functions in the other; lines (the loops of
/// sampling_split.cpp) only with -g.
fn check_kokkos(threads: usize, debug: bool, omp: KokkosOmp) {
    let Some(exe) = kokkos_split(debug) else {
        return;
    };
    let on_libomp19 = omp == KokkosOmp::Libomp19;
    if on_libomp19
        && skip_unless(
            kprof_tests::openmp::libomp19().is_some(),
            "libomp 19 (tests/setup.sh unpacks it)",
        )
    {
        return;
    }
    let what = format!("Kokkos, {threads} thread(s) on {omp:?}, -g {debug}");
    let dir = scratch(&format!("stack_kokkos_{threads}_{debug}_{omp:?}"));
    let out_dir = dir.join("out");
    let plain = run(omp_env(&mut clean_cmd(&exe), threads, on_libomp19).arg("6"));
    assert_ok(&plain);
    let out = run(omp_env(&mut clean_cmd(&lib("kprof")), threads, on_libomp19)
        .args(["run", "--sample-hz", HZ, "-o"])
        .arg(&out_dir)
        .arg("--")
        .arg(&exe)
        .arg("6"));
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "{what}: the program's output"
    );
    assert!(
        String::from_utf8_lossy(&plain.stdout).contains("execution space = OpenMP"),
        "{what}: {plain:?}"
    );
    let p = read_profile(&out_dir);
    let info = &p["stack_samples"];
    assert_eq!(u(&info["hz"]), 1000, "{info}");
    assert_eq!(u(&info["lost"]), 0, "{info}");
    // Every thread of the team is sampled: on libomp each reaches kprof as an
    // OpenMP thread; on libgomp only the thread that launches the kernels does
    // (Kokkos calls its tool there), and kprof finds the worker by listing the
    // process's threads.
    let sampled_threads = threads;
    assert_eq!(
        u(&info["threads"]),
        sampled_threads as u64,
        "{what}: {info}"
    );

    if !on_libomp19 && threads > 1 {
        libgomp_worker_samples(&p, &what);
    }

    // Kernel split (a parallel_for, at the top of the tree).
    assert_eq!(region(&p, "split")["kind"], "parallel_for", "{what}");
    let (f, samples, _) = subtree_samples(&p, "split");
    assert_shares(
        &shares(&f, &[SEVENTY, THIRTY]),
        &[(SEVENTY, 70.0), (THIRTY, 30.0)],
        &what,
    );
    assert!(
        (f[SEVENTY] + f[THIRTY]) * 100 >= samples * 95,
        "{what}: split {f:?}"
    );
    assert!(
        !f.contains_key(INNER),
        "{what}: chain code under split: {f:?}"
    );

    // Kernel chain: self shares 50/30/20, on the call path outer / middle / inner.
    assert_eq!(region(&p, "chain")["kind"], "parallel_for", "{what}");
    let (f, samples, sampled) = subtree_samples(&p, "chain");
    assert!(
        !f.contains_key(SEVENTY),
        "{what}: split code under chain: {f:?}"
    );
    assert_shares(
        &shares(&f, &[INNER, MIDDLE, OUTER]),
        &[(INNER, 50.0), (MIDDLE, 30.0), (OUTER, 20.0)],
        &what,
    );
    assert!(
        (f[INNER] + f[MIDDLE] + f[OUTER]) * 100 >= samples * 95,
        "{what}: chain {f:?}"
    );
    let (mut in_inner, mut in_outer) = (0, 0);
    for s in &sampled {
        let mut outers = Vec::new();
        find_paths(&s["paths"], OUTER, &mut outers);
        for outer in outers {
            let middle = path(&outer["children"], MIDDLE);
            let inner = path(&middle["children"], INNER);
            in_inner += u(&inner["self_samples"]);
            in_outer += u(&outer["samples"]);
        }
    }
    assert_eq!(in_inner, f[INNER], "{what}: {sampled:?}");
    assert_eq!(
        in_outer,
        f[OUTER] + f[MIDDLE] + f[INNER],
        "{what}: {sampled:?}"
    );

    // Every sample is somewhere: the kernels' subtrees, or outside them.
    let placed: u64 = kprof_tests::nodes(&p)
        .iter()
        .filter_map(|(_, n)| n["stack_samples"]["samples"].as_u64())
        .sum::<u64>()
        + u(&info["outside"]["samples"]);
    assert_eq!(placed, u(&info["samples"]), "{what}: {info}");
    // About 1.2 s of CPU per thread at the kernel's tick (100 Hz at least).
    assert!(
        u(&info["samples"]) >= 100 * sampled_threads as u64,
        "{what}: {info}"
    );

    // Lines: the functions' loops in sampling_split.cpp with -g; none without.
    let (_, _, split_sampled) = subtree_samples(&p, "split");
    let lines: Vec<&Value> = split_sampled
        .iter()
        .chain(&sampled)
        .flat_map(|s| s["lines"].as_array().expect("lines"))
        .collect();
    if debug {
        let src = std::fs::read_to_string(test_file("kokkos/sampling_split.cpp")).unwrap();
        for function in [SEVENTY, THIRTY, INNER] {
            let l = lines
                .iter()
                .find(|l| l["function"] == function)
                .unwrap_or_else(|| panic!("{what}: no line of {function}: {lines:?}"));
            assert!(
                l["file"].as_str().unwrap().ends_with("sampling_split.cpp"),
                "{l}"
            );
            let line = src
                .lines()
                .nth(u(&l["line"]) as usize - 1)
                .unwrap_or_default();
            assert!(
                line.contains("STEPS(")
                    || line.contains("x = x * (a) + (b)")
                    || line.contains("for (long i"),
                "{what}: line {} of sampling_split.cpp is {line:?}",
                l["line"]
            );
        }
    } else {
        // kprof's own libraries carry debug information (a sample in a
        // kernel's begin or end has a line there), the program none.
        assert!(
            !lines.iter().any(|l| l["file"]
                .as_str()
                .unwrap_or_default()
                .ends_with("sampling_split.cpp")),
            "{what}: lines of sampling_split.cpp without -g: {lines:?}"
        );
    }
}

/// On libgomp, the samples of the worker that never reached kprof: they are
/// the root's (kprof knows no construct of that thread), and hold the kernels'
/// functions in the kernels' shares (split 70/30, chain 50/30/20 on the path
/// outer / middle / inner, within 5 points), about as many as the launching
/// thread's under the kernels (Kokkos gives each thread half of the
/// iterations: within a third).
fn libgomp_worker_samples(p: &Value, what: &str) {
    let outside = &p["stack_samples"]["outside"];
    let f = functions(outside);
    assert_shares(
        &shares(&f, &[SEVENTY, THIRTY]),
        &[(SEVENTY, 70.0), (THIRTY, 30.0)],
        &format!("{what}, outside (the worker)"),
    );
    assert_shares(
        &shares(&f, &[INNER, MIDDLE, OUTER]),
        &[(INNER, 50.0), (MIDDLE, 30.0), (OUTER, 20.0)],
        &format!("{what}, outside (the worker)"),
    );
    let named = |f: &BTreeMap<String, u64>| -> u64 {
        [SEVENTY, THIRTY, INNER, MIDDLE, OUTER]
            .iter()
            .map(|n| f.get(*n).copied().unwrap_or(0))
            .sum()
    };
    let worker = named(&f);
    let launcher = named(&subtree_samples(p, "split").0) + named(&subtree_samples(p, "chain").0);
    assert!(
        worker * 3 >= launcher * 2 && worker * 2 <= launcher * 3,
        "{what}: the worker's samples of the kernels' functions {worker}, the launching \
         thread's {launcher}: {f:?}"
    );
    // The worker's stacks: chain_inner below chain_middle below chain_outer.
    let mut outers = Vec::new();
    find_paths(&outside["paths"], OUTER, &mut outers);
    assert!(!outers.is_empty(), "{what}: {outside}");
    let (mut in_inner, mut in_outer) = (0, 0);
    for outer in outers {
        let middle = path(&outer["children"], MIDDLE);
        in_inner += u(&path(&middle["children"], INNER)["self_samples"]);
        in_outer += u(&outer["samples"]);
    }
    assert_eq!(in_inner, f[INNER], "{what}: {outside}");
    assert_eq!(
        in_outer,
        f[OUTER] + f[MIDDLE] + f[INNER],
        "{what}: {outside}"
    );
}

#[test]
fn kokkos_shares_one_thread_with_debug_information() {
    check_kokkos(1, true, KokkosOmp::Libgomp);
}

#[test]
fn kokkos_shares_one_thread_without_debug_information() {
    check_kokkos(1, false, KokkosOmp::Libgomp);
}

#[test]
fn kokkos_shares_two_threads_with_debug_information() {
    check_kokkos(2, true, KokkosOmp::Libomp19);
}

#[test]
fn kokkos_shares_two_threads_without_debug_information() {
    check_kokkos(2, false, KokkosOmp::Libomp19);
}

/// On GCC's libgomp the worker thread never reaches kprof: the launching
/// thread's samples under the kernels, the worker's under the root, both with
/// the kernels' shares.
#[test]
fn kokkos_shares_two_threads_on_libgomp_sample_every_thread() {
    check_kokkos(2, true, KokkosOmp::Libgomp);
}

// ---- OpenMP programs that know nothing of kprof ----

/// How `tests/sampling/omp_hot.c` is built and run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum OmpCase {
    /// clang -fopenmp on the system's libomp 14.
    ClangLibomp14,
    /// gcc -fopenmp (libgomp's ABI) on libomp 19 under libgomp's name.
    GccLibomp19,
    /// gcc -fopenmp on GCC's own libgomp (no OpenMP tool interface).
    GccLibgomp,
}

/// `tests/sampling/omp_hot.c` compiled by `compiler` (`-O2 -g`), once per
/// compiler: two cases run the gcc build at once, and a second build into the
/// same folder would remove the first one's program under it.
fn omp_hot(compiler: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<BTreeMap<String, PathBuf>> =
        std::sync::Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    built
        .entry(compiler.to_string())
        .or_insert_with(|| {
            let dir = scratch(&format!("stack_omp_hot_{compiler}"));
            kprof_tests::compile_with(
                compiler,
                &[&test_file("sampling/omp_hot.c")],
                &dir.join("omp_hot"),
                &["-fopenmp"],
            )
        })
        .clone()
}

/// An OpenMP program run unchanged under `kprof run --sample-hz 200`: the
/// same output and exit status (3) as without kprof; on libomp its samples
/// (both threads) are under its parallel region's implicit tasks, where
/// omp_hot has 90% of them and omp_cold 10% (within 5 points); on libgomp,
/// where kprof sees no OpenMP event and no thread, nothing is written and
/// kprof says why.
fn check_openmp(case: OmpCase) {
    use kprof_tests::openmp::{have, libomp19};
    let (compiler, on_libomp19) = match case {
        OmpCase::ClangLibomp14 => ("clang", false),
        OmpCase::GccLibomp19 => ("gcc", true),
        OmpCase::GccLibgomp => ("gcc", false),
    };
    if skip_unless(have(compiler), compiler)
        || (on_libomp19
            && skip_unless(
                libomp19().is_some(),
                "libomp 19 (tests/setup.sh unpacks it)",
            ))
    {
        return;
    }
    let what = format!("{case:?}");
    let exe = omp_hot(compiler);
    let dir = scratch(&format!("stack_omp_{case:?}"));
    let out_dir = dir.join("out");
    let plain = run(omp_env(&mut clean_cmd(&exe), 2, on_libomp19).arg("6"));
    assert_eq!(plain.status.code(), Some(3), "{what}: {plain:?}");
    let out = run(omp_env(&mut clean_cmd(&lib("kprof")), 2, on_libomp19)
        .args(["run", "--sample-hz", "200", "-o"])
        .arg(&out_dir)
        .arg("--")
        .arg(&exe)
        .arg("6"));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "{what}: {err}");
    assert_eq!(out.stdout, plain.stdout, "{what}: the program's output");
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("omp_hot: team 2, results "),
        "{what}: {out:?}"
    );
    if case == OmpCase::GccLibgomp {
        assert!(
            err.contains("runs on GCC's libgomp, which has no OpenMP tool interface"),
            "{what}: {err}"
        );
        assert!(!out_dir.join("profile.json").exists(), "{what}: {err}");
        return;
    }
    let p = read_profile(&out_dir);
    let info = &p["stack_samples"];
    assert_eq!((u(&info["hz"]), u(&info["threads"])), (200, 2), "{info}");
    assert_eq!(u(&info["lost"]), 0, "{info}");
    let all = kprof_tests::nodes(&p);
    let regions: Vec<&(Vec<String>, Value)> = all
        .iter()
        .filter(|(_, n)| n["kind"] == "omp_parallel")
        .collect();
    assert_eq!(regions.len(), 1, "{what}: {}", p["tree"]);
    let region = &regions[0].0;
    let mut f: BTreeMap<String, u64> = BTreeMap::new();
    let mut in_region = 0;
    let mut in_tasks = 0;
    for (path, n) in &all {
        if !path.starts_with(region) {
            continue;
        }
        let s = &n["stack_samples"];
        let Some(k) = s["samples"].as_u64() else {
            continue;
        };
        in_region += k;
        if n["kind"] == "omp_implicit_task" {
            in_tasks += k;
            for (name, v) in functions(s) {
                *f.entry(name).or_default() += v;
            }
        }
    }
    let taken = u(&info["samples"]);
    // 6 rounds of 2 x ~100 ms of CPU: ~240 samples at 200 Hz.
    assert!(taken >= 150, "{what}: {info}");
    assert!(
        in_region * 100 >= taken * 95,
        "{what}: {in_region} of {info}"
    );
    assert!(
        in_tasks * 100 >= in_region * 95,
        "{what}: {in_tasks} of {in_region}"
    );
    assert_shares(
        &shares(&f, &["omp_hot", "omp_cold"]),
        &[("omp_hot", 90.0), ("omp_cold", 10.0)],
        &what,
    );
    assert!(
        (f["omp_hot"] + f["omp_cold"]) * 100 >= in_tasks * 95,
        "{what}: {f:?}"
    );
}

#[test]
fn openmp_program_runs_unchanged_clang_libomp14() {
    check_openmp(OmpCase::ClangLibomp14);
}

#[test]
fn openmp_program_runs_unchanged_gcc_on_libomp19() {
    check_openmp(OmpCase::GccLibomp19);
}

#[test]
fn openmp_program_runs_unchanged_gcc_on_libgomp() {
    check_openmp(OmpCase::GccLibgomp);
}

// ---- threads that never reach kprof ----

/// `tests/sampling/unseen.c`, built once (gcc: OpenMP on GCC's libgomp).
fn unseen() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = scratch("stack_unseen");
            compile_with_core(
                &[&test_file("sampling/unseen.c")],
                &dir.join("unseen"),
                &["-fopenmp", "-lpthread"],
            )
        })
        .clone()
}

/// The CPU time the program measured for its thread `name` (`cpu_ms NAME MS`).
fn measured_cpu_ms(out: &Output, name: &str) -> f64 {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("cpu_ms {name} ")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no cpu_ms {name} in {text}"))
}

/// The program's output without its CPU times (which vary from run to run).
fn results(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("cpu_ms "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `samples` at `HZ` stand for the CPU time `cpu_ms` a thread measured itself:
/// within 10% and 10 samples (the kernel checks CPU-time timers at its tick).
fn assert_cpu_time(samples: u64, cpu_ms: f64, what: &str) {
    let hz: f64 = HZ.parse().unwrap();
    let want = cpu_ms * hz / 1000.0;
    assert!(
        (samples as f64 - want).abs() <= 0.1 * want + 10.0,
        "{what}: {samples} samples at {hz} Hz, {cpu_ms} ms of CPU measured ({want:.0} expected)"
    );
}

/// Runs `tests/sampling/unseen.c MODE` with and without call-stack samples (2
/// OpenMP threads on GCC's libgomp); the same results and status. Returns the
/// sampled run, its profile and its output directory.
fn run_unseen(mode: &str) -> (Output, Value, PathBuf) {
    let exe = unseen();
    let dir = scratch(&format!("stack_unseen_{mode}"));
    let out_dir = dir.join("out");
    let _ = std::fs::remove_dir_all(&out_dir);
    let plain = run(omp_env(&mut clean_cmd(&exe), 2, false).arg(mode));
    assert_ok(&plain);
    let out = run(omp_env(&mut clean_cmd(&exe), 2, false)
        .arg(mode)
        .env("KPROF_SAMPLE_HZ", HZ)
        .env("KPROF_OUTPUT_DIR", &out_dir));
    assert_ok(&out);
    assert_eq!(
        results(&out),
        results(&plain),
        "{mode}: the program's output"
    );
    let p = read_profile(&out_dir);
    let info = &p["stack_samples"];
    assert_eq!(u(&info["threads"]), 2, "{mode}: {info}");
    assert_eq!(u(&info["lost"]), 0, "{mode}: {info}");
    // Every sample is somewhere: the region, or outside it.
    let placed: u64 = kprof_tests::nodes(&p)
        .iter()
        .filter_map(|(_, n)| n["stack_samples"]["samples"].as_u64())
        .sum::<u64>()
        + u(&info["outside"]["samples"]);
    assert_eq!(placed, u(&info["samples"]), "{mode}: {info}");
    (out, p, out_dir)
}

/// A helper pthread that never calls kprof, started after kprof started
/// (found by the writer's periodic look at the process's threads): its
/// samples are the root's, in its own function, as many as its CPU time says
/// (the program's own measure of the thread's CPU clock); the main thread's
/// are under its region; `kprof report --samples` shows both.
#[test]
fn a_helper_thread_that_never_reaches_kprof_is_sampled_under_the_root() {
    let (out, p, out_dir) = run_unseen("pthread");
    let outside = &p["stack_samples"]["outside"];
    let f = functions(outside);
    let helper = f.get("helper_spin").copied().unwrap_or(0);
    assert_cpu_time(
        helper,
        measured_cpu_ms(&out, "helper"),
        "helper_spin (outside)",
    );
    assert!(!f.contains_key("main_spin"), "{f:?}");
    let mut found = Vec::new();
    find_paths(&outside["paths"], "helper_spin", &mut found);
    assert!(!found.is_empty(), "{outside}");
    let work = &region(&p, "main_work")["stack_samples"];
    let w = functions(work);
    assert!(!w.contains_key("helper_spin"), "{w:?}");
    assert_cpu_time(
        w.get("main_spin").copied().unwrap_or(0),
        measured_cpu_ms(&out, "main"),
        "main_spin (main_work)",
    );
    let o = run(clean_cmd(&lib("kprof"))
        .args(["report", "--samples"])
        .arg(&out_dir));
    assert_ok(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!(
            "outside every construct: {} samples",
            u(&outside["samples"])
        )),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().next() == Some(&helper.to_string())
                && shows_name(l, "helper_spin")),
        "{text}"
    );
    // The flame graph: the samples outside every construct are a frame of
    // their own at the top, as wide as their CPU time (1/hz s a sample), the
    // helper's function inside it as wide as the CPU time the helper measured.
    let o = run(clean_cmd(&lib("kprof")).arg("plot").arg(&out_dir));
    assert_ok(&o);
    let svg = std::fs::read_to_string(out_dir.join("plot-icicle.svg")).unwrap();
    let frames = flame_frames(&svg);
    // The graph's own root ("all") is the first row; the top level the second.
    let mut ys: Vec<f64> = frames.iter().map(|f| f.y).collect();
    ys.sort_by(f64::total_cmp);
    ys.dedup();
    let top = ys[1];
    let hz: f64 = HZ.parse().unwrap();
    let frame = frames
        .iter()
        .find(|f| f.y == top && f.title.starts_with("outside every construct (sample, "))
        .unwrap_or_else(|| panic!("no frame of the samples outside: {frames:#?}"));
    let want = u(&outside["samples"]) as f64 * 1e9 / hz;
    assert!(
        (frame.w as f64 - want).abs() <= 1.0,
        "{}: {} wide, {want} expected",
        frame.title,
        frame.w
    );
    let spin = frames
        .iter()
        .find(|f| {
            f.y > frame.y
                && f.x >= frame.x
                && f.x + f.w <= frame.x + frame.w
                && f.title.starts_with("helper_spin (sample, ")
        })
        .unwrap_or_else(|| panic!("no helper_spin below {}", frame.title));
    let cpu_ns = measured_cpu_ms(&out, "helper") * 1e6;
    assert!(
        (spin.w as f64 - cpu_ns).abs() <= 0.1 * cpu_ns + 10.0 * 1e9 / hz,
        "helper_spin drawn {} ns wide, the helper measured {cpu_ns} ns of CPU",
        spin.w
    );
}

/// An OpenMP team on GCC's libgomp, which tells kprof nothing, inside a region
/// of the main thread: the worker, which never reaches kprof, is sampled too.
/// The main thread's samples are under the region, the worker's under the
/// root; each thread's split 90/10 between team_hot and team_cold (within 5
/// points), and each thread's samples as many as its CPU time says.
#[test]
fn an_openmp_team_on_libgomp_is_sampled_on_every_thread() {
    let (out, p, _) = run_unseen("omp");
    let team = functions(&region(&p, "team")["stack_samples"]);
    let outside = functions(&p["stack_samples"]["outside"]);
    for (f, thread, what) in [
        (&team, "team_0", "the main thread (team)"),
        (&outside, "team_1", "the worker (outside)"),
    ] {
        assert_shares(
            &shares(f, &["team_hot", "team_cold"]),
            &[("team_hot", 90.0), ("team_cold", 10.0)],
            what,
        );
        assert_cpu_time(
            f["team_hot"] + f["team_cold"],
            measured_cpu_ms(&out, thread),
            what,
        );
    }
}

// ---- the flame graph of `kprof plot` ----

use kprof_tests::plot_check::{flame_frames, FlameFrame as Frame};

/// `kprof plot` of a sampled run: below each region's frame, its sampled
/// functions are frames of kind `sample`, nested as the samples' call paths
/// (chain_inner below chain_middle below chain_outer), inside the region's
/// span, each as wide as its samples in and below it times 1/hz s (the
/// samples' CPU time; the region's exclusive width where that is less),
/// checked against profile.json's samples; the page embeds the same frames.
#[test]
fn flame_graph_draws_the_samples_below_their_constructs() {
    let exe = split(true);
    let dir = scratch("stack_flame");
    let (out, p) = sampled(&exe, &dir, &["1", "4"]);
    assert_ok(&out);
    let out_dir = dir.join("out");
    let o = run(clean_cmd(&lib("kprof")).arg("plot").arg(&out_dir));
    assert_ok(&o);
    let svg = std::fs::read_to_string(out_dir.join("plot-icicle.svg")).unwrap();
    let frames = flame_frames(&svg);
    let row = {
        let mut ys: Vec<f64> = frames.iter().map(|f| f.y).collect();
        ys.sort_by(f64::total_cmp);
        ys.dedup();
        ys[1] - ys[0]
    };
    let hz = u(&p["stack_samples"]["hz"]) as f64;
    for name in ["split", "chain"] {
        let node = region(&p, name);
        let s = &node["stack_samples"];
        let samples = u(&s["samples"]);
        let construct = frames
            .iter()
            .find(|f| f.title.starts_with(&format!("{name} (user_region, ")))
            .unwrap_or_else(|| panic!("no frame of {name}: {frames:#?}"));
        // ns a sample: its CPU time, or the region's exclusive time shared.
        let per_sample = (1e9 / hz).min(u(&node["self_ns"]) as f64 / samples as f64);
        // Each sample path is a frame one row below its parent's, inside it,
        // as wide as its samples.
        fn check(
            list: &Value,
            parent: &Frame,
            frames: &[Frame],
            row: f64,
            per_sample: f64,
            seen: &mut Vec<String>,
        ) {
            for p in list.as_array().unwrap() {
                let name = p["name"].as_str().unwrap();
                let f = frames
                    .iter()
                    .find(|f| {
                        f.y == parent.y + row
                            && f.x >= parent.x
                            && f.x + f.w <= parent.x + parent.w
                            && f.title.starts_with(&format!("{name} (sample, "))
                    })
                    .unwrap_or_else(|| panic!("no sample frame {name} below {}", parent.title));
                let want = u(&p["samples"]) as f64 * per_sample;
                assert!(
                    (f.w as f64 - want).abs() <= 1.0 + 1e-9 * want,
                    "{}: {} wide, {} samples x {per_sample} ns = {want}",
                    f.title,
                    f.w,
                    p["samples"]
                );
                assert!(
                    f.title.contains(&format!(
                        ": {} call-stack samples in and below it",
                        p["samples"]
                    )),
                    "{}",
                    f.title
                );
                seen.push(name.to_string());
                check(&p["children"], f, frames, row, per_sample, seen);
            }
        }
        let mut seen = Vec::new();
        check(&s["paths"], construct, &frames, row, per_sample, &mut seen);
        let want: &[&str] = if name == "split" {
            &["split_seventy", "split_thirty"]
        } else {
            &["chain_outer", "chain_middle", "chain_inner"]
        };
        for w in want {
            assert!(
                seen.iter().any(|s| s == w),
                "{name}: {w} not drawn: {seen:?}"
            );
        }
    }
    // The nesting of the chain, by position: inner inside middle inside outer.
    let find = |n: &str| {
        frames
            .iter()
            .find(|f| f.title.starts_with(&format!("{n} (sample, ")))
            .unwrap()
    };
    let (outer, middle, inner) = (
        find("chain_outer"),
        find("chain_middle"),
        find("chain_inner"),
    );
    assert!(middle.y == outer.y + row && inner.y == middle.y + row);
    assert!(outer.x <= middle.x && middle.x + middle.w <= outer.x + outer.w);
    assert!(middle.x <= inner.x && inner.x + inner.w <= middle.x + middle.w);
    // The page holds the same graph (its frame's document, escaped).
    let page = std::fs::read_to_string(out_dir.join("plot.html")).unwrap();
    for n in ["split_seventy", "chain_inner"] {
        assert!(
            page.contains(&format!("{n} (sample, ")),
            "{n} not on the page"
        );
    }
    assert!(page.contains(">sample</span>"), "the kinds under the graph");
}
