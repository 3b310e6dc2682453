//! Support for the OpenMP (OMPT) tests and benchmark: the OMPT plugin library, the
//! OpenMP runtimes (LLVM libomp 14 installed by apt; libomp 19 unpacked privately by
//! `tests/setup.sh` into `target/deps/libomp19/`), compiling the programs of
//! `tests/openmp/` and running them under kprof.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::{clean_cmd, lib_dir, nodes, scratch, target_dir, test_file, workspace_root};

/// `libkprof_ompt.so`, built once per test process (`cargo build --release -p
/// kprof-ompt`) next to the other plugins. Panics when the plugin cannot be built:
/// a missing kprof feature is a failure, never a skip.
pub fn ompt_lib() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = lib_dir();
            if crate::prebuilt_lib_dir().is_some() {
                return dir.join("libkprof_ompt.so");
            }
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let out = Command::new(cargo)
                .current_dir(workspace_root())
                .args(["build", "--release", "--quiet", "-p", "kprof-ompt"])
                .output()
                .expect("run cargo build");
            assert!(
                out.status.success(),
                "cargo build --release -p kprof-ompt failed (is plugins/ompt in the \
                 workspace?):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let lib = dir.join("libkprof_ompt.so");
            assert!(lib.is_file(), "{} was not built", lib.display());
            lib
        })
        .clone()
}

/// Whether `program` runs (`program --version` exits 0).
pub fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The OpenMP runtime a program runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// LLVM libomp 14, the system's `libomp.so.5` (apt `libomp-dev`).
    Llvm14,
    /// LLVM libomp 19, `target/deps/libomp19/lib` on `LD_LIBRARY_PATH`.
    Llvm19,
}

impl Runtime {
    /// Short name for scratch directories and messages.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Llvm14 => "libomp14",
            Runtime::Llvm19 => "libomp19",
        }
    }
}

/// The deps directory (`KPROF_DEPS_DIR`, default `target/deps`).
pub fn deps_dir() -> PathBuf {
    match std::env::var_os("KPROF_DEPS_DIR") {
        Some(d) if !d.is_empty() => workspace_root().join(d),
        _ => target_dir().join("deps"),
    }
}

/// `target/deps/libomp19` when `tests/setup.sh` unpacked libomp 19 there.
pub fn libomp19() -> Option<PathBuf> {
    let dir = deps_dir().join("libomp19");
    dir.join("lib/libomp.so.5").is_file().then_some(dir)
}

/// A directory holding `libgomp.so.1 -> <libomp.so.5 of runtime>`: GCC-built
/// programs run on libomp with it on `LD_LIBRARY_PATH`.
pub fn gomp_shim(runtime: Runtime) -> PathBuf {
    match runtime {
        Runtime::Llvm19 => libomp19().expect("libomp 19 unpacked").join("lib"),
        Runtime::Llvm14 => {
            static DIR: OnceLock<PathBuf> = OnceLock::new();
            DIR.get_or_init(|| {
                let dir = target_dir().join("test-scratch").join("gomp-on-libomp14");
                std::fs::create_dir_all(&dir).expect("create the libgomp shim dir");
                let system = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"]
                    .iter()
                    .map(|d| Path::new(d).join("libomp.so.5"))
                    .find(|p| p.exists())
                    .expect("libomp.so.5 of libomp-dev (LLVM 14)");
                let link = dir.join("libgomp.so.1");
                let _ = std::fs::remove_file(&link);
                std::os::unix::fs::symlink(system, &link).expect("symlink libgomp.so.1");
                dir
            })
            .clone()
        }
    }
}

/// How a program of `tests/openmp/` is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compiler {
    /// `clang -fopenmp` (LLVM 14, links the system libomp).
    Clang,
    /// `gcc -fopenmp` (libgomp's ABI).
    Gcc,
    /// `clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu` against libomp 19.
    Clang19Offload,
}

