//! The `kprof` command (`cli/`): `run` (model detection, stdio, exit status, signals),
//! `report`, `diff`, `merge` (profiles and Perfetto traces), bad inputs, and the
//! installation (`make install`): CMake `find_package(kprof)` + `kprof_add_test`
//! with CTest, pkg-config with C and Fortran.
//!
//! Fixtures: `tests/cli/fixtures/rank{0,1,2}/profile.json` are hand-written profiles
//! of three ranks with known numbers (rank r, k = r + 1): `solve` (region, total
//! k ms, self k*100 us) holding `axpy` (parallel_for OpenMP, 10 instances, k*900
//! us); `io` (user_region) on ranks 0 (1 instance, 500 us) and 2 (2, 1 ms); run
//! durations 4, 5, 6 ms.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kprof_tests::openmp::have;
use kprof_tests::trace_check::read_perfetto;
use kprof_tests::{
    assert_ok, clean_cmd, compile, compile_with_core, lib, lib_dir, make_install, node, nodes,
    read_profile, run, scratch, skip_unless, target_dir, test_file, u, workspace_root,
};
use serde_json::Value;

fn kprof() -> PathBuf {
    lib("kprof")
}

/// `kprof <args>` in `dir` with a clean tool environment.
fn kprof_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(&kprof());
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    cmd
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Lines with runs of spaces collapsed (columns compared by content).
fn squeeze(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// The duration format documented in docs/cli.md.
fn dur(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// The annotated test program (`tests/cli/kernels.c`).
fn kernels_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = scratch("cli_bin");
        compile_with_core(&[&test_file("cli/kernels.c")], &dir.join("kernels"), &[])
    })
}

fn fixture(rank: u32) -> PathBuf {
    test_file(&format!("cli/fixtures/rank{rank}"))
}

/// Asserts exit status 2 and exactly one line on stderr, starting `kprof: ` and
/// containing `what`; returns it.
fn one_line_error(o: &Output, what: &str) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "exit status; stderr:\n{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line expected:\n{err}");
    assert!(lines[0].starts_with("kprof: "), "{err}");
    assert!(lines[0].contains(what), "{what:?} not in {err}");
    assert!(!err.contains("panicked"), "{err}");
    lines[0].to_string()
}

// ---------------------------------------------------------------- run

#[test]
fn run_detects_openmp_from_libomp() {
    if skip_unless(have("clang"), "clang") {
        return;
    }
    let dir = scratch("cli_run_openmp");
    let exe = dir.join("heat");
    let out = run(Command::new("clang")
        .args(["-fopenmp", "-g", "-O2"])
        .arg(workspace_root().join("examples/openmp/heat.c"))
        .arg("-o")
        .arg(&exe));
    assert_ok(&out);
    let o = run(
        kprof_cmd(&dir, &["run", "-v", "-o", "out", "--summary", "0", "--"])
            .arg(&exe)
            .arg("20")
            .env("OMP_NUM_THREADS", "2"),
    );
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains("kprof: detected openmp: links libomp.so.5"),
        "{err}"
    );
    let ompt = lib("libkprof_ompt.so");
    assert!(
        err.contains(&format!("kprof: OMP_TOOL_LIBRARIES={}", ompt.display())),
        "{err}"
    );
    assert!(!err.contains("KOKKOS_TOOLS_LIBS"), "{err}");
    assert!(err.contains("kprof: measuring openmp (detected)"), "{err}");
    assert!(
        err.ends_with("kprof: results in out (read them with: kprof report out)\n"),
        "{err}"
    );
    assert!(
        stdout(&o).starts_with("steps 20 residual "),
        "{}",
        stdout(&o)
    );
    let p = read_profile(&dir.join("out"));
    assert_eq!(p["plugins"], serde_json::json!(["openmp"]));
    let all = nodes(&p);
    let par = all
        .iter()
        .find(|(_, n)| n["kind"] == "omp_parallel")
        .expect("an omp_parallel node");
    assert_eq!(u(&par.1["count"]), 20);
    assert!(par.0[0].starts_with("main (heat.c:"), "{:?}", par.0);
}

#[test]
fn run_detects_static_kokkos() {
    let deps = match std::env::var_os("KPROF_DEPS_DIR") {
        Some(d) if !d.is_empty() => workspace_root().join(d),
        _ => target_dir().join("deps"),
    };
    let exe = deps.join("kokkos-example").join("kokkos_example");
    if skip_unless(
        exe.is_file(),
        "real Kokkos (run tests/scripts/build-kokkos.sh)",
    ) {
        return;
    }
    let dir = scratch("cli_run_kokkos");
    let o = run(kprof_cmd(
        &dir,
        &["run", "-v", "--summary", "0", "--output", "k", "--"],
    )
    .arg(&exe)
    .env("OMP_NUM_THREADS", "2")
    .env("OMP_PROC_BIND", "false"));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains("kprof: detected kokkos: built into the program (Kokkos symbols)"),
        "{err}"
    );
    // Kokkos 3.4 reads KOKKOS_PROFILE_LIBRARY only.
    let l = lib("libkprof.so").display().to_string();
    assert!(
        err.contains(&format!("kprof: KOKKOS_PROFILE_LIBRARY={l}\n")),
        "{err}"
    );
    assert!(!err.contains("KOKKOS_TOOLS_LIBS"), "{err}");
    // Its OpenMP back end runs on GCC's libgomp: said, and OpenMP not claimed.
    assert!(
        err.contains(
            "kprof: kokkos_example runs on GCC's libgomp, which has no OpenMP tool interface"
        ),
        "{err}"
    );
    assert!(
        err.contains("kprof: measuring kokkos (detected)\n"),
        "{err}"
    );
    let p = read_profile(&dir.join("k"));
    assert!(
        p["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x == "kokkos"),
        "{}",
        p["plugins"]
    );
    assert_eq!(p["program"]["executable"], "kokkos_example");
    assert!(nodes(&p).iter().any(|(_, n)| n["name"] == "axpy"));
}

#[test]
fn run_detects_hip_and_adds_the_rocm_tool() {
    let dir = scratch("cli_run_hip");
    let l = lib("libkprof_rocm.so").display().to_string();
    // A program that needs the HIP runtime (a stand-in libamdhip64.so) and prints
    // the tool list rocprofiler-sdk would read.
    let stub = dir.join("hip_stub.c");
    std::fs::write(
        &stub,
        "int hipRuntimeGetVersion(int *v) { *v = 60400; return 0; }\n",
    )
    .unwrap();
    let so = dir.join("libamdhip64.so.6");
    compile(
        &[&stub],
        &so,
        &["-shared", "-fPIC", "-Wl,-soname,libamdhip64.so.6"],
    );
    let app = dir.join("hip_app.c");
    std::fs::write(
        &app,
        "#include <stdio.h>\n#include <stdlib.h>\nint hipRuntimeGetVersion(int *v);\n\
         int main(void) { int v = 0; hipRuntimeGetVersion(&v); const char *t = \
         getenv(\"ROCP_TOOL_LIBRARIES\"); printf(\"runtime %d\\nROCP_TOOL_LIBRARIES=%s\\n\", v, \
         t ? t : \"(unset)\"); return 0; }\n",
    )
    .unwrap();
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let exe = compile(&[&app, &so], &dir.join("hip_app"), &[&rpath]);
    let o = run(kprof_cmd(&dir, &["run", "-v", "--summary", "0", "--"])
        .arg(&exe)
        .env_remove("ROCP_TOOL_LIBRARIES"));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains("kprof: detected hip: links libamdhip64.so.6\n"),
        "{err}"
    );
    assert!(err.contains("kprof: measuring hip (detected)\n"), "{err}");
    assert_eq!(
        stdout(&o),
        format!("runtime 60400\nROCP_TOOL_LIBRARIES={l}\n")
    );
    // A list already set keeps its tools, after kprof's.
    let o = run(kprof_cmd(&dir, &["run", "--summary", "0", "--"])
        .arg(&exe)
        .env("ROCP_TOOL_LIBRARIES", "/opt/tools/libother.so"));
    assert_ok(&o);
    assert_eq!(
        stdout(&o),
        format!("runtime 60400\nROCP_TOOL_LIBRARIES={l}:/opt/tools/libother.so\n")
    );
}

