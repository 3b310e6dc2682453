//! Support for kprof's integration tests: building the plugin libraries once,
//! compiling the C harnesses, running programs under a tool, and reading back
//! the files kprof wrote.
//!
//! Tests never look at a file's mere existence: they parse `profile.json` with
//! [`read_profile`] and assert on its content.

pub mod actor;
pub mod bench;
pub mod mutate;
pub mod names;
pub mod openmp;
pub mod plot_check;
pub mod standin;
pub mod synthetic;
pub mod trace_check;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// The workspace root (the directory holding the top-level `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The cargo target directory shared by the workspace.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// Directory holding the release cdylibs (`libkprof.so`, `libkprof_core.so`, ...)
/// and the `kprof` command.
///
/// Builds them once per test process with `cargo build --release`, so a test
/// never runs against stale libraries.
///
/// `KPROF_TEST_LIB_DIR`, when set, names a directory of libraries built another
/// way (`scripts/tsan.sh`: instrumented with ThreadSanitizer), used as it is.
pub fn lib_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(dir) = prebuilt_lib_dir() {
                return dir;
            }
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            // Every library the install builds (the model table's plugins and
            // the support libraries) and the command.
            let mut cmd = Command::new(cargo);
            cmd.current_dir(workspace_root())
                .args(["build", "--release", "--quiet"]);
            for p in kprof_tables::models::packages() {
                cmd.args(["-p", p]);
            }
            let status = cmd.status().expect("run cargo build");
            assert!(
                status.success(),
                "cargo build --release of the plugins failed"
            );
            target_dir().join("release")
        })
        .clone()
}

