//! Inputs, mutated, through the real `kprof` command: `report`, `diff`,
//! `merge` and `plot` given mutations of a `profile.json` kprof wrote
//! (`tests/fuzz-corpus/profile/`), and `report` and `plot` given mutations of a
//! merged profile (`merged/`), either succeed or exit 2 with exactly one line
//! on stderr, never a panic or a signal. The many cases are the library
//! property tests (`core/tests/inputs_mutated.rs`, the command's
//! `cli/src/inputs_mutated.rs`) and the fuzz targets (`fuzz/`); here a fixed,
//! seeded handful goes through the command.
//!
//! Names through the C ABI: a program's names (non-UTF-8, control characters,
//! a megabyte long) reach the core through every entry point that takes one:
//! Kokkos' (regions, kernels, allocation labels, events), the annotation API's
//! (regions, counters, message channels, events, metadata), RAJA's (kernel
//! names) and OpenACC's (source files, functions, kernel and variable names).
//! The run succeeds with the program's own result, the profile holds each as
//! its bytes read lossily as UTF-8 ([`kprof_tests::names::lossy`], from what
//! the test generated), and a megabyte-long name costs the run a bounded amount
//! of memory. OMPT hands the core no name of the program's: its constructs are
//! named after code addresses, resolved to symbols by kprof, or by static
//! strings; the runtime's own device-type and code-image strings
//! (`device_initialize`, `device_load`) are not the program's and are not
//! checked here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use std::sync::OnceLock;

use kprof_tests::names::{
    any_invalid_utf8, extreme_names, lossy, lossy_sorted, odd_names, sorted, write_names, HUGE_NAME,
};
use kprof_tests::synthetic::measure_cmd;
use kprof_tests::{
    assert_ok, build_kokkos_hosts, clean_cmd, compile, compile_with_core, lib, read_profile, run,
    scratch, test_file, workspace_root,
};
use proptest::prelude::*;
use serde_json::Value;

fn kprof_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    cmd
}

/// Exit 0, or exit 2 with one line `kprof: ...` on stderr.
fn clean_outcome(o: &Output, case: &str) -> bool {
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{case}: {err}");
    match o.status.code() {
        Some(0) => true,
        Some(2) => {
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines.len(), 1, "{case}: one line expected:\n{err}");
            assert!(lines[0].starts_with("kprof: "), "{case}: {err}");
            false
        }
        other => panic!("{case}: exit {other:?} (a signal when None):\n{err}"),
    }
}

/// xorshift64: the cases are fixed (a failure reproduces), yet spread.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation of `b`: a truncation, byte flips, a deleted span, a number
/// replaced by an extreme one, or a key renamed.
fn mutate(b: &[u8], rng: &mut Rng, kind: usize) -> Vec<u8> {
    let mut v = b.to_vec();
    match kind % 5 {
        0 => v.truncate(rng.below(v.len())),
        1 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
        }
        2 => {
            let at = rng.below(v.len());
            let end = (at + 1 + rng.below(40)).min(v.len());
            v.drain(at..end);
        }
        3 => {
            let text = String::from_utf8(v).unwrap();
            let digits: Vec<usize> = text
                .match_indices(|c: char| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            let at = digits[rng.below(digits.len())];
            let extreme = [
                "18446744073709551616",
                "-1",
                "1e400",
                "0.5",
                "null",
                "\"x\"",
            ][rng.below(6)];
            let mut t = text;
            t.replace_range(at..at + 1, extreme);
            v = t.into_bytes();
        }
        _ => {
            let text = String::from_utf8(v).unwrap();
            let keys: Vec<usize> = text.match_indices("\":").map(|(i, _)| i).collect();
            let at = keys[rng.below(keys.len())];
            let mut t = text;
            t.insert(at, 'Z');
            v = t.into_bytes();
        }
    }
    v
}

