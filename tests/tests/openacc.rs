//! kprof's OpenACC plugin (`libkprof_acc.so`) on GCC 12's real libgomp and through
//! a C harness that speaks the OpenACC profiling ABI (`tests/openacc/harness.c`).
//!
//! Facts these tests rely on (GCC 12 libgomp, host fallback, recorded with a
//! printing tool): the first construct initializes the device (device_init
//! start/end, device type 1 "default", parent construct parallel, implicit);
//! compute constructs (parallel, kernels, serial) all report parent construct
//! "parallel" on device type 2 (host) with async -2 (synchronous, even with
//! `async(3)`); a host run reports no data events inside compute constructs, no
//! launches, transfers, allocations or waits; `data` reports enter_data/exit_data
//! with parent construct `data` around its body, `enter data` / `exit data` with
//! their own constructs, `update` with parent `update`; src_file and func_name are
//! NULL; `tool_info` set at a start comes back at its end; no runtime_shutdown.
//!
//! Every test parses `profile.json` and asserts the exact tree (paths, kinds,
//! counts, devices), and decodes both traces (`trace.pftrace` with Perfetto's own
//! schema, `trace.json`) asserting the slices by path and category.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kprof_tests::trace_check::{perfetto_schema, read_json, read_perfetto, Model};
use kprof_tests::{
    assert_ok, compile, lib, nodes, read_profile, run, scratch, shape_rows, skip_unless, test_file,
    u, ShapeRow,
};
use serde_json::{json, Value};

/// The tree as a sorted list of rows (a multiset: upload and download of one
/// variable have the same path).
type Row = ShapeRow;

fn want(list: &[(&str, &str, u64, &str, u32, u32)]) -> Vec<Row> {
    let mut v: Vec<Row> = list
        .iter()
        .map(|&(p, k, n, d, i, q)| {
            let (d, i, q) = if d.is_empty() {
                ("null".into(), "null".into(), "null".into())
            } else {
                (format!("{d:?}"), i.to_string(), q.to_string())
            };
            (p.to_string(), k.to_string(), n, d, i, q)
        })
        .collect();
    v.sort();
    v
}