/// The directory `KPROF_TEST_LIB_DIR` names, when set: [`lib_dir`] builds nothing.
pub fn prebuilt_lib_dir() -> Option<PathBuf> {
    std::env::var_os("KPROF_TEST_LIB_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// Path of a library in [`lib_dir`], e.g. `lib("libkprof.so")`.
pub fn lib(name: &str) -> PathBuf {
    lib_dir().join(name)
}

/// A scratch directory for one test, emptied first.
pub fn scratch(name: &str) -> PathBuf {
    let dir = target_dir().join("test-scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// Compiles C or C++ sources (by the first source's extension: gcc or g++) into
/// an executable or shared library at `out`. `args` are extra compiler/linker
/// arguments.
pub fn compile(sources: &[&Path], out: &Path, args: &[&str]) -> PathBuf {
    let cpp = sources
        .first()
        .and_then(|s| s.extension())
        .is_some_and(|e| e == "cpp" || e == "cc");
    compile_with(if cpp { "g++" } else { "gcc" }, sources, out, args)
}

/// [`compile`] with the named compiler (warnings are errors; `ffi-headers/` is on
/// the include path).
pub fn compile_with(compiler: &str, sources: &[&Path], out: &Path, args: &[&str]) -> PathBuf {
    let mut cmd = Command::new(compiler);
    cmd.args(["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(workspace_root().join("ffi-headers"))
        .args(sources)
        .arg("-o")
        .arg(out)
        .args(args);
    if std::env::var_os("KPROF_TEST_PRELOAD").is_some_and(|v| !v.is_empty()) {
        // Libraries built for ThreadSanitizer call its runtime, which the program
        // gets preloaded (see clean_cmd), not linked.
        cmd.arg("-Wl,--allow-shlib-undefined");
    }
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        output.status.success(),
        "{compiler} failed for {sources:?}:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out.to_path_buf()
}

/// [`compile`], linked against `libkprof_core.so` in [`lib_dir`] (with an rpath),
/// as an application that uses the annotation API is.
pub fn compile_with_core(sources: &[&Path], out: &Path, args: &[&str]) -> PathBuf {
    let libdir = lib_dir();
    let l = format!("-L{}", libdir.display());
    let rpath = format!("-Wl,-rpath,{}", libdir.display());
    let mut all = vec![l.as_str(), "-lkprof_core", rpath.as_str()];
    all.extend_from_slice(args);
    compile(sources, out, &all)
}

/// `tests/harness/<name>.c`, a pthreads program linked with the core, built once
/// per test binary (the first caller builds it into `cell`).
pub fn core_harness(cell: &'static OnceLock<PathBuf>, name: &str) -> PathBuf {
    cell.get_or_init(|| {
        let dir = scratch(&format!("{name}_build"));
        compile_with_core(
            &[&test_file(&format!("harness/{name}.c"))],
            &dir.join(name),
            &["-lpthread"],
        )
    })
    .clone()
}

/// The Kokkos harness host (`tests/harness/kokkos_host.c`) built twice into `dir`:
/// plain, and linked with the core for its annotation scenarios
/// (`-DKPROF_ANNOTATE`). Returns (plain, annotating).
pub fn build_kokkos_hosts(dir: &Path) -> (PathBuf, PathBuf) {
    let src = test_file("harness/kokkos_host.c");
    let plain = compile(&[&src], &dir.join("kokkos_host"), &["-ldl", "-lpthread"]);
    let annotate = compile_with_core(
        &[&src],
        &dir.join("kokkos_host_annotate"),
        &["-DKPROF_ANNOTATE", "-ldl", "-lpthread"],
    );
    (plain, annotate)
}

/// A command running `exe` without any inherited kprof setting (`KPROF_*`), Kokkos
/// tool setting (`KOKKOS_*`) or tool library of another runtime (each model's
/// loader variables, from the model table), so that a test sees only what it
/// sets itself.
///
/// `KPROF_TEST_PRELOAD`, when set, becomes the command's `LD_PRELOAD`: the
/// ThreadSanitizer runtime that libraries instrumented with it need loaded first
/// (`scripts/tsan.sh`); a test that sets `LD_PRELOAD` itself replaces it. With
/// `KPROF_TEST_LIB_DIR` set, `LD_LIBRARY_PATH` is that directory alone.
pub fn clean_cmd(exe: &Path) -> Command {
    let loaders: Vec<&str> = kprof_tables::models::MODELS
        .iter()
        .flat_map(|m| m.loader.vars())
        .chain(["OMP_TOOL"])
        .collect();
    let mut cmd = Command::new(exe);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("KPROF_") || k.starts_with("KOKKOS_") || loaders.contains(&&*k) {
            cmd.env_remove(&*k);
        }
    }
    if let Some(preload) = std::env::var_os("KPROF_TEST_PRELOAD").filter(|v| !v.is_empty()) {
        cmd.env("LD_PRELOAD", preload);
    }
    if let Some(dir) = prebuilt_lib_dir() {
        // `cargo test` puts its own target folders on LD_LIBRARY_PATH, which wins
        // over a program's RUNPATH: a program linked with the core would load the
        // plain one from there instead of the one in `dir`.
        cmd.env("LD_LIBRARY_PATH", dir);
    }
    cmd
}

/// Path of a file under `tests/`.
pub fn test_file(rel: &str) -> PathBuf {
    workspace_root().join("tests").join(rel)
}

/// Runs `cmd` to completion, returning its output; panics with the stderr if it
/// could not be started.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// `make install PREFIX=<prefix>` of the libraries and the command [`lib_dir`]
/// built, asserting it succeeds.
pub fn make_install(prefix: &Path) {
    lib_dir();
    let o = run(Command::new("make")
        .current_dir(workspace_root())
        .arg("install")
        .arg(format!("PREFIX={}", prefix.display()))
        .env("CARGO_TARGET_DIR", target_dir()));
    assert_ok(&o);
}

/// The block of a command's `text` whose title line starts with `title`, up to
/// the next blank line (the tables of `kprof report` and `kprof diff`).
pub fn text_block<'a>(text: &'a str, title: &str) -> &'a str {
    let start = text
        .find(&format!("\n{title}"))
        .unwrap_or_else(|| panic!("no block {title:?} in\n{text}"));
    let rest = &text[start + 1..];
    &rest[..rest.find("\n\n").map_or(rest.len(), |e| e + 1)]
}

/// Asserts the command exited 0, printing its stdout and stderr otherwise.
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts `cmd` with its stdout and stderr piped and waits for its first line on
/// stdout, which must be `first` (a program saying it is running, or ready for a
/// signal). Its stdout stays readable after that line.
pub fn spawn_until(cmd: &mut Command, first: &str) -> std::process::Child {
    use std::io::{BufRead, BufReader};
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the first line");
    assert_eq!(line, first, "first line of {cmd:?}");
    child
}

/// Reads and parses `<dir>/profile.json`.
pub fn read_profile(dir: &Path) -> Value {
    let path = dir.join("profile.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // Profiles nest as deep as the program's call paths (up to KPROF_MAX_DEPTH).
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    serde::Deserialize::deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every node of the profile's call-path tree, depth first, with its path of
/// names from the root (`["outer", "inner", "kernel"]`).
pub fn nodes(profile: &Value) -> Vec<(Vec<String>, Value)> {
    fn walk(list: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
        for node in list.as_array().into_iter().flatten() {
            path.push(node["name"].as_str().unwrap_or_default().to_string());
            out.push((path.clone(), node.clone()));
            walk(&node["children"], path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(&profile["tree"], &mut Vec::new(), &mut out);
    out
}

/// The unique tree node at `path` (names from the root). Panics with the list of
/// paths present when there is none or several.
pub fn node<'a>(all: &'a [(Vec<String>, Value)], path: &[&str]) -> &'a Value {
    let found: Vec<&Value> = all
        .iter()
        .filter(|(p, _)| p.iter().map(String::as_str).eq(path.iter().copied()))
        .map(|(_, v)| v)
        .collect();
    match found.as_slice() {
        [one] => one,
        _ => panic!(
            "expected exactly one node at {path:?}, found {}; paths present:\n{}",
            found.len(),
            all.iter()
                .map(|(p, _)| p.join(" / "))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

/// `v` as an unsigned integer; panics with the value otherwise.
pub fn u(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("expected an unsigned integer, got {v}"))
}

/// Self samples by function of a `stack_samples` object (a node's, or the
/// samples outside every construct) of profile.json.
pub fn sample_functions(s: &Value) -> std::collections::BTreeMap<String, u64> {
    s["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| (f["name"].as_str().unwrap().to_string(), u(&f["samples"])))
        .collect()
}

/// One node of the call-path tree: (path joined by " / ", kind, count, device,
/// device_index, instance).
pub type ShapeRow = (String, String, u64, String, String, String);

/// The call-path tree as a set of [`ShapeRow`]s: compared whole, it shows every
/// difference at once.
pub type Shape = std::collections::BTreeSet<ShapeRow>;

/// Every node of a profile as a [`ShapeRow`], sorted: a multiset, for trees where
/// two nodes share a path (an upload and a download of one variable).
pub fn shape_rows(p: &Value) -> Vec<ShapeRow> {
    let mut v: Vec<ShapeRow> = nodes(p)
        .into_iter()
        .map(|(path, n)| {
            (
                path.join(" / "),
                n["kind"].as_str().unwrap_or_default().to_string(),
                u(&n["count"]),
                n["device"].to_string(),
                n["device_index"].to_string(),
                n["instance"].to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// The [`Shape`] of a profile.
pub fn shape(p: &Value) -> Shape {
    shape_rows(p).into_iter().collect()
}

/// Whether tests that need an optional runtime must run (CI sets
/// `KPROF_REQUIRE_ALL_TESTS=1`, turning a skip into a failure).
pub fn require_all() -> bool {
    std::env::var("KPROF_REQUIRE_ALL_TESTS").is_ok_and(|v| v == "1")
}

/// Skips the calling test (returns `true`) when `available` is false, or
/// fails it when [`require_all`] is set. `what` names the missing runtime.
pub fn skip_unless(available: bool, what: &str) -> bool {
    if available {
        return false;
    }
    assert!(
        !require_all(),
        "KPROF_REQUIRE_ALL_TESTS=1 but {what} is not available"
    );
    eprintln!("SKIP: {what} is not available");
    true
}
