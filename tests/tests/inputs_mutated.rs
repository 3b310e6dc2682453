//! Inputs, mutated, through the real `kprof` command: `report`, `diff` and
//! `merge` given mutations of a `profile.json` kprof wrote
//! (`tests/fuzz-corpus/profile/`), and `report` and `plot` given mutations of a
//! merged profile (`merged/`), either succeed or exit 2 with exactly one line
//! on stderr, never a panic or a signal. The many cases are the library
//! property tests (`core/tests/inputs_mutated.rs`, the command's
//! `cli/src/inputs_mutated.rs`) and the fuzz targets (`fuzz/`); here a fixed,
//! seeded handful goes through the command.
//!
//! Names through the C ABI: a program's names (non-UTF-8, control characters,
//! a megabyte long) reach libkprof through Kokkos' entry points (regions,
//! kernels, allocation labels, events); the run succeeds and the profile holds
//! each as its bytes read lossily as UTF-8.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use std::sync::OnceLock;

use kprof_tests::{
    assert_ok, build_kokkos_hosts, clean_cmd, lib, read_profile, run, scratch, workspace_root,
};
use proptest::prelude::*;

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
fn report_diff_merge_of_mutated_profiles() {
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
        for args in [
            vec!["report", name.as_str()],
            vec!["diff", "good", name.as_str()],
            vec!["merge", "good", name.as_str(), "-o", out.as_str()],
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

fn kokkos_host() -> &'static PathBuf {
    static HOST: OnceLock<PathBuf> = OnceLock::new();
    HOST.get_or_init(|| build_kokkos_hosts(&scratch("inputs_mutated_names_bin")).0)
}

/// Runs the harness's `names` scenario with `names` under libkprof and checks
/// the profile against the names given.
fn names_through_kokkos(names: &[Vec<u8>], case: &str) {
    let dir = scratch(&format!("inputs_mutated_names_{case}"));
    let mut file = Vec::new();
    for n in names {
        assert!(!n.contains(&0));
        file.extend_from_slice(n);
        file.push(0);
    }
    std::fs::write(dir.join("names"), &file).unwrap();
    let out = dir.join("out");
    let o = run(clean_cmd(kokkos_host())
        .current_dir(&dir)
        .args(["4", "names"])
        .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
        .env("KOKKOS_HOST_NAMES", dir.join("names"))
        .env("KPROF_OUTPUT_DIR", &out));
    assert_ok(&o);
    let p = read_profile(&out);
    // The reference: each name's bytes read as UTF-8, lossily.
    let want: Vec<String> = names
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    let tree = p["tree"].as_array().expect("tree");
    let mut regions: Vec<&str> = tree.iter().map(|n| n["name"].as_str().unwrap()).collect();
    regions.sort_unstable();
    let mut sorted = want.clone();
    sorted.sort();
    assert_eq!(regions, sorted, "{case}: one region per name");
    for n in tree {
        let w = n["name"].as_str().unwrap();
        assert_eq!(n["kind"], "region", "{case}");
        let kernels = n["children"].as_array().expect("children");
        assert_eq!(kernels.len(), 1, "{case}: {n}");
        assert_eq!(kernels[0]["name"].as_str(), Some(w), "{case}");
        assert_eq!(kernels[0]["kind"], "parallel_for", "{case}");
    }
    let events: Vec<&str> = p["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let mut got: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    got.sort();
    assert_eq!(got, sorted, "{case}: one event per name");
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
    let invalid = names.iter().any(|n| std::str::from_utf8(n).is_err());
    assert_eq!(
        p["anomalies"]["invalid_utf8_names"].as_u64().unwrap() > 0,
        invalid,
        "{case}: {}",
        p["anomalies"]
    );
    // The report of those names is read back.
    let o = run(&mut kprof_cmd(&dir, &["report", "out"]));
    assert!(
        clean_outcome(&o, case),
        "{case}: report refused its own profile"
    );
}

/// Distinct names of any bytes but NUL (numbered, so each is its own region).
fn odd_names() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(prop::collection::vec(1u8..=255, 1..200), 1..12).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, mut n)| {
                let mut name = format!("n{i}:").into_bytes();
                name.append(&mut n);
                name
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, failure_persistence: None, ..ProptestConfig::default() })]

    /// Names of random bytes through Kokkos' entry points.
    #[test]
    fn odd_names_through_the_c_abi(names in odd_names()) {
        names_through_kokkos(&names, "random");
    }
}

/// The names a program is least expected to give: a megabyte long, invalid
/// UTF-8, control characters, format directives, a lone continuation byte.
#[test]
fn extreme_names_through_the_c_abi() {
    let names = vec![
        vec![b'H'; 1 << 20],
        b"be\xfft\xd0\xb0\nx".to_vec(),
        b"%s%n%p\x01\x7f\x1b[2J".to_vec(),
        vec![0x80],
        "\u{feff}\u{202e}rtl".as_bytes().to_vec(),
    ];
    names_through_kokkos(&names, "extreme");
}
