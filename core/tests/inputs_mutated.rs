//! Inputs, mutated: the readers of outside input in the core (a process's
//! `profile.json` folded into a job profile, and the protobuf job profile the
//! MPI reduction exchanges and folds), fed mutations of files kprof wrote
//! (`tests/fuzz-corpus/`). Each must return a result or an error, never panic,
//! and what it builds stays proportional to its input. The same readers are
//! fuzzed with libFuzzer by `scripts/fuzz.sh` (`fuzz/`); each input a fuzzer
//! found to crash is kept in `tests/fuzz-corpus/regressions/` and replayed here.

use std::path::PathBuf;

use kprof_core::output::report::Report;
use kprof_core::reduce::{from_report, render, Fold};
use proptest::prelude::*;
use prost::Message;
use serde_json::Value;

/// The largest input a case is built from: the readers are asked to cope with
/// what a bounded input makes, not to hold the results of a gigabyte file.
const INPUT_CAP: usize = 64 << 10;

fn corpus(dir: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fuzz-corpus")
        .join(dir);
    let mut out: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{}: no seed files", root.display());
    out
}

fn seeds() -> Vec<Vec<u8>> {
    corpus("profile").into_iter().map(|(_, b)| b).collect()
}

/// A seed's job profile form, as the reduction sends it.
fn form_of(profile: &[u8]) -> Vec<u8> {
    let r: Report = serde_json::from_slice(profile).expect("a seed is a valid profile");
    from_report(&r, &r.tree, 0, None, true).encode_to_vec()
}

/// The path `kprof merge` and the MPI reduction take from one process's
/// `profile.json` to the merged profile's JSON; `None` where the input is
/// rejected. Asserts that what it builds is proportional to the input.
fn profile_to_merged(bytes: &[u8]) -> Option<Value> {
    let r: Report = serde_json::from_slice(bytes).ok()?;
    let form = from_report(&r, &r.tree, 0, None, false);
    let enc = form.encode_to_vec();
    // Every node and string of the form came from the input's text.
    assert!(
        form.nodes.len() <= bytes.len(),
        "{} nodes from {} bytes",
        form.nodes.len(),
        bytes.len()
    );
    let fold = Fold::decode(&enc).expect("a form kprof encoded decodes");
    let merged = render(fold.form());
    Some(merged)
}

/// The reduction's fold of a received form into this rank's, and the render of
/// the result; `None` where the received bytes are rejected.
fn fold_received(own: &[u8], received: &[u8]) -> Option<Value> {
    let mut a = Fold::decode(own).expect("own form is valid");
    let b = Fold::decode(received).ok()?;
    let n = b.form().nodes.len();
    assert!(
        n <= received.len(),
        "{n} nodes from {} bytes",
        received.len()
    );
    a.fold(b.into_form());
    Some(render(a.form()))
}

/// Byte-level mutations: flips, overwrites, deletions, insertions, truncation.
#[derive(Debug, Clone)]
enum Edit {
    Flip(usize, u8),
    Set(usize, u8),
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, m)| Edit::Flip(i, m)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(mut b: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let len = b.len().max(1);
        match e {
            Edit::Flip(i, m) if !b.is_empty() => b[i % len] ^= m,
            Edit::Set(i, v) if !b.is_empty() => b[i % len] = *v,
            Edit::Delete(i, n) if !b.is_empty() => {
                let at = i % len;
                let end = (at + n).min(b.len());
                b.drain(at..end);
            }
            Edit::Insert(i, x) => {
                let at = i % (b.len() + 1);
                b.splice(at..at, x.iter().copied());
            }
            Edit::Truncate(i) => b.truncate(i % len),
            _ => {}
        }
    }
    b.truncate(INPUT_CAP);
    b
}

/// Values a JSON leaf is replaced by: each kind, the edges of numbers, long and
/// odd strings, nesting.
fn odd_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        Just(Value::from(-1)),
        Just(Value::from(0)),
        ".{0,12}".prop_map(Value::from),
        Just(Value::from("\u{0}\u{feff}\\\"")),
        Just(serde_json::json!([])),
        Just(serde_json::json!({})),
        Just(serde_json::json!([[[[[[[[1]]]]]]]])),
    ]
}