#[test]
fn report_diff_merge_plot_of_mutated_profiles() {
    let seed_file = workspace_root().join("tests/fuzz-corpus/profile/patterns.json");
    let seed = std::fs::read(&seed_file).unwrap();
    let dir = scratch("inputs_mutated_cli");
    let good = dir.join("good");
    std::fs::create_dir_all(&good).unwrap();
    std::fs::write(good.join("profile.json"), &seed).unwrap();
    // The seed itself succeeds everywhere: the cases below are not all failures.
    assert!(clean_outcome(
        &run(&mut kprof_cmd(&dir, &["report", "good"])),
        "seed report"
    ));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut refused) = (0, 0);
    for case in 0..8 {
        let name = format!("m{case}");
        let d: PathBuf = dir.join(&name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("profile.json"), mutate(&seed, &mut rng, case)).unwrap();
        let out = format!("merged{case}");
        let _ = std::fs::remove_dir_all(dir.join(&out));
        let html = format!("{name}.html");
        for args in [
            vec!["report", name.as_str()],
            vec!["diff", "good", name.as_str()],
            vec!["merge", "good", name.as_str(), "-o", out.as_str()],
            vec!["plot", name.as_str(), "-o", html.as_str()],
        ] {
            let o = run(&mut kprof_cmd(&dir, &args));
            if clean_outcome(&o, &format!("{args:?}")) {
                ok += 1;
            } else {
                refused += 1;
            }
        }
    }
    // Truncations and most flips are refused; renamed optional keys and some
    // numbers are not: both outcomes occur.
    assert!(ok > 0 && refused > 0, "ok {ok}, refused {refused}");
}

/// `kprof report` and `kprof plot` of 8 fixed mutations of a merged profile
/// kprof wrote: exit 0, or exit 2 with one line.
#[test]
fn report_plot_of_mutated_merged_profiles() {
    let seed =
        std::fs::read(workspace_root().join("tests/fuzz-corpus/merged/patterns-ranks-1-3.json"))
            .unwrap();
    let dir = scratch("inputs_mutated_merged");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut ok, mut refused) = (0, 0);
    for case in 0..9 {
        let name = format!("m{case}");
        let d = dir.join(&name);
        std::fs::create_dir_all(&d).unwrap();
        // Case 0 is the seed itself: it must succeed everywhere.
        let b = if case == 0 {
            seed.clone()
        } else {
            mutate(&seed, &mut rng, case)
        };
        std::fs::write(d.join("profile.json"), b).unwrap();
        let html = format!("{name}.html");
        for args in [
            vec!["report", name.as_str()],
            vec!["report", "--flat", name.as_str()],
            vec!["plot", name.as_str(), "-o", html.as_str()],
        ] {
            let o = run(&mut kprof_cmd(&dir, &args));
            let good = clean_outcome(&o, &format!("{args:?}"));
            assert!(good || case > 0, "the seed: {args:?}");
            if good {
                ok += 1;
            } else {
                refused += 1;
            }
        }
    }
    assert!(ok > 3 && refused > 0, "ok {ok}, refused {refused}");
}

/// An entry point names reach the core through: a harness's `names` scenario
/// (each reads the names file with `tests/harness/names_file.h`).
#[derive(Clone, Copy, Debug)]
enum Via {
    /// `tests/harness/kokkos_host.c` under libkprof.
    Kokkos,
    /// `tests/harness/names_annotate.c`, linked with the core.
    Annotations,
    /// `tests/raja/raja_host.cpp` loading libkprof_raja as RAJA does.
    Raja,
    /// `tests/openacc/harness.c` loading libkprof_acc as libgomp does.
    OpenAcc,
}

/// The harnesses, built once per test process.
struct Hosts {
    kokkos: PathBuf,
    annotate: PathBuf,
    raja: PathBuf,
    acc: PathBuf,
}

fn hosts() -> &'static Hosts {
    static HOSTS: OnceLock<Hosts> = OnceLock::new();
    HOSTS.get_or_init(|| {
        let dir = scratch("inputs_mutated_names_bin");
        Hosts {
            kokkos: build_kokkos_hosts(&dir).0,
            annotate: compile_with_core(
                &[&test_file("harness/names_annotate.c")],
                &dir.join("names_annotate"),
                &[],
            ),
            raja: compile(
                &[&test_file("raja/raja_host.cpp")],
                &dir.join("raja_host"),
                &["-ldl", "-pthread"],
            ),
            acc: compile(
                &[&test_file("openacc/harness.c")],
                &dir.join("acc_harness"),
                &["-ldl"],
            ),
        }
    })
}

/// RAJA's plugin records a kernel name of more than this many bytes as
/// `RAJA kernel (<platform>)` (docs/raja.md: a longer `size()` is taken for a
/// `std::string` read with another layout).
const RAJA_MAX_NAME: usize = 1 << 16;

