//! kprof's tables of models and of settings (`tables/`) against what reads them
//! or repeats them: the install, the plugin crates, the docs, each command's
//! `--help`, and the checks of options and of the environment, at `kprof run`
//! and at the runtime's start.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Output, Stdio};

use kprof_tables::models::{self, MODELS};
use kprof_tables::settings::{self, Kind, Setting};
use kprof_tests::{
    clean_cmd, compile_with_core, lib, lib_dir, run, scratch, test_file, workspace_root,
};

fn read(rel: &str) -> String {
    std::fs::read_to_string(workspace_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The words of the Makefile's line starting with `start`, up to the line's end.
fn make_words(makefile: &str, start: &str) -> Vec<String> {
    let line = makefile
        .lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line {start} in the Makefile"));
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn the_makefile_builds_and_installs_what_the_model_table_names() {
    let make = read("Makefile");
    let installed: BTreeSet<String> = make_words(&make, "PLUGINS :=")
        .into_iter()
        .skip(2)
        .collect();
    let expected: BTreeSet<String> = models::libraries().iter().map(|s| s.to_string()).collect();
    assert_eq!(installed, expected, "the Makefile's PLUGINS");
    let words = make_words(&make, "$(CARGO) build --release");
    let built: BTreeSet<&str> = words
        .windows(2)
        .filter(|w| w[0] == "-p")
        .map(|w| w[1].as_str())
        .collect();
    let packages: BTreeSet<&str> = models::packages().into_iter().collect();
    assert_eq!(built, packages, "the Makefile's build");
}

/// The `[lib] name` of the workspace member whose package is `package`.
fn lib_name(package: &str) -> String {
    let root = read("Cargo.toml");
    let members = root
        .split("members = [")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .expect("workspace members");
    for m in members.split(',').map(|m| m.trim().trim_matches('"')) {
        let toml = read(&format!("{m}/Cargo.toml"));
        if toml.contains(&format!("name = \"{package}\"")) {
            let lib = toml.split("[lib]").nth(1).expect("a [lib] section");
            let name = lib
                .lines()
                .find_map(|l| l.trim().strip_prefix("name = "))
                .expect("a lib name");
            return name.trim_matches('"').to_string();
        }
    }
    panic!("{package} is not a member of the workspace")
}

/// Each model is whole: its crate is in the workspace and builds its library,
/// which the build made; its doc page exists and names its flag; `kprof run
/// --help` offers the flag.
#[test]
fn every_model_is_whole() {
    let help =
        String::from_utf8(run(clean_cmd(&lib("kprof")).args(["run", "--help"])).stdout).unwrap();
    for m in &MODELS {
        assert_eq!(
            format!("lib{}.so", lib_name(m.package)),
            m.library,
            "{}: the crate's library",
            m.name
        );
        assert!(
            lib_dir().join(m.library).is_file(),
            "{} was not built",
            m.library
        );
        let doc = read(m.doc);
        assert!(
            doc.contains(&format!("--{}", m.name)),
            "{} does not mention --{}",
            m.doc,
            m.name
        );
        assert!(
            help.contains(&format!("      --{}\n", m.name)),
            "--{} not in kprof run --help",
            m.name
        );
        assert!(
            help.contains(m.library),
            "{} not in kprof run --help",
            m.library
        );
    }
    for (_, l) in models::SUPPORT_LIBRARIES {
        assert!(lib_dir().join(l).is_file(), "{l} was not built");
    }
}

/// README.md and every docs/*.md.
fn docs() -> Vec<(String, String)> {
    let mut files = vec![("README.md".to_string(), read("README.md"))];
    let mut names: Vec<String> = std::fs::read_dir(workspace_root().join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    for n in names {
        let rel = format!("docs/{n}");
        let text = read(&rel);
        files.push((rel, text));
    }
    files
}

/// `KPROF_*` names in `text`.
fn kprof_vars(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("KPROF_") {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            out.push(tail[..end].trim_end_matches('_').to_string());
        }
        rest = &tail[end..];
    }
    out
}

/// The rows of the configuration tables (header `| variable | option | default
/// | meaning |`, the option column only where the settings have options) of
/// `text`: (variables of the first cell, option cell if any, default cell).
fn config_rows(text: &str) -> Vec<(Vec<String>, Option<String>, String)> {
    let mut rows = Vec::new();
    let mut columns: Option<Vec<String>> = None;
    for line in text.lines() {
        if !line.starts_with('|') {
            columns = None;
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let cells = &cells[1..cells.len() - 1];
        if cells.first() == Some(&"variable") {
            let names: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
            assert!(
                names == ["variable", "option", "default", "meaning"]
                    || names == ["variable", "default", "meaning"],
                "a configuration table's columns: {names:?}"
            );
            columns = Some(names);
            continue;
        }
        let Some(names) = &columns else { continue };
        if cells[0].starts_with("---") {
            continue;
        }
        let cell = |name: &str| {
            names
                .iter()
                .position(|n| n == name)
                .map(|i| cells[i].to_string())
        };
        rows.push((
            kprof_vars(cells[0]),
            cell("option"),
            cell("default").unwrap_or_default(),
        ));
    }
    rows
}

/// The option a configuration table shows for `s`: its `--name`, accepted by
/// `--kokkos-tools-args` (the core's settings) and `kprof run`.
fn option_of(s: &Setting) -> String {
    let core = settings::core::GROUP.settings.contains(s) && s.kind != Kind::Path;
    if core {
        format!("`--{}`", s.name)
    } else {
        "—".into()
    }
}

/// The docs' configuration tables list every setting, and nothing else; each
/// row's option and default are the registry's. (A plugin's page may repeat
/// its settings' rows.)
#[test]
fn the_docs_configuration_tables_are_the_registry() {
    let mut documented: Vec<String> = Vec::new();
    let mut wrong = Vec::new();
    for (file, text) in docs() {
        for (vars, option, default) in config_rows(&text) {
            for v in &vars {
                let Some(s) = settings::by_var(v) else {
                    wrong.push(format!("{file}: {v} is not a setting"));
                    continue;
                };
                documented.push(v.clone());
                if let Some(option) = option.as_ref().filter(|_| vars.len() == 1) {
                    if *option != option_of(s) {
                        wrong.push(format!(
                            "{file}: {v}'s option is {option}, not {}",
                            option_of(s)
                        ));
                    }
                }
                if !s.default.contains(' ') && !default.contains(s.default) {
                    wrong.push(format!(
                        "{file}: {v}'s default is {}, not {default}",
                        s.default
                    ));
                }
            }
        }
    }
    for s in settings::all() {
        if !documented.iter().any(|d| d == s.var) {
            wrong.push(format!("{} is in no configuration table", s.var));
        }
    }
    assert!(documented.len() >= 30, "{documented:?}");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A variable the docs set (`KPROF_X=...`) is one kprof knows.
#[test]
fn the_docs_set_only_known_variables() {
    let mut unknown = Vec::new();
    let mut seen = 0;
    for (file, text) in docs() {
        for (i, line) in text.lines().enumerate() {
            for v in kprof_vars(line) {
                if line.contains(&format!("{v}=")) {
                    seen += 1;
                    if !settings::known(&v) {
                        unknown.push(format!("{file}:{}: {v}", i + 1));
                    }
                }
            }
        }
    }
    assert!(seen > 20, "only {seen} assignments read");
    assert!(
        unknown.is_empty(),
        "unknown variables:\n{}",
        unknown.join("\n")
    );
}

/// `kprof <args> --help`.
fn help(args: &[&str]) -> String {
    let o = run(clean_cmd(&lib("kprof")).args(args).arg("--help"));
    assert!(o.status.success(), "{args:?} --help: {}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// The commands `kprof --help` lists.
fn commands() -> Vec<String> {
    let top = help(&[]);
    let list = top.split("Commands:").nth(1).expect("a command list");
    let list = list.split("Options:").next().unwrap();
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// An option: `--long`, and `-s` when it has a short form.
type Opt = (String, Option<String>);

/// The options (`--long`, or `-s` for those with a short form too) of a help
/// text, without --help and --version.
fn options(help: &str) -> Vec<Opt> {
    let mut out = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        // Visible aliases are options too.
        if let Some(aliases) = t.split("[alias: ").nth(1).or(t.split("[aliases: ").nth(1)) {
            for a in aliases.trim_end_matches(']').split(", ") {
                out.push((a.to_string(), None));
            }
        }
        if !t.starts_with('-') {
            continue;
        }
        let short = t
            .strip_prefix('-')
            .filter(|r| !r.starts_with('-'))
            .and_then(|r| r.get(..1))
            .map(|c| format!("-{c}"));
        let Some(long) = t.split("--").nth(1) else {
            continue;
        };
        let long: String = long
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if long != "help" && long != "version" {
            out.push((format!("--{long}"), short));
        }
    }
    out
}

/// The `--options` a docs section names, but those of cargo's command lines.
fn doc_options(section: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in section.lines().filter(|l| !l.contains("cargo ")) {
        let mut rest = line;
        while let Some(at) = rest.find("--") {
            let before = rest[..at].chars().next_back();
            let tail = &rest[at + 2..];
            let word: String = tail
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if !before.is_some_and(|c| c.is_alphanumeric() || c == '-')
                && word.starts_with(|c: char| c.is_ascii_lowercase())
            {
                out.insert(format!("--{}", word.trim_end_matches('-')));
            }
            rest = &tail[word.len()..];
        }
    }
    out
}

/// docs/cli.md documents every option of every command's `--help`, in the
/// command's section, and names no option that neither the command nor a
/// command the section quotes (`kprof run -q --force ...` in `kprof diff`'s)
/// has; every variable of a `--help` is known.
#[test]
fn docs_cli_md_and_every_help_agree() {
    let cli = read("docs/cli.md");
    let mut wrong = Vec::new();
    let cmds = commands();
    assert!(cmds.len() >= 5, "{cmds:?}");
    let all: Vec<(String, Vec<Opt>)> = cmds
        .iter()
        .map(|c| (c.clone(), options(&help(&[c]))))
        .collect();
    for cmd in &cmds {
        let heading = format!("## `kprof {cmd}`");
        let Some(section) = cli.split(&heading).nth(1) else {
            wrong.push(format!("docs/cli.md has no section {heading}"));
            continue;
        };
        let section = section.split("\n## ").next().unwrap();
        let text = help(&[cmd]);
        let opts = options(&text);
        assert!(!opts.is_empty(), "no options read from kprof {cmd} --help");
        for (long, short) in &opts {
            let in_section = doc_options(section).contains(long)
                || short.as_ref().is_some_and(|s| {
                    section.contains(&format!("[{s}"))
                        || section.contains(&format!("`{s}"))
                        || section.contains(&format!("{s} "))
                });
            if !in_section {
                wrong.push(format!("kprof {cmd} {long} is not in docs/cli.md"));
            }
        }
        let quoted: Vec<&Opt> = all
            .iter()
            .filter(|(c, _)| c == cmd || section.contains(&format!("kprof {c} ")))
            .flat_map(|(_, o)| o)
            .collect();
        for d in doc_options(section) {
            if !quoted.iter().any(|(l, _)| *l == d) {
                wrong.push(format!(
                    "docs/cli.md's kprof {cmd} names {d}, which it does not have"
                ));
            }
        }
        for v in kprof_vars(&text) {
            if !settings::known(&v) {
                wrong.push(format!("kprof {cmd} --help names {v}, which is unknown"));
            }
        }
    }
    // Every setting with a kprof run flag is in the help with its variable.
    let run_help = help(&["run"]);
    for s in settings::all().filter(|s| s.run_flag) {
        if !run_help.contains(&format!("--{} <{}>", s.name, s.meta)) || !run_help.contains(s.var) {
            wrong.push(format!("kprof run --help lacks --{} ({})", s.name, s.var));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// ------------------------------------------------- checks of options and variables

/// The annotated program of the CLI tests, built once here.
fn kernels() -> std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let dir = scratch("tables_bin");
        compile_with_core(&[&test_file("cli/kernels.c")], &dir.join("kernels"), &[])
    })
    .clone()
}

fn kprof_in(dir: &Path) -> std::process::Command {
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(dir).stdin(Stdio::null());
    cmd
}

/// An option no command has, before `--`: one line, exit 2, the nearest option
/// named, and the program not run.
#[test]
fn an_unknown_option_is_one_line_naming_the_nearest() {
    let dir = scratch("tables_unknown_option");
    let o =
        run(kprof_in(&dir).args(["run", "--tracee", "perfetto", "--", "sh", "-c", "touch ran"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "kprof: unknown option --tracee (the nearest is --trace)\n"
    );
    assert!(!dir.join("ran").exists(), "the program ran");
    let o = run(kprof_in(&dir).args(["run", "--buffer-mbb=8", "--", "true"]));
    assert_eq!(
        stderr(&o),
        "kprof: unknown option --buffer-mbb (the nearest is --buffer-mb)\n"
    );
    assert_eq!(o.status.code(), Some(2));
    let o = run(kprof_in(&dir).args(["report", "--sortt", "self", "x"]));
    assert_eq!(
        stderr(&o),
        "kprof: unknown option --sortt (the nearest is --sort)\n"
    );
    assert_eq!(o.status.code(), Some(2));
    // After `--`, and after the program, words are the program's.
    let o = run(kprof_in(&dir).args(["run", "-q", "--", "sh", "-c", "echo \"$0\"", "--tracee"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "--tracee\n");
}

/// Under `kprof run`, an invalid value in the environment ends it before the
/// program starts, as the flag does; a flag's value replaces it.
#[test]
fn a_bad_value_in_the_environment_stops_kprof_run() {
    let dir = scratch("tables_bad_value");
    for (var, value, expected) in [
        (
            "KPROF_TRACE",
            "perfeto",
            "a comma list of perfetto, json, otf2",
        ),
        ("KPROF_BUFFER_MB", "0", "a whole number of MiB, 1 to 65536"),
        (
            "KPROF_ACTOR_PEER_US",
            "soon",
            "microseconds, 0 (no tracks) or more",
        ),
        ("KPROF_TUNE", "2", "expected 0 or 1"),
    ] {
        let o = run(kprof_in(&dir)
            .env(var, value)
            .args(["run", "--", "sh", "-c", "touch ran"]));
        assert_eq!(o.status.code(), Some(2), "{var}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!("kprof: {var}={value} is invalid ({expected})\n")
        );
        assert!(!dir.join("ran").exists(), "{var}: the program ran");
    }
    let flag = run(kprof_in(&dir).args(["run", "--trace=perfeto", "--", "true"]));
    assert_eq!(flag.status.code(), Some(2));
    assert_eq!(
        stderr(&flag),
        "kprof: --trace=perfeto is invalid (a comma list of perfetto, json, otf2)\n"
    );
    let o = run(kprof_in(&dir)
        .env("KPROF_TRACE", "perfeto")
        .args([
            "run",
            "-q",
            "--trace",
            "json",
            "-o",
            "o",
            "--summary",
            "0",
            "--",
        ])
        .arg(kernels())
        .arg("1"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(dir.join("o/trace.json").is_file());
}

/// An unknown `KPROF_*` variable gets one line naming the nearest setting, from
/// `kprof run` before the program starts, and from the runtime at its start
/// when the program runs alone; the program runs as without it.
#[test]
fn an_unknown_variable_names_the_nearest_setting() {
    let dir = scratch("tables_unknown_var");
    let line = "kprof: KPROF_TRAC is not a kprof setting (did you mean KPROF_TRACE?); ignored\n";
    let o = run(kprof_in(&dir)
        .env("KPROF_TRAC", "perfetto")
        .args(["run", "-o", "o", "--summary", "0", "--"])
        .arg(kernels())
        .args(["1", "3"]));
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "{line}kprof: measuring annotations (detected)\n\
             kprof: results in o (read them with: kprof report o)\n"
        )
    );
    assert!(!dir.join("o/trace.pftrace").exists());

    // Alone: the runtime says it once, at its start, and checks plugins'
    // settings' values as well.
    let o = run(clean_cmd(&kernels())
        .current_dir(&dir)
        .stdin(Stdio::null())
        .env("KPROF_OUTPUT_DIR", "alone")
        .env("KPROF_SUMMARY", "0")
        .env("KPROF_TRAC", "perfetto")
        .env("KPROF_CUDA_BUFFERS", "many")
        .arg("2"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("kprof: KPROF_CUDA_BUFFERS=many is invalid (a whole number, 1 or more)\n{line}")
    );
    let p = kprof_tests::read_profile(&dir.join("alone"));
    let all = kprof_tests::nodes(&p);
    assert_eq!(
        kprof_tests::u(&kprof_tests::node(&all, &["main loop", "kernel"])["count"]),
        2
    );
}