#[test]
fn run_detects_cuda_and_sets_the_injection_library() {
    let dir = scratch("cli_run_cuda");
    let l = lib("libkprof_cuda.so").display().to_string();
    let cmd = |args: &[&str]| {
        let mut c = kprof_cmd(&dir, args);
        c.env_remove("CUDA_INJECTION64_PATH");
        c
    };
    // nvcc's default: the runtime built in, which names libcuda.so.1.
    let exe = compile(
        &[&test_file("cli/fake_cuda.c")],
        &dir.join("static_cuda"),
        &["-ldl"],
    );
    let o = run(cmd(&["run", "-v", "--summary", "0", "--"]).arg(&exe));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains("kprof: detected cuda: the CUDA runtime is built into the program\n"),
        "{err}"
    );
    assert!(
        err.contains(&format!("kprof: CUDA_INJECTION64_PATH={l}\n")),
        "{err}"
    );
    assert!(err.contains("kprof: measuring cuda (detected)\n"), "{err}");
    assert!(
        stdout(&o).ends_with(&format!("CUDA_INJECTION64_PATH={l}\n")),
        "{}",
        stdout(&o)
    );

    // A shared libcudart (nvcc -cudart shared): found in DT_NEEDED.
    let stub = dir.join("cudart_stub.c");
    std::fs::write(
        &stub,
        "int cudaRuntimeGetVersion(int *v) { *v = 12090; return 0; }\n",
    )
    .unwrap();
    let so = dir.join("libcudart.so.12");
    compile(
        &[&stub],
        &so,
        &["-shared", "-fPIC", "-Wl,-soname,libcudart.so.12"],
    );
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let shared = compile(
        &[&test_file("cli/fake_cuda.c"), &so],
        &dir.join("shared_cuda"),
        &["-DSHARED_CUDART", &rpath],
    );
    let o = run(cmd(&["run", "-v", "--summary", "0", "--"]).arg(&shared));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains("kprof: detected cuda: links libcudart.so.12\n"),
        "{err}"
    );
    assert_eq!(
        stdout(&o),
        format!("runtime 12090\nCUDA_INJECTION64_PATH={l}\n")
    );

    // Another CUDA tool the user set stays (the driver loads one), with a line.
    let o = run(cmd(&["run", "--summary", "0", "--"])
        .arg(&exe)
        .env("CUDA_INJECTION64_PATH", "/opt/tools/libnsys.so"));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains(
            "kprof: CUDA_INJECTION64_PATH is already set (/opt/tools/libnsys.so): GPU activity is not measured\n"
        ),
        "{err}"
    );
    assert!(
        stdout(&o).ends_with("CUDA_INJECTION64_PATH=/opt/tools/libnsys.so\n"),
        "{}",
        stdout(&o)
    );

    // --cuda forces it for a program where nothing is found.
    let o = run(&mut cmd(&[
        "run",
        "-v",
        "--cuda",
        "--summary",
        "0",
        "--",
        "true",
    ]));
    assert_ok(&o);
    assert!(
        stderr(&o).contains(&format!("kprof: CUDA_INJECTION64_PATH={l}\n")),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_sets_the_variable_the_programs_kokkos_reads_and_keeps_the_users_tool() {
    let dir = scratch("cli_run_kokkos_vars");
    let exe = compile(
        &[&test_file("cli/fake_kokkos.c")],
        &dir.join("fake_kokkos"),
        &[],
    );
    let l = lib("libkprof.so").display().to_string();
    // Kokkos >= 3.5 (KOKKOS_TOOLS_LIBS in its data): that variable alone, with a tool
    // the user had set in either variable chained after kprof.
    for user in ["KOKKOS_TOOLS_LIBS", "KOKKOS_PROFILE_LIBRARY"] {
        let o = run(kprof_cmd(&dir, &["run", "-q", "--summary", "0", "--"])
            .arg(&exe)
            .env(user, "/opt/tools/libother.so"));
        assert_ok(&o);
        assert_eq!(
            stdout(&o),
            format!(
                "KOKKOS_TOOLS_LIBS={l};/opt/tools/libother.so\nKOKKOS_PROFILE_LIBRARY=(unset)\n"
            ),
            "user's tool in {user}"
        );
    }
    // A program without Kokkos and --kokkos: both, as Kokkos 3.4 reads the other.
    let o = run(kprof_cmd(
        &dir,
        &["run", "-v", "--kokkos", "--summary", "0", "--", "true"],
    )
    .env("KOKKOS_TOOLS_LIBS", format!("{l};/opt/b.so")));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("kprof: KOKKOS_TOOLS_LIBS={l};/opt/b.so\n")),
        "{err}"
    );
    assert!(
        err.contains(&format!("kprof: KOKKOS_PROFILE_LIBRARY={l};/opt/b.so\n")),
        "{err}"
    );
    // The default directory carries the program's pid, as its summary does, and the
    // location is said once, by kprof run, at the end.
    let o = run(kprof_cmd(&dir, &["run", "--"]).arg(kernels_bin()).arg("1"));
    assert_ok(&o);
    let err = stderr(&o);
    let pid = err
        .split("(pid ")
        .nth(1)
        .and_then(|t| t.split(')').next())
        .unwrap_or_else(|| panic!("no pid in the summary:\n{err}"));
    let want = format!("kprof-kernels-{pid}");
    assert!(
        err.ends_with(&format!(
            "kprof: results in {want} (read them with: kprof report {want})\n"
        )),
        "{err}"
    );
    assert_eq!(err.matches(&want).count(), 2, "{err}");
    assert!(!err.contains("files in"), "{err}");
    assert!(dir.join(&want).join("profile.json").is_file());
}

#[test]
fn run_keeps_stdio_exit_status_and_options() {
    let dir = scratch("cli_run_stdio");
    let mut cmd = kprof_cmd(
        &dir,
        &[
            "run",
            "--output",
            "o",
            "--summary",
            "0",
            "--flush-ms",
            "50",
            "--",
        ],
    );
    cmd.arg(kernels_bin())
        .args(["3", "7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn kprof");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"hello\nworld\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert_eq!(stdout(&o), "in: hello\nin: world\nkernels 3\n");
    let err = stderr(&o);
    // --summary 0 reached the runtime: only kprof run's own lines.
    assert_eq!(
        err,
        "kprof: measuring annotations (detected)\n\
         kprof: results in o (read them with: kprof report o)\n"
    );
    let p = read_profile(&dir.join("o"));
    let all = nodes(&p);
    assert_eq!(u(&node(&all, &["main loop", "kernel"])["count"]), 3);

    // The same directory again: refused (the program does not run), never
    // silently elsewhere; --force replaces it, saying so.
    let o = run(
        kprof_cmd(&dir, &["run", "-q", "-o", "o", "--summary", "0", "--"])
            .arg(kernels_bin())
            .arg("2"),
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "kprof: o exists already: give --force to replace it, or another -o\n"
    );
    assert!(o.stdout.is_empty());
    assert!(!dir.join("o.1").exists());
    let o = run(kprof_cmd(
        &dir,
        &["run", "-q", "--force", "-o", "o", "--summary", "0", "--"],
    )
    .arg(kernels_bin())
    .arg("2"));
    assert_ok(&o);
    let p = read_profile(&dir.join("o"));
    assert_eq!(u(&node(&nodes(&p), &["main loop", "kernel"])["count"]), 2);

    // Death by a signal: 128 + signal, like a shell.
    let o = run(&mut kprof_cmd(
        &dir,
        &["run", "--", "sh", "-c", "kill -KILL $$"],
    ));
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("kprof: sh was killed by signal 9"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_forwards_signals() {
    let dir = scratch("cli_run_signal");
    let exe = compile(&[&test_file("cli/sleeper.c")], &dir.join("sleeper"), &[]);
    for (sig, name) in [
        (libc::SIGTERM, "TERM"),
        (libc::SIGHUP, "HUP"),
        (libc::SIGINT, "INT"),
    ] {
        let mut child = kprof_cmd(&dir, &["run", "-q", "--"])
            .arg(&exe)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, "ready\n");
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(child.id() as i32, sig);
        }
        line.clear();
        out.read_line(&mut line).unwrap();
        assert_eq!(line, format!("got {sig}\n"), "SIG{name}");
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(40 + sig), "SIG{name}");
    }
}

#[test]
fn run_rejects_bad_options() {
    let dir = scratch("cli_run_bad");
    let o = run(&mut kprof_cmd(
        &dir,
        &["run", "--buffer-mb", "0", "--", "true"],
    ));
    let line = one_line_error(&o, "buffer-mb=0 is invalid");
    assert!(line.contains("1 to 65536"), "{line}");
    let o = run(&mut kprof_cmd(
        &dir,
        &["run", "--trace", "perfetto,pdf", "--", "true"],
    ));
    assert_eq!(
        one_line_error(&o, "perfetto, json, otf2"),
        "kprof: --trace=perfetto,pdf is invalid (a comma list of perfetto, json, otf2)"
    );
    let o = run(&mut kprof_cmd(
        &dir,
        &["run", "--", "no-such-program-kprof"],
    ));
    assert_eq!(
        one_line_error(&o, "command not found"),
        "kprof: no-such-program-kprof: command not found"
    );
    // A directory, a file without the execute bit: one line each, as a shell says.
    std::fs::create_dir_all(dir.join("adir")).unwrap();
    let o = run(&mut kprof_cmd(&dir, &["run", "--", "./adir"]));
    assert_eq!(
        one_line_error(&o, "directory"),
        "kprof: ./adir: is a directory, not a program"
    );
    std::fs::write(dir.join("data.txt"), "x").unwrap();
    let o = run(&mut kprof_cmd(&dir, &["run", "--", "./data.txt"]));
    assert_eq!(
        one_line_error(&o, "permission"),
        "kprof: ./data.txt: permission denied (not executable)"
    );
}

// ---------------------------------------------------------------- report

#[test]
fn report_tables_match_the_profile() {
    let dir = scratch("cli_report");
    let o = run(kprof_cmd(&dir, &["report"]).arg(fixture(0)));
    assert_ok(&o);
    let text = stdout(&o);
    let lines = squeeze(&text);
    let expect = [
        format!("kprof report: {}/profile.json", fixture(0).display()),
        "program: app (pid 1000, host node0, rank 0)".into(),
        "run: 4.00 ms (clock tsc), 1 thread, plugins: kokkos".into(),
        "".into(),
        "Kernels and regions by self time (top 3 of 3; % of 1 thread x 4.00 ms)".into(),
        "self % total count mean min max kind device name".into(),
        "900.00 us 22.5% ##### 900.00 us 10 90.00 us 80.00 us 100.00 us parallel_for OpenMP axpy"
            .into(),
        "500.00 us 12.5% ### 500.00 us 1 500.00 us 500.00 us 500.00 us user_region io".into(),
        "100.00 us 2.5% # 1.00 ms 1 1.00 ms 1.00 ms 1.00 ms region solve".into(),
        "".into(),
        "Deep copies by time (top 1 of 1)".into(),
        "time count bytes rate destination <- source".into(),
        "1.00 ms 2 2.00 MiB 1.95 GiB/s Host:a <- Cuda:b".into(),
        "".into(),
        "Memory per space".into(),
        "high water at in use at end allocs frees leaks space".into(),
        "3.00 MiB 1.50 ms 1.00 KiB 3 2 1 (1.00 KiB) Host".into(),
        "largest in Host: x 2.00 MiB".into(),
        "".into(),
        "Events".into(),
        "count name".into(),
        "2 checkpoint".into(),
        "".into(),
        "Metadata".into(),
        "key value".into(),
        "Kokkos Version 4.6.1".into(),
        "".into(),
        "kprof itself: 1000 records (15.62 KiB) in 2.00 MiB of buffers (1 huge-page and 0 \
         small-page blocks, 100.00 us to fault in), writer thread 2.00 ms CPU"
            .into(),
    ];
    assert_eq!(lines, expect, "\n{text}");
    // Aligned columns: every name starts where the header's "name" does.
    let raw: Vec<&str> = text.lines().collect();
    let col = raw[5].find("name").unwrap();
    assert_eq!(raw[6].rfind("axpy"), Some(col), "\n{text}");
    assert_eq!(raw[7].rfind("io"), Some(col), "\n{text}");
    assert_eq!(raw[8].rfind("solve"), Some(col), "\n{text}");

    // Sorting, top, filter, tree.
    let o = run(kprof_cmd(&dir, &["report", "--sort", "total", "--top", "1"]).arg(fixture(0)));
    assert_ok(&o);
    let l = squeeze(&stdout(&o));
    assert_eq!(
        l[4],
        "Kernels and regions by total time (top 1 of 3; % of 1 thread x 4.00 ms)"
    );
    assert!(l[6].ends_with("region solve"), "{}", l[6]);
    assert_eq!(l[7], "");
    let o = run(kprof_cmd(&dir, &["report", "--tree", "--filter", "^ax"]).arg(fixture(0)));
    assert_ok(&o);
    let text = stdout(&o);
    let l = squeeze(&text);
    assert_eq!(
        &l[4..],
        [
            "Call-path tree (siblings by total time; % of 1 thread x 4.00 ms)",
            "total % self count mean kind device name",
            "1.00 ms 25.0% ##### 100.00 us 1 1.00 ms region solve",
            "900.00 us 22.5% ##### 900.00 us 10 90.00 us parallel_for OpenMP axpy",
        ],
        "\n{text}"
    );
    let raw: Vec<&str> = text.lines().collect();
    assert_eq!(
        raw[7].find("axpy"),
        raw[6].find("solve").map(|c| c + 2),
        "children indented by two:\n{text}"
    );

    // CSV and JSON carry raw nanoseconds.
    let o = run(kprof_cmd(&dir, &["report", "--csv"]).arg(fixture(0)));
    assert_ok(&o);
    assert_eq!(
        stdout(&o),
        "name,kind,device,count,total_ns,self_ns,mean_ns,min_ns,max_ns,self_pct\n\
         axpy,parallel_for,OpenMP,10,900000,900000,90000.0,80000,100000,22.50\n\
         io,user_region,,1,500000,500000,500000.0,500000,500000,12.50\n\
         solve,region,,1,1000000,100000,1000000.0,1000000,1000000,2.50\n"
    );
    let o = run(kprof_cmd(&dir, &["report", "--tree", "--json"]).arg(fixture(0)));
    assert_ok(&o);
    let rows: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let paths: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    assert_eq!(paths, ["solve", "solve/axpy", "io"]);
    assert_eq!(rows[1]["total_ns"], 900000);

    let o = run(kprof_cmd(&dir, &["report", "--filter", "("]).arg(fixture(0)));
    one_line_error(&o, "--filter: invalid regular expression");
}

