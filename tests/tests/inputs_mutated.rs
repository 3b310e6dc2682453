//! Inputs, mutated, through the real `kprof` command: `report`, `diff` and
//! `merge` given mutations of a `profile.json` kprof wrote
//! (`tests/fuzz-corpus/profile/`) either succeed or exit 2 with exactly one
//! line on stderr, never a panic or a signal. The many cases are the library
//! property tests (`core/tests/inputs_mutated.rs`) and the fuzz targets
//! (`fuzz/`); here a fixed, seeded handful goes through the command.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kprof_tests::{clean_cmd, lib, run, scratch, workspace_root};

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
