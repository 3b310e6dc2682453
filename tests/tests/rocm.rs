//! The ROCm plugin (`libkprof_rocm.so`) on a machine without an AMD GPU: loaded
//! as rocprofiler-sdk loads a tool, by a stand-in `librocprofiler-sdk.so`
//! (`tests/harness/rocprofiler_standin.c`, written from rocprofiler-sdk's
//! documentation): `ROCP_TOOL_LIBRARIES` opened with `RTLD_GLOBAL | RTLD_LAZY`,
//! `rocprofiler_configure`, the tool's initialize creating its context, services
//! and buffer through the stand-in's functions, its finalize at exit. The program
//! (`tests/harness/rocm_driver.c`) replays HIP calls inside kprof annotation
//! regions, with the kernel dispatches, copies and allocations they cause
//! delivered to the tool's buffer callback, one batch out of order, one record
//! with a correlation id no call had, one record of a kind nobody asked for,
//! and 3 dropped records.
//!
//! The stand-in logs every call it reports and record it writes (`STANDIN_LOG`),
//! with the replayed times in CLOCK_MONOTONIC ns, its own clock being
//! CLOCK_MONOTONIC + 5e17 ns, so a tool must convert. The tests compare kprof's
//! profile.json and decoded Perfetto trace with that log, exactly: the device
//! nodes under the region open at their launch with the replayed durations,
//! device "HIP" 0 and the queue's track, the copies by direction and bytes, the
//! device memory with its leak, the anomalies; in the trace, tracks "HIP:0 stream
//! <n>" holding the replayed work at its times, and a flow from each launching
//! HIP call.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use kprof_tests::standin::{assert_anomalies, launching_call, Log};
use kprof_tests::trace_check::{perfetto_schema, read_perfetto, Model};
use kprof_tests::{
    clean_cmd, compile, compile_with_core, lib_dir, nodes, read_profile, run, scratch, shape_rows,
    skip_unless, test_file, u, ShapeRow,
};
use serde_json::{json, Value};

// ---------------------------------------------------------------- building

/// `target/release/libkprof_rocm.so` (built with the other plugins, see
/// `kprof_tests::lib_dir`).
fn plugin() -> PathBuf {
    lib_dir().join("libkprof_rocm.so")
}

/// The stand-in's SDK version: its record layouts differ (see
/// `rocprofiler_standin.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sdk {
    /// SDK 0.6.0 (ROCm 6.4).
    V0_6,
    /// SDK 1.0.0 (ROCm 7.0): longer correlation ids in callback and memory
    /// allocation records, a sized client id, memory allocation kind 16.
    V1_0,
}

impl Sdk {
    fn version(self) -> &'static str {
        match self {
            Sdk::V0_6 => "0.6.0",
            Sdk::V1_0 => "1.0.0",
        }
    }
}

/// The driver with the stand-in of `sdk`: linked with the stand-in
/// librocprofiler-sdk.so (in a directory of its own, named as the real library is)
/// and the core.
fn driver_of(sdk: Sdk) -> PathBuf {
    static BUILT: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    BUILT[sdk as usize]
        .get_or_init(|| {
            let dir = scratch(&format!("rocm_bin_{}", sdk.version()));
            let sdk_dir = dir.join("sdk");
            std::fs::create_dir_all(&sdk_dir).expect("mkdir");
            let harness = format!("-I{}", test_file("harness").display());
            let abi = if sdk == Sdk::V1_0 {
                "-DSTANDIN_SDK_1"
            } else {
                "-DSTANDIN_SDK_0"
            };
            compile(
                &[&test_file("harness/rocprofiler_standin.c")],
                &sdk_dir.join("librocprofiler-sdk.so"),
                &[
                    &harness,
                    abi,
                    "-shared",
                    "-fPIC",
                    "-fvisibility=hidden",
                    "-lpthread",
                    "-ldl",
                ],
            );
            let sdk = sdk_dir;
            let l = format!("-L{}", sdk.display());
            let rpath = format!("-Wl,-rpath,{}", sdk.display());
            compile_with_core(
                &[&test_file("harness/rocm_driver.c")],
                &dir.join("rocm_driver"),
                &[&harness, &l, "-lrocprofiler-sdk", &rpath],
            )
        })
        .clone()
}

// ----------------------------------------------------------------- running