impl Via {
    const ALL: [Via; 4] = [Via::Kokkos, Via::Annotations, Via::Raja, Via::OpenAcc];

    /// The harness run with the names in `file`, writing its profile to `out`.
    fn cmd(self, file: &Path, out: &Path) -> Command {
        let h = hosts();
        let mut cmd = match self {
            Via::Kokkos => {
                let mut c = clean_cmd(&h.kokkos);
                c.args(["4", "names"])
                    .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
                    .env("KOKKOS_HOST_NAMES", file);
                c
            }
            Via::Annotations => {
                let mut c = clean_cmd(&h.annotate);
                c.env("NAMES_FILE", file);
                c
            }
            Via::Raja => {
                let mut c = clean_cmd(&h.raja);
                c.arg("names")
                    .env("RAJA_PLUGINS", lib("libkprof_raja.so"))
                    .env("RAJA_HOST_NAMES", file);
                c
            }
            Via::OpenAcc => {
                let mut c = clean_cmd(&h.acc);
                c.arg("dlopen")
                    .arg(lib("libkprof_acc.so"))
                    .arg("names")
                    .env("ACC_HARNESS_NAMES", file);
                c
            }
        };
        cmd.env("KPROF_OUTPUT_DIR", out).stdin(Stdio::null());
        cmd
    }

    /// What the program prints given `names`: its own result, which the tool
    /// must not change.
    fn stdout(self, names: &[Vec<u8>]) -> String {
        let n = names.len();
        match self {
            Via::Kokkos => String::new(),
            Via::Annotations => {
                let sum: usize = names.iter().map(Vec::len).sum();
                format!("names {n} sum {sum}\n")
            }
            // 2 kernels a name, each adding 0.5 i for i < 100.
            Via::Raja => format!(
                "names {n} sink {:.1}\nraja_host: names done\n",
                2.0 * n as f64 * 2475.0
            ),
            Via::OpenAcc => format!("registrations 25 events 1..25\nnames {n}\n"),
        }
    }

    /// The profile `p` of a run given `names`, against their bytes read
    /// lossily.
    fn check(self, p: &Value, names: &[Vec<u8>], case: &str) {
        match self {
            Via::Kokkos => check_kokkos(p, names, case),
            Via::Annotations => check_annotations(p, names, case),
            Via::Raja => check_raja(p, names, case),
            Via::OpenAcc => check_openacc(p, names, case),
        }
        // Every path hands the core at least one name as the program's bytes
        // (OpenACC: the variable names), so invalid UTF-8 is counted.
        let invalid = any_invalid_utf8(names);
        assert_eq!(
            p["anomalies"]["invalid_utf8_names"].as_u64().unwrap() > 0,
            invalid,
            "{case}: {}",
            p["anomalies"]
        );
    }
}

/// The names of the top-level nodes of the tree, sorted.
fn top_names(p: &Value) -> Vec<String> {
    sorted(
        p["tree"]
            .as_array()
            .expect("tree")
            .iter()
            .map(|n| n["name"].as_str().unwrap()),
    )
}

/// The `key` strings of the objects of the list `p[list]`, sorted.
fn listed(p: &Value, list: &str, key: &str) -> Vec<String> {
    sorted(
        p[list]
            .as_array()
            .unwrap_or_else(|| panic!("no list {list}"))
            .iter()
            .map(|e| e[key].as_str().unwrap()),
    )
}

/// Kokkos: per name a region holding one kernel of that name, one event and
/// one Host allocation.
fn check_kokkos(p: &Value, names: &[Vec<u8>], case: &str) {
    let want = lossy_sorted(names);
    assert_eq!(top_names(p), want, "{case}: one region per name");
    for n in p["tree"].as_array().unwrap() {
        let w = n["name"].as_str().unwrap();
        assert_eq!(n["kind"], "region", "{case}");
        let kernels = n["children"].as_array().expect("children");
        assert_eq!(kernels.len(), 1, "{case}: {n}");
        assert_eq!(kernels[0]["name"].as_str(), Some(w), "{case}");
        assert_eq!(kernels[0]["kind"], "parallel_for", "{case}");
    }
    assert_eq!(
        listed(p, "events", "name"),
        want,
        "{case}: one event per name"
    );
    let host = p["memory"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["space"] == "Host")
        .expect("Host memory");
    assert_eq!(
        host["allocations"].as_u64(),
        Some(names.len() as u64),
        "{case}"
    );
}

