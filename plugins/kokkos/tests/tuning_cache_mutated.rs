//! The tuning cache (`KPROF_TUNING_CACHE`) is outside input: a file another run
//! wrote, which may since have been truncated, edited or replaced. Mutations of
//! a cache kprof wrote (`tests/fuzz-corpus/tuning-cache/`, from the
//! `tune_known` scenario of `tests/tests/kokkos_tuning.rs`, its program and
//! host renamed to neutral ones) are read and, when
//! accepted, handed to the tuner: each is refused with one bounded line, or the
//! tuner's first answer is the one the file holds for the problem (checked
//! against the file's JSON read on its own), or the program's default when the
//! file holds no usable value. The fuzz target `tuning_cache` (`fuzz/`) reads
//! the same way.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kprof::tune::cache::{self, Entry, Identity};
use kprof::tune::search::Strategy;
use kprof::tune::space::{Candidates, Value, ValueType, Variable};
use kprof::tune::Tuner;
use kprof_tests::mutate::{apply, apply_values, corpus, edit, regressions, value_edits};
use proptest::prelude::*;

/// The seed's one problem: `block` of kernel `stencil`.
const KEY: &str = "block | kernel_name=stencil";
/// `tune_known`'s default block.
const DEFAULT: i64 = 16;
/// The path the messages name.
const PATH: &str = "/tmp/tuning-cache.json";

fn seed() -> Vec<u8> {
    corpus("tuning-cache").remove(0).1
}

/// The identity the seed was written for (so that its mutations are read as
/// this program's).
fn me() -> Identity {
    let v: serde_json::Value = serde_json::from_slice(&seed()).unwrap();
    Identity {
        program: v["program"].as_str().unwrap().into(),
        host: v["host"].as_str().unwrap().into(),
    }
}

/// A tuner as `tune_known` declares it: `block` in 1, 2, ..., 128, and the
/// kernel's name as input.
fn tuner(cached: BTreeMap<String, Entry>) -> Tuner {
    let mut t = Tuner::new(cached);
    t.declare(
        1,
        Some(Variable {
            name: "block".into(),
            ty: ValueType::Int,
            category: 1,
            candidates: Candidates::Set((0..8).map(|k| Value::Int(1 << k)).collect()),
        }),
        true,
    );
    t.declare(
        2,
        Some(Variable {
            name: "kernel_name".into(),
            ty: ValueType::Text,
            category: 0,
            candidates: Candidates::Unbounded,
        }),
        false,
    );
    t
}

/// The value the file holds for [`KEY`] that the tuner must start at: its
/// first `best` value when that is one of the declared candidates.
fn held(file: &[u8]) -> Option<i64> {
    let v: serde_json::Value = serde_json::from_slice(file).ok()?;
    let b = v["problems"][KEY]["best"][0].as_i64()?;
    (b > 0 && b <= 128 && (b as u64).is_power_of_two()).then_some(b)
}

/// Reads `bytes` as the cache and runs three contexts of the seed's problem;
/// asserts the outcome. Returns whether the cache was accepted.
fn check(bytes: &[u8]) -> bool {
    let entries = match cache::parse(bytes, Path::new(PATH), &me()) {
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n'), "two lines: {line:?}");
            assert!(line.len() <= 800, "{} bytes: {line}", line.len());
            assert!(line.contains(PATH), "{line}");
            return false;
        }
        Ok(e) => e,
    };
    let mut t = tuner(entries);
    let mut now = Instant::now();
    let mut first = None;
    for _ in 0..3 {
        t.begin(1, now);
        let got = t.request(
            1,
            now,
            &[(2, Some(Value::Text("stencil".into())))],
            &[(1, Some(Value::Int(DEFAULT)))],
        );
        let Some(Value::Int(b)) = got[0] else {
            panic!("no value: {got:?}")
        };
        first.get_or_insert(b);
        now += Duration::from_micros(10);
        t.end(1, now, (0, None));
    }
    let p = &t.problems()[0];
    match held(bytes) {
        Some(b) => {
            assert_eq!(first, Some(b), "the cached value first");
            assert_eq!(p.search.strategy(), Strategy::Cached);
            let out = t.cache_entries();
            assert_eq!(out[KEY].best, vec![serde_json::Value::from(b)]);
        }
        None => {
            assert_eq!(first, Some(DEFAULT), "the default first");
            assert_ne!(p.search.strategy(), Strategy::Cached);
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// The cache's bytes mutated.
    #[test]
    fn cache_bytes_mutated(edits in prop::collection::vec(edit(), 1..6)) {
        check(&apply(seed(), &edits));
    }

    /// The cache's JSON values replaced or deleted (stays JSON, so reaches the
    /// tuner).
    #[test]
    fn cache_values_mutated(muts in value_edits()) {
        check(&apply_values(&seed(), muts));
    }
}

/// The unmutated seed is accepted and starts the problem at its best, 4: the
/// properties above are not refusing everything.
#[test]
fn seed_is_accepted() {
    assert_eq!(held(&seed()), Some(4));
    assert!(check(&seed()));
}

/// A program or host holding a newline or a long string is still named on one
/// line (the message the plugin prints when it ignores a foreign cache).
#[test]
fn foreign_identity_is_one_line() {
    let mut v: serde_json::Value = serde_json::from_slice(&seed()).unwrap();
    v["program"] = "/bin/app\nkprof: forged line".into();
    v["host"] = "h".repeat(10_000).into();
    let e = cache::parse(&serde_json::to_vec(&v).unwrap(), Path::new(PATH), &me()).unwrap_err();
    let line = e.to_string();
    assert!(!line.contains('\n') && line.len() < 800, "{line}");
    assert!(line.contains(r"'/bin/app\nkprof: forged line'"), "{line}");
}

/// Each input a fuzzer found to crash the reader, replayed.
#[test]
fn fuzz_regressions() {
    for (_, b) in regressions("tuning-cache-") {
        check(&b);
    }
}
