//! Mutations of files kprof wrote, for the property tests of its readers of
//! outside input (docs/reliability.md): byte edits (flips, overwrites, deleted
//! spans, insertions, truncation) and, for JSON files, values replaced by odd
//! ones or deleted, so that a case reaches past the parser.

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::Value;

/// The largest input a case is built from: the readers are asked to cope with
/// what a bounded input makes, not to hold the results of a gigabyte file.
pub const INPUT_CAP: usize = 64 << 10;

/// The files of `tests/fuzz-corpus/DIR` (seeds kprof wrote), sorted by name.
pub fn corpus(dir: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = crate::workspace_root().join("tests/fuzz-corpus").join(dir);
    let mut out: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{}: no seed files", root.display());
    out
}

/// The files of `tests/fuzz-corpus/regressions/` whose names start with
/// `prefix` (each an input a fuzzer found to crash that reader).
pub fn regressions(prefix: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let root = crate::workspace_root().join("tests/fuzz-corpus/regressions");
    let Ok(dir) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut out: Vec<_> = dir
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    out.sort();
    out
}

/// One byte-level mutation.
#[derive(Debug, Clone)]
pub enum Edit {
    /// XOR the byte at (index mod length) with the mask.
    Flip(usize, u8),
    /// Overwrite the byte at (index mod length).
    Set(usize, u8),
    /// Delete up to that many bytes from (index mod length).
    Delete(usize, usize),
    /// Insert bytes at (index mod length + 1).
    Insert(usize, Vec<u8>),
    /// Keep the first (index mod length) bytes.
    Truncate(usize),
}

/// Any [`Edit`].
pub fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(i, m)| Edit::Flip(i, m)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

/// `b` with `edits` applied, capped at [`INPUT_CAP`] bytes.
pub fn apply(mut b: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
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
/// odd strings (a newline among them), nesting.
pub fn odd_value() -> impl Strategy<Value = Value> {
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
        Just(Value::from("\u{0}\u{feff}\\\"\nline two")),
        Just(Value::from("x".repeat(5000))),
        Just(serde_json::json!([])),
        Just(serde_json::json!({})),
        Just(serde_json::json!([[[[[[[[1]]]]]]]])),
    ]
}

/// Replaces the value at a path of `v` picked by `pick` with `with`, or
/// deletes it (`delete`, where the path ends in an object or array).
pub fn mutate_value(v: &mut Value, pick: u64, with: Value, delete: bool) {
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

/// A strategy for a list of JSON mutations ([`mutate_value`]'s arguments).
pub fn value_edits() -> impl Strategy<Value = Vec<(u64, Value, bool)>> {
    prop::collection::vec((any::<u64>(), odd_value(), any::<bool>()), 1..5)
}

/// `json` with `muts` applied, serialized.
pub fn apply_values(json: &[u8], muts: Vec<(u64, Value, bool)>) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(json).expect("a seed is JSON");
    for (pick, with, delete) in muts {
        mutate_value(&mut v, pick, with, delete);
    }
    serde_json::to_vec(&v).unwrap()
}