/// The annotation API: per name (the i-th) a region, an event, a counter of
/// one value i, a channel with one message of i + 1 bytes to peer i, and a
/// metadata pair of the name with itself.
fn check_annotations(p: &Value, names: &[Vec<u8>], case: &str) {
    let want = lossy(names);
    let sorted_want = lossy_sorted(names);
    assert_eq!(top_names(p), sorted_want, "{case}: one region per name");
    for n in p["tree"].as_array().unwrap() {
        assert_eq!(n["kind"], "user_region", "{case}");
        assert_eq!(n["count"], 1, "{case}");
    }
    assert_eq!(listed(p, "events", "name"), sorted_want, "{case}: events");
    assert_eq!(
        listed(p, "counters", "name"),
        sorted_want,
        "{case}: counters"
    );
    assert_eq!(
        listed(p, "messages", "channel"),
        sorted_want,
        "{case}: channels"
    );
    for (i, w) in want.iter().enumerate() {
        let c = p["counters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == w.as_str())
            .unwrap();
        assert_eq!(
            (c["count"].as_u64(), c["last"].as_f64()),
            (Some(1), Some(i as f64)),
            "{case}"
        );
        let m = p["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["channel"] == w.as_str())
            .unwrap();
        assert_eq!(m["direction"], "send", "{case}");
        assert_eq!(m["peers"][0]["peer"].as_u64(), Some(i as u64), "{case}");
        assert_eq!(m["bytes"].as_u64(), Some(i as u64 + 1), "{case}");
        assert_eq!(
            p["metadata"][w].as_str(),
            Some(w.as_str()),
            "{case}: metadata"
        );
    }
}

/// RAJA: per name one host kernel of 2 launches, named by the name or, past
/// [`RAJA_MAX_NAME`] bytes, by the platform (and counted as an internal error).
fn check_raja(p: &Value, names: &[Vec<u8>], case: &str) {
    let implausible = names.iter().filter(|n| n.len() > RAJA_MAX_NAME).count();
    let mut want: Vec<String> = names
        .iter()
        .filter(|n| n.len() <= RAJA_MAX_NAME)
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    if implausible > 0 {
        want.push("RAJA kernel (host)".into());
    }
    want.sort();
    assert_eq!(top_names(p), want, "{case}: one kernel per name");
    for n in p["tree"].as_array().unwrap() {
        assert_eq!(n["kind"], "raja_launch", "{case}");
        assert_eq!(n["device"], "host", "{case}");
        let per = if n["name"] == "RAJA kernel (host)" {
            2 * implausible
        } else {
            2
        };
        assert_eq!(
            n["count"].as_u64(),
            Some(per as u64),
            "{case}: {}",
            n["name"]
        );
    }
    assert_eq!(
        p["anomalies"]["internal_errors"].as_u64(),
        Some(2 * implausible as u64),
        "{case}"
    );
}

/// OpenACC: per name (the i-th) a compute construct named
/// `<function> (<file's last component>:<i + 1>)` holding a launch of the
/// kernel name, and a leaked device allocation labelled by the variable name.
fn check_openacc(p: &Value, names: &[Vec<u8>], case: &str) {
    let want = lossy(names);
    let constructs: Vec<String> = want
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let file = w.rsplit('/').next().unwrap();
            format!("{w} ({file}:{})", i + 1)
        })
        .collect();
    let mut sorted_constructs = constructs.clone();
    sorted_constructs.sort();
    assert_eq!(
        top_names(p),
        sorted_constructs,
        "{case}: one construct per name"
    );
    for n in p["tree"].as_array().unwrap() {
        assert_eq!(n["kind"], "acc_compute", "{case}");
        let i = constructs
            .iter()
            .position(|c| n["name"] == c.as_str())
            .unwrap();
        let launches = n["children"].as_array().expect("children");
        assert_eq!(launches.len(), 1, "{case}: {n}");
        assert_eq!(
            launches[0]["name"].as_str(),
            Some(want[i].as_str()),
            "{case}"
        );
        assert_eq!(launches[0]["kind"], "acc_launch", "{case}");
    }
    let memory = p["memory"].as_array().expect("memory");
    assert_eq!(memory.len(), 1, "{case}: {memory:?}");
    assert_eq!(memory[0]["allocations"].as_u64(), Some(names.len() as u64));
    let mut leaks: Vec<(String, String)> = memory[0]["leaks"]
        .as_array()
        .expect("leaks")
        .iter()
        .map(|l| {
            (
                l["address"].as_str().unwrap().to_string(),
                l["label"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    leaks.sort();
    let mut leaks_want: Vec<(String, String)> = want
        .iter()
        .enumerate()
        .map(|(i, w)| {
            (
                format!("{:#x}", 0x7f00_0100_0000u64 + 8 * i as u64),
                w.clone(),
            )
        })
        .collect();
    leaks_want.sort();
    assert_eq!(leaks, leaks_want, "{case}: one leak per variable name");
}

/// Runs `via`'s harness with `names`: it succeeds with its own result, the
/// profile holds the names as [`Via::check`] says, and `kprof report` reads
/// it back. Returns the scratch directory.
fn names_through(via: Via, names: &[Vec<u8>], case: &str) -> PathBuf {
    // Each test its own directory: the tests run in parallel.
    let dir = scratch(&format!("inputs_mutated_names_{via:?}_{case}"));
    let file = write_names(&dir, names);
    let out = dir.join("out");
    let case = format!("{via:?} {case}");
    let o = run(via.cmd(&file, &out).current_dir(&dir));
    assert_ok(&o);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        via.stdout(names),
        "{case}: the program's result"
    );
    via.check(&read_profile(&out), names, &case);
    let o = run(&mut kprof_cmd(&dir, &["report", "out"]));
    assert!(
        clean_outcome(&o, &case),
        "{case}: report refused its own profile: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    dir
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() })]

    /// Names of random bytes through Kokkos' entry points.
    #[test]
    fn odd_names_through_the_c_abi(names in odd_names()) {
        names_through(Via::Kokkos, &names, "random");
    }

    /// Names of random bytes through the annotation API.
    #[test]
    fn odd_names_through_annotations(names in odd_names()) {
        names_through(Via::Annotations, &names, "random");
    }

    /// Names of random bytes as RAJA kernel names.
    #[test]
    fn odd_names_through_raja(names in odd_names()) {
        names_through(Via::Raja, &names, "random");
    }

    /// Names of random bytes where the OpenACC runtime hands strings.
    #[test]
    fn odd_names_through_openacc(names in odd_names()) {
        names_through(Via::OpenAcc, &names, "random");
    }
}

/// The most a run given [`extreme_names`] may take beyond one given short
/// names, in bytes of resident memory for each byte of the megabyte name: its
/// copies (interned, the profile's text) and nothing that grows per use.
const EXTREME_BYTES_PER_NAME_BYTE: u64 = 64;

/// [`extreme_names`] (and, for RAJA, a name of exactly its longest plausible
/// size) through every path: as [`names_through`], and the run's peak
/// resident memory exceeds that of a run given as many short names by at most
/// [`EXTREME_BYTES_PER_NAME_BYTE`] times the megabyte.
#[test]
fn extreme_names_through_the_c_abi() {
    let peak_rss = Path::new(env!("CARGO_BIN_EXE_peak_rss"));
    for via in Via::ALL {
        let mut names = extreme_names();
        if matches!(via, Via::Raja) {
            names.push(vec![b'R'; RAJA_MAX_NAME]);
        }
        let dir = names_through(via, &names, "extreme");
        let short: Vec<Vec<u8>> = (0..names.len())
            .map(|i| format!("n{i}").into_bytes())
            .collect();
        let peak = |label: &str, names: &[Vec<u8>]| {
            let d = dir.join(label);
            std::fs::create_dir_all(&d).unwrap();
            let file = write_names(&d, names);
            let cost = measure_cmd(peak_rss, via.cmd(&file, &d.join("out")).current_dir(&d));
            assert!(cost.success, "{via:?} {label}: the run failed");
            cost.peak_bytes
        };
        let base = peak("short", &short);
        let extreme = peak("extreme", &names);
        eprintln!("{via:?}: peak {base} B with short names, {extreme} B with the extreme ones");
        assert!(
            extreme <= base + EXTREME_BYTES_PER_NAME_BYTE * HUGE_NAME as u64,
            "{via:?}: peak {extreme} B with the extreme names, {base} B with short ones"
        );
    }
}