#[test]
fn report_of_a_real_run() {
    let dir = scratch("cli_report_real");
    let o = run(
        kprof_cmd(&dir, &["run", "-q", "-o", "r", "--summary", "0", "--"])
            .arg(kernels_bin())
            .arg("4"),
    );
    assert_ok(&o);
    let p = read_profile(&dir.join("r"));
    let all = nodes(&p);
    let k = node(&all, &["main loop", "kernel"]);
    let o = run(&mut kprof_cmd(&dir, &["report", "r"]));
    assert_ok(&o);
    let text = stdout(&o);
    let row = squeeze(&text)
        .into_iter()
        .find(|l| l.ends_with("user_region kernel"))
        .unwrap_or_else(|| panic!("no kernel row:\n{text}"));
    let run_ns = u(&p["clock"]["duration_ns"]) as f64;
    let self_ns = u(&k["self_ns"]) as f64;
    let expect_start = format!("{} {:.1}%", dur(self_ns), 100.0 * self_ns / run_ns);
    assert!(
        row.starts_with(&expect_start),
        "{row:?} vs {expect_start:?}"
    );
    let tail = format!(
        "{} 4 {} {} {} user_region kernel",
        dur(u(&k["total_ns"]) as f64),
        dur(u(&k["total_ns"]) as f64 / 4.0),
        dur(u(&k["min_ns"]) as f64),
        dur(u(&k["max_ns"]) as f64)
    );
    assert!(row.ends_with(&tail), "{row:?} vs {tail:?}");
    assert!(
        text.contains(&format!(
            "run: {}, measured the last {} (clock ",
            dur(u(&p["clock"]["process_run_ns"]) as f64),
            dur(run_ns)
        )),
        "{text}"
    );
}

/// The summary's row of `name` (the first table), columns squeezed.
fn summary_row(summary: &str, name: &str) -> String {
    squeeze(summary)
        .into_iter()
        .find(|l| l.ends_with(&format!(" {name}")) && l.contains('%'))
        .unwrap_or_else(|| panic!("no {name} row in the summary:\n{summary}"))
}

#[test]
fn summary_and_report_agree_on_recursive_regions() {
    let dir = scratch("cli_recursive");
    let bin = compile_with_core(
        &[&test_file("cli/recursive.c")],
        &dir.join("recursive"),
        &[],
    );
    let o = run(kprof_cmd(&dir, &["run", "-q", "-o", "r", "--"]).arg(&bin));
    assert_ok(&o);
    let p = read_profile(&dir.join("r"));
    // fib(6) opens 25 fib instances, nested up to 6 deep.
    let mut count = 0;
    let mut outer_total = 0;
    let mut min = u64::MAX;
    let mut max = 0;
    let mut instance_sum = 0;
    for (path, n) in nodes(&p) {
        if path.last().map(String::as_str) == Some("fib") {
            count += u(&n["count"]);
            instance_sum += u(&n["total_ns"]);
            min = min.min(u(&n["min_ns"]));
            max = max.max(u(&n["max_ns"]));
            if path.len() == 2 {
                outer_total = u(&n["total_ns"]);
            }
        }
    }
    assert_eq!(count, 25);
    let mean = instance_sum as f64 / count as f64;
    assert!(
        min as f64 <= mean && mean <= max as f64,
        "{min} {mean} {max}"
    );
    // Both show: total = the outermost instance (time inside fib, counted once),
    // mean over all 25 instances, min and max over all.
    let (total, mean, min, max) = (
        dur(outer_total as f64),
        dur(mean),
        dur(min as f64),
        dur(max as f64),
    );
    let expect = format!("25 {total} {mean} {min} {max} user_region");
    let summary = summary_row(&stderr(&o), "fib");
    assert!(summary.contains(&expect), "{summary:?} lacks {expect:?}");
    let expect = format!("{total} 25 {mean} {min} {max} user_region");
    let o = run(&mut kprof_cmd(&dir, &["report", "r"]));
    assert_ok(&o);
    let report = squeeze(&stdout(&o))
        .into_iter()
        .find(|l| l.ends_with("user_region fib"))
        .unwrap_or_else(|| panic!("no fib row:\n{}", stdout(&o)));
    assert!(report.contains(&expect), "{report:?} lacks {expect:?}");
    // No share above 100% of the thread's time.
    assert!(outer_total <= u(&p["clock"]["duration_ns"]));
}

#[test]
fn deep_profiles_are_read_and_the_depth_cap_is_counted() {
    let dir = scratch("cli_deep");
    let bin = compile_with_core(&[&test_file("cli/deep.c")], &dir.join("deep"), &[]);
    // 250 deep (under the default cap of 256): every command reads it.
    let o = run(
        kprof_cmd(&dir, &["run", "-q", "--summary", "0", "-o", "d", "--"])
            .arg(&bin)
            .args(["250", "3"]),
    );
    assert_ok(&o);
    let p = read_profile(&dir.join("d"));
    let all = nodes(&p);
    assert_eq!(all.iter().map(|(path, _)| path.len()).max(), Some(250));
    let o = run(&mut kprof_cmd(&dir, &["report", "d", "--tree"]));
    assert_ok(&o);
    let text = stdout(&o);
    // Indented 32 levels at most, deeper ones with their depth written out.
    assert!(
        text.contains(&format!("{}d31\n", "  ".repeat(31))),
        "{text}"
    );
    assert!(
        text.contains(&format!("{}[depth 249] d249\n", "  ".repeat(32))),
        "{text}"
    );
    let o = run(&mut kprof_cmd(&dir, &["diff", "d", "d"]));
    assert_ok(&o);
    // A second rank of the same tree (one directory may not be given twice).
    let copy = run(Command::new("cp").current_dir(&dir).args(["-r", "d", "d2"]));
    assert_ok(&copy);
    let o = run(&mut kprof_cmd(&dir, &["merge", "d", "d2", "-o", "m"]));
    assert_ok(&o);
    let o = run(&mut kprof_cmd(&dir, &["report", "m", "--tree"]));
    assert_ok(&o);
    assert!(stdout(&o).contains("d249"), "{}", stdout(&o));

    // 300 deep with a cap of 100: 200 instances per repetition are beyond it,
    // counted; the node at the cap holds one instance per repetition and no more
    // time than the run.
    let o = run(
        kprof_cmd(&dir, &["run", "-q", "--summary", "0", "-o", "c", "--"])
            .arg(&bin)
            .args(["300", "5"])
            .env("KPROF_MAX_DEPTH", "100"),
    );
    assert_ok(&o);
    let p = read_profile(&dir.join("c"));
    assert_eq!(
        u(&p["anomalies"]["beyond_max_depth"]),
        1000,
        "{}",
        p["anomalies"]
    );
    let all = nodes(&p);
    assert_eq!(all.iter().map(|(path, _)| path.len()).max(), Some(100));
    let (_, capped) = all.iter().find(|(path, _)| path.len() == 100).unwrap();
    assert_eq!(capped["name"], "d99");
    assert_eq!(u(&capped["count"]), 5);
    assert!(u(&capped["total_ns"]) <= u(&p["clock"]["duration_ns"]));
    assert_eq!(u(&capped["self_ns"]), u(&capped["total_ns"]));
}