/// How the events reach the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No trace: aggregated in place.
    InPlace,
    /// `KPROF_TRACE=perfetto`: records through the writer, and a trace.
    Perfetto,
}

/// One run of the driver: its output, kprof's files and the stand-in's log.
struct RunResult {
    out: Output,
    dir: PathBuf,
    log: Log,
}

impl RunResult {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    fn what(&self) -> String {
        format!(
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.out.status,
            self.stdout(),
            self.stderr()
        )
    }

    fn profile(&self) -> Value {
        read_profile(&self.dir.join("out"))
    }
}

/// Runs `rocm_driver args` in scratch directory `name`, the plugin in
/// `ROCP_TOOL_LIBRARIES` when `tool`, in `mode`, with `env` on top.
fn run_driver(
    name: &str,
    args: &[&str],
    tool: bool,
    mode: Mode,
    env: &[(&str, &str)],
) -> RunResult {
    run_driver_of(Sdk::V0_6, name, args, tool, mode, env)
}

/// [`run_driver`] with the stand-in of `sdk`.
fn run_driver_of(
    sdk: Sdk,
    name: &str,
    args: &[&str],
    tool: bool,
    mode: Mode,
    env: &[(&str, &str)],
) -> RunResult {
    let dir = scratch(name);
    let log = dir.join("standin.log");
    let mut cmd = clean_cmd(&driver_of(sdk));
    cmd.current_dir(&dir)
        .args(args)
        .env_remove("ROCP_TOOL_LIBRARIES")
        .env_remove("STANDIN_FAIL")
        .env_remove("STANDIN_CLOCK_OFFSET_NS")
        .env("STANDIN_LOG", &log)
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_SUMMARY", "0");
    if tool {
        cmd.env("ROCP_TOOL_LIBRARIES", plugin());
    }
    if mode == Mode::Perfetto {
        cmd.env("KPROF_TRACE", "perfetto");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    RunResult {
        out,
        dir,
        log: Log::parse(&text),
    }
}

/// stderr's lines.
fn lines(s: &str) -> Vec<&str> {
    s.lines().filter(|l| !l.is_empty()).collect()
}

// -------------------------------------------------------- the stand-in's log

const SAXPY: &str = "saxpy(int, float, float const*, float*)";
const FOO: &str = "foo<int>(int*)";

/// The track instance of a queue: queues are numbered per device in the order
/// their first record reaches the plugin. The batches are delivered newest
/// first, so queue 0xb000 (the "solve" kernels) comes before 0xa000 (whose
/// first record in that batch is the orphan).
fn instance_of_queue(queue: &str) -> u32 {
    match queue {
        "0xb000" => 1,
        "0xa000" => 2,
        q => panic!("unexpected queue {q}"),
    }
}

/// A device activity the basic scenario replays, as the stand-in logged it.
#[derive(Debug, Clone)]
struct Replayed {
    name: &'static str,
    kind: &'static str,
    category: &'static str,
    /// The region open at its launch ("" at the root).
    region: &'static str,
    /// The HIP call that launched it and its correlation id (None: the orphan).
    launch: Option<(&'static str, u64)>,
    /// Track instance on HIP device 0.
    instance: u32,
    start: u64,
    end: u64,
}

/// Every device activity of the basic scenario, from the stand-in's log.
fn replayed(log: &Log) -> Vec<Replayed> {
    let mut v = Vec::new();
    for k in log.records("kernel") {
        let corr = k.num("corr");
        let (name, region, launch) = match corr {
            1 => (SAXPY, "step", Some(("hipLaunchKernel", 1))),
            3 | 4 => (FOO, "solve", Some(("hipLaunchKernel", corr))),
            999 => (SAXPY, "", None),
            c => panic!("unexpected kernel correlation {c}"),
        };
        v.push(Replayed {
            name,
            kind: "gpu_kernel",
            category: "gpu.kernel",
            region,
            launch,
            instance: instance_of_queue(k.get("queue")),
            start: k.num("start"),
            end: k.num("end"),
        });
    }
    for c in log.records("copy") {
        let corr = c.num("corr");
        let (name, region, launch) = match corr {
            2 => ("memcpy HtoD", "step", ("hipMemcpy", 2)),
            5 => ("memcpy DtoH", "solve", ("hipMemcpyAsync", 5)),
            c => panic!("unexpected copy correlation {c}"),
        };
        v.push(Replayed {
            name,
            kind: "gpu_memcpy",
            category: "gpu.memory",
            region,
            launch: Some(launch),
            instance: 0,
            start: c.num("start"),
            end: c.num("end"),
        });
    }
    assert_eq!(v.len(), 6, "replayed activities: {v:?}");
    v
}

fn path_of(region: &str, name: &str) -> String {
    if region.is_empty() {
        name.to_string()
    } else {
        format!("{region} / {name}")
    }
}

/// The call-path tree the basic scenario must give.
fn expected_rows(acts: &[Replayed]) -> Vec<ShapeRow> {
    let null = || "null".to_string();
    let host = |path: &str, kind: &str, count: u64| {
        (
            path.to_string(),
            kind.to_string(),
            count,
            null(),
            null(),
            null(),
        )
    };
    let mut rows = vec![
        host("step", "user_region", 1),
        host("step / hipLaunchKernel", "gpu_api", 1),
        host("step / hipMemcpy", "gpu_api", 1),
        host("solve", "user_region", 1),
        host("solve / hipLaunchKernel", "gpu_api", 2),
        host("solve / hipMemcpyAsync", "gpu_api", 1),
        host("solve / hipDeviceSynchronize", "gpu_api", 1),
        host("hipMalloc", "gpu_api", 2),
        host("hipFree", "gpu_api", 1),
    ];
    let mut device: BTreeMap<(String, &str, u32), u64> = BTreeMap::new();
    for a in acts {
        *device
            .entry((path_of(a.region, a.name), a.kind, a.instance))
            .or_default() += 1;
    }
    for ((path, kind, instance), count) in device {
        rows.push((
            path,
            kind.to_string(),
            count,
            "\"HIP\"".into(),
            "0".into(),
            instance.to_string(),
        ));
    }
    rows.sort();
    rows
}

/// The device nodes: count, total, min and max are the replayed durations,
/// exactly (converting clocks moves times, never durations); a kernel's args.
fn assert_device_nodes(p: &Value, acts: &[Replayed], what: &str) {
    let all = nodes(p);
    let mut by_path: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for a in acts {
        by_path
            .entry(path_of(a.region, a.name))
            .or_default()
            .push(a.end - a.start);
    }
    for (path, durs) in by_path {
        let parts: Vec<&str> = path.split(" / ").collect();
        let n = kprof_tests::node(&all, &parts);
        assert_eq!(
            (
                u(&n["count"]),
                u(&n["total_ns"]),
                u(&n["min_ns"]),
                u(&n["max_ns"])
            ),
            (
                durs.len() as u64,
                durs.iter().sum::<u64>(),
                *durs.iter().min().unwrap(),
                *durs.iter().max().unwrap()
            ),
            "{what}: {path}: {n}"
        );
    }
    let templated = kprof_tests::node(&all, &["solve", FOO]);
    for (k, v) in [
        ("grid_x", 128),
        ("grid_y", 2),
        ("grid_z", 1),
        ("workgroup_x", 64),
        ("workgroup_y", 1),
        ("workgroup_z", 1),
        ("lds_bytes", 4096),
        ("scratch_bytes", 16),
        ("sgprs", 16),
        ("vgprs", 34),
    ] {
        assert_eq!(
            templated["args"][k],
            json!({"min": v, "max": v}),
            "{what}: {FOO} {k}: {}",
            templated["args"]
        );
    }
}

/// The `gpu` section: copies by direction with bytes, kernels by name, the
/// device's memory high water and leak.
fn assert_gpu_section(p: &Value, acts: &[Replayed], what: &str) {
    let gpu = &p["gpu"];
    let dur = |name: &str| -> u64 {
        acts.iter()
            .filter(|a| a.name == name)
            .map(|a| a.end - a.start)
            .sum()
    };
    let copies: BTreeSet<(String, String, u64, u64, u64)> = gpu["copies"]
        .as_array()
        .expect("gpu.copies")
        .iter()
        .map(|c| {
            (
                c["device"].as_str().unwrap_or_default().to_string(),
                c["direction"].as_str().unwrap_or_default().to_string(),
                u(&c["count"]),
                u(&c["bytes"]),
                u(&c["total_ns"]),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, u64, u64, u64)> = [
        ("HIP:0", "HtoD", 1, 1 << 20, dur("memcpy HtoD")),
        ("HIP:0", "DtoH", 1, 64 << 10, dur("memcpy DtoH")),
    ]
    .into_iter()
    .map(|(d, dir, n, b, t)| (d.to_string(), dir.to_string(), n, b, t))
    .collect();
    assert_eq!(copies, want, "{what}: gpu.copies {}", gpu["copies"]);
    let kernels: BTreeSet<(String, String, u64, u64)> = gpu["kernels"]
        .as_array()
        .expect("gpu.kernels")
        .iter()
        .map(|k| {
            (
                k["name"].as_str().unwrap_or_default().to_string(),
                k["device"].as_str().unwrap_or_default().to_string(),
                u(&k["count"]),
                u(&k["total_ns"]),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, u64, u64)> = [(SAXPY, 2), (FOO, 2)]
        .into_iter()
        .map(|(n, c)| (n.to_string(), "HIP:0".to_string(), c, dur(n)))
        .collect();
    assert_eq!(kernels, want, "{what}: gpu.kernels {}", gpu["kernels"]);
    let devices = gpu["devices"].as_array().expect("gpu.devices");
    assert_eq!(devices.len(), 1, "{what}: {devices:?}");
    let d = &devices[0];
    assert_eq!(
        (
            d["device"].as_str(),
            u(&d["activities"]),
            u(&d["memory_high_water_bytes"]),
            u(&d["leaked_bytes"]),
            u(&d["leaked_allocations"])
        ),
        (Some("HIP:0"), 6, 10 << 20, 8 << 20, 1),
        "{what}: {d}"
    );
}

/// Device memory: one space, "HIP:0", two allocations (8 MiB, then 2 MiB freed
/// again): high water 10 MiB, 8 MiB leaked at 0x7f4a00000000.
fn assert_device_memory(p: &Value, what: &str) {
    let mem = p["memory"].as_array().expect("memory");
    assert_eq!(mem.len(), 1, "{what}: memory {mem:?}");
    let m = &mem[0];
    assert_eq!(m["space"], "HIP:0", "{what}: {m}");
    assert_eq!(
        (
            u(&m["allocations"]),
            u(&m["deallocations"]),
            u(&m["current_bytes"]),
            u(&m["high_water_bytes"])
        ),
        (2, 1, 8 << 20, 10 << 20),
        "{what}: {m}"
    );
    assert_eq!(
        m["leaks"],
        json!([{"label": "device", "bytes": 8 << 20, "address": "0x7f4a00000000"}]),
        "{what}: {m}"
    );
}

/// What two runs of the replay share: the tree with the device nodes' times and
/// args, memory but for when its high water was reached, anomalies.
fn comparable(p: &Value, acts: &[Replayed]) -> Value {
    let all = nodes(p);
    let device: Vec<Value> = acts
        .iter()
        .map(|a| path_of(a.region, a.name))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|path| {
            let parts: Vec<&str> = path.split(" / ").collect();
            let n = kprof_tests::node(&all, &parts);
            json!([path, n["total_ns"], n["min_ns"], n["max_ns"], n["args"]])
        })
        .collect();
    let mut memory = p["memory"].clone();
    for m in memory.as_array_mut().into_iter().flatten() {
        if let Some(o) = m.as_object_mut() {
            o.remove("high_water_ns");
        }
    }
    json!({
        "tree": format!("{:?}", shape_rows(p)),
        "device": device,
        "memory": memory,
        "anomalies": p["anomalies"],
    })
}

// ------------------------------------------------------------------- trace

/// How far a device slice's begin in the trace may be from the replayed one:
/// the plugin converts the SDK's clock with an offset measured between `now_ns`
/// and `rocprofiler_get_timestamp` (the CUDA plugin's method and bound, see
/// tests/tests/cuda.rs); far below the 5e17 ns a missing conversion leaves.
const TOLERANCE_NS: u64 = 50_000;

/// The decoded Perfetto trace of a basic run, checked against the replay.
fn check_trace(dir: &Path, acts: &[Replayed], log: &Log, what: &str) {
    if skip_unless(perfetto_schema().is_some(), "protoc") {
        return;
    }
    let m: Model = read_perfetto(&dir.join("out")).expect("schema checked");
    m.assert_valid();

    // The HIP calls are slices on the program's thread, under their regions.
    let api: BTreeMap<(String, String), usize> = m
        .shape()
        .into_iter()
        .filter(|((path, cat), _)| cat == "gpu.api" && !path.ends_with("launch"))
        .collect();
    let want_api: BTreeMap<(String, String), usize> = [
        ("step / hipLaunchKernel", 1),
        ("step / hipMemcpy", 1),
        ("solve / hipLaunchKernel", 2),
        ("solve / hipMemcpyAsync", 1),
        ("solve / hipDeviceSynchronize", 1),
        ("hipMalloc", 2),
        ("hipFree", 1),
    ]
    .into_iter()
    .map(|(p, n)| ((p.to_string(), "gpu.api".to_string()), n))
    .collect();
    assert_eq!(api, want_api, "{what}: API slices");

    // Every device activity: one slice on the track "HIP:0 stream <instance>",
    // at the replayed time, of the replayed duration, with one flow from the HIP
    // call that launched it (none for the orphan).
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    for a in acts {
        let found = m.slices.iter().enumerate().find(|(i, s)| {
            s.name == a.name && s.begin_ns.abs_diff(a.start) <= TOLERANCE_NS && !seen.contains(i)
        });
        let Some((i, s)) = found else {
            panic!(
                "{what}: no slice {:?} within {TOLERANCE_NS} ns of {}; slices of that name: {:?}",
                a.name,
                a.start,
                m.named(a.name)
                    .iter()
                    .map(|s| (s.begin_ns, s.end_ns))
                    .collect::<Vec<_>>()
            );
        };
        seen.insert(i);
        assert_eq!(
            s.end_ns - s.begin_ns,
            a.end - a.start,
            "{what}: {:?} duration",
            a.name
        );
        assert_eq!(s.category, a.category, "{what}: {:?}", a.name);
        assert!(
            m.tid_of(s.track).is_none(),
            "{what}: {:?} on a thread track",
            a.name
        );
        assert_eq!(
            m.tracks[&s.track].name,
            format!("HIP:0 stream {}", a.instance),
            "{what}: {:?}'s track",
            a.name
        );
        let into: Vec<usize> = m
            .flows
            .iter()
            .filter(|&&(_, d)| d == i)
            .map(|&(src, _)| src)
            .collect();
        match a.launch {
            None => assert!(into.is_empty(), "{what}: the orphan has a flow"),
            Some((api_name, corr)) => {
                assert_eq!(into.len(), 1, "{what}: flows into {:?}: {into:?}", a.name);
                let src = launching_call(&m, into[0]);
                assert_eq!(src.name, api_name, "{what}: flow into {:?}", a.name);
                assert!(
                    m.tid_of(src.track).is_some(),
                    "{what}: {api_name} off-thread"
                );
                let (enter, exit) = log.api_span(api_name, corr);
                assert!(
                    src.begin_ns + TOLERANCE_NS >= enter && src.end_ns <= exit + TOLERANCE_NS,
                    "{what}: the flow into {:?} comes from the {api_name} slice [{}, {}], not \
                     from the call of correlation {corr} [{enter}, {exit}]",
                    a.name,
                    src.begin_ns,
                    src.end_ns
                );
            }
        }
    }
    assert_eq!(m.flows.len(), 5, "{what}: flows {:?}", m.flow_names());
    // Three device tracks: the copies' and the two queues'.
    let tracks: BTreeSet<&str> = seen
        .iter()
        .map(|&i| m.tracks[&m.slices[i].track].name.as_str())
        .collect();
    assert_eq!(
        tracks,
        BTreeSet::from(["HIP:0 stream 0", "HIP:0 stream 1", "HIP:0 stream 2"]),
        "{what}"
    );
}

// ------------------------------------------------------------------- tests

/// The basic replay, in place and traced: the exact tree, device times and args,
/// copies, memory and anomalies, the same in both modes, and the trace's device
/// tracks and flows.
#[test]
fn basic_replay_in_place_and_traced() {
    for sdk in [Sdk::V0_6, Sdk::V1_0] {
        basic_replay(sdk);
    }
}

/// [`basic_replay_in_place_and_traced`] with the stand-in of `sdk`: the same
/// profile from either SDK layout (kernels, copies, API calls and their
/// correlation, memory allocations, the client's name).
fn basic_replay(sdk: Sdk) {
    let mut seen: Vec<Value> = Vec::new();
    for mode in [Mode::InPlace, Mode::Perfetto] {
        let v = sdk.version();
        let r = run_driver_of(
            sdk,
            &format!("rocm_basic_{v}_{mode:?}"),
            &["basic"],
            true,
            mode,
            &[],
        );
        let what = format!("SDK {v} {mode:?}");
        assert!(r.out.status.success(), "{}", r.what());
        assert_eq!(r.stdout(), "basic: done\n", "{what}");
        let err = r.stderr();
        assert_eq!(
            lines(&err),
            [format!("kprof: GPU activity: rocprofiler-sdk {v} active")],
            "{what}: stderr"
        );
        // Loaded as the SDK loads a tool: configured (named), initialized, and
        // finalized at exit.
        let log = &r.log;
        assert_eq!(log.count("configure"), 1, "{what}: {log:?}");
        assert_eq!(
            log.entries
                .iter()
                .find(|e| e.tag == "configure")
                .map(|e| e.get("name")),
            Some("kprof"),
            "{what}"
        );
        assert_eq!(log.count("initialize"), 1, "{what}");
        assert_eq!(log.count("finalize"), 1, "{what}");
        assert_eq!(log.count("complete"), 2, "{what}: two batches delivered");
        let acts = replayed(log);

        let p = r.profile();
        let mut got = shape_rows(&p);
        got.sort();
        assert_eq!(got, expected_rows(&acts), "{what}: the tree");
        assert_device_nodes(&p, &acts, &what);
        assert_gpu_section(&p, &acts, &what);
        assert_device_memory(&p, &what);
        assert_anomalies(
            &p,
            &[
                ("device_unknown_correlation", 1),
                ("unknown_events", 1),
                ("device_records_dropped", 3),
            ],
            &what,
        );
        assert!(
            p["plugins"]
                .as_array()
                .is_some_and(|v| v.contains(&json!("rocm"))),
            "{what}: plugins {}",
            p["plugins"]
        );
        assert_eq!(p["metadata"]["rocprofiler-sdk version"], v, "{what}");
        assert_eq!(p["metadata"]["rocprofiler-sdk GPU agents"], "2", "{what}");
        if mode == Mode::Perfetto {
            check_trace(&r.dir, &acts, log, &what);
        }
        seen.push(comparable(&p, &acts));
    }
    assert_eq!(
        seen[0], seen[1],
        "the profile in place differs from the traced one"
    );
}

/// 4 threads, each launching 50 kernels on its own queue from its own region
/// "worker", delivered after the threads are gone: every kernel under "worker",
/// one track per queue, the same in place and traced; in the trace, every flow
/// into a queue's kernels comes from the one thread that launched them.
#[test]
fn launches_from_threads_nest_under_their_thread_region() {
    const T: u64 = 4;
    const K: u64 = 50;
    let mut seen = Vec::new();
    for mode in [Mode::InPlace, Mode::Perfetto] {
        let what = format!("threads, {mode:?}");
        let r = run_driver(
            &format!("rocm_threads_{mode:?}"),
            &["threads", &T.to_string(), &K.to_string()],
            true,
            mode,
            &[],
        );
        assert!(r.out.status.success(), "{}", r.what());
        assert_eq!(
            r.stdout(),
            format!("threads: {T} x {K} launches\n"),
            "{what}"
        );
        assert_eq!(r.log.records("kernel").len() as u64, T * K, "{what}");

        let p = r.profile();
        let null = || "null".to_string();
        // Queues are numbered in the order their first record arrives, which
        // the threads' interleaving decides: instances 1 to T, one per queue.
        let mut want: Vec<ShapeRow> = vec![
            (
                "worker".into(),
                "user_region".into(),
                T,
                null(),
                null(),
                null(),
            ),
            (
                "worker / hipLaunchKernel".into(),
                "gpu_api".into(),
                T * K,
                null(),
                null(),
                null(),
            ),
        ];
        for q in 1..=T {
            want.push((
                format!("worker / {SAXPY}"),
                "gpu_kernel".into(),
                K,
                "\"HIP\"".into(),
                "0".into(),
                q.to_string(),
            ));
        }
        want.sort();
        let mut got = shape_rows(&p);
        got.sort();
        assert_eq!(got, want, "{what}");
        for (path, n) in nodes(&p) {
            if path.last().is_some_and(|l| l == SAXPY) {
                assert_eq!(u(&n["total_ns"]), K * 2000, "{what}: {n}");
            }
        }
        assert_anomalies(&p, &[], &what);

        if mode == Mode::Perfetto && !skip_unless(perfetto_schema().is_some(), "protoc") {
            let m = read_perfetto(&r.dir.join("out")).expect("schema checked");
            m.assert_valid();
            assert_eq!(m.flows.len() as u64, T * K, "{what}");
            // Device track -> the thread tracks its flows come from.
            let mut from: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
            for &(src, dst) in &m.flows {
                let src = launching_call(&m, src);
                assert_eq!(src.name, "hipLaunchKernel", "{what}");
                assert_eq!(m.slices[dst].name, SAXPY, "{what}");
                assert!(m.tid_of(src.track).is_some(), "{what}");
                from.entry(m.slices[dst].track)
                    .or_default()
                    .insert(src.track);
            }
            let names: BTreeSet<&str> = from.keys().map(|t| m.tracks[t].name.as_str()).collect();
            let want: BTreeSet<String> = (1..=T).map(|q| format!("HIP:0 stream {q}")).collect();
            assert_eq!(
                names,
                want.iter().map(String::as_str).collect(),
                "{what}: device tracks"
            );
            let threads: BTreeSet<u64> = from
                .values()
                .map(|s| {
                    assert_eq!(s.len(), 1, "{what}: one queue, launched from {s:?}");
                    *s.iter().next().unwrap()
                })
                .collect();
            assert_eq!(
                threads.len() as u64,
                T,
                "{what}: launching threads {threads:?}"
            );
        }
        seen.push(shape_rows(&p));
    }
    assert_eq!(seen[0], seen[1], "threads: in place and traced differ");
}

/// The SDK refusing the tool's buffer: kprof says so in one line with the SDK's
/// reason, never starts its context (no HIP call is traced), and the program
/// runs unchanged with its own exit code.
#[test]
fn sdk_refusing_leaves_the_program_unchanged() {
    let plain = run_driver(
        "rocm_refuse_plain",
        &["basic", "3"],
        false,
        Mode::InPlace,
        &[],
    );
    let r = run_driver(
        "rocm_refuse",
        &["basic", "3"],
        true,
        Mode::InPlace,
        &[("STANDIN_FAIL", "rocprofiler_create_buffer:1")],
    );
    assert_eq!(plain.out.status.code(), Some(3), "{}", plain.what());
    assert_eq!(r.out.status.code(), Some(3), "{}", r.what());
    assert_eq!(r.stdout(), plain.stdout());
    assert_eq!(plain.stderr(), "");
    let err = r.stderr();
    assert_eq!(
        lines(&err),
        ["kprof: GPU activity off: rocprofiler_create_buffer: ROCPROFILER_STATUS_ERROR"],
        "stderr"
    );
    assert_eq!(r.log.count("start_context"), 0, "{:?}", r.log);
    let p = r.profile();
    let rows: Vec<String> = shape_rows(&p).into_iter().map(|r| r.0).collect();
    assert_eq!(rows, ["solve", "step"], "no GPU node without GPU activity");
    assert_eq!(
        p["metadata"]["GPU activity"],
        "off: rocprofiler_create_buffer: ROCPROFILER_STATUS_ERROR"
    );
}

/// With kprof disabled (`KPROF_ENABLE=0`) the tool declines the SDK's
/// configuration (NULL): nothing is set up, nothing is printed.
#[test]
fn disabled_kprof_declines_the_configuration() {
    let r = run_driver(
        "rocm_disabled",
        &["basic"],
        true,
        Mode::InPlace,
        &[("KPROF_ENABLE", "0")],
    );
    assert!(r.out.status.success(), "{}", r.what());
    assert_eq!(r.stdout(), "basic: done\n");
    assert_eq!(r.stderr(), "");
    let conf: Vec<&str> = r
        .log
        .entries
        .iter()
        .filter(|e| e.tag == "configure")
        .map(|e| e.get("result"))
        .collect();
    assert_eq!(conf, ["null"], "{:?}", r.log);
    assert_eq!(r.log.count("create_context"), 0);
    assert!(!r.dir.join("out/profile.json").exists());
}
