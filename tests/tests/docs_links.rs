//! The README is a landing page and the manual in `docs/` holds together: the README
//! stays small; every relative link of the README and of `docs/*.md` leads to a file
//! that exists, and every `#anchor` to a heading of that file (GitHub's slugs); the
//! index (`docs/README.md`) links every page of the manual; every command the
//! README shows in its shell blocks exists as shown (`kprof` subcommands and their
//! options against the real `kprof --help`, scripts, make targets, cargo benches,
//! environment variables against the code that reads or sets them); every benchmark
//! and test the performance page names exists.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use kprof_tests::{lib, workspace_root};

/// The most the README may weigh: a landing page, one or two screens of text.
const README_MAX_BYTES: u64 = 20 * 1024;

/// Folders of the repository holding code (sources, build files, scripts): where an
/// environment variable the README names must be read or set.
const CODE_DIRS: &[&str] = &[
    "abi",
    "cli",
    "core",
    "plugins",
    "tests",
    "examples",
    "ffi-headers",
    "cmake",
    "scripts",
];

/// File endings of code in [`CODE_DIRS`].
const CODE_ENDINGS: &[&str] = &[
    ".rs", ".c", ".h", ".cpp", ".hpp", ".cu", ".f90", ".sh", ".cmake", ".in", ".txt",
];

/// A markdown file: its path and text.
struct Doc {
    path: PathBuf,
    text: String,
}

/// The README and every page of `docs/`.
fn docs() -> Vec<Doc> {
    let root = workspace_root();
    let mut paths = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    paths.extend(pages);
    paths
        .into_iter()
        .map(|path| Doc {
            text: std::fs::read_to_string(&path).expect("read a markdown file"),
            path,
        })
        .collect()
}

/// The lines of `text` outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push(line);
        }
    }
    out
}

/// The fenced code blocks of `text`: (the language after the fence, the lines).
fn code_blocks(text: &str) -> Vec<(String, Vec<&str>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(lang) = t.strip_prefix("```") {
            match open.take() {
                Some(block) => blocks.push(block),
                None => open = Some((lang.trim().to_string(), Vec::new())),
            }
        } else if let Some((_, lines)) = open.as_mut() {
            lines.push(line);
        }
    }
    assert!(open.is_none(), "a code block is not closed");
    blocks
}

/// `line` without its inline code spans (text between backticks).
fn without_inline_code(line: &str) -> String {
    line.split('`').step_by(2).collect()
}

/// The targets of the markdown links `[text](target)` in the prose of `text`.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let line = without_inline_code(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            out.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, markdown links reduced to their text,
/// every character but letters, digits, `_`, `-` and spaces dropped, spaces turned
/// into `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // A link in a heading counts by its text only.
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        rest = &rest[at + 2..];
        rest = rest.find(')').map_or("", |end| &rest[end + 1..]);
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of the headings of `text`, a repeated one numbered as GitHub does
/// (`x`, `x-1`, `x-2`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim());
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

#[test]
fn the_readme_is_at_most_20_kb() {
    let size = std::fs::metadata(workspace_root().join("README.md"))
        .expect("README.md")
        .len();
    assert!(
        size <= README_MAX_BYTES,
        "README.md is {size} bytes, more than {README_MAX_BYTES}: move detail into docs/"
    );
}

#[test]
fn the_readme_keeps_the_demo_and_the_test_commands() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let shown: Vec<&str> = code_blocks(&readme)
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .collect();
    for command in ["bash examples/run-demo.sh", "bash tests/test.sh"] {
        assert!(
            shown.contains(&command),
            "the README does not show {command}"
        );
    }
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let docs = docs();
    let mut checked = 0;
    let mut broken = Vec::new();
    for doc in &docs {
        let dir = doc.path.parent().unwrap();
        for target in link_targets(&doc.text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                doc.path.clone()
            } else {
                dir.join(file)
            };
            if !path.exists() {
                broken.push(format!("{}: {target}: no such file", doc.path.display()));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            // Anchors are checked in markdown files; one into any other file is broken.
            let is_markdown = path.extension().is_some_and(|x| x == "md");
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if !is_markdown || !anchors(&text).contains(anchor) {
                broken.push(format!("{}: {target}: no such heading", doc.path.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README and the manual link each other and their pages: a parser that
    // found no link would pass the loop above without checking anything.
    assert!(checked >= 200, "only {checked} relative links found");
}

#[test]
fn the_manual_index_links_every_page() {
    let root = workspace_root();
    let index = std::fs::read_to_string(root.join("docs/README.md")).expect("docs/README.md");
    let linked: BTreeSet<String> = link_targets(&index)
        .into_iter()
        .map(|t| t.split('#').next().unwrap_or("").to_string())
        .collect();
    let missing: Vec<String> = docs()
        .iter()
        .filter(|d| d.path.parent() == Some(&root.join("docs")))
        .map(|d| d.path.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| name != "README.md" && !linked.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md does not link {missing:?}"
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        link_targets(&readme).iter().any(|t| t == "docs/README.md"),
        "the README does not link the manual's index"
    );
}

/// Splits a shell line into words: blanks separate, quotes group (no expansions).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "unclosed quote in `{line}`");
    if in_word {
        words.push(word);
    }
    words
}

/// `line` without a trailing shell comment (` # ...`, outside quotes).
fn without_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            (None, '#') if prev.is_whitespace() => return &line[..i],
            _ => {}
        }
        prev = c;
    }
    line
}