#[test]
fn a_file_that_cannot_be_completed_is_not_left_behind() {
    let dir = scratch("cli_full_disk");
    let bin = compile_with_core(&[&test_file("cli/deep.c")], &dir.join("deep"), &[]);
    // A file size limit stands for a full disk: writes fail with EFBIG (SIGXFSZ
    // ignored), after the first few KiB of a 250-deep profile.
    let o = run(Command::new("sh")
        .current_dir(&dir)
        .env("KPROF_OUTPUT_DIR", "out")
        .args(["-c", "ulimit -f 20; trap '' XFSZ; exec \"$0\" 250 1"])
        .arg(&bin));
    assert_ok(&o);
    let err = stderr(&o);
    for file in ["profile.json", "profile.csv"] {
        assert!(
            err.contains(&format!(
                "kprof: out/{file} was not written (File too large (os error 27)); no partial \
                 file was left\n"
            )),
            "{err}"
        );
    }
    assert!(
        err.ends_with("kprof: files in out, without profile.json (see above)\n"),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn odd_names_keep_tables_readable_and_are_counted() {
    let dir = scratch("cli_odd_names");
    let bin = compile_with_core(&[&test_file("cli/odd_names.c")], &dir.join("odd"), &[]);
    let o = run(kprof_cmd(&dir, &["run", "-q", "-o", "r", "--"]).arg(&bin));
    assert_ok(&o);
    let summary = stderr(&o);
    // The newline is shown escaped, in its row; the long name cut at 60.
    assert!(
        summary
            .lines()
            .any(|l| l.ends_with(" two\\nlines\\tand a tab")),
        "{summary}"
    );
    let long_row = format!(" {}...", "x".repeat(57));
    assert!(summary.lines().any(|l| l.ends_with(&long_row)), "{summary}");
    let p = read_profile(&dir.join("r"));
    // NULL key and NULL value: two null names; one invalid UTF-8 key.
    assert_eq!(u(&p["anomalies"]["null_names"]), 2, "{}", p["anomalies"]);
    assert_eq!(
        u(&p["anomalies"]["invalid_utf8_names"]),
        1,
        "{}",
        p["anomalies"]
    );
    assert_eq!(p["metadata"]["<null>"], "value of a NULL key");
    assert_eq!(p["metadata"]["key of a NULL value"], "<null>");
    // kprof report: the same cell rules, whole names with --wide.
    let o = run(&mut kprof_cmd(&dir, &["report", "r"]));
    assert_ok(&o);
    let text = stdout(&o);
    assert!(
        text.lines().all(|l| l.len() < 400),
        "a raw long name:\n{text}"
    );
    assert!(text.contains("two\\nlines\\tand a tab\n"), "{text}");
    assert!(text.contains(&long_row), "{text}");
    let o = run(&mut kprof_cmd(&dir, &["report", "r", "--wide"]));
    assert_ok(&o);
    assert!(stdout(&o).contains(&"x".repeat(100_000)));
}

#[test]
fn bad_inputs_are_one_line_and_exit_2() {
    let dir = scratch("cli_bad_inputs");
    let o = run(&mut kprof_cmd(&dir, &["report", "missing"]));
    assert_eq!(
        one_line_error(&o, "missing"),
        "kprof: missing: no such directory"
    );

    std::fs::create_dir(dir.join("empty")).unwrap();
    let o = run(&mut kprof_cmd(&dir, &["report", "empty"]));
    one_line_error(&o, "empty: no profile.json in this directory");

    let full = std::fs::read_to_string(fixture(0).join("profile.json")).unwrap();
    std::fs::create_dir(dir.join("cut")).unwrap();
    std::fs::write(dir.join("cut/profile.json"), &full[..full.len() / 2]).unwrap();
    let o = run(&mut kprof_cmd(&dir, &["report", "cut"]));
    one_line_error(&o, "cut/profile.json is truncated (EOF while parsing");

    std::fs::create_dir(dir.join("garbage")).unwrap();
    std::fs::write(dir.join("garbage/profile.json"), "{\"schema\": nope}").unwrap();
    let o = run(&mut kprof_cmd(&dir, &["report", "garbage"]));
    one_line_error(&o, "garbage/profile.json is not valid JSON (");

    std::fs::create_dir(dir.join("other")).unwrap();
    std::fs::write(
        dir.join("other/profile.json"),
        full.replace("kprof-profile/1", "kprof-profile/9"),
    )
    .unwrap();
    for cmd in [
        vec!["report", "other"],
        vec!["diff", "other", "other"],
        vec!["merge", "other", "-o", "m"],
    ] {
        let o = run(&mut kprof_cmd(&dir, &cmd));
        one_line_error(
            &o,
            "other/profile.json: schema \"kprof-profile/9\" is not supported (this kprof 0.1.0 reads kprof-profile/1, kprof-merged/1)",
        );
    }
    assert!(!dir.join("m").exists());

    std::fs::create_dir(dir.join("noschema")).unwrap();
    std::fs::write(dir.join("noschema/profile.json"), "[1, 2]").unwrap();
    let o = run(&mut kprof_cmd(&dir, &["report", "noschema"]));
    one_line_error(&o, "not a kprof profile (no \"schema\" field)");

    std::fs::create_dir(dir.join("shape")).unwrap();
    std::fs::write(
        dir.join("shape/profile.json"),
        "{\"schema\": \"kprof-profile/1\", \"tree\": 3}",
    )
    .unwrap();
    let o = run(&mut kprof_cmd(&dir, &["report", "shape"]));
    one_line_error(&o, "does not match schema kprof-profile/1");
}

// ---------------------------------------------------------------- diff

#[test]
fn diff_finds_a_real_change_and_no_change_in_identical_profiles() {
    let dir = scratch("cli_diff");
    for (out, n) in [("a", "3"), ("b", "30")] {
        let o = run(
            kprof_cmd(&dir, &["run", "-q", "-o", out, "--summary", "0", "--"])
                .arg(kernels_bin())
                .arg(n),
        );
        assert_ok(&o);
    }
    // Ten times the work: a loaded machine slows one run by less than that.
    let pa = read_profile(&dir.join("a"));
    let pb = read_profile(&dir.join("b"));
    let ka = u(&node(&nodes(&pa), &["main loop", "kernel"])["total_ns"]);
    let kb = u(&node(&nodes(&pb), &["main loop", "kernel"])["total_ns"]);

    let o = run(&mut kprof_cmd(
        &dir,
        &["diff", "a", "b", "--fail-above", "50"],
    ));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    let l = squeeze(&text);
    assert_eq!(l[0], "kprof diff: A = a/profile.json");
    assert_eq!(l[1], "B = b/profile.json");
    let rows: Vec<&String> = l
        .iter()
        .filter(|x| x.contains(" -> ") && x.contains("main loop"))
        .collect();
    // The region and its kernels changed by about as much (the kernels are all of it).
    assert_eq!(rows.len(), 2, "{text}");
    let region = rows
        .iter()
        .find(|r| r.ends_with(" main loop"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(region.contains(" 1 -> 1 "), "{text}");
    assert!(!text.contains("different programs"), "{text}");
    // The change of the time per call, the times per run, the calls, the time per
    // call of each side, then a status (one run per side: judged by the floors).
    let (ma, mb) = (ka as f64 / 3.0, kb as f64 / 30.0);
    let kernel_row = format!(
        "{:+.1}% {} {} 3 -> 30 {} {} ",
        100.0 * (mb - ma) / ma,
        dur(ka as f64),
        dur(kb as f64),
        dur(ma),
        dur(mb),
    );
    let kernel = rows
        .iter()
        .find(|r| r.ends_with("main loop / kernel"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(kernel.contains(&kernel_row), "{kernel:?} vs {kernel_row:?}");
    assert!(
        text.contains("slower by more than 50% beyond the noise (largest: main loop +"),
        "{text}"
    );

    // The same profile: nothing above the threshold, exit 0.
    let o = run(&mut kprof_cmd(
        &dir,
        &["diff", "a", "a", "--fail-above", "1"],
    ));
    assert_ok(&o);
    let text = stdout(&o);
    assert!(text.contains("(0 beyond the noise; 2 noise)"), "{text}");
    assert!(text.contains("  (no change beyond the noise)\n"), "{text}");
    assert!(
        text.ends_with("\nOK: no call path slower by more than 1% beyond the noise\n"),
        "{text}"
    );

    // Two runs with the same kernel count: counts unchanged, so only time can
    // differ; with a generous threshold nothing is reported.
    let o = run(
        kprof_cmd(&dir, &["run", "-q", "-o", "a2", "--summary", "0", "--"])
            .arg(kernels_bin())
            .arg("3"),
    );
    assert_ok(&o);
    let o = run(&mut kprof_cmd(
        &dir,
        &[
            "diff",
            "a",
            "a2",
            "--threshold",
            "1000",
            "--fail-above",
            "1000",
        ],
    ));
    assert_ok(&o);
    assert!(
        stdout(&o).contains("(0 beyond the noise; 2 noise)"),
        "{}",
        stdout(&o)
    );
    assert!(
        squeeze(&stdout(&o))
            .join(" ")
            .contains("moved by more than 1000% (--threshold)"),
        "{}",
        stdout(&o)
    );

    // Fixtures: a node only in B is "new", counts shown as "-".
    let o = run(kprof_cmd(&dir, &["diff"]).arg(fixture(1)).arg(fixture(0)));
    assert_ok(&o);
    let l = squeeze(&stdout(&o));
    assert!(
        l.contains(&"+500.00 us - - 500.00 us - -> 1 - 500.00 us new io".to_string()),
        "{}",
        stdout(&o)
    );

    // Runs of different programs: said once, on stderr and in the text.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let mut p: Value = read_profile(&fixture(1));
    p["program"]["executable"] = "solver2".into();
    std::fs::write(other.join("profile.json"), p.to_string()).unwrap();
    let o = run(kprof_cmd(&dir, &["diff"]).arg(fixture(0)).arg(&other));
    assert_ok(&o);
    let warning = "warning: A is a run of app, B of solver2: different programs";
    assert!(stdout(&o).contains(warning), "{}", stdout(&o));
    assert!(stderr(&o).contains(warning), "{}", stderr(&o));
}

#[test]
fn report_tree_says_what_top_hides_and_shows_threads() {
    let dir = scratch("cli_report_more");
    // Rank 2 has two roots (solve, io): --top 1 shows one and says what is hidden.
    let o = run(kprof_cmd(&dir, &["report", "--tree", "--top", "1"]).arg(fixture(2)));
    assert_ok(&o);
    let l = squeeze(&stdout(&o));
    assert!(
        l.contains(&"1.00 ms 16.7% ... 1 more node (--top)".to_string()),
        "{}",
        stdout(&o)
    );
    let o = run(kprof_cmd(&dir, &["report", "--threads"]).arg(fixture(0)));
    assert_ok(&o);
    let text = stdout(&o);
    let l = squeeze(&text);
    let at = l
        .iter()
        .position(|x| x == "Threads")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(l[at + 1], "index tid records name", "{text}");
    assert!(text.contains("No node carries per-thread totals"), "{text}");
}

/// A made-up call-path tree of `roots` roots, deterministic: names drawn from a
/// small pool (repeats across paths, and recursion: a name inside itself), three
/// kinds, two devices, tied totals, and teams on some nodes. Written as kprof
/// writes a tree: each node's `children` last.
fn generated_tree(roots: usize) -> String {
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = move |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    fn node(depth: usize, next: &mut dyn FnMut(u64) -> u64, out: &mut String) {
        let name = format!("k{}", next(300));
        let (kind, device) = match next(4) {
            0 => ("parallel_for", r#""OpenMP","device_index":0,"instance":1"#),
            1 => ("parallel_for", r#""Cuda","device_index":1,"instance":2"#),
            2 => ("user_region", r#"null,"device_index":null,"instance":null"#),
            _ => ("region", r#"null,"device_index":null,"instance":null"#),
        };
        // Every tenth total the same: ties are ordered by name, then tree order.
        let total = if next(10) == 0 {
            5000
        } else {
            1000 + next(1_000_000)
        };
        let self_ns = total - next(total / 2 + 1);
        let count = 1 + next(5);
        let min = total / count / 2;
        let team = if next(6) == 0 {
            let (lo, hi) = (next(total / 2 + 1), total / 2 + next(total / 2 + 1));
            let mean = (lo + hi) as f64 / 2.0;
            format!(
                r#","threads":{{"threads":4,"min_ns":{lo},"max_ns":{hi},"mean_ns":{mean:.1},"imbalance":{:.4}}}"#,
                hi as f64 / mean.max(1.0)
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            r#"{{"name":"{name}","kind":"{kind}","device":{device},"count":{count},"total_ns":{total},"self_ns":{self_ns},"min_ns":{min},"max_ns":{total},"mean_ns":{:.1},"stddev_ns":0.0{team},"children":["#,
            total as f64 / count as f64
        ));
        let kids = if depth < 4 { next(7) } else { 0 };
        for i in 0..kids {
            if i > 0 {
                out.push(',');
            }
            node(depth + 1, next, out);
        }
        out.push_str("]}");
    }
    let mut out = String::from("[");
    for i in 0..roots {
        if i > 0 {
            out.push(',');
        }
        node(0, &mut next, &mut out);
    }
    out.push(']');
    out
}

/// A node's flat key: (name, kind, device label as the tables show it).
fn flat_key(n: &Value) -> (String, String, String) {
    let device = match (
        n["device"].as_str(),
        n["device_index"].as_u64(),
        n["instance"].as_u64(),
    ) {
        (Some(d), Some(i), Some(inst)) if i != 0 || inst > 1 => format!("{d}[{i}:{inst}]"),
        (Some(d), _, _) => d.to_string(),
        _ => String::new(),
    };
    (
        n["name"].as_str().unwrap().to_string(),
        n["kind"].as_str().unwrap().to_string(),
        device,
    )
}

/// The flat rows of a tree: per key (count, total counting recursion once,
/// sum of instances' time, self, min, max), keys in the order first met.
type Sums = (u64, u64, u64, u64, u64, u64);
/// (Keys found through an index: a tree can hold hundreds of thousands.)
fn flat_sums(tree: &Value) -> Vec<((String, String, String), Sums)> {
    type Key = (String, String, String);
    fn walk(
        list: &Value,
        open: &mut Vec<Key>,
        index: &mut std::collections::HashMap<Key, usize>,
        out: &mut Vec<(Key, Sums)>,
    ) {
        for n in list.as_array().unwrap() {
            let key = flat_key(n);
            let inside = open.contains(&key);
            let at = *index.entry(key.clone()).or_insert_with(|| {
                out.push((key.clone(), (0, 0, 0, 0, u64::MAX, 0)));
                out.len() - 1
            });
            let s = &mut out[at].1;
            s.0 += u(&n["count"]);
            if !inside {
                s.1 += u(&n["total_ns"]);
            }
            s.2 += u(&n["total_ns"]);
            s.3 += u(&n["self_ns"]);
            s.4 = s.4.min(u(&n["min_ns"]));
            s.5 = s.5.max(u(&n["max_ns"]));
            open.push(key);
            walk(&n["children"], open, index, out);
            open.pop();
        }
    }
    let mut out = Vec::new();
    walk(
        tree,
        &mut Vec::new(),
        &mut std::collections::HashMap::new(),
        &mut out,
    );
    out
}

/// The rows of `--csv` (by name, kind and device) that `rows` give, in their
/// order; shares of a run of `run_ns`.
fn rows_csv<'a>(
    rows: impl IntoIterator<Item = &'a ((String, String, String), Sums)>,
    run_ns: f64,
) -> String {
    let mut s =
        String::from("name,kind,device,count,total_ns,self_ns,mean_ns,min_ns,max_ns,self_pct\n");
    for ((name, kind, device), x) in rows {
        s.push_str(&format!(
            "{name},{kind},{device},{},{},{},{:.1},{},{},{:.2}\n",
            x.0,
            x.1,
            x.3,
            x.2 as f64 / x.0 as f64,
            x.4,
            x.5,
            100.0 * x.3 as f64 / run_ns
        ));
    }
    s
}

/// A flat row by name: its kinds in the order first met, and its sums.
type NameRow = (String, Vec<String>, Sums);

/// The rows of `--flat` that the rows by (name, kind, device) give: one per
/// name, summed over every row of it, in the order first met.
fn by_name(sums: &[((String, String, String), Sums)]) -> Vec<NameRow> {
    let mut names: Vec<NameRow> = Vec::new();
    let mut at_name = std::collections::HashMap::new();
    for ((name, kind, _), x) in sums {
        let at = *at_name.entry(name.clone()).or_insert_with(|| {
            names.push((name.clone(), Vec::new(), (0, 0, 0, 0, u64::MAX, 0)));
            names.len() - 1
        });
        let b = &mut names[at];
        if !b.1.contains(kind) {
            b.1.push(kind.clone());
        }
        b.2 = (
            b.2 .0 + x.0,
            b.2 .1 + x.1,
            b.2 .2 + x.2,
            b.2 .3 + x.3,
            b.2 .4.min(x.4),
            b.2 .5.max(x.5),
        );
    }
    names
}

/// The rows of `--flat --csv` that `rows` give, in their order.
fn flat_csv<'a>(rows: impl IntoIterator<Item = &'a NameRow>, run_ns: f64) -> String {
    let mut expect = String::from(
        "name,kinds,calls,total_ns,time_per_call_ns,min_ns,max_ns,self_ns,total_pct\n",
    );
    for (name, kinds, s) in rows {
        let kinds = kinds.join(",");
        let kinds = if kinds.contains(',') {
            format!("\"{kinds}\"")
        } else {
            kinds
        };
        expect.push_str(&format!(
            "{name},{kinds},{},{},{:.1},{},{},{},{:.2}\n",
            s.0,
            s.1,
            s.2 as f64 / s.0 as f64,
            s.4,
            s.5,
            s.3,
            100.0 * s.1 as f64 / run_ns
        ));
    }
    expect
}

/// The tree view's lines: `depth;path;total` for a node shown, `more;depth;N;total`
/// for siblings `--top` hid, from the JSON by the documented rules: a node's
/// times per thread of its team (its own `threads`, else its parent's `team`),
/// siblings by those, the hidden ones' total per thread too.
fn tree_lines(
    list: &Value,
    depth: usize,
    team: u64,
    path: &mut Vec<String>,
    top: usize,
    prefix: Option<&str>,
    out: &mut Vec<String>,
) {
    let team_of = |n: &Value| n["threads"]["threads"].as_u64().unwrap_or(team);
    let shown = |n: &Value| (u(&n["total_ns"]) + team_of(n) / 2) / team_of(n);
    fn matches(n: &Value, prefix: &str) -> bool {
        n["name"].as_str().unwrap().starts_with(prefix)
            || n["children"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| matches(c, prefix))
    }
    let mut sibs: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| prefix.is_none_or(|p| matches(n, p)))
        .collect();
    // Stable: equal totals and names keep their order.
    sibs.sort_by(|a, b| {
        shown(b)
            .cmp(&shown(a))
            .then_with(|| a["name"].as_str().cmp(&b["name"].as_str()))
    });
    for n in sibs.iter().take(top) {
        let name = n["name"].as_str().unwrap();
        path.push(name.to_string());
        out.push(format!("{depth};{};{}", path.join("/"), u(&n["total_ns"])));
        let below = prefix.filter(|p| !name.starts_with(p));
        let kids = &n["children"];
        tree_lines(kids, depth + 1, team_of(n), path, top, below, out);
        path.pop();
    }
    if sibs.len() > top {
        let hidden: u64 = sibs[top..].iter().map(|n| shown(n)).sum();
        out.push(format!("more;{depth};{};{hidden}", sibs.len() - top));
    }
}

#[test]
fn report_of_many_nodes_shows_the_rows_the_profile_gives() {
    let dir = scratch("cli_report_many");
    // Rank 0's fixture with a tree of about 20,000 nodes in place of its own.
    let mut p = read_profile(&fixture(0));
    p["tree"] = Value::String("TREE".into());
    // A run as long as the threads' time in the tree (shares below 100%).
    p["clock"]["duration_ns"] = 30_000_000_000u64.into();
    let text = serde_json::to_string(&p)
        .unwrap()
        .replace(r#""TREE""#, &generated_tree(1500));
    std::fs::create_dir_all(dir.join("p")).unwrap();
    std::fs::write(dir.join("p/profile.json"), &text).unwrap();
    let p = read_profile(&dir.join("p"));
    let tree = &p["tree"];
    let all = nodes(&p);
    assert!(all.len() > 15_000, "{} nodes", all.len());
    let run_ns = u(&p["clock"]["duration_ns"]) as f64;
    // The same profile with every object's members in name order (`children`
    // among the first): kprof reads it whole, and must print the same.
    std::fs::create_dir_all(dir.join("sorted")).unwrap();
    std::fs::write(
        dir.join("sorted/profile.json"),
        serde_json::to_string(&p).unwrap(),
    )
    .unwrap();
    let report = |args: &[&str], at: &str| {
        let o = run(&mut kprof_cmd(&dir, &[&["report", at], args].concat()));
        assert_ok(&o);
        stdout(&o)
    };
    let both = |args: &[&str]| {
        let out = report(args, "p");
        let sorted = report(args, "sorted");
        // Alike but for the file named in the first line of the tables.
        let body = |t: &str| t.replace("sorted/profile.json", "p/profile.json");
        assert_eq!(body(&out), body(&sorted), "{args:?}");
        out
    };

    // The flat table by (name, kind, device): the top 20 by self time.
    let sums = flat_sums(tree);
    assert!(
        sums.iter().any(|(_, s)| s.1 < s.2),
        "no recursion generated"
    );
    let mut by_self = sums.clone();
    by_self.sort_by(|a, b| b.1 .3.cmp(&a.1 .3).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(both(&["--csv"]), rows_csv(by_self.iter().take(20), run_ns));
    let out = both(&[]);
    assert!(
        out.contains(&format!("(top 20 of {}; ", sums.len())),
        "{out}"
    );
    // Filtered and by count.
    let mut by_count: Vec<_> = sums.iter().filter(|(k, _)| k.0.starts_with("k1")).collect();
    by_count.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(&b.0)));
    let names: Vec<String> = by_count
        .iter()
        .take(7)
        .map(|(k, _)| format!("{},{},{}", k.0, k.1, k.2))
        .collect();
    let out = both(&["--csv", "--sort", "count", "--top", "7", "--filter", "^k1"]);
    let got: Vec<String> = out
        .lines()
        .skip(1)
        .map(|l| l.splitn(4, ',').take(3).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(got, names);

    // By name over all paths (--flat): the top 20 by total time.
    let mut names = by_name(&sums);
    names.sort_by(|a, b| b.2 .1.cmp(&a.2 .1).then_with(|| a.0.cmp(&b.0)));
    assert_eq!(
        both(&["--flat", "--csv"]),
        flat_csv(names.iter().take(20), run_ns)
    );

    // The tree, pruned by --top, with and without a filter: the nodes from the
    // CSV, the hidden siblings from the table's "N more" lines.
    for (filter, prefix) in [(None, None), (Some("^k2"), Some("k2"))] {
        let mut expect = Vec::new();
        tree_lines(tree, 0, 1, &mut Vec::new(), 3, prefix, &mut expect);
        let mut args = vec!["--tree", "--top", "3"];
        args.extend(filter.map(|f| ["--filter", f]).into_iter().flatten());
        let csv = both(&[&args[..], &["--csv"]].concat());
        let got_nodes: Vec<String> = csv
            .lines()
            .skip(1)
            .map(|l| {
                let c: Vec<&str> = l.split(',').collect();
                format!("{};{};{}", c[1], c[0].replace(';', "/"), c[6])
            })
            .collect();
        let want_nodes: Vec<&String> = expect.iter().filter(|l| !l.starts_with("more;")).collect();
        assert_eq!(
            got_nodes.iter().collect::<Vec<_>>(),
            want_nodes,
            "{filter:?}"
        );
        let table = both(&args);
        // The depth is the indent (two spaces a level) in the name column.
        let col = table
            .lines()
            .find(|l| l.trim_start().starts_with("total"))
            .and_then(|l| l.rfind("name"))
            .unwrap();
        let got_more: Vec<String> = table
            .lines()
            .filter_map(|l| {
                let at = l.find("... ")?;
                let hidden = l[at + 4..].split(' ').next()?;
                let total: Vec<&str> = l.split_whitespace().take(2).collect();
                Some(format!("{};{hidden};{}", (at - col) / 2, total.join(" ")))
            })
            .collect();
        let want_more: Vec<String> = expect
            .iter()
            .filter_map(|l| l.strip_prefix("more;"))
            .map(|l| {
                let f: Vec<&str> = l.split(';').collect();
                format!("{};{};{}", f[0], f[1], dur(f[2].parse::<f64>().unwrap()))
            })
            .collect();
        assert!(!want_more.is_empty());
        assert_eq!(got_more, want_more, "{filter:?}");
    }

    // --threads: the nodes with teams that lost the most (max - mean), top 20.
    let mut teams: Vec<(f64, String, &Value)> = all
        .iter()
        .filter(|(_, n)| n.get("threads").is_some())
        .map(|(path, n)| {
            let t = &n["threads"];
            (
                u(&t["max_ns"]) as f64 - t["mean_ns"].as_f64().unwrap(),
                path.join(" > "),
                n,
            )
        })
        .collect();
    teams.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let out = both(&["--threads"]);
    assert!(
        out.contains(&format!("(top 20 of {} nodes by max - mean", teams.len())),
        "{out}"
    );
    let got: Vec<String> = squeeze(&out)
        .into_iter()
        .skip_while(|l| l != "imbalance threads min mean max kind path")
        .skip(1)
        .collect();
    let want: Vec<String> = teams
        .iter()
        .take(20)
        .map(|(_, path, n)| {
            let t = &n["threads"];
            format!(
                "{:.2}x 4 {} {} {} {} {path}",
                t["imbalance"].as_f64().unwrap(),
                dur(u(&t["min_ns"]) as f64),
                dur(t["mean_ns"].as_f64().unwrap()),
                dur(u(&t["max_ns"]) as f64),
                n["kind"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(got, want);
}

/// A tree of about `nodes` nodes where most names are their node's own
/// (`n<i>`) and a few are shared by many call paths (`s<j>`, nested in
/// themselves at times): a profile of many distinct names whose flat rows
/// still add up nodes from all over the tree.
fn many_names_tree(nodes: usize) -> String {
    let mut x: u64 = 0x2545f4914f6cdd1d;
    let mut next = move |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    fn node(depth: usize, made: &mut usize, next: &mut dyn FnMut(u64) -> u64, out: &mut String) {
        let name = if next(4) == 0 {
            format!("s{}", next(40))
        } else {
            format!("n{made}")
        };
        *made += 1;
        let (kind, device) = match next(3) {
            0 => ("parallel_for", r#""Cuda","device_index":1,"instance":2"#),
            1 => ("parallel_for", r#""OpenMP","device_index":0,"instance":1"#),
            _ => ("region", r#"null,"device_index":null,"instance":null"#),
        };
        let total = 1000 + next(1_000_000);
        let self_ns = total - next(total / 2 + 1);
        let count = 1 + next(4);
        out.push_str(&format!(
            r#"{{"name":"{name}","kind":"{kind}","device":{device},"count":{count},"total_ns":{total},"self_ns":{self_ns},"min_ns":{},"max_ns":{total},"mean_ns":{:.1},"stddev_ns":0.0,"children":["#,
            total / count / 2,
            total as f64 / count as f64
        ));
        let kids = if depth < 3 { next(5) } else { 0 };
        for i in 0..kids {
            if i > 0 {
                out.push(',');
            }
            node(depth + 1, made, next, out);
        }
        out.push_str("]}");
    }
    let mut out = String::from("[");
    let mut made = 0;
    while made < nodes {
        if made > 0 {
            out.push(',');
        }
        node(0, &mut made, &mut next, &mut out);
    }
    out.push(']');
    out
}

/// More distinct names than `kprof report` holds in memory (it adds the
/// rest up on disk): the flat tables still show the rows the whole profile
/// gives, a shared name's row summed over every call path.
#[test]
fn report_of_many_distinct_names_sums_each_over_the_whole_profile() {
    let dir = scratch("cli_report_names");
    let mut p = read_profile(&fixture(0));
    p["tree"] = Value::String("TREE".into());
    p["clock"]["duration_ns"] = 900_000_000_000u64.into();
    let text = serde_json::to_string(&p)
        .unwrap()
        .replace(r#""TREE""#, &many_names_tree(300_000));
    std::fs::create_dir_all(dir.join("p")).unwrap();
    std::fs::write(dir.join("p/profile.json"), &text).unwrap();
    drop(text);
    let p = read_profile(&dir.join("p"));
    let run_ns = u(&p["clock"]["duration_ns"]) as f64;
    let sums = flat_sums(&p["tree"]);
    // More keys than are held in memory (2^17), and shared names over many paths.
    assert!(sums.len() > 200_000, "{} rows", sums.len());
    let shared = sums.iter().filter(|(k, _)| k.0.starts_with('s'));
    assert!(shared.clone().count() >= 100);
    assert!(
        shared.clone().all(|(_, s)| s.0 > 100),
        "shared names spread"
    );
    assert!(
        sums.iter().any(|(_, s)| s.1 < s.2),
        "no recursion generated"
    );
    let report = |args: &[&str]| {
        let o = run(&mut kprof_cmd(&dir, &[&["report", "p"], args].concat()));
        assert_ok(&o);
        stdout(&o)
    };

    // The default table: the top 20 by self time (shared names first), and
    // how many rows there are.
    let mut by_self: Vec<_> = sums.iter().collect();
    by_self.sort_by(|a, b| b.1 .3.cmp(&a.1 .3).then_with(|| a.0.cmp(&b.0)));
    assert!(by_self[0].0 .0.starts_with('s'));
    assert_eq!(
        report(&["--csv"]),
        rows_csv(by_self[..20].iter().copied(), run_ns)
    );
    let out = report(&[]);
    assert!(
        out.contains(&format!("(top 20 of {}; ", sums.len())),
        "{out}"
    );
    // Filtered to unique names, by total: rows from all over the file.
    let mut unique: Vec<_> = sums.iter().filter(|(k, _)| k.0.starts_with("n1")).collect();
    unique.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then_with(|| a.0.cmp(&b.0)));
    let out = report(&["--csv", "--sort", "total", "--top", "15", "--filter", "^n1"]);
    assert_eq!(out, rows_csv(unique[..15].iter().copied(), run_ns));

    // By name (--flat): kinds in the order first met, sums over every row.
    let names = by_name(&sums);
    for (sort, top) in [("total", 20), ("count", 45)] {
        let mut sorted: Vec<_> = names.iter().collect();
        let key = |s: &Sums| if sort == "total" { s.1 } else { s.0 };
        sorted.sort_by(|a, b| key(&b.2).cmp(&key(&a.2)).then_with(|| a.0.cmp(&b.0)));
        // Shared names come first, some of them of two kinds.
        assert!(sorted[..top].iter().any(|(_, kinds, _)| kinds.len() > 1));
        let expect = flat_csv(sorted.iter().take(top).copied(), run_ns);
        let top_arg = top.to_string();
        let args = ["--flat", "--csv", "--sort", sort, "--top", &top_arg];
        assert_eq!(report(&args), expect, "{sort}");
    }
    let out = report(&["--flat"]);
    assert!(
        out.contains(&format!("(top 20 of {} by total time", names.len())),
        "{out}"
    );
}

// ---------------------------------------------------------------- merge

/// The statistics `kprof merge` has always written (min, mean, max, sum,
/// imbalance), without those it added later.
fn plain_stats(v: &Value) -> Value {
    let keep = ["min", "mean", "max", "sum", "imbalance"];
    Value::Object(
        v.as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| keep.contains(&k.as_str()))
            .map(|(k, x)| (k.clone(), x.clone()))
            .collect(),
    )
}

#[test]
fn merge_three_ranks_exact_statistics() {
    let dir = scratch("cli_merge");
    // Given out of order: ranks are taken from the profiles.
    let o = run(kprof_cmd(&dir, &["merge", "--by-rank"])
        .arg(fixture(2))
        .arg(fixture(0))
        .arg(fixture(1))
        .args(["-o", "m"]));
    assert_ok(&o);
    let p = read_profile(&dir.join("m"));
    assert_eq!(p["schema"], "kprof-merged/1");
    let ranks: Vec<u64> = p["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["rank"]))
        .collect();
    assert_eq!(ranks, [0, 1, 2]);
    assert_eq!(p["ranks"][1]["host"], "node1");
    assert_eq!(
        plain_stats(&p["duration_ns"]),
        serde_json::json!({"min": 4000000, "mean": 5000000.0, "max": 6000000, "sum": 15000000, "imbalance": 1.2})
    );
    // Who holds the extremes, and the spread over ranks.
    assert_eq!(p["duration_ns"]["min_rank"], 0);
    assert_eq!(p["duration_ns"]["max_rank"], 2);
    let sd = p["duration_ns"]["stddev"].as_f64().unwrap();
    assert!((sd - 816_496.580_927_726).abs() < 1e-3, "{sd}");
    let all = nodes(&p);
    let solve = node(&all, &["solve"]);
    assert_eq!(solve["ranks"], 3);
    assert_eq!(
        plain_stats(&solve["total_ns"]),
        serde_json::json!({"min": 1000000, "mean": 2000000.0, "max": 3000000, "sum": 6000000, "imbalance": 1.5})
    );
    assert_eq!(
        plain_stats(&solve["self_ns"]),
        serde_json::json!({"min": 100000, "mean": 200000.0, "max": 300000, "sum": 600000, "imbalance": 1.5})
    );
    let axpy = node(&all, &["solve", "axpy"]);
    assert_eq!(axpy["device"], "OpenMP");
    assert_eq!(
        plain_stats(&axpy["count"]),
        serde_json::json!({"min": 10, "mean": 10.0, "max": 10, "sum": 30, "imbalance": 1.0})
    );
    assert_eq!(
        axpy["by_rank"]["total_ns"],
        serde_json::json!([900000, 1800000, 2700000])
    );
    assert_eq!(axpy["min_ns"], 80000);
    assert_eq!(axpy["max_ns"], 300000);
    // Only on ranks 0 and 2: rank 1 counts as 0.
    let io = node(&all, &["io"]);
    assert_eq!(io["ranks"], 2);
    assert_eq!(
        plain_stats(&io["total_ns"]),
        serde_json::json!({"min": 0, "mean": 500000.0, "max": 1000000, "sum": 1500000, "imbalance": 2.0})
    );
    assert_eq!(io["by_rank"]["count"], serde_json::json!([1, 0, 2]));
    // The minimum is rank 1's missing value: no rank to name.
    assert_eq!(io["total_ns"]["min_rank"], Value::Null);
    assert_eq!(io["total_ns"]["max_rank"], 2);
    assert_eq!(p["deep_copies"][0]["bytes"], 2097152 * 6);
    assert_eq!(p["memory"][0]["high_water_bytes"]["max"], 3145728 * 3);
    assert_eq!(p["anomalies"]["unmatched_ends"], 3);
    // kprof's own cost, summed over the ranks.
    assert_eq!(
        p["kprof"],
        serde_json::json!({"records": 6000, "record_bytes": 80000, "buffer_bytes": 5u64 << 21,
            "buffer_budget_bytes": 3 * 67108864u64, "huge_page_blocks": 2,
            "small_page_blocks": 3, "buffer_fault_ns": 2600000, "writer_cpu_ns": 10000000,
            "events_in_place": 0, "call_paths": 0, "profile_bytes": 0, "writer_run_cpu_ns": 0,
            "device_tool_ns": 0, "own_ns": 0})
    );

    // report reads the merged profile.
    let o = run(&mut kprof_cmd(&dir, &["report", "m", "--sort", "total"]));
    assert_ok(&o);
    let l = squeeze(&stdout(&o));
    assert!(
        l.contains(&"1.00 ms 2.00 ms 3.00 ms 1.50 3 3 region solve".to_string()),
        "{}",
        stdout(&o)
    );
    assert!(
        l.contains(&"0 ns 500.00 us 1.00 ms 2.00 2 3 user_region io".to_string()),
        "{}",
        stdout(&o)
    );

    // Never overwrites unless --force.
    let o = run(kprof_cmd(&dir, &["merge"])
        .arg(fixture(0))
        .args(["-o", "m"]));
    one_line_error(&o, "m exists already: give --force to replace it");
}

/// `kprof merge` checks what it is given: the same directory twice (under two
/// names too) and two directories of one rank are refused (exit 2, one line
/// naming them); ranks of different programs merge with one warning; a
/// directory without a profile (a rank killed with SIGKILL leaves only its
/// trace) is left out with a warning naming it and the missing rank.
#[test]
fn merge_checks_directories_ranks_and_programs() {
    let dir = scratch("cli_merge_checks");
    let copy = |from: &Path, to: &str| {
        assert_ok(&run(Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(dir.join(to))));
    };
    let (r0, r1, r2) = (fixture(0), fixture(1), fixture(2));
    copy(&r0, "r0");
    copy(&r1, "r1");
    copy(&r2, "r2");

    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", "r0", "r1", "r0", "-o", "m"],
    ));
    let line = one_line_error(&o, "");
    assert_eq!(
        line,
        "kprof: merge: r0 is given twice: give each rank's directory once"
    );
    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", "r0", "r1", "./r1/", "-o", "m"],
    ));
    let line = one_line_error(&o, "");
    assert_eq!(
        line,
        "kprof: merge: ./r1/ is given twice (as r1): give each rank's directory once"
    );
    assert!(!dir.join("m").exists());

    // Another directory holding rank 1.
    copy(&r1, "again1");
    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", "r0", "r1", "again1", "-o", "m"],
    ));
    let line = one_line_error(&o, "");
    assert_eq!(
        line,
        "kprof: merge: rank 1 is in two directories, r1 and again1: give one job's ranks, each \
         once"
    );
    assert!(!dir.join("m").exists());

    // Rank 2 of another program: merged, with one line saying so.
    let file = dir.join("r2/profile.json");
    let mut p = read_profile(&dir.join("r2"));
    p["program"]["executable"] = "/opt/other".into();
    std::fs::write(&file, serde_json::to_string(&p).unwrap()).unwrap();
    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", "r0", "r1", "r2", "-o", "m"],
    ));
    assert_ok(&o);
    let said = stderr(&o);
    let warned: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warned,
        ["kprof merge: warning: the ranks ran different programs: app (2 ranks), other (1 rank)"]
    );
    assert_eq!(
        read_profile(&dir.join("m"))["ranks"][2]["executable"],
        "/opt/other"
    );

    // Rank 1 left no profile, rank 2 a truncated one: both are left out, named;
    // ranks 0 of the 3 is merged, exit 0.
    std::fs::remove_file(dir.join("r1/profile.json")).unwrap();
    std::fs::write(dir.join("r1/trace.pftrace"), b"").unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, &text[..text.len() / 2]).unwrap();
    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", "r0", "r1", "r2", "-o", "m2", "--no-trace"],
    ));
    assert_ok(&o);
    let said = stderr(&o);
    let warned: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warned.len(), 3, "{said}");
    assert_eq!(
        warned[0],
        "kprof merge: warning: r1: no profile.json in this directory (is it a kprof output \
         directory? a run killed with SIGKILL leaves only its trace); left out of the merge"
    );
    assert!(
        warned[1].starts_with("kprof merge: warning: r2/profile.json is truncated (")
            && warned[1].ends_with("; left out of the merge"),
        "{said}"
    );
    assert_eq!(
        warned[2],
        "kprof merge: warning: merged 1 of 3 ranks; missing: ranks 1, 2"
    );
    let m = read_profile(&dir.join("m2"));
    assert_eq!(m["ranks"].as_array().unwrap().len(), 1);
    assert_eq!(m["ranks"][0]["rank"], 0);
    assert_eq!(
        m["duration_ns"]["sum"],
        read_profile(&r0)["clock"]["duration_ns"]
    );

    // None readable: a failure, as for one directory.
    let o = run(&mut kprof_cmd(&dir, &["merge", "r1", "-o", "m3"]));
    one_line_error(&o, "r1: no profile.json in this directory");
    let o = run(&mut kprof_cmd(
        &dir,
        &["merge", "r0", "nothere", "-o", "m3"],
    ));
    one_line_error(&o, "nothere: no such directory");
}

#[test]
fn merge_traces_one_process_per_rank() {
    let dir = scratch("cli_merge_trace");
    let mut dirs = Vec::new();
    for (i, n) in ["2", "3", "4"].iter().enumerate() {
        let out = format!("r{i}");
        let o = run(kprof_cmd(
            &dir,
            &[
                "run",
                "-q",
                "-o",
                &out,
                "--trace",
                "perfetto",
                "--summary",
                "0",
                "--",
            ],
        )
        .arg(kernels_bin())
        .arg(n));
        assert_ok(&o);
        dirs.push(out);
    }
    let mut args = vec!["merge", "--by-rank"];
    args.extend(dirs.iter().map(String::as_str));
    args.extend(["-o", "m"]);
    let o = run(&mut kprof_cmd(&dir, &args));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains("kprof merge: trace [3/3] rank 2: r2/trace.pftrace ("),
        "{err}"
    );
    // The job's concurrency view: each category's time summed over the ranks,
    // and each rank's share as its own profile has it.
    let merged = read_profile(&dir.join("m"));
    let ranks: Vec<Value> = dirs.iter().map(|d| read_profile(&dir.join(d))).collect();
    let cats = merged["concurrency"]["categories"]
        .as_array()
        .expect("concurrency");
    assert!(!cats.is_empty());
    for c in cats {
        let name = c["category"].as_str().unwrap();
        let of = |r: &Value| {
            r["concurrency"]["categories"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["category"] == name)
                .cloned()
        };
        let sum: u64 = ranks.iter().filter_map(of).map(|x| u(&x["ns"])).sum();
        assert_eq!(u(&c["ns"]), sum, "{name}");
        let pcts: Vec<Value> = ranks
            .iter()
            .map(|r| of(r).map_or(Value::Null, |x| x["pct"].clone()))
            .collect();
        assert_eq!(c["by_rank"]["pct"], Value::Array(pcts), "{name}");
    }
    let Some(model) = read_perfetto(&dir.join("m")) else {
        skip_unless(
            false,
            "Perfetto's protos (protoc) for decoding the merged trace",
        );
        return;
    };
    model.assert_valid();
    let pids: std::collections::BTreeSet<i64> = model
        .tracks
        .values()
        .filter_map(|t| match t.kind {
            kprof_tests::trace_check::TrackKind::Process { pid } => Some(pid),
            _ => None,
        })
        .collect();
    assert_eq!(pids.len(), 3, "{:?}", model.tracks);
    // Each rank's kernels on its own thread track.
    let kernels = model.named("kernel");
    assert_eq!(kernels.len(), 2 + 3 + 4);
    let mut per_track: std::collections::BTreeMap<u64, usize> = Default::default();
    for s in &kernels {
        *per_track.entry(s.track).or_default() += 1;
    }
    let mut counts: Vec<usize> = per_track.values().copied().collect();
    counts.sort();
    assert_eq!(counts, [2, 3, 4]);
    // Each rank keeps its own concurrency counters, under its own process.
    let idle: Vec<&String> = model
        .counters
        .keys()
        .filter(|k| k.starts_with("threads idle [pid "))
        .collect();
    assert_eq!(idle.len(), 3, "{:?}", model.counters.keys());
    for pid in &pids {
        let key = format!("threads idle [pid {pid}]");
        assert!(model.counters.contains_key(&key), "{key}");
    }
}

// ---------------------------------------------------------------- --version

/// The loader's cache (`ldconfig -p`): each 64-bit library's name with its
/// file (a 32-bit one, `(libc6)`, is not what kprof's loader would take).
fn ld_cache() -> Option<Vec<(String, PathBuf)>> {
    let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .into_iter()
        .find(|p| Path::new(p).is_file())?;
    let o = Command::new(ldconfig).arg("-p").output().ok()?;
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    Some(
        text.lines()
            .filter_map(|l| {
                let (name, file) = l.trim().split_once(" => ")?;
                let (name, kind) = name.split_once(' ')?;
                if !kind.contains("64") {
                    return None;
                }
                Some((name.to_string(), PathBuf::from(file)))
            })
            .collect(),
    )
}

/// `kprof --version` without `LD_LIBRARY_PATH` and `KPROF_*`, plus `env`.
fn version_lines(env: &[(&str, &str)]) -> Vec<String> {
    let dir = scratch("cli_version");
    let mut cmd = kprof_cmd(&dir, &["--version"]);
    cmd.env_remove("LD_LIBRARY_PATH").envs(env.iter().copied());
    let o = run(&mut cmd);
    assert_ok(&o);
    stdout(&o).lines().map(String::from).collect()
}

/// `kprof --version`: the version and the commit the build came from, the
/// model table's plugins next to kprof, and each optional library as the
/// loader finds it, checked against git, the build directory and the
/// loader's cache.
#[test]
fn version_names_commit_plugins_and_optional_libraries() {
    let Some(cache) = ld_cache() else {
        skip_unless(false, "ldconfig -p");
        return;
    };
    let lines = version_lines(&[]);
    assert_eq!(lines.len(), 3, "{lines:?}");
    let commit = Command::new("git")
        .current_dir(workspace_root())
        .args(["rev-parse", "--short=7", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| stdout(&o).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    assert_eq!(
        lines[0],
        format!("kprof {} (commit {commit})", env!("CARGO_PKG_VERSION"))
    );
    // Every plugin of the model table was built into the one directory.
    let names: Vec<&str> = kprof_tables::models::MODELS
        .iter()
        .filter(|m| lib_dir().join(m.library).is_file())
        .map(|m| m.name)
        .collect();
    assert_eq!(names.len(), kprof_tables::models::MODELS.len());
    let dir = std::fs::canonicalize(lib_dir()).unwrap();
    assert_eq!(
        lines[1],
        format!("plugins: {} ({})", names.join(", "), dir.display())
    );
    // Each optional library: the file of its first name in the cache, or no.
    let expected: Vec<String> = kprof_tables::libraries::OPTIONAL
        .iter()
        .map(|lib| {
            let file = lib.names.iter().find_map(|n| {
                cache
                    .iter()
                    .find(|(name, _)| name == n)
                    .map(|(_, f)| f.clone())
            });
            match file {
                Some(f) => format!("{} yes ({})", lib.name, f.display()),
                None => format!("{} no", lib.name),
            }
        })
        .collect();
    assert_eq!(lines[2], format!("optional: {}", expected.join(", ")));
    // The test machine's (tests/setup.sh): OTF2, PAPI, Open MPI and MPICH.
    for name in ["otf2", "papi", "open-mpi", "mpich"] {
        skip_unless(
            lines[2].contains(&format!(" {name} yes (")),
            &format!("{name} (tests/setup.sh installs it)"),
        );
    }
    // A setting that names the file is the only place looked at, as in a run.
    let otf2 = kprof_tables::libraries::OTF2.setting.unwrap().var;
    let lines = version_lines(&[(otf2, "/nonexistent/libotf2.so")]);
    assert!(lines[2].starts_with("optional: otf2 no, "), "{}", lines[2]);
    // Any file the loader takes is found: the C library's, which runs nothing
    // of its own when loaded again.
    let papi = kprof_tables::libraries::PAPI.setting.unwrap().var;
    let libc = &cache
        .iter()
        .find(|(n, _)| n == "libc.so.6")
        .expect("libc.so.6")
        .1;
    let lines = version_lines(&[(papi, &libc.display().to_string())]);
    assert!(
        lines[2].contains(&format!(", papi yes ({}), ", libc.display())),
        "{}",
        lines[2]
    );
    // -V and a command's --version say the same.
    let dir = scratch("cli_version_v");
    for args in [&["-V"][..], &["report", "--version"]] {
        let o = run(kprof_cmd(&dir, args).env_remove("LD_LIBRARY_PATH"));
        assert_ok(&o);
        assert_eq!(stdout(&o).lines().next(), Some(lines[0].as_str()));
    }
}

// ---------------------------------------------------------------- install

/// `make install PREFIX=<scratch>` once per test process.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let p = scratch("cli_prefix").join("usr");
        make_install(&p);
        p
    })
}