fn assert_rows(p: &Value, expected: &[(&str, &str, u64, &str, u32, u32)]) {
    let got = shape_rows(p);
    let exp = want(expected);
    if got != exp {
        let show = |v: &[Row]| {
            v.iter()
                .map(|r| format!("  {r:?}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "tree differs\n--- got\n{}\n--- expected\n{}",
            show(&got),
            show(&exp)
        );
    }
}

fn assert_anomalies(p: &Value, nonzero: &[(&str, u64)]) {
    for (k, v) in p["anomalies"].as_object().expect("anomalies") {
        let expected = nonzero.iter().find(|(n, _)| n == k).map_or(0, |&(_, n)| n);
        assert_eq!(u(v), expected, "anomaly {k}: {}", p["anomalies"]);
    }
    assert_eq!(u(&p["dropped_records"]), 0);
}

/// The traces of a run: trace.json always, trace.pftrace when protoc is installed.
fn traces(dir: &Path) -> Vec<Model> {
    let json = read_json(dir);
    json.assert_valid();
    assert!(json.complete, "trace.json lacks its closing ']'");
    let mut v = vec![json];
    if !skip_unless(perfetto_schema().is_some(), "protoc") {
        let pf = read_perfetto(dir).expect("schema checked");
        pf.assert_valid();
        v.push(pf);
    }
    v
}

fn assert_trace_shape(m: &Model, expected: &[(&str, &str, usize)]) {
    let exp: BTreeMap<(String, String), usize> = expected
        .iter()
        .map(|&(p, c, n)| ((p.to_string(), c.to_string()), n))
        .collect();
    assert_eq!(m.shape(), exp, "{:?} trace slices", m.format);
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The OpenACC plugin.
fn acc_lib() -> PathBuf {
    let l = lib("libkprof_acc.so");
    assert!(l.is_file(), "{} was not built", l.display());
    l
}

/// `tests/openacc/<name>.c` built with `gcc -fopenacc` (plus `extra`), once per
/// test process and variant.
fn build_c(name: &str, variant: &str, extra: &[&str]) -> PathBuf {
    static LOCK: OnceLock<std::sync::Mutex<()>> = OnceLock::new();
    let _g = LOCK.get_or_init(Default::default).lock();
    let dir = kprof_tests::target_dir()
        .join("test-scratch")
        .join("openacc-bin");
    std::fs::create_dir_all(&dir).expect("bin dir");
    let out = dir.join(format!("{name}-{variant}"));
    let src = test_file(&format!("openacc/{name}.c"));
    let mut args = vec!["-fopenacc"];
    args.extend_from_slice(extra);
    compile(&[&src], &out, &args)
}

/// Link arguments that make the program depend on the plugin (DT_NEEDED).
fn link_plugin() -> Vec<String> {
    let dir = acc_lib().parent().expect("lib dir").display().to_string();
    vec![
        "-Wl,--no-as-needed".into(),
        format!("-L{dir}"),
        "-lkprof_acc".into(),
        format!("-Wl,-rpath,{dir}"),
    ]
}

/// Runs `exe args` with kprof's settings and `env`, returning (profile, output
/// dir, stdout).
fn kprof_run(
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    label: &str,
) -> (Value, PathBuf, String) {
    let dir = scratch(&format!("openacc-{label}"));
    let out_dir = dir.join("out");
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env_remove("ACC_PROFLIB")
        .env_remove("LD_PRELOAD")
        .env("KPROF_OUTPUT_DIR", &out_dir)
        .env("KPROF_TRACE", "perfetto,json")
        .env("KPROF_FLUSH_MS", "50");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (read_profile(&out_dir), out_dir, stdout)
}

fn metadata(p: &Value, key: &str) -> String {
    p["metadata"][key]
        .as_str()
        .unwrap_or("<absent>")
        .to_string()
}

const HOST: &str = "OpenACC host";
const DEFAULT: &str = "OpenACC default";

/// constructs.c with `rounds` rounds, on GCC's host fallback.
fn constructs_rows(rounds: u64) -> Vec<(&'static str, &'static str, u64, &'static str, u32, u32)> {
    vec![
        ("parallel (implicit)", "acc_device_init", 1, DEFAULT, 0, 0),
        // parallel loop, kernels, serial, parallel loop async(3): all "parallel".
        ("parallel", "acc_compute", 4 * rounds, HOST, 0, 0),
        ("data", "acc_data", rounds, HOST, 0, 0),
        ("data / data", "acc_enter_data", rounds, HOST, 0, 0),
        ("data / parallel", "acc_compute", rounds, HOST, 0, 0),
        ("data / update", "acc_update", rounds, HOST, 0, 0),
        ("data / data", "acc_exit_data", rounds, HOST, 0, 0),
        ("enter data", "acc_enter_data", rounds, HOST, 0, 0),
        ("exit data", "acc_exit_data", rounds, HOST, 0, 0),
    ]
}

fn constructs_trace(rounds: usize) -> Vec<(&'static str, &'static str, usize)> {
    vec![
        ("parallel (implicit)", "openacc.device", 1),
        ("parallel", "openacc.compute", 4 * rounds),
        ("data", "openacc.data", rounds),
        // enter and exit of the data construct.
        ("data / data", "openacc.data", 2 * rounds),
        ("data / parallel", "openacc.compute", rounds),
        ("data / update", "openacc.data", rounds),
        ("enter data", "openacc.data", rounds),
        ("exit data", "openacc.data", rounds),
    ]
}

fn check_constructs(p: &Value, dir: &Path, rounds: u64, registration: &str) {
    assert_rows(p, &constructs_rows(rounds));
    assert_anomalies(p, &[]);
    assert_eq!(p["plugins"], json!(["openacc"]));
    assert_eq!(metadata(p, "OpenACC registration"), registration);
    assert_eq!(metadata(p, "OpenACC version"), "201711");
    for m in traces(dir) {
        assert_trace_shape(&m, &constructs_trace(rounds as usize));
        assert!(
            m.flows.is_empty(),
            "{:?} flows {:?}",
            m.format,
            m.flow_names()
        );
        for s in m.slices.iter().filter(|s| s.name == "parallel") {
            assert_eq!(s.args["device"], json!(HOST), "{:?} {:?}", m.format, s.args);
        }
    }
}

const VIA_PROFLIB: &str = "acc_register_library (ACC_PROFLIB)";
const VIA_CTOR: &str = "acc_prof_register (linked or preloaded)";

/// The C program under ACC_PROFLIB: every construct of 3 rounds, exactly.
#[test]
fn c_constructs_under_acc_proflib() {
    let exe = build_c("constructs", "plain", &[]);
    let lib = acc_lib();
    let (p, dir, stdout) = kprof_run(
        &exe,
        &["3"],
        &[("ACC_PROFLIB", lib.to_str().unwrap())],
        "c-proflib",
    );
    assert!(stdout.starts_with("checksum "), "{stdout}");
    check_constructs(&p, &dir, 3, VIA_PROFLIB);
}

/// Linked into the program (the constructor registers), linked AND named in
/// ACC_PROFLIB (libgomp registers, the constructor stands back), and preloaded:
/// every event is recorded exactly once in each case.
#[test]
fn linked_or_preloaded_registers_exactly_once() {
    let link = link_plugin();
    let link: Vec<&str> = link.iter().map(String::as_str).collect();
    let linked = build_c("constructs", "linked", &link);
    let lib = acc_lib();
    let lib = lib.to_str().unwrap();

    let (p, dir, _) = kprof_run(&linked, &["2"], &[], "linked");
    check_constructs(&p, &dir, 2, VIA_CTOR);

    let (p, dir, _) = kprof_run(&linked, &["2"], &[("ACC_PROFLIB", lib)], "linked-proflib");
    check_constructs(&p, &dir, 2, VIA_PROFLIB);

    let plain = build_c("constructs", "plain", &[]);
    let (p, dir, _) = kprof_run(&plain, &["2"], &[("LD_PRELOAD", lib)], "preload");
    check_constructs(&p, &dir, 2, VIA_CTOR);
}

/// A Fortran program (gfortran -fopenacc) under ACC_PROFLIB.
#[test]
fn fortran_under_acc_proflib() {
    if skip_unless(have("gfortran"), "gfortran") {
        return;
    }
    let dir = kprof_tests::target_dir()
        .join("test-scratch")
        .join("openacc-bin");
    std::fs::create_dir_all(&dir).expect("bin dir");
    let exe = dir.join("saxpy-f90");
    let out = run(Command::new("gfortran")
        .args(["-O2", "-g", "-fopenacc"])
        .arg(test_file("openacc/saxpy.f90"))
        .arg("-o")
        .arg(&exe));
    assert_ok(&out);
    let lib = acc_lib();
    let (p, dir, stdout) = kprof_run(
        &exe,
        &[],
        &[("ACC_PROFLIB", lib.to_str().unwrap())],
        "fortran",
    );
    assert!(stdout.contains("checksum"), "{stdout}");
    assert_rows(
        &p,
        &[
            ("parallel (implicit)", "acc_device_init", 1, DEFAULT, 0, 0),
            ("data", "acc_data", 3, HOST, 0, 0),
            ("data / data", "acc_enter_data", 3, HOST, 0, 0),
            ("data / parallel", "acc_compute", 3, HOST, 0, 0),
            ("data / update", "acc_update", 3, HOST, 0, 0),
            ("data / data", "acc_exit_data", 3, HOST, 0, 0),
            // `kernels` is reported as parallel by GCC.
            ("parallel", "acc_compute", 3, HOST, 0, 0),
        ],
    );
    assert_anomalies(&p, &[]);
    for m in traces(&dir) {
        assert_trace_shape(
            &m,
            &[
                ("parallel (implicit)", "openacc.device", 1),
                ("data", "openacc.data", 3),
                ("data / data", "openacc.data", 6),
                ("data / parallel", "openacc.compute", 3),
                ("data / update", "openacc.data", 3),
                ("parallel", "openacc.compute", 3),
            ],
        );
    }
}

/// The harness, built once: plain (loads the plugin with dlopen) and linked.
fn harness(linked: bool) -> PathBuf {
    static PLAIN: OnceLock<PathBuf> = OnceLock::new();
    static LINKED: OnceLock<PathBuf> = OnceLock::new();
    let cell = if linked { &LINKED } else { &PLAIN };
    cell.get_or_init(|| {
        let dir = kprof_tests::target_dir()
            .join("test-scratch")
            .join("openacc-bin");
        std::fs::create_dir_all(&dir).expect("bin dir");
        let src = test_file("openacc/harness.c");
        if linked {
            let mut args = vec!["-rdynamic".to_string()];
            args.extend(link_plugin());
            args.push("-ldl".into());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            compile(&[&src], &dir.join("harness-linked"), &args)
        } else {
            compile(&[&src], &dir.join("harness"), &["-ldl"])
        }
    })
    .clone()
}

fn run_harness(
    linked: bool,
    scenario: &str,
    env: &[(&str, &str)],
    label: &str,
) -> (Value, PathBuf, String) {
    let lib = acc_lib();
    let lib = lib.to_str().unwrap().to_string();
    let exe = harness(linked);
    let args: Vec<&str> = if linked {
        vec!["linked", scenario]
    } else {
        vec!["dlopen", &lib, scenario]
    };
    kprof_run(&exe, &args, env, label)
}

/// The profile labels device 1 of a back end `<back end>:1`.
const NV: &str = "OpenACC nvidia:1";
const SAXPY: &str = "saxpy (saxpy.c:12)";
const LAUNCH: &str = "saxpy_12_gpu";
const ASYNC_LAUNCH: &str = "scale_30_gpu";

fn check_device_run(p: &Value, dir: &Path, registration: &str) {
    let c = SAXPY;
    let e = format!("{c} / {c}");
    let paths: Vec<String> = vec![
        format!("{e} / x"),
        format!("{e} / y"),
        format!("{c} / {LAUNCH}"),
    ];
    let s = |i: usize| paths[i].as_str();
    assert_rows(
        p,
        &[
            (c, "acc_device_init", 1, NV, 1, 0),
            (c, "acc_compute", 3, NV, 1, 0),
            (&e, "acc_enter_data", 3, NV, 1, 0),
            (s(0), "acc_upload", 3, NV, 1, 0),
            (s(1), "acc_upload", 3, NV, 1, 0),
            (s(2), "acc_launch", 3, NV, 1, 0),
            (&e, "acc_exit_data", 3, NV, 1, 0),
            (s(1), "acc_download", 3, NV, 1, 0),
            // async(2): instance 2.
            ("saxpy (saxpy.c:30)", "acc_compute", 1, NV, 1, 2),
            (
                &format!("saxpy (saxpy.c:30) / {ASYNC_LAUNCH}"),
                "acc_launch",
                1,
                NV,
                1,
                2,
            ),
            ("saxpy (saxpy.c:33)", "acc_wait", 1, NV, 1, 2),
            ("saxpy (saxpy.c:40)", "acc_enter_data", 1, NV, 1, 0),
            ("shutdown", "acc_device_shutdown", 1, NV, 1, 0),
        ],
    );
    assert_anomalies(p, &[]);
    assert_eq!(metadata(p, "OpenACC registration"), registration);
    // The launch shape is in the launch nodes' arguments.
    let all = nodes(p);
    for (name, shape) in [(LAUNCH, (32, 1, 128)), (ASYNC_LAUNCH, (8, 1, 32))] {
        let (_, n) = all
            .iter()
            .find(|(path, _)| path.last().map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("no launch {name}"));
        let arg = |k: &str| (u(&n["args"][k]["min"]), u(&n["args"][k]["max"]));
        assert_eq!(
            (arg("gangs"), arg("workers"), arg("vector_length")),
            ((shape.0, shape.0), (shape.1, shape.1), (shape.2, shape.2)),
            "{name}: {}",
            n["args"]
        );
    }
    // Bytes per variable and direction.
    let mut copies: Vec<(String, String, String, String, u64, u64)> = p["deep_copies"]
        .as_array()
        .expect("deep_copies")
        .iter()
        .map(|c| {
            (
                c["dst_space"].as_str().unwrap().to_string(),
                c["dst_label"].as_str().unwrap().to_string(),
                c["src_space"].as_str().unwrap().to_string(),
                c["src_label"].as_str().unwrap().to_string(),
                u(&c["count"]),
                u(&c["bytes"]),
            )
        })
        .collect();
    copies.sort();
    // Transfers go between "Host" and the device (its profile label).
    let dev = NV.to_string();
    let host = "Host".to_string();
    let (x, y) = ("x".to_string(), "y".to_string());
    assert_eq!(
        copies,
        vec![
            (host.clone(), y.clone(), dev.clone(), y.clone(), 3, 12000),
            (dev.clone(), x.clone(), host.clone(), x.clone(), 3, 12000),
            (dev.clone(), y.clone(), host.clone(), y.clone(), 3, 12000),
        ]
    );
    // Device memory: 7 allocations (x, y 3 times, tmp), tmp leaked.
    let memory = p["memory"].as_array().expect("memory");
    assert_eq!(memory.len(), 2, "{memory:?}");
    for (space, addr) in [
        ("acc device 1", Some("0x7f0000300000")),
        ("acc device 1 present", None),
    ] {
        let m = memory
            .iter()
            .find(|m| m["space"] == space)
            .unwrap_or_else(|| panic!("no space {space}: {memory:?}"));
        assert_eq!(
            (u(&m["allocations"]), u(&m["deallocations"])),
            (7, 6),
            "{m}"
        );
        assert_eq!(
            (u(&m["current_bytes"]), u(&m["high_water_bytes"])),
            (2048, 8000)
        );
        let leaks = m["leaks"].as_array().expect("leaks");
        assert_eq!(leaks.len(), 1, "{m}");
        assert_eq!(leaks[0]["label"], "tmp");
        assert_eq!(u(&leaks[0]["bytes"]), 2048);
        if let Some(a) = addr {
            assert_eq!(leaks[0]["address"], a);
        }
    }
    let e = format!("{SAXPY} / {SAXPY}");
    let owned: Vec<(String, &str, usize)> = vec![
        (SAXPY.into(), "openacc.device", 1),
        (SAXPY.into(), "openacc.compute", 3),
        (e.clone(), "openacc.data", 6),
        (format!("{e} / x"), "openacc.transfer", 3),
        (format!("{e} / y"), "openacc.transfer", 6),
        (format!("{SAXPY} / {LAUNCH}"), "openacc.launch", 3),
        ("saxpy (saxpy.c:30)".into(), "openacc.compute", 1),
        (
            format!("saxpy (saxpy.c:30) / {ASYNC_LAUNCH}"),
            "openacc.launch",
            1,
        ),
        ("saxpy (saxpy.c:33)".into(), "openacc.wait", 1),
        ("saxpy (saxpy.c:40)".into(), "openacc.data", 1),
        ("shutdown".into(), "openacc.device", 1),
    ];
    let expected: Vec<(&str, &str, usize)> =
        owned.iter().map(|(a, b, n)| (a.as_str(), *b, *n)).collect();
    for m in traces(dir) {
        assert_trace_shape(&m, &expected);
        // Transfers carry bytes and direction; launches their shape and queue.
        for s in m.named("x") {
            assert_eq!(s.args["bytes"], json!(4000), "{:?} {:?}", m.format, s.args);
            assert_eq!(s.args["direction"], json!("to_device"));
        }
        for s in m.named(ASYNC_LAUNCH) {
            assert_eq!(s.args["instance"], json!(2), "{:?} {:?}", m.format, s.args);
            assert_eq!(s.args["device_index"], json!(1));
            assert_eq!(s.args["gangs"], json!(8), "{:?} {:?}", m.format, s.args);
            assert_eq!(s.args["vector_length"], json!(32));
        }
        assert!(m.flow_names().is_empty(), "{:?} flows", m.format);
        // Device memory in use over time, per space.
        let series = m.counter("present");
        assert_eq!(series.len(), 13, "{:?} {series:?}", m.format);
        assert_eq!(series.last().map(|s| s.1), Some(2048.0));
        assert_eq!(series.iter().map(|s| s.1).fold(0.0, f64::max), 8000.0);
    }
}

/// A device run through the ABI, the plugin loaded as libgomp loads it.
#[test]
fn harness_device_run_dlopen() {
    let (p, dir, stdout) = run_harness(false, "device", &[], "harness-device");
    assert_eq!(stdout, "registrations 25 events 1..25\n");
    check_device_run(&p, &dir, VIA_PROFLIB);
}

/// The same run with the plugin linked into the program: the constructor registers
/// through the program's `acc_prof_register`; a later `acc_register_library` call
/// registers nothing more (the harness fails on a second registration of an event).
#[test]
fn harness_device_run_linked() {
    let (p, dir, stdout) = run_harness(true, "device", &[], "harness-linked");
    assert_eq!(stdout, "registrations 25 events 1..25\n");
    check_device_run(&p, &dir, VIA_CTOR);
}

/// NULL pointers, short `valid_bytes` with garbage beyond, unknown event types,
/// ends without starts and an unknown free: recorded where possible, counted,
/// never a crash.
/// Unknown event types the bad scenario sends: 0 (all-NULL call), 26 and 1000.
const UNKNOWN_EVENTS: u64 = 3;

#[test]
fn harness_bad_inputs() {
    let (p, dir, stdout) = run_harness(false, "bad", &[], "harness-bad");
    assert_eq!(stdout, "registrations 25 events 1..25\n");
    assert_rows(
        &p,
        &[
            // NULL acc_prof_info: no device.
            ("kernels", "acc_compute", 1, "", 0, 0),
            // NULL acc_event_info: the construct is unknown.
            ("compute construct", "acc_compute", 1, NV, 1, 0),
            // valid_bytes 20: async (77) and the source location are not read.
            ("serial", "acc_compute", 1, NV, 1, 0),
            ("short", "acc_upload", 1, NV, 1, 0),
            ("kernel", "acc_launch", 1, NV, 1, 0),
        ],
    );
    // compute, update and download ends without a start; the free of memory never
    // allocated.
    assert_anomalies(
        &p,
        &[
            ("unmatched_ends", 3),
            ("unknown_frees", 1),
            ("unknown_events", UNKNOWN_EVENTS),
        ],
    );
    for t in ["0", "26", "(other)"] {
        assert_eq!(
            metadata(&p, &format!("OpenACC unknown event {t}")),
            "ignored"
        );
    }
    let copies = p["deep_copies"].as_array().expect("deep_copies");
    assert_eq!(copies.len(), 1);
    assert_eq!(u(&copies[0]["bytes"]), 512);
    let memory = p["memory"].as_array().expect("memory");
    assert_eq!(memory.len(), 1, "{memory:?}");
    assert_eq!(memory[0]["space"], "acc device 1");
    assert_eq!(
        (
            u(&memory[0]["allocations"]),
            u(&memory[0]["deallocations"]),
            u(&memory[0]["current_bytes"])
        ),
        (1, 1, 0)
    );
    assert_eq!(memory[0]["largest"][0]["label"], "(unnamed)");
    for m in traces(&dir) {
        assert_trace_shape(
            &m,
            &[
                ("kernels", "openacc.compute", 1),
                ("compute construct", "openacc.compute", 1),
                ("serial", "openacc.compute", 1),
                ("short", "openacc.transfer", 1),
                ("kernel", "openacc.launch", 1),
            ],
        );
    }
}

/// KPROF_ENABLE=0: the plugin registers no callback at all.
#[test]
fn disabled_registers_nothing() {
    let lib = acc_lib();
    let exe = harness(false);
    let dir = scratch("openacc-disabled");
    let out = run(Command::new(exe)
        .args(["dlopen", lib.to_str().unwrap(), "device"])
        .env("KPROF_ENABLE", "0")
        .env("KPROF_OUTPUT_DIR", dir.join("out")));
    assert_ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "registrations 0 events -1..-1\n"
    );
    assert!(!dir.join("out").exists());
}
