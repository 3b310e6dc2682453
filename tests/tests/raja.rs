//! kprof's RAJA plugin (`libkprof_raja.so`) and the Kokkos plugin behind RAJA's
//! Kokkos bridge, driven by `tests/raja/raja_host.cpp`: a C++ program that loads
//! plugins exactly as RAJA's runtime loaders do (RAJA_PLUGINS / KOKKOS_PLUGINS,
//! RTLD_NOW | RTLD_GLOBAL, `RAJAGetPlugin` falling back to `getPlugin`, RAJA's call
//! order), compiled against the same layout header as the plugin. The expected
//! numbers are those documented at the top of `raja_host.cpp`. Every kernel is one
//! `raja_launch` instance (RAJA's capture is at most an argument of it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use kprof_tests::trace_check::{perfetto_schema, read_json, read_perfetto, Model};
use kprof_tests::{
    assert_ok, clean_cmd, compile, compile_with_core, lib, read_profile, run, scratch, shape,
    skip_unless, test_file, Shape,
};
use serde_json::Value;

struct Built {
    host: PathBuf,
    host_annotate: PathBuf,
}

fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = scratch("raja_bin");
        let src = test_file("raja/raja_host.cpp");
        let host = compile(&[&src], &dir.join("raja_host"), &["-ldl", "-pthread"]);
        let host_annotate = compile_with_core(
            &[&src],
            &dir.join("raja_host_annotate"),
            &["-DKPROF_ANNOTATE", "-ldl", "-pthread"],
        );
        Built {
            host,
            host_annotate,
        }
    })
}

/// The harness in a clean tool environment, writing to `dir/out`.
fn host_cmd(exe: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_cmd(exe);
    cmd.current_dir(dir)
        .args(args)
        .env("KPROF_OUTPUT_DIR", dir.join("out"));
    cmd
}

fn raja_lib() -> String {
    lib("libkprof_raja.so").display().to_string()
}

fn run_ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert_ok(&out);
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Shape rows: (path, kind, count, device).
fn expect(rows: &[(&str, &str, u64, &str)]) -> Shape {
    rows.iter()
        .map(|&(path, kind, count, device)| {
            let (dev, idx, inst) = if device == "null" {
                ("null".to_string(), "null".to_string(), "null".to_string())
            } else {
                (format!("\"{device}\""), "0".to_string(), "0".to_string())
            };
            (path.to_string(), kind.to_string(), count, dev, idx, inst)
        })
        .collect()
}

/// Every anomaly is 0 except those listed.
fn check_anomalies(p: &Value, nonzero: &[(&str, u64)]) {
    for (k, v) in p["anomalies"].as_object().expect("anomalies") {
        let want = nonzero
            .iter()
            .find(|(name, _)| name == k)
            .map_or(0, |&(_, n)| n);
        assert_eq!(v.as_u64(), Some(want), "anomaly {k}: {}", p["anomalies"]);
    }
    assert_eq!(p["dropped_records"], 0);
}

fn plugins(p: &Value) -> Vec<&str> {
    let mut v: Vec<&str> = p["plugins"]
        .as_array()
        .expect("plugins")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    v.sort();
    v
}

/// The line of `raja_host.cpp` where RAJA's inlined registry loop calls a plugin's
/// preLaunch: what an unnamed kernel's launch site symbolizes to.
fn call_site_line() -> usize {
    let text = std::fs::read_to_string(test_file("raja/raja_host.cpp")).expect("source");
    text.lines()
        .position(|l| l.contains("/* LAUNCH SITE LINE */") && l.contains("preLaunch"))
        .expect("marker")
        + 1
}