#[test]
fn install_layout() {
    let p = prefix();
    for f in [
        "bin/kprof",
        "lib/libkprof_core.so",
        "lib/libkprof.so",
        "lib/libkprof_ompt.so",
        "include/kprof/kprof.h",
        "include/kprof/kprof.hpp",
        "include/kprof/kprof.f90",
        "lib/cmake/kprof/kprofConfig.cmake",
        "lib/cmake/kprof/kprofConfigVersion.cmake",
        "lib/pkgconfig/kprof.pc",
    ] {
        assert!(p.join(f).is_file(), "{f} not installed");
    }
    let pc = std::fs::read_to_string(p.join("lib/pkgconfig/kprof.pc")).unwrap();
    assert!(pc.starts_with(&format!("prefix={}\n", p.display())), "{pc}");
    assert!(pc.contains("Version: 0.1.0\n"), "{pc}");
    // The installed kprof finds its plugins in ../lib.
    let dir = scratch("cli_install_run");
    let o = run(Command::new(p.join("bin/kprof")).current_dir(&dir).args([
        "run",
        "-v",
        "--openmp",
        "--kokkos",
        "--summary",
        "0",
        "--",
        "true",
    ]));
    assert_ok(&o);
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "kprof: OMP_TOOL_LIBRARIES={}/lib/libkprof_ompt.so\n",
            p.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "kprof: KOKKOS_TOOLS_LIBS={}/lib/libkprof.so\n",
            p.display()
        )),
        "{err}"
    );
}

