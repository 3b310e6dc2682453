//! Inputs, mutated: the readers of outside input in the core (a process's
//! `profile.json` folded into a job profile, and the protobuf job profile the
//! MPI reduction exchanges and folds), fed mutations of files kprof wrote
//! (`tests/fuzz-corpus/`). Each must return a result or an error, never panic,
//! and what it builds stays proportional to its input. The same readers are
//! fuzzed with libFuzzer by `scripts/fuzz.sh` (`fuzz/`); each input a fuzzer
//! found to crash is kept in `tests/fuzz-corpus/regressions/` and replayed here.

use kprof_core::output::report::Report;
use kprof_core::reduce::{from_report, render, Fold};
use kprof_tests::mutate::{apply, apply_values, corpus, edit, regressions, value_edits};
use proptest::prelude::*;
use prost::Message;
use serde_json::Value;

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
    fn profile_values_mutated(seed in any::<prop::sample::Index>(), muts in value_edits()) {
        let s = seeds();
        let b = apply_values(&s[seed.index(s.len())], muts);
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
    let own = form_of(&seeds()[0]);
    for (_, b) in regressions("profile-") {
        let _ = profile_to_merged(&b);
    }
    for (_, b) in regressions("form-") {
        let _ = fold_received(&own, &b);
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
    let root = kprof_tests::workspace_root().join("tests/fuzz-corpus/form");
    std::fs::create_dir_all(&root).unwrap();
    for (p, b) in corpus("profile") {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned() + ".bin";
        std::fs::write(root.join(name), form_of(&b)).unwrap();
    }
}