/// Compiles `tests/openmp/<name>.c` with `compiler` (`-O2 -g`) into a scratch
/// directory, once per test process and compiler.
pub fn build(name: &str, compiler: Compiler) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<BTreeMap<String, PathBuf>>> = OnceLock::new();
    let key = format!("{name}-{compiler:?}");
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    if let Some(p) = built.get(&key) {
        return p.clone();
    }
    let dir = scratch(&format!("openmp-bin-{key}"));
    let out = dir.join(name);
    let src = test_file(&format!("openmp/{name}.c"));
    let mut cmd = match compiler {
        Compiler::Clang => Command::new("clang"),
        Compiler::Gcc => Command::new("gcc"),
        Compiler::Clang19Offload => Command::new("clang-19"),
    };
    cmd.args(["-O2", "-g", "-Wall", "-Wextra", "-Werror", "-fopenmp"]);
    if compiler == Compiler::Clang19Offload {
        let omp = libomp19().expect("libomp 19 unpacked");
        cmd.arg("-fopenmp-targets=x86_64-pc-linux-gnu")
            .arg("-I")
            .arg(omp.join("include"))
            .arg(format!("-L{}", omp.join("lib").display()))
            // libomptarget.devicertl.a
            .arg(format!(
                "-L{}",
                omp.join("root/usr/lib/llvm-19/lib").display()
            ))
            .arg(format!("-Wl,-rpath,{}", omp.join("lib").display()));
    }
    cmd.arg(&src).arg("-o").arg(&out);
    let res = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        res.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&res.stderr)
    );
    built.insert(key, out.clone());
    out
}

/// A command running `exe` in `dir` on `runtime` with 2 threads, no inherited tool,
/// kprof or OpenMP settings, and nothing else set (no tool loaded).
pub fn bare_cmd(exe: &Path, dir: &Path, runtime: Runtime, gcc: bool) -> Command {
    let mut cmd = clean_cmd(exe);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("OMP_")
            || k.starts_with("KMP_")
            || k == "LD_LIBRARY_PATH"
            || k == "LD_PRELOAD"
        {
            cmd.env_remove(k);
        }
    }
    cmd.current_dir(dir)
        .env("OMP_NUM_THREADS", "2")
        .env("OMP_PROC_BIND", "false");
    let mut path = Vec::new();
    if gcc {
        path.push(gomp_shim(runtime));
    }
    if runtime == Runtime::Llvm19 {
        path.push(libomp19().expect("libomp 19 unpacked").join("lib"));
    }
    if !path.is_empty() {
        cmd.env("LD_LIBRARY_PATH", std::env::join_paths(path).unwrap());
    }
    cmd
}

/// [`bare_cmd`] with kprof's OMPT plugin as the OpenMP tool, writing its files
/// (profile and both trace formats) to `dir/out`.
pub fn kprof_cmd(exe: &Path, dir: &Path, runtime: Runtime, gcc: bool) -> Command {
    let mut cmd = bare_cmd(exe, dir, runtime, gcc);
    cmd.env("OMP_TOOL_LIBRARIES", ompt_lib())
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_TRACE", "perfetto,json");
    cmd
}

/// The tree as (path joined by " / ", kind) -> count, summing nodes that share both.
pub fn shape(profile: &Value) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for (path, n) in nodes(profile) {
        let kind = n["kind"].as_str().unwrap_or_default().to_string();
        *out.entry((path.join(" / "), kind)).or_insert(0) += n["count"].as_u64().unwrap_or(0);
    }
    out
}

/// Builds the expected shape from `(path, kind, count)` rows.
pub fn expected(rows: &[(String, &str, u64)]) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for (p, k, n) in rows {
        *out.entry((p.clone(), k.to_string())).or_insert(0) += n;
    }
    out
}

/// Asserts two shapes are equal, listing the differences.
pub fn assert_shape(
    what: &str,
    got: &BTreeMap<(String, String), u64>,
    want: &BTreeMap<(String, String), u64>,
) {
    if got == want {
        return;
    }
    let diff = |a: &BTreeMap<(String, String), u64>, b: &BTreeMap<(String, String), u64>| {
        a.iter()
            .filter(|(k, v)| b.get(*k) != Some(v))
            .map(|((p, k), v)| format!("  {v} x {p} [{k}]"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    panic!(
        "{what}: tree differs\n--- expected, missing or other count:\n{}\n--- found, \
         unexpected or other count:\n{}\n--- whole tree:\n{}",
        diff(want, got),
        diff(got, want),
        got.iter()
            .map(|((p, k), v)| format!("  {v} x {p} [{k}]"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
