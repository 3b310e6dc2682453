//! The core's folders are layers whose imports go one way (see the crate's
//! documentation): a file of one layer names only layers below it. Read from the
//! sources, so that a new import that runs back up fails here, not in review.

use std::path::Path;

/// The layers from the top down; layers on one rank do not use each other.
const LAYERS: [(&str, u32); 7] = [
    ("control", 6),
    ("collect", 5),
    ("consume", 4),
    ("reduce", 4),
    ("output", 3),
    ("hot", 2),
    ("base", 1),
];

fn rank(layer: &str) -> Option<u32> {
    LAYERS.iter().find(|(l, _)| *l == layer).map(|&(_, r)| r)
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The layers `line` names as `crate::<layer>` (comments left out: a doc link
/// may point anywhere).
fn named_layers(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .filter(|&(at, _)| !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn imports_run_down_the_layers_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut upward = Vec::new();
    let mut files = 0;
    for (layer, r) in LAYERS {
        let mut paths = Vec::new();
        sources(&src.join(layer), &mut paths);
        assert!(!paths.is_empty(), "no sources in {layer}/");
        files += paths.len();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("read a source file");
            for (i, line) in text.lines().enumerate() {
                for used in named_layers(line) {
                    if used != layer && rank(used).is_some_and(|u| u >= r) {
                        upward.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                    }
                }
            }
        }
    }
    assert!(files > 50, "only {files} source files read");
    assert!(
        upward.is_empty(),
        "imports of a layer above or beside:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_reader_sees_imports_and_skips_comments() {
    assert_eq!(named_layers("use crate::hot::events;"), ["hot"]);
    assert_eq!(
        named_layers("    let x = crate::control::job::f(crate::base::config::X);"),
        ["control", "base"]
    );
    assert!(named_layers("//! see [`crate::collect::resolve`]").is_empty());
    assert!(named_layers("let a = 1; // crate::control").is_empty());
    assert!(named_layers("use kprof_core::control;").is_empty());
}

mod modgraph;

/// The workspace's crates with sources (its members' `src` folders).
fn crates() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .expect("the workspace's members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches(|c| c == '"' || c == ']'))
        .filter(|m| !m.is_empty())
        .map(|m| root.join(m).join("src"))
        .collect()
}

/// Circles left, each as its crate's folder and its modules: a folder's
/// `mod.rs` or a crate's root that defines what its children use and also uses
/// them. The list only shrinks: a new circle fails, and so does one listed here
/// that is gone (take it off).
const KNOWN: &[(&str, &[&str])] = &[];

#[test]
fn no_module_circles_in_the_workspace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    let mut seen = Vec::new();
    let mut modules = 0;
    for src in crates() {
        let g = modgraph::Graph::read(&src);
        modules += g.uses.len();
        let krate = src
            .parent()
            .and_then(|c| c.strip_prefix(&root).ok())
            .map(|c| c.display().to_string())
            .unwrap_or_default();
        for (members, lines) in g.circles() {
            let known = KNOWN.iter().any(|(k, m)| {
                *k == krate && m.iter().copied().eq(members.iter().map(String::as_str))
            });
            if known {
                seen.push((krate.clone(), members));
            } else {
                found.push(format!(
                    "in {krate} ({}):\n  {}",
                    members.join(", "),
                    lines.join("\n  ")
                ));
            }
        }
    }
    assert!(modules > 150, "only {modules} modules read");
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
    let gone: Vec<_> = KNOWN
        .iter()
        .filter(|(k, m)| {
            !seen
                .iter()
                .any(|(sk, sm)| sk == k && m.iter().copied().eq(sm.iter().map(String::as_str)))
        })
        .collect();
    assert!(
        gone.is_empty(),
        "circles listed as known but gone (take them off KNOWN): {gone:?}"
    );
}

#[test]
fn the_graph_finds_a_circle_and_reads_paths() {
    assert_eq!(
        modgraph::expand_use("crate::hot::{open::GUID_SEQ_BITS, thread::{self, Sink as S}}"),
        [
            vec!["crate", "hot", "open", "GUID_SEQ_BITS"],
            vec!["crate", "hot", "thread", "self"],
            vec!["crate", "hot", "thread", "Sink"],
        ]
    );
    assert_eq!(
        modgraph::paths_in("let a = crate::api(); super::x::Y::new(crate::mode::ON)"),
        [
            vec!["crate"],
            vec!["super", "x", "Y"],
            vec!["crate", "mode", "ON"]
        ]
    );
    // A visibility restriction names who may use an item, not a module used.
    assert_eq!(
        modgraph::paths_in("pub(crate) fn f(x: super::X) -> pub(in crate::a) u8"),
        [vec!["super", "X"]]
    );
    assert_eq!(
        modgraph::code(r#"let s = "crate::a::b"; // crate::c"#),
        r#"let s = ""; "#
    );
    let dir = std::env::temp_dir().join(format!("kprof-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a")).expect("make a folder");
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").expect("write");
    std::fs::write(dir.join("a/mod.rs"), "mod c;\nuse c::f;\n").expect("write");
    std::fs::write(dir.join("a/c.rs"), "use crate::b::g;\n").expect("write");
    std::fs::write(
        dir.join("b.rs"),
        "fn g() { super::a::h() }\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    )
    .expect("write");
    let circles = modgraph::Graph::read(&dir).circles();
    std::fs::remove_dir_all(&dir).expect("remove the folder");
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].0, ["a", "a::c", "b"]);
}