#[test]
fn cmake_consumer_with_ctest() {
    if skip_unless(have("cmake") && have("ctest"), "cmake") {
        return;
    }
    let p = prefix();
    let build = scratch("cli_cmake_consumer");
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(test_file("cli/consumer"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", p.display()));
    if have("clang") {
        configure.env("CC", "clang");
    }
    let o = run(&mut configure);
    assert_ok(&o);
    let conf = stdout(&o);
    assert!(
        conf.contains(&format!("-- kprof 0.1.0: {}/bin/kprof", p.display())),
        "{conf}"
    );
    assert!(
        conf.contains(&format!(
            "-- kprof_OMPT_LIBRARY={}/lib/libkprof_ompt.so",
            p.display()
        )),
        "{conf}"
    );
    assert_ok(&run(Command::new("cmake").arg("--build").arg(&build)));
    // Twice: the setup test empties the output directory before each run.
    for _ in 0..2 {
        let o = run(Command::new("ctest")
            .current_dir(&build)
            .args(["--output-on-failure"]));
        assert_ok(&o);
        assert!(stdout(&o).contains("100% tests passed"), "{}", stdout(&o));
    }
    let prof = read_profile(&build.join("kprof-annotated_run"));
    assert!(!build.join("kprof-annotated_run.1").exists());
    let all = nodes(&prof);
    assert_eq!(u(&node(&all, &["solve"])["count"]), 1);
    assert_eq!(u(&node(&all, &["solve", "step"])["count"]), 4);
    assert_eq!(u(&node(&all, &["solve", "step", "inner"])["count"]), 4);
    assert_eq!(
        node(&all, &["solve", "step", "inner"])["kind"],
        "user_region"
    );
    // Closed by the exception's unwinding.
    assert_eq!(u(&node(&all, &["cleanup"])["count"]), 1);
    assert_eq!(prof["counters"][0]["name"], "step");
    assert_eq!(prof["counters"][0]["count"], 4);
    assert_eq!(prof["counters"][0]["max"], 4.0);
    assert_eq!(prof["events"][0]["name"], "done");
    assert_eq!(prof["metadata"]["consumer"], "annotated.cpp");
    assert_eq!(u(&prof["anomalies"]["unmatched_ends"]), 0);
    // TRACE perfetto reached the run.
    assert!(build.join("kprof-annotated_run/trace.pftrace").is_file());
    if build.join("omp_sum").is_file() && have("clang") {
        let omp = read_profile(&build.join("kprof-omp_run"));
        assert_eq!(omp["plugins"], serde_json::json!(["openmp"]));
        let par = nodes(&omp)
            .into_iter()
            .find(|(_, n)| n["kind"] == "omp_parallel")
            .expect("omp_parallel");
        assert_eq!(u(&par.1["count"]), 8);
    }
}

fn pkg_config(args: &[&str]) -> Vec<String> {
    let o = run(Command::new("pkg-config")
        .args(args)
        .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig")));
    assert_ok(&o);
    stdout(&o).split_whitespace().map(String::from).collect()
}

#[test]
fn pkg_config_c_and_fortran() {
    if skip_unless(have("pkg-config"), "pkg-config") {
        return;
    }
    let p = prefix();
    let flags = pkg_config(&["--cflags", "--libs", "kprof"]);
    assert_eq!(
        flags,
        [
            format!("-I{}/include/kprof", p.display()),
            format!("-L{}/lib", p.display()),
            format!("-Wl,-rpath,{}/lib", p.display()),
            "-lkprof_core".to_string(),
        ]
    );
    let dir = scratch("cli_pkg_config");
    let o = run(Command::new("gcc")
        .current_dir(&dir)
        .arg(workspace_root().join("examples/annotations/annotate.c"))
        .args(["-o", "annotate_c", "-Wall", "-Werror"])
        .args(&flags));
    assert_ok(&o);
    let mut programs = vec![("annotate_c", "annotate.c")];
    if have("gfortran") {
        let libs = pkg_config(&["--libs", "kprof"]);
        let o = run(Command::new("gfortran")
            .current_dir(&dir)
            .arg(p.join("include/kprof/kprof.f90"))
            .arg(workspace_root().join("examples/annotations/annotate.f90"))
            .args(["-o", "annotate_f"])
            .args(&libs));
        assert_ok(&o);
        programs.push(("annotate_f", "annotate.f90"));
    } else {
        skip_unless(false, "gfortran");
    }
    for (exe, src) in programs {
        let out = format!("out-{exe}");
        let o = run(Command::new(p.join("bin/kprof"))
            .current_dir(&dir)
            .args(["run", "-o", &out, "--summary", "0", "--"])
            .arg(format!("./{exe}")));
        assert_ok(&o);
        assert!(stdout(&o).starts_with("sum "), "{}", stdout(&o));
        assert!(
            stderr(&o).contains("kprof: measuring annotations (detected)"),
            "{}",
            stderr(&o)
        );
        let prof = read_profile(&dir.join(&out));
        let all = nodes(&prof);
        assert_eq!(u(&node(&all, &["solve", "step"])["count"]), 5, "{exe}");
        assert_eq!(prof["metadata"]["example"], src);
        assert_eq!(prof["counters"][0]["name"], "partial sum");
        assert_eq!(prof["counters"][0]["count"], 5);
        assert_eq!(prof["events"][0]["name"], "done");
        assert_eq!(u(&prof["anomalies"]["unmatched_ends"]), 0);
    }
}

/// `--raja` hands the RAJA plugin to RAJA's runtime loader through `RAJA_PLUGINS`,
/// and `--trace otf2` reaches the runtime as `KPROF_TRACE`.
#[test]
fn run_raja_and_otf2_options_reach_the_program() {
    let dir = scratch("cli-raja-env");
    let out = run(kprof_cmd(
        &dir,
        &[
            "run",
            "-q",
            "--raja",
            "--trace",
            "otf2",
            "--",
            "sh",
            "-c",
            "echo \"$RAJA_PLUGINS|$KPROF_TRACE\"",
        ],
    )
    .current_dir(&dir));
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (plugins, trace) = stdout.trim_end().split_once('|').expect("two values");
    assert_eq!(
        std::path::Path::new(plugins),
        lib("libkprof_raja.so"),
        "RAJA_PLUGINS"
    );
    assert_eq!(trace, "otf2");
}
