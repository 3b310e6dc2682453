//! docs/architecture.md's file tables match the tree: every source file of the
//! workspace's crates is named in it (by its name, or its path inside its
//! crate's `src`; `lib.rs`, `main.rs` and `mod.rs` are named by their folder),
//! and every `.rs` file it names exists. A file added, moved or removed without
//! the architecture saying so fails here, with where to write it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kprof_tests::workspace_root;

/// Files every crate or folder has, named in the doc by their folder.
const ROOTS: &[&str] = &["lib.rs", "main.rs", "mod.rs"];

/// The workspace's members (the root manifest's `members` list).
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let start = manifest
        .find("members = [")
        .expect("the workspace's members")
        + 11;
    let end = start + manifest[start..].find(']').expect("the end of members");
    manifest[start..end]
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every file under `dir` (recursively) whose name ends with `ending`,
/// skipping build output and version control.
fn files(dir: &Path, ending: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | "node_modules") {
                files(&p, ending, out);
            }
        } else if name.ends_with(ending) {
            out.push(p);
        }
    }
}

/// The `.rs` names the doc's text holds (`a/b.rs`, `b.rs`).
fn named(doc: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in doc.match_indices(".rs") {
        let after = doc[i + 3..].chars().next();
        if after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let start = doc[..i]
            .rfind(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '/' | '.' | '-')))
            .map_or(0, |s| s + 1);
        let name = doc[start..i + 3]
            .trim_start_matches("../")
            .trim_start_matches("./");
        if name.len() > 3 && !name.starts_with('.') {
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn every_source_file_is_named_in_the_architecture() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("read the doc");
    let names = named(&doc);
    let mut missing = Vec::new();
    let mut checked = 0;
    for member in members(&root) {
        let src = root.join(&member).join("src");
        let mut list = Vec::new();
        files(&src, ".rs", &mut list);
        for f in list {
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let base = f.file_name().unwrap().to_string_lossy().into_owned();
            if ROOTS.contains(&base.as_str()) {
                continue;
            }
            checked += 1;
            let whole = format!("{member}/src/{rel}");
            let found = names
                .iter()
                .any(|n| *n == base || n.ends_with(&format!("/{base}")) || *n == whole);
            if !found {
                missing.push(format!("{whole} (in the row or section of {member})"));
            }
        }
    }
    assert!(checked > 150, "only {checked} source files found");
    assert!(
        missing.is_empty(),
        "source files docs/architecture.md does not name (add each, with what it holds, \
         to its crate's row of section 2 or its layer's table):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_file_the_architecture_names_exists() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).expect("read the doc");
    let mut all = Vec::new();
    files(&root, ".rs", &mut all);
    let paths: Vec<String> = all
        .iter()
        .map(|p| {
            p.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let names = named(&doc);
    assert!(
        names.len() > 100,
        "only {} names read: {names:?}",
        names.len()
    );
    let stale: Vec<&String> = names
        .iter()
        .filter(|n| {
            !paths
                .iter()
                .any(|p| p == *n || p.ends_with(&format!("/{n}")))
        })
        .collect();
    assert!(
        stale.is_empty(),
        "docs/architecture.md names files that do not exist (renamed or removed: \
         write their new names): {stale:?}"
    );
}

#[test]
fn the_reader_finds_names_and_paths() {
    let got = named("see [state.rs](../plugins/x/src/state.rs), `a/b.rs` and rust.rsx; .rs");
    let want: BTreeSet<String> = ["state.rs", "plugins/x/src/state.rs", "a/b.rs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(got, want);
}