/// Structural mutations of a JSON tree: replace a value at a path picked by
/// `pick`, or delete it.
fn mutate_value(v: &mut Value, pick: u64, with: Value, delete: bool) {
    // Walk down, choosing a child by `pick`, stopping at a leaf or by chance.
    let mut cur = v;
    let mut p = pick;
    loop {
        let stop = p.is_multiple_of(5);
        p /= 5;
        let n = match cur {
            Value::Object(m) => m.len(),
            Value::Array(a) => a.len(),
            _ => 0,
        };
        if n == 0 || (stop && p.is_multiple_of(2)) {
            *cur = with;
            return;
        }
        let i = (p % n as u64) as usize;
        p /= n as u64 + 1;
        let last_step = p == 0;
        match cur {
            Value::Object(m) => {
                let key = m.keys().nth(i).cloned().unwrap();
                if delete && last_step {
                    m.remove(&key);
                    return;
                }
                cur = m.get_mut(&key).unwrap();
            }
            Value::Array(a) => {
                if delete && last_step {
                    a.remove(i);
                    return;
                }
                cur = &mut a[i];
            }
            _ => unreachable!(),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    /// `profile.json` bytes mutated: folded and rendered, or rejected.
    #[test]
    fn profile_bytes_mutated(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit(), 1..6)) {
        let s = seeds();
        let b = apply(s[seed.index(s.len())].clone(), &edits);
        let _ = profile_to_merged(&b);
    }

    /// `profile.json` with values replaced or deleted (stays JSON, so reaches
    /// past the parser into the folding).
    #[test]
    fn profile_values_mutated(seed in any::<prop::sample::Index>(),
                              muts in prop::collection::vec((any::<u64>(), odd_value(), any::<bool>()), 1..5)) {
        let s = seeds();
        let mut v: Value = serde_json::from_slice(&s[seed.index(s.len())]).unwrap();
        for (pick, with, delete) in muts {
            mutate_value(&mut v, pick, with, delete);
        }
        let b = serde_json::to_vec(&v).unwrap();
        let _ = profile_to_merged(&b);
    }

    /// The reduction's protobuf form mutated: folded into a valid one, or rejected.
    #[test]
    fn form_bytes_mutated(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit(), 1..6)) {
        let s = seeds();
        let own = form_of(&s[0]);
        let b = apply(form_of(&s[seed.index(s.len())]), &edits);
        let _ = fold_received(&own, &b);
    }
}

/// The unmutated seeds go the whole way: the property tests above are not
/// rejecting everything.
#[test]
fn seeds_are_accepted() {
    for (p, b) in corpus("profile") {
        let merged = profile_to_merged(&b).unwrap_or_else(|| panic!("{} rejected", p.display()));
        assert_eq!(merged["schema"], "kprof-merged/1", "{}", p.display());
        let own = form_of(&b);
        assert!(fold_received(&own, &own).is_some(), "{}", p.display());
    }
}

/// Each input a fuzzer found to crash a reader, replayed (file name says which
/// reader: `profile-*` or `form-*`).
#[test]
fn fuzz_regressions() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz-corpus/regressions");
    let Ok(dir) = std::fs::read_dir(&root) else {
        return;
    };
    let own = form_of(&seeds()[0]);
    for e in dir {
        let p = e.unwrap().path();
        let b = std::fs::read(&p).unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("profile-") {
            let _ = profile_to_merged(&b);
        } else if name.starts_with("form-") {
            let _ = fold_received(&own, &b);
        }
    }
}

/// The job profile forms in `tests/fuzz-corpus/form/` (the fuzzer's seeds for
/// the reduction's reader) are those of the profile seeds: each decodes and
/// renders as its profile does. Rewrite them with
/// `cargo test --release -p kprof-core --test inputs_mutated -- --ignored write_form_seeds`.
#[test]
fn form_seeds_are_the_profiles() {
    let profiles = corpus("profile");
    let forms = corpus("form");
    assert_eq!(profiles.len(), forms.len());
    for ((pp, p), (fp, f)) in profiles.iter().zip(&forms) {
        let want = render(Fold::decode(&form_of(p)).unwrap().form());
        let got = render(
            Fold::decode(f)
                .unwrap_or_else(|e| panic!("{}: {e}", fp.display()))
                .form(),
        );
        assert_eq!(got, want, "{} is not {}'s form", fp.display(), pp.display());
    }
}

/// Writes `tests/fuzz-corpus/form/` from the profile seeds.
#[test]
#[ignore]
fn write_form_seeds() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz-corpus/form");
    std::fs::create_dir_all(&root).unwrap();
    for (p, b) in corpus("profile") {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned() + ".bin";
        std::fs::write(root.join(name), form_of(&b)).unwrap();
    }
}