/// Every file of code under [`CODE_DIRS`] (and the Makefile), read once.
fn code_text() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        fn walk(dir: &Path, out: &mut String) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                    if CODE_ENDINGS.iter().any(|e| name.ends_with(e)) {
                        out.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
                        out.push('\n');
                    }
                }
            }
        }
        let root = workspace_root();
        let mut text = std::fs::read_to_string(root.join("Makefile")).unwrap_or_default();
        for dir in CODE_DIRS {
            walk(&root.join(dir), &mut text);
        }
        text
    })
}

/// Whether the code reads or sets the environment variable `name`.
fn code_names_variable(name: &str) -> bool {
    code_text().contains(name)
}

/// `kprof <args> --help`, the real command's.
fn kprof_help(args: &[&str]) -> String {
    let out = Command::new(lib("kprof"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run kprof --help");
    assert!(out.status.success(), "kprof {args:?} --help failed");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// Checks `kprof <words>`: the subcommand exists, and every option given before
/// the program's `--` is one its `--help` lists. Returns what is wrong.
fn check_kprof(words: &[String]) -> Result<(), String> {
    let top = kprof_help(&[]);
    let sub = words.first().ok_or("kprof without a subcommand")?;
    // `kprof --version`: an option of kprof itself, listed as `-V, --version`.
    if sub.starts_with('-') {
        let listed = top.lines().any(|l| {
            l.trim_start()
                .split([',', ' '])
                .take_while(|w| w.starts_with('-') || w.is_empty())
                .any(|w| w == sub)
        });
        return listed
            .then_some(())
            .ok_or(format!("`kprof --help` lists no option {sub}"));
    }
    let listed = top
        .lines()
        .any(|l| l.split_whitespace().next() == Some(sub.as_str()));
    if !listed {
        return Err(format!("no subcommand `{sub}` in `kprof --help`"));
    }
    let help = kprof_help(&[sub]);
    let mut rest = words[1..].iter();
    while let Some(word) = rest.next() {
        if word == "--" {
            break;
        }
        if !word.starts_with('-') {
            continue;
        }
        let (name, inline_value) = match word.split_once('=') {
            Some((n, _)) => (n, true),
            None => (word.as_str(), false),
        };
        // The help lists `-o, --output <DIR>` or `--tree`: the option, then a
        // comma, a blank or the end of the line.
        let entry = help.lines().map(str::trim_start).find(|l| {
            l.split([',', ' '])
                .take_while(|w| w.starts_with('-') || w.is_empty())
                .any(|w| w == name)
        });
        let Some(entry) = entry else {
            return Err(format!("`kprof {sub} --help` lists no option {name}"));
        };
        if entry.contains('<') && !inline_value {
            rest.next();
        }
    }
    Ok(())
}

/// Checks one command line of a shell block. Returns what is wrong.
fn check_command(line: &str) -> Result<(), String> {
    let root = workspace_root();
    let mut words = shell_words(without_comment(line));
    // Leading `NAME=value` assignments: variables the code knows.
    while let Some(name) = words
        .first()
        .and_then(|w| w.split_once('='))
        .map(|(n, _)| n.to_string())
        .filter(|n| variable_like(n))
    {
        if !code_names_variable(&name) {
            return Err(format!("no code reads or sets {name}"));
        }
        words.remove(0);
    }
    let Some(program) = words.first().cloned() else {
        return Ok(());
    };
    match program.as_str() {
        "mpirun" | "oshrun" => {
            // The launcher's `-np N`, then the command it starts.
            let at = words
                .iter()
                .position(|w| w == "kprof" || w.ends_with("/kprof"))
                .ok_or(format!("`{program}` starts no kprof"))?;
            check_command(&words[at..].join(" "))
        }
        "kprof" | "target/release/kprof" => check_kprof(&words[1..]),
        "bash" => {
            let script = words.get(1).ok_or("bash without a script")?;
            root.join(script)
                .is_file()
                .then_some(())
                .ok_or(format!("no script {script}"))
        }
        "make" => {
            let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
            for target in words[1..].iter().filter(|w| !w.contains('=')) {
                if !makefile
                    .lines()
                    .any(|l| l.starts_with(&format!("{target}:")))
                {
                    return Err(format!("no make target {target}"));
                }
            }
            Ok(())
        }
        // The module files `make install` writes: `module use
        // <prefix>/share/modulefiles`, `module load kprof[/<version>]`.
        "module" => {
            let makefile = std::fs::read_to_string(root.join("Makefile")).unwrap();
            let installed = makefile.contains("/share/modulefiles/kprof/$(VERSION)");
            match (words.get(1).map(String::as_str), words.get(2)) {
                (Some("use"), Some(dir)) if dir.ends_with("/share/modulefiles") && installed => {
                    Ok(())
                }
                (Some("load"), Some(m)) if m == "kprof" || m.starts_with("kprof/") => Ok(()),
                _ => Err(format!(
                    "`{}`: neither `module use <prefix>/share/modulefiles` (installed by \
                     make install) nor `module load kprof`",
                    words.join(" ")
                )),
            }
        }
        // A program of the reader's own (`./app`): nothing of kprof's to check.
        p if p.starts_with("./") => Ok(()),
        p => Err(format!(
            "`{p}`: a command this test does not know how to check (teach it)"
        )),
    }
}

#[test]
fn every_command_of_the_readme_exists_as_shown() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (lang, lines) in code_blocks(&readme) {
        if !matches!(lang.as_str(), "" | "sh" | "bash" | "shell") {
            continue;
        }
        for line in lines.iter().filter(|l| !l.trim().is_empty()) {
            checked += 1;
            if let Err(e) = check_command(line) {
                wrong.push(format!("`{}`: {e}", line.trim()));
            }
        }
    }
    assert!(wrong.is_empty(), "README commands:\n{}", wrong.join("\n"));
    assert!(checked >= 10, "only {checked} commands found in the README");
}

/// Whether `word` is spelled as an environment variable: capitals, digits and `_`,
/// with a `_` in it (`KPROF_TRACE`, `OMP_TOOL_LIBRARIES`).
fn variable_like(word: &str) -> bool {
    word.len() > 3
        && word.contains('_')
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[test]
fn every_environment_variable_the_readme_names_is_in_the_code() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let mut names = BTreeSet::new();
    for line in prose_lines(&readme) {
        // Inline code that is a variable (`OMP_TOOL_LIBRARIES`), sets one
        // (`OMP_TOOL_LIBRARIES=...`), or is a kprof setting anywhere in it.
        for span in line.split('`').skip(1).step_by(2) {
            let head = span.split('=').next().unwrap_or("");
            if variable_like(head) {
                names.insert(head.to_string());
            }
            for word in span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                if word.starts_with("KPROF_") && variable_like(word) {
                    names.insert(word.to_string());
                }
            }
        }
    }
    let unknown: Vec<&String> = names.iter().filter(|n| !code_names_variable(n)).collect();
    assert!(unknown.is_empty(), "no code reads or sets {unknown:?}");
    assert!(names.len() >= 8, "only {names:?} found in the README");
}

#[test]
fn every_benchmark_and_test_the_performance_page_names_exists() {
    let root = workspace_root();
    let page = std::fs::read_to_string(root.join("docs/performance.md")).unwrap();
    let manifest = std::fs::read_to_string(root.join("tests/Cargo.toml")).unwrap();
    let mut checked = 0;
    for line in page.lines() {
        let words: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == '`' || c == ',')
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            match pair[0] {
                "--bench" => {
                    checked += 1;
                    assert!(
                        manifest.contains(&format!("name = \"{}\"", pair[1]))
                            && root.join(format!("tests/benches/{}.rs", pair[1])).is_file(),
                        "docs/performance.md names a bench {} that does not exist",
                        pair[1]
                    );
                }
                "--test" => {
                    checked += 1;
                    assert!(
                        root.join(format!("tests/tests/{}.rs", pair[1])).is_file(),
                        "docs/performance.md names a test {} that does not exist",
                        pair[1]
                    );
                }
                _ => {}
            }
        }
    }
    assert!(checked >= 12, "only {checked} benches and tests found");
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(
        slug("`profile.json` (schema `kprof-profile/1`)"),
        "profilejson-schema-kprof-profile1"
    );
    assert_eq!(
        slug("The floor of an exact breakdown"),
        "the-floor-of-an-exact-breakdown"
    );
    assert_eq!(slug("2. Where things live"), "2-where-things-live");
    assert_eq!(slug("Planned (not built yet)"), "planned-not-built-yet");
    let twice = anchors("# A\n## A\n```\n# not a heading\n```\n### A\n");
    assert_eq!(twice, ["a", "a-1", "a-2"].map(String::from).into());
}
