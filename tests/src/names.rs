//! Names a program hands kprof through a C entry point (a plugin's, or the
//! annotation API's), for the tests of names through the C ABI
//! (`tests/tests/inputs_mutated.rs`): names of random bytes but NUL, and the
//! names a program is least expected to give. A harness's `names` scenario
//! reads them from a file, each ended by a NUL byte
//! (`tests/harness/names_file.h`).
//!
//! The reference a profile is compared with is [`lossy`]: each name's bytes
//! read as UTF-8, lossily, computed here from what the test generated.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

/// Distinct names of any bytes but NUL (numbered, so that each is its own
/// call path), up to 11 of up to 199 random bytes.
pub fn odd_names() -> impl Strategy<Value = Vec<Vec<u8>>> {
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

/// The bytes of the megabyte-long name of [`extreme_names`].
pub const HUGE_NAME: usize = 1 << 20;

/// The names a program is least expected to give: a megabyte long, invalid
/// UTF-8, control characters (a newline, an escape sequence), format
/// directives, a lone continuation byte, a byte-order mark and a
/// right-to-left override. Distinct from each other.
pub fn extreme_names() -> Vec<Vec<u8>> {
    vec![
        vec![b'H'; HUGE_NAME],
        b"be\xfft\xd0\xb0\nx".to_vec(),
        b"%s%n%p\x01\x7f\x1b[2J".to_vec(),
        vec![0x80],
        "\u{feff}\u{202e}rtl".as_bytes().to_vec(),
    ]
}

/// Writes `names` into `dir/names`, each ended by a NUL byte (none may hold
/// one), and returns the file's path.
pub fn write_names(dir: &Path, names: &[Vec<u8>]) -> PathBuf {
    let mut file = Vec::new();
    for n in names {
        assert!(!n.contains(&0), "a name holds a NUL byte");
        file.extend_from_slice(n);
        file.push(0);
    }
    let path = dir.join("names");
    std::fs::write(&path, &file).expect("write the names file");
    path
}

/// The reference: each name's bytes read as UTF-8, lossily (U+FFFD for each
/// invalid sequence), in the order given.
pub fn lossy(names: &[Vec<u8>]) -> Vec<String> {
    names
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

/// [`lossy`], sorted: compared with what a profile lists in its own order.
pub fn lossy_sorted(names: &[Vec<u8>]) -> Vec<String> {
    let mut v = lossy(names);
    v.sort();
    v
}

/// Whether some name is not UTF-8 (the core then counts `invalid_utf8_names`).
pub fn any_invalid_utf8(names: &[Vec<u8>]) -> bool {
    names.iter().any(|n| std::str::from_utf8(n).is_err())
}

/// `list`'s strings, owned and sorted.
pub fn sorted<'a>(list: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = list.into_iter().map(str::to_string).collect();
    v.sort();
    v
}