/// One kernel path: one launch row (no capture row).
fn kernel(path: &str, count: u64, device: &str) -> [(String, &'static str, u64, String); 1] {
    [(path.to_string(), "raja_launch", count, device.to_string())]
}

fn expect_kernels(list: &[(&str, u64, &str)], extra: &[(&str, &str, u64, &str)]) -> Shape {
    let mut rows: Vec<(String, &str, u64, String)> =
        list.iter().flat_map(|&(p, c, d)| kernel(p, c, d)).collect();
    rows.extend(
        extra
            .iter()
            .map(|&(p, k, c, d)| (p.to_string(), k, c, d.to_string())),
    );
    let borrowed: Vec<(&str, &str, u64, &str)> = rows
        .iter()
        .map(|(p, k, c, d)| (p.as_str(), *k, *c, d.as_str()))
        .collect();
    expect(&borrowed)
}

fn basic_expected() -> Shape {
    let line = call_site_line();
    let assemble = format!("assemble (raja_host.cpp:{line})");
    let relax = format!("relax (raja_host.cpp:{line})");
    let mut s = expect_kernels(
        &[
            ("axpy", 3, "host"),
            ("dot", 2, "cuda"),
            ("scale", 1, "hip"),
            ("fill", 1, "sycl"),
            ("offload", 1, "omp_target"),
            ("mystery", 1, "undefined"),
            (&assemble, 2, "host"),
            (&relax, 1, "host"),
        ],
        &[],
    );
    // The unnamed cuda kernel of relax(): same name as its host one, another device.
    s.extend(expect_kernels(&[(&relax, 1, "cuda")], &[]));
    s
}

/// Every init/finalize combination (RAJA applications often call neither): the
/// same profile, started lazily and written at exit when there is no finalize.
#[test]
fn runtime_plugin_with_and_without_init_and_finalize() {
    let want = basic_expected();
    for (label, args) in [
        ("neither", vec!["basic"]),
        ("init", vec!["basic", "--init"]),
        ("finalize", vec!["basic", "--finalize"]),
        ("both", vec!["basic", "--init", "--finalize"]),
        ("getplugin", vec!["basic", "--symbol=getPlugin"]),
    ] {
        let dir = scratch(&format!("raja-basic-{label}"));
        let out = run_ok(host_cmd(&built().host, &dir, &args).env("RAJA_PLUGINS", raja_lib()));
        let p = read_profile(&dir.join("out"));
        assert_eq!(shape(&p), want, "{label}: stderr\n{}", stderr(&out));
        check_anomalies(&p, &[]);
        assert_eq!(plugins(&p), ["raja"], "{label}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("raja_host: basic done"),
            "{label}"
        );
        // Exclusive times of launches are within their totals.
        for n in p["tree"].as_array().expect("tree") {
            assert!(n["self_ns"].as_u64() <= n["total_ns"].as_u64(), "{n}");
        }
    }
}

/// RAJA_PLUGINS naming a directory: every .so in it is loaded (here a link to the
/// plugin, the core found through KPROF_CORE_LIB as the link's directory lacks it).
#[test]
fn runtime_plugin_from_a_directory() {
    let dir = scratch("raja-dir");
    let plugdir = dir.join("plugins");
    std::fs::create_dir_all(&plugdir).expect("mkdir");
    std::os::unix::fs::symlink(lib("libkprof_raja.so"), plugdir.join("libkprof_raja.so"))
        .expect("symlink");
    std::fs::write(plugdir.join("README.txt"), "not a plugin").expect("write");
    run_ok(
        host_cmd(&built().host, &dir, &["threads", "--finalize"])
            .env("RAJA_PLUGINS", &plugdir)
            .env("KPROF_CORE_LIB", lib("libkprof_core.so")),
    );
    let p = read_profile(&dir.join("out"));
    // 2 threads x 5 kernels, merged across threads.
    assert_eq!(shape(&p), expect_kernels(&[("worker", 10, "host")], &[]));
    check_anomalies(&p, &[]);
    assert_eq!(p["threads"].as_array().expect("threads").len(), 2);
}

/// Kernels inside an annotation region nest under it, in the profile and in both
/// traces, with a flow from the region to every RAJA slice (another model).
#[test]
fn kernels_nest_in_annotation_regions_profile_and_traces() {
    let dir = scratch("raja-annotate");
    let out = run_ok(
        host_cmd(&built().host_annotate, &dir, &["annotate"])
            .env("RAJA_PLUGINS", raja_lib())
            .env("KPROF_TRACE", "json,perfetto"),
    );
    let outdir = dir.join("out");
    let p = read_profile(&outdir);
    let line = call_site_line();
    let unnamed = format!("solve / assemble (raja_host.cpp:{line})");
    let want = expect_kernels(
        &[
            ("solve / inner", 2, "host"),
            (&unnamed, 2, "host"),
            ("outer", 1, "host"),
        ],
        &[("solve", "user_region", 1, "null")],
    );
    assert_eq!(shape(&p), want, "stderr\n{}", stderr(&out));
    check_anomalies(&p, &[]);
    assert_eq!(plugins(&p), ["annotation", "raja"]);

    let mut models: Vec<Model> = vec![read_json(&outdir)];
    if !skip_unless(perfetto_schema().is_some(), "protoc") {
        models.push(read_perfetto(&outdir).expect("schema checked"));
    }
    let unnamed_leaf = format!("assemble (raja_host.cpp:{line})");
    for m in &models {
        m.assert_valid();
        let got = m.shape();
        let mut want = std::collections::BTreeMap::new();
        want.insert(("solve".to_string(), "user.region".to_string()), 1);
        for (path, n) in [
            ("solve / inner".to_string(), 2),
            (format!("solve / {unnamed_leaf}"), 2),
            ("outer".to_string(), 1),
        ] {
            want.insert((path, "raja.launch".to_string()), n);
        }
        assert_eq!(got, want, "{:?} trace shape", m.format);
        // The device is an argument of every RAJA slice.
        for s in m.slices.iter().filter(|s| s.category.starts_with("raja.")) {
            assert_eq!(s.args.get("device"), Some(&Value::from("host")), "{s:?}");
        }
        // One flow from the user region to each of its 4 RAJA slices, none else.
        let mut flows = m.flow_names();
        flows.dedup();
        assert_eq!(
            flows,
            [
                ("solve".to_string(), unnamed_leaf.clone()),
                ("solve".to_string(), "inner".to_string()),
            ],
            "{:?} flows",
            m.format
        );
        assert_eq!(m.flows.len(), 4, "{:?} flow count", m.format);
    }
}

/// A PluginContext whose kernel_name is not a libstdc++ C++11 string (another ABI)
/// or whose platform is not a RAJA platform: counted, named by the fallback, and
/// the program goes on.
#[test]
fn unreadable_contexts_are_counted_and_named_by_fallback() {
    let dir = scratch("raja-abi");
    let out = run_ok(host_cmd(&built().host, &dir, &["abi"]).env("RAJA_PLUGINS", raja_lib()));
    let p = read_profile(&dir.join("out"));
    let want = expect_kernels(
        &[
            ("RAJA kernel (host)", 2, "host"),
            ("RAJA kernel (unknown platform)", 1, "unknown"),
            ("after", 1, "host"),
        ],
        &[],
    );
    assert_eq!(shape(&p), want);
    // 3 contexts, each read once (at its launch).
    check_anomalies(&p, &[("internal_errors", 3)]);
    let err = stderr(&out);
    assert_eq!(
        err.matches("RAJA passed a PluginContext kprof cannot read")
            .count(),
        1,
        "one warning:\n{err}"
    );
}

/// RAJA's Kokkos bridge (KOKKOS_PLUGINS=libkprof.so, interface 20171029, empty
/// names, device id 0) with finalize_plugins(), and without it (written at exit).
#[test]
fn kokkos_bridge_labels_raja_kernels() {
    for (label, args) in [
        ("fin", vec!["bridge", "--finalize"]),
        ("exit", vec!["bridge"]),
    ] {
        let dir = scratch(&format!("raja-bridge-{label}"));
        run_ok(
            host_cmd(&built().host, &dir, &args)
                .env("KOKKOS_PLUGINS", lib("libkprof.so"))
                .env("KPROF_TRACE", "json"),
        );
        let outdir = dir.join("out");
        let p = read_profile(&outdir);
        assert_eq!(
            shape(&p),
            expect(&[("RAJA kernel", "parallel_for", 3, "Serial")]),
            "{label}"
        );
        check_anomalies(&p, &[]);
        assert_eq!(plugins(&p), ["kokkos"]);
        assert_eq!(
            p["metadata"]["Kokkos Tools interface version"], "20171029",
            "{label}"
        );
        let m = read_json(&outdir);
        m.assert_valid();
        assert_eq!(m.named("RAJA kernel").len(), 3, "{label}");
        assert!(m
            .named("RAJA kernel")
            .iter()
            .all(|s| s.category == "kokkos.parallel_for"));
    }
}

/// Both loaders: kprof's RAJA plugin records the kernels (names, platforms); the
/// Kokkos bridge's records of the same kernels are left out, so each kernel is
/// counted once and nothing crosses (RAJA calls post callbacks in registration
/// order, which would otherwise make the two records overlap without nesting).
#[test]
fn both_loaders_record_each_kernel_once() {
    let dir = scratch("raja-both");
    run_ok(
        host_cmd(&built().host, &dir, &["both", "--finalize"])
            .env("RAJA_PLUGINS", raja_lib())
            .env("KOKKOS_PLUGINS", lib("libkprof.so")),
    );
    let p = read_profile(&dir.join("out"));
    let want = expect_kernels(&[("axpy", 2, "host")], &[]);
    assert_eq!(shape(&p), want);
    check_anomalies(&p, &[]);
    assert_eq!(plugins(&p), ["kokkos", "raja"]);
}

/// KPROF_ENABLE=0: the plugin is loaded and called, nothing is recorded, no file.
#[test]
fn disabled_records_nothing() {
    let dir = scratch("raja-disabled");
    let out = run_ok(
        host_cmd(&built().host, &dir, &["basic", "--finalize"])
            .env("RAJA_PLUGINS", raja_lib())
            .env("KPROF_ENABLE", "0"),
    );
    assert!(!dir.join("out").exists(), "stderr\n{}", stderr(&out));
}

/// Unnamed kernels launched again and again from two functions, interleaved: each
/// is named after its own launch site every time (the plugin reads the site at a
/// learnt distance up the stack after confirming it once by unwinding).
/// The same from 4 threads at once (the shortcut learnt concurrently), merged
/// across threads.
#[test]
fn unnamed_kernels_keep_their_launch_sites() {
    for (scenario, threads) in [("sites", 1), ("sites_threads", 4)] {
        let dir = scratch(&format!("raja-{scenario}"));
        let out =
            run_ok(host_cmd(&built().host, &dir, &[scenario]).env("RAJA_PLUGINS", raja_lib()));
        let p = read_profile(&dir.join("out"));
        let line = call_site_line();
        let assemble = format!("assemble (raja_host.cpp:{line})");
        let relax = format!("relax (raja_host.cpp:{line})");
        let mut want = expect_kernels(&[(&assemble, 2000, "host"), (&relax, 1000, "host")], &[]);
        want.extend(expect_kernels(&[(&relax, 1000, "cuda")], &[]));
        assert_eq!(shape(&p), want, "{scenario}: stderr\n{}", stderr(&out));
        check_anomalies(&p, &[]);
        assert_eq!(p["threads"].as_array().expect("threads").len(), threads);
    }
}

/// RAJA_PLUGINS and `RAJA::util::init_plugins(path)` naming the same library: RAJA
/// holds two plugin objects and calls both for every kernel. One records, each
/// kernel once; the other is inert, reported once (stderr and metadata).
#[test]
fn plugin_loaded_twice_records_each_kernel_once() {
    let init = format!("--init={}", raja_lib());
    let want = basic_expected();
    for (label, args) in [
        ("exit", vec!["basic", init.as_str()]),
        ("finalize", vec!["basic", init.as_str(), "--finalize"]),
    ] {
        let dir = scratch(&format!("raja-twice-{label}"));
        let out = run_ok(host_cmd(&built().host, &dir, &args).env("RAJA_PLUGINS", raja_lib()));
        let p = read_profile(&dir.join("out"));
        assert_eq!(shape(&p), want, "{label}: stderr\n{}", stderr(&out));
        check_anomalies(&p, &[]);
        assert_eq!(plugins(&p), ["raja"], "{label}");
        assert_eq!(
            p["metadata"]["RAJA duplicate plugin objects"],
            "ignored (RAJA loaded libkprof_raja.so more than once; one object records)",
            "{label}: {}",
            p["metadata"]
        );
        let err = stderr(&out);
        assert_eq!(
            err.matches("RAJA loaded the RAJA plugin more than once")
                .count(),
            1,
            "{label}: one warning:\n{err}"
        );
    }
    // Loaded once (by init_plugins only): no note.
    let dir = scratch("raja-once-init");
    let out = run_ok(&mut host_cmd(
        &built().host,
        &dir,
        &["basic", init.as_str()],
    ));
    let p = read_profile(&dir.join("out"));
    assert_eq!(shape(&p), want);
    assert!(p["metadata"]["RAJA duplicate plugin objects"].is_null());
    assert!(!stderr(&out).contains("more than once"));
}

/// KPROF_RAJA_CAPTURE=1: the capture (RAJA copying the loop body) is the
/// `capture_ns` argument of the kernel's launch, in the profile (min/max per call
/// path) and on every trace slice; without it, no argument.
#[test]
fn capture_time_is_an_argument_of_the_launch() {
    let dir = scratch("raja-capture");
    let out = run_ok(
        host_cmd(&built().host, &dir, &["capture"])
            .env("RAJA_PLUGINS", raja_lib())
            .env("KPROF_RAJA_CAPTURE", "1")
            .env("KPROF_TRACE", "json"),
    );
    let outdir = dir.join("out");
    let p = read_profile(&outdir);
    let want = expect_kernels(&[("slowcopy", 2, "host"), ("cheap", 1, "host")], &[]);
    assert_eq!(shape(&p), want, "stderr\n{}", stderr(&out));
    check_anomalies(&p, &[]);
    let all = kprof_tests::nodes(&p);
    let slow = &kprof_tests::node(&all, &["slowcopy"])["args"]["capture_ns"];
    let cheap = &kprof_tests::node(&all, &["cheap"])["args"]["capture_ns"];
    // The body's copy spins 2 ms; copying an empty lambda takes nanoseconds.
    assert!(slow["min"].as_u64().expect("min") >= 2_000_000, "{slow}");
    assert!(cheap["max"].as_u64().expect("max") < 1_000_000, "{cheap}");
    // The capture is not part of the launch's time.
    let launch_max = kprof_tests::node(&all, &["slowcopy"])["max_ns"]
        .as_u64()
        .expect("max_ns");
    assert!(launch_max < 2_000_000, "launch {launch_max} ns");
    let m = read_json(&outdir);
    m.assert_valid();
    let slices: Vec<_> = m
        .slices
        .iter()
        .filter(|s| s.category == "raja.launch")
        .collect();
    assert_eq!(slices.len(), 3);
    for s in slices {
        let ns = s.args.get("capture_ns").and_then(Value::as_u64);
        match s.name.as_str() {
            "slowcopy" => assert!(ns >= Some(2_000_000), "{s:?}"),
            _ => assert!(ns < Some(1_000_000) && ns.is_some(), "{s:?}"),
        }
    }

    let dir = scratch("raja-capture-off");
    run_ok(host_cmd(&built().host, &dir, &["capture"]).env("RAJA_PLUGINS", raja_lib()));
    let p = read_profile(&dir.join("out"));
    assert_eq!(shape(&p), want);
    for (path, n) in kprof_tests::nodes(&p) {
        assert!(
            n["args"].as_object().is_none_or(|a| a.is_empty()),
            "{path:?}: {}",
            n["args"]
        );
    }
}

/// `kprof run` on a program with RAJA built in (static RAJA: its plugin loader's
/// symbols, or in a stripped program the string RAJA_PLUGINS) loads the RAJA plugin
/// without `--raja`.
#[test]
fn kprof_run_detects_a_static_raja() {
    let host = &built().host;
    let dir = scratch("raja-detect");
    let stripped = dir.join("raja_host_stripped");
    let st = Command::new("strip")
        .arg("--strip-all")
        .arg(host)
        .arg("-o")
        .arg(&stripped)
        .status()
        .expect("strip");
    assert!(st.success());
    for (label, exe, why) in [
        ("symbols", host.as_path(), "RAJA's runtime plugin loader"),
        ("stripped", stripped.as_path(), "RAJA_PLUGINS"),
    ] {
        let mut cmd = clean_cmd(&lib("kprof"));
        cmd.current_dir(&dir)
            .args(["run", "-v", "--summary", "0", "--output", label, "--"])
            .arg(exe)
            .arg("basic");
        let out = run_ok(&mut cmd);
        let err = stderr(&out);
        assert!(err.contains("kprof: detected raja: "), "{label}: {err}");
        assert!(err.contains(why), "{label}: {err}");
        assert!(
            err.contains(&format!("kprof: RAJA_PLUGINS={}\n", raja_lib())),
            "{label}: {err}"
        );
        assert!(
            err.contains("kprof: measuring raja (detected)"),
            "{label}: {err}"
        );
        let p = read_profile(&dir.join(label));
        assert_eq!(plugins(&p), ["raja"], "{label}");
        check_anomalies(&p, &[]);
        let all = kprof_tests::nodes(&p);
        assert_eq!(
            kprof_tests::u(&kprof_tests::node(&all, &["axpy"])["count"]),
            3
        );
        if label == "symbols" {
            assert_eq!(shape(&p), basic_expected());
        }
    }
}

/// A program holding RAJA code but not RAJA's runtime plugin loader (RAJA built
/// without runtime plugins): `kprof run` says RAJA must be rebuilt, and does not
/// hand RAJA a plugin it would ignore.
#[test]
fn kprof_run_says_when_raja_lacks_runtime_plugins() {
    let dir = scratch("raja-no-loader");
    let src = dir.join("no_loader.cpp");
    std::fs::write(
        &src,
        "#include <cstdio>\n\
         namespace RAJA { namespace util {\n\
         __attribute__((noinline)) int callPlugins(int x) { return x + 1; }\n\
         } }\n\
         int main(int argc, char **) { std::printf(\"%d\\n\", RAJA::util::callPlugins(argc)); }\n",
    )
    .expect("write");
    let exe = compile(&[&src], &dir.join("no_loader"), &[]);
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(&dir)
        .args(["run", "-v", "--summary", "0", "--output", "k", "--"])
        .arg(&exe);
    let out = run_ok(&mut cmd);
    let err = stderr(&out);
    assert_eq!(
        err.matches("holds RAJA built without runtime plugins: rebuild RAJA with -DRAJA_ENABLE_RUNTIME_PLUGINS=ON")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("RAJA_PLUGINS="), "{err}");
    assert!(!err.contains("detected raja"), "{err}");
}

/// A loader frame whose size changes from kernel to kernel (a variable-length
/// array): the learnt offset no longer finds the launch site, which the plugin
/// notices; every unnamed kernel keeps its own launch site's name.
#[test]
fn unnamed_kernels_through_a_loader_frame_of_changing_size() {
    let dir = scratch("raja-dynamic-loader");
    let out =
        run_ok(host_cmd(&built().host, &dir, &["dynamic_loader"]).env("RAJA_PLUGINS", raja_lib()));
    let p = read_profile(&dir.join("out"));
    let text = std::fs::read_to_string(test_file("raja/raja_host.cpp")).expect("source");
    let line = text
        .lines()
        .position(|l| l.contains("/* DYNAMIC SITE LINE */") && l.contains("preLaunchDynamic"))
        .expect("marker")
        + 1;
    let want = expect_kernels(
        &[
            (&format!("dyn_a (raja_host.cpp:{line})"), 100, "host"),
            (&format!("dyn_b (raja_host.cpp:{line})"), 100, "host"),
            ("named", 100, "host"),
        ],
        &[],
    );
    assert_eq!(shape(&p), want, "stderr\n{}", stderr(&out));
    check_anomalies(&p, &[]);
}

/// kprof's RAJA layout header against real RAJA: `tests/raja/layout_probe.cpp`,
/// compiled against `ffi-headers/kprof_raja_plugin.hpp`, must print exactly what
/// it printed compiled against real RAJA v2025.09.0 (`tests/raja/real_layout.txt`,
/// written by `tests/scripts/check-real-raja.sh`, which also runs a real RAJA
/// program under the plugin): the vtable slot of every virtual function,
/// `PluginContext`'s size and field offsets, `PluginOptions`, the `Platform` values.
#[test]
fn layout_header_matches_real_raja() {
    let dir = scratch("raja_layout");
    let probe = compile(
        &[&test_file("raja/layout_probe.cpp")],
        &dir.join("layout_probe"),
        &[],
    );
    let out = run(&mut clean_cmd(&probe));
    assert_ok(&out);
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    let real = std::fs::read_to_string(test_file("raja/real_layout.txt")).expect("real_layout.txt");
    let real: Vec<&str> = real.lines().filter(|l| !l.starts_with('#')).collect();
    let ours: Vec<&str> = ours.lines().collect();
    assert!(
        real.iter().any(|l| l.starts_with("slot_finalize ")),
        "real_layout.txt lacks the vtable slots: {real:?}"
    );
    assert_eq!(
        ours, real,
        "kprof_raja_plugin.hpp differs from real RAJA's layout"
    );
}
