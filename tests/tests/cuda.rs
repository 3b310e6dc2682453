//! The CUDA plugin (`libkprof_cuda.so`) on a machine without a GPU: loaded as the
//! CUDA driver loads a tool (`CUDA_INJECTION64_PATH`, `InitializeInjection`) by
//! `tests/harness/cuda_driver.c`, and driven through a stand-in `libcupti.so`
//! (`tests/harness/cupti_standin.c`, `KPROF_CUPTI_LIB`) compiled against NVIDIA's
//! real CUPTI headers, once for CUDA 12 (CUPTI API 28, `CUpti_ActivityKernel9`...)
//! and once for CUDA 13 (`CUpti_ActivityKernel13`...), so that the plugin's
//! layout choice by `cuptiGetVersion` is exercised both ways. The headers and the
//! real libraries come from PyPI's wheels (`tests/setup.sh` installs them into
//! `${KPROF_DEPS_DIR:-target/deps}/cupti/{12,13}/`).
//!
//! The stand-in logs every call it reports, record it writes or drops and buffer
//! it completes (`STANDIN_LOG`), with the replayed times in CLOCK_MONOTONIC ns; its
//! own clock is CLOCK_MONOTONIC + 1.7e18 ns (as a real CUPTI's timestamps look), so
//! a plugin must convert. The tests compare kprof's profile.json and decoded
//! Perfetto trace with that log, exactly: the device activity nodes under the
//! region open at their launch, their counts and device times, the device memory
//! with its high-water mark and leak, the anomalies; in the trace, a track per
//! device stream with the replayed times and a flow from each launching API slice.
//! The real `libcupti.so` of each wheel, without a GPU or driver, must leave the
//! program unchanged with one line saying GPU activity is off.
//!
//! Where the JSON shape of the device side is not fixed by the ABI (names of copy,
//! set and synchronization activities, device track names, where CUPTI's overhead
//! goes), the assumptions are in [`assumed`] alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use kprof_tests::openmp::deps_dir;
use kprof_tests::standin::{assert_anomalies, launching_call, Log};
use kprof_tests::trace_check::{perfetto_schema, read_perfetto, Model};
use kprof_tests::{
    clean_cmd, compile, compile_with_core, lib_dir, nodes, read_profile, run, scratch, shape_rows,
    skip_unless, test_file, u, ShapeRow,
};
use serde_json::{json, Value};

// ------------------------------------------------------------ assumptions

/// What these tests assume of the JSON and trace shapes that the contract of
/// issue 19 leaves open; adjust here when the core's device side fixes them.
mod assumed {
    use super::*;

    /// Name of a host-to-device copy activity (the contract's example).
    pub const MEMCPY_HTOD: &str = "memcpy HtoD";
    /// Name of a peer (device-to-device across devices) copy activity.
    pub const MEMCPY_PEER: &str = "memcpy PtoP";
    /// Name of a memory set activity.
    pub const MEMSET: &str = "memset";
    /// Name of a stream synchronization activity.
    pub const SYNC_STREAM: &str = "stream synchronize";

    /// The device track of stream `stream` on CUDA device `dev`: its name names
    /// CUDA, the device and the stream.
    pub fn check_stream_track(name: &str, dev: u32, stream: u32) {
        let words: Vec<&str> = name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        assert!(
            name.contains("CUDA")
                && words.contains(&dev.to_string().as_str())
                && words.contains(&stream.to_string().as_str()),
            "device track {name:?} should name CUDA, device {dev} and stream {stream}"
        );
    }

    /// CUPTI's own overhead (OVERHEAD records), counted as kprof's cost: in the
    /// profile's metadata (the core has no field for a plugin's cost).
    pub fn check_overhead(p: &Value, ns: u64) {
        assert_eq!(
            p["kprof"]["device_tool_ns"],
            json!(ns),
            "kprof's own cost should count CUPTI's overhead: {}",
            p["kprof"]
        );
    }

    /// The one line kprof prints when GPU activity is on.
    pub fn check_active_line(line: &str) {
        assert!(
            line.starts_with("kprof: GPU activity: CUPTI ") && line.ends_with(" active"),
            "{line:?}"
        );
    }

    /// The one line kprof prints when GPU activity is off, giving CUPTI's reason
    /// (`reason`: a text the line must contain; None: any non-empty reason).
    pub fn check_off_line(line: &str, reason: Option<&str>) {
        let rest = line
            .strip_prefix("kprof: GPU activity off: ")
            .unwrap_or_else(|| panic!("not a GPU-off line: {line:?}"));
        assert!(!rest.trim().is_empty(), "no reason given: {line:?}");
        if let Some(r) = reason {
            assert!(
                rest.contains(r),
                "{line:?} should give CUPTI's reason {r:?}"
            );
        }
    }
}

// ---------------------------------------------------------------- building

/// One CUDA version's CUPTI, as the wheels installed it.
struct Cupti {
    /// 12 or 13.
    major: u32,
    /// Include directories (cupti*.h, cuda.h, crt/).
    includes: Vec<PathBuf>,
    /// The real libcupti.so.<major>.
    real_lib: PathBuf,
}

/// The CUPTI of CUDA `major` under `<deps>/cupti/<major>/`, if installed.
fn cupti(major: u32) -> Option<Cupti> {
    let root = deps_dir().join("cupti").join(major.to_string());
    let pkgs = std::fs::read_dir(root.join("nvidia")).ok()?;
    let mut includes = Vec::new();
    let mut real_lib = None;
    for pkg in pkgs.flatten() {
        let inc = pkg.path().join("include");
        if inc.is_dir() {
            includes.push(inc);
        }
        let lib = pkg.path().join("lib").join(format!("libcupti.so.{major}"));
        if lib.is_file() {
            real_lib = Some(lib);
        }
    }
    includes.sort();
    let has = |f: &str| includes.iter().any(|i| i.join(f).is_file());
    (has("cupti.h") && has("cuda.h") && has("crt/host_defines.h")).then_some(Cupti {
        major,
        includes,
        real_lib: real_lib?,
    })
}

/// The CUPTI of CUDA `major`, or None when the test must skip (failing under
/// KPROF_REQUIRE_ALL_TESTS=1).
fn cupti_or_skip(major: u32) -> Option<Cupti> {
    let c = cupti(major);
    if skip_unless(
        c.is_some(),
        &format!("CUPTI {major} headers and library (bash tests/setup.sh)"),
    ) {
        return None;
    }
    c
}

/// `target/release/libkprof_cuda.so` (built with the other plugins, see
/// `kprof_tests::lib_dir`).
fn plugin() -> PathBuf {
    lib_dir().join("libkprof_cuda.so")
}

/// The stand-in libcupti.so and the driver program, both compiled against the
/// headers of `c`.
struct Built {
    standin: PathBuf,
    driver: PathBuf,
}

fn built(c: &Cupti) -> &'static Built {
    static B12: OnceLock<Built> = OnceLock::new();
    static B13: OnceLock<Built> = OnceLock::new();
    let cell = if c.major == 12 { &B12 } else { &B13 };
    cell.get_or_init(|| {
        let dir = scratch(&format!("cuda_bin_{}", c.major));
        let incs: Vec<String> = c
            .includes
            .iter()
            .map(|i| format!("-I{}", i.display()))
            .collect();
        let harness = format!("-I{}", test_file("harness").display());
        let mut args: Vec<&str> = incs.iter().map(String::as_str).collect();
        args.push(&harness);
        // A directory of its own, named as the real library is.
        std::fs::create_dir_all(dir.join("standin")).expect("mkdir");
        let mut standin_args = args.clone();
        standin_args.extend(["-shared", "-fPIC", "-fvisibility=hidden", "-lpthread"]);
        let standin = compile(
            &[&test_file("harness/cupti_standin.c")],
            &dir.join("standin/libcupti.so"),
            &standin_args,
        );
        let mut driver_args = args.clone();
        driver_args.extend(["-ldl", "-lpthread"]);
        let driver = compile_with_core(
            &[&test_file("harness/cuda_driver.c")],
            &dir.join("cuda_driver"),
            &driver_args,
        );
        Built { standin, driver }
    })
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

const MODES: [Mode; 2] = [Mode::InPlace, Mode::Perfetto];

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

    fn assert_ok(&self) {
        assert!(self.out.status.success(), "{}", self.what());
    }

    fn profile(&self) -> Value {
        read_profile(&self.dir.join("out"))
    }
}

/// Runs `driver args` in scratch directory `name`: with the plugin injected
/// (`inject`) and `cupti` as its CUPTI, in `mode`, with `env` on top.
fn run_driver(
    name: &str,
    driver: &Path,
    args: &[&str],
    inject: bool,
    cupti: Option<&Path>,
    mode: Mode,
    env: &[(&str, &str)],
) -> RunResult {
    let dir = scratch(name);
    let log = dir.join("standin.log");
    let mut cmd = clean_cmd(driver);
    cmd.current_dir(&dir)
        .args(args)
        .env_remove("CUDA_INJECTION64_PATH")
        .env_remove("STANDIN_CUPTI_VERSION")
        .env_remove("STANDIN_CLOCK_OFFSET_NS")
        .env_remove("STANDIN_FAIL")
        .env("STANDIN_LOG", &log)
        .env("KPROF_OUTPUT_DIR", dir.join("out"))
        .env("KPROF_SUMMARY", "0");
    if inject {
        cmd.env("CUDA_INJECTION64_PATH", plugin());
    }
    if let Some(c) = cupti {
        cmd.env("KPROF_CUPTI_LIB", c);
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

/// Records CUPTI dropped because the tool gave no buffer.
fn dropped_no_buffer(log: &Log) -> usize {
    log.entries
        .iter()
        .filter(|e| e.tag == "drop" && e.get("reason") == "no_buffer")
        .count()
}

// ------------------------------------------------------- what basic replays

/// A device activity the basic scenario replays, as the stand-in logged it.
#[derive(Debug, Clone)]
struct Replayed {
    /// The profile node / trace slice name kprof should give it.
    name: String,
    /// Its kind in profile.json.
    kind: &'static str,
    /// Its category in the trace.
    category: &'static str,
    /// The region open at its launch ("" at the root).
    region: &'static str,
    /// The API function that launched it, with its correlation id (None for the
    /// activity whose correlation id was never seen).
    launch: Option<(&'static str, u32)>,
    stream: u32,
    start: u64,
    end: u64,
}

/// The demangled name kprof gives a kernel CUPTI reports as `mangled` (without a
/// template's return type, as profiles and traces show it).
fn demangled(mangled: &str) -> &'static str {
    match mangled {
        "saxpy" => "saxpy",
        "_Z3fooIiEvPT_" => "foo<int>(int*)",
        "_Z3barv" => "bar()",
        "_Z6orphanv" => "orphan()",
        other => panic!("unexpected kernel {other}"),
    }
}

/// Every device activity of the basic scenario, from the stand-in's log.
fn replayed(log: &Log) -> Vec<Replayed> {
    let mut v = Vec::new();
    for k in log.records("kernel") {
        let corr = k.num("corr") as u32;
        let (region, launch) = match corr {
            1 => ("step", Some(("cudaLaunchKernel", 1))),
            103 => ("solve", Some(("cudaLaunchKernel", 3))),
            4 => ("solve", Some(("cudaLaunchKernel", 4))),
            110 => ("solve", Some(("cuLaunchKernel", 110))),
            999 => ("", None),
            c => panic!("unexpected kernel correlation {c}"),
        };
        v.push(Replayed {
            name: demangled(k.get("name")).to_string(),
            kind: "gpu_kernel",
            category: "gpu.kernel",
            region,
            launch,
            stream: k.num("stream") as u32,
            start: k.num("start"),
            end: k.num("end"),
        });
    }
    let mut add = |sub: &str, name: &str, kind, category, region, launch| {
        let recs = log.records(sub);
        assert_eq!(recs.len(), 1, "one {sub} record in the stand-in's log");
        v.push(Replayed {
            name: name.to_string(),
            kind,
            category,
            region,
            launch: Some(launch),
            stream: recs[0].num("stream") as u32,
            start: recs[0].num("start"),
            end: recs[0].num("end"),
        });
    };
    add(
        "memcpy",
        assumed::MEMCPY_HTOD,
        "gpu_memcpy",
        "gpu.memory",
        "step",
        ("cudaMemcpy", 2),
    );
    add(
        "memcpy_peer",
        assumed::MEMCPY_PEER,
        "gpu_memcpy",
        "gpu.memory",
        "step",
        ("cudaMemcpyPeerAsync", 12),
    );
    add(
        "memset",
        assumed::MEMSET,
        "gpu_memset",
        "gpu.memory",
        "solve",
        ("cudaMemsetAsync", 5),
    );
    add(
        "sync",
        assumed::SYNC_STREAM,
        "gpu_sync",
        "gpu.sync",
        "solve",
        ("cudaStreamSynchronize", 11),
    );
    assert_eq!(v.len(), 9, "replayed activities: {v:?}");
    v
}

fn path_of(region: &str, name: &str) -> String {
    if region.is_empty() {
        name.to_string()
    } else {
        format!("{region} / {name}")
    }
}

/// A row whose device fields are not compared (a synchronization knows its
/// context and stream, not its device: where kprof puts it is its choice).
fn loose(mut r: ShapeRow) -> ShapeRow {
    if r.1 == "gpu_sync" {
        r.3 = "*".into();
        r.4 = "*".into();
        r.5 = "*".into();
    }
    r
}

/// The call-path tree the basic scenario must give.
fn expected_basic_rows(acts: &[Replayed]) -> Vec<ShapeRow> {
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
        host("step / cudaLaunchKernel", "gpu_api", 1),
        host("step / cudaMemcpy", "gpu_api", 1),
        host("step / cudaMemcpyPeerAsync", "gpu_api", 1),
        host("solve", "user_region", 1),
        host("solve / cudaLaunchKernel", "gpu_api", 2),
        host("solve / cuLaunchKernel", "gpu_api", 1),
        host("solve / cudaMemsetAsync", "gpu_api", 1),
        host("solve / cudaStreamSynchronize", "gpu_api", 1),
        host("cudaMalloc", "gpu_api", 2),
        host("cudaMallocHost", "gpu_api", 1),
        host("cudaFree", "gpu_api", 1),
    ];
    let mut device: BTreeMap<(String, &str, u32), u64> = BTreeMap::new();
    for a in acts {
        *device
            .entry((path_of(a.region, &a.name), a.kind, a.stream))
            .or_default() += 1;
    }
    for ((path, kind, stream), count) in device {
        rows.push((
            path,
            kind.to_string(),
            count,
            "\"CUDA\"".into(),
            "0".into(),
            stream.to_string(),
        ));
    }
    let mut rows: Vec<ShapeRow> = rows.into_iter().map(loose).collect();
    rows.sort();
    rows
}

/// Asserts `p`'s tree is `want`, listing the differences.
fn assert_rows(p: &Value, want: &[ShapeRow], what: &str) {
    let mut got: Vec<ShapeRow> = shape_rows(p).into_iter().map(loose).collect();
    got.sort();
    if got != want {
        let only = |a: &[ShapeRow], b: &[ShapeRow]| {
            a.iter()
                .filter(|r| !b.contains(r))
                .map(|r| format!("  {r:?}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "{what}: the tree differs\n--- missing:\n{}\n--- unexpected:\n{}",
            only(want, &got),
            only(&got, want)
        );
    }
}

/// The device nodes' timing: count, total, min and max equal the replayed
/// durations, exactly (converting clocks moves times, never durations).
fn assert_device_times(p: &Value, acts: &[Replayed], what: &str) {
    let all = nodes(p);
    let mut by_path: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for a in acts {
        by_path
            .entry(path_of(a.region, &a.name))
            .or_default()
            .push(a.end - a.start);
    }
    for (path, durs) in by_path {
        let parts: Vec<&str> = path.split(" / ").collect();
        let n = kprof_tests::node(&all, &parts);
        assert_eq!(u(&n["count"]), durs.len() as u64, "{what}: {path}: {n}");
        assert_eq!(
            u(&n["total_ns"]),
            durs.iter().sum::<u64>(),
            "{what}: {path}: {n}"
        );
        assert_eq!(
            u(&n["min_ns"]),
            *durs.iter().min().unwrap(),
            "{what}: {path}: {n}"
        );
        assert_eq!(
            u(&n["max_ns"]),
            *durs.iter().max().unwrap(),
            "{what}: {path}: {n}"
        );
    }
}

/// Device memory: one space, "CUDA:0", two allocations (8 MiB, then 2 MiB freed
/// again): high water 10 MiB, 8 MiB leaked at 0x7f4a00000000, labelled with the
/// memory kind.
fn assert_device_memory(p: &Value, what: &str) {
    let mem = p["memory"].as_array().expect("memory");
    assert_eq!(mem.len(), 2, "{what}: memory {mem:?}");
    // The pinned host memory (cudaMallocHost, never freed) is not the device's
    // (spaces by name: "CUDA host" first).
    let host = &mem[0];
    assert_eq!(host["space"], "CUDA host", "{what}: {host}");
    assert_eq!(
        host["leaks"],
        json!([{"label": "pinned", "bytes": 4 << 20, "address": "0x7f5b00000000"}]),
        "{what}: {host}"
    );
    let m = &mem[1];
    assert_eq!(m["space"], "CUDA:0", "{what}: {m}");
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

/// Everything in a profile that two runs of the same replay share: the tree
/// (and the device nodes' times), memory but for when its high water was
/// reached, anomalies.
fn comparable(p: &Value, acts: &[Replayed]) -> Value {
    let mut rows: Vec<ShapeRow> = shape_rows(p);
    rows.sort();
    let all = nodes(p);
    // A synchronization lasts as long as the host waited in that run: its
    // times are not the replay's.
    let device: Vec<Value> = acts
        .iter()
        .map(|a| (path_of(a.region, &a.name), a.kind == "gpu_sync"))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|(path, sync)| {
            let parts: Vec<&str> = path.split(" / ").collect();
            let n = kprof_tests::node(&all, &parts);
            if sync {
                json!([path, n["count"]])
            } else {
                json!([path, n["total_ns"], n["min_ns"], n["max_ns"], n["args"]])
            }
        })
        .collect();
    let mut memory = p["memory"].clone();
    for m in memory.as_array_mut().into_iter().flatten() {
        if let Some(o) = m.as_object_mut() {
            o.remove("high_water_ns");
        }
    }
    json!({
        "tree": format!("{rows:?}"),
        "device": device,
        "memory": memory,
        "anomalies": p["anomalies"],
    })
}

// ------------------------------------------------------------------- trace

/// How far a device slice's begin in the trace may be from the replayed one
/// (CLOCK_MONOTONIC): the plugin converts CUPTI's clock with an offset measured
/// between `now_ns` and `cuptiGetTimestamp` (error: the tightest bracket of a
/// pair of calls, well under 10 us even on a loaded machine), and the core's own
/// clock is the TSC mapped to CLOCK_MONOTONIC (drift over this run of a few
/// milliseconds: well under 1 us). 50 us bounds both with room, and is far below
/// the replayed spacing that would tell two activities apart (1 us between
/// activities, but they are matched by name and order) and the clock offset a
/// missing conversion leaves (1.7e18 ns).
const TOLERANCE_NS: u64 = 50_000;

fn near(a: u64, b: u64) -> bool {
    a.abs_diff(b) <= TOLERANCE_NS
}

/// The decoded Perfetto trace of a basic run, checked against the replay.
fn check_basic_trace(dir: &Path, acts: &[Replayed], log: &Log, what: &str) {
    if skip_unless(perfetto_schema().is_some(), "protoc") {
        return;
    }
    let m: Model = read_perfetto(&dir.join("out")).expect("schema checked");
    m.assert_valid();

    // The API calls are slices on the driver's thread, under their regions.
    let api: BTreeMap<(String, String), usize> = m
        .shape()
        .into_iter()
        .filter(|((path, cat), _)| cat == "gpu.api" && !path.ends_with("launch"))
        .collect();
    let want_api: BTreeMap<(String, String), usize> = [
        ("step / cudaLaunchKernel", 1),
        ("step / cudaMemcpy", 1),
        ("step / cudaMemcpyPeerAsync", 1),
        ("solve / cudaLaunchKernel", 2),
        ("solve / cuLaunchKernel", 1),
        ("solve / cudaMemsetAsync", 1),
        ("solve / cudaStreamSynchronize", 1),
        ("cudaMalloc", 2),
        ("cudaMallocHost", 1),
        ("cudaFree", 1),
    ]
    .into_iter()
    .map(|(p, n)| ((p.to_string(), "gpu.api".to_string()), n))
    .collect();
    assert_eq!(api, want_api, "{what}: API slices");

    // Every device activity is one slice, not on a thread track, with the
    // replayed times.
    let mut tracks: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    for a in acts {
        let found: Vec<usize> = m
            .slices
            .iter()
            .enumerate()
            .filter(|(i, s)| s.name == a.name && near(s.begin_ns, a.start) && !seen.contains(i))
            .map(|(i, _)| i)
            .collect();
        let Some(&i) = found.first() else {
            let same_name: Vec<(u64, u64)> = m
                .named(&a.name)
                .iter()
                .map(|s| (s.begin_ns, s.end_ns))
                .collect();
            panic!(
                "{what}: no slice {:?} beginning within {TOLERANCE_NS} ns of {}; slices of \
                 that name: {same_name:?}",
                a.name, a.start
            );
        };
        seen.insert(i);
        let s = &m.slices[i];
        assert_eq!(
            s.end_ns - s.begin_ns,
            a.end - a.start,
            "{what}: {:?} duration",
            a.name
        );
        assert_eq!(s.category, a.category, "{what}: {:?}", a.name);
        assert!(
            m.tid_of(s.track).is_none(),
            "{what}: {:?} is on a thread track",
            a.name
        );
        if a.kind != "gpu_sync" {
            tracks.entry(a.stream).or_default().insert(s.track);
        }

        // A flow from the API slice that launched it, and from nothing else.
        let into: Vec<usize> = m
            .flows
            .iter()
            .filter(|&&(_, d)| d == i)
            .map(|&(src, _)| src)
            .collect();
        match a.launch {
            None => assert!(into.is_empty(), "{what}: {:?} has a flow", a.name),
            Some((api_name, corr)) => {
                assert_eq!(into.len(), 1, "{what}: flows into {:?}: {into:?}", a.name);
                let src = launching_call(&m, into[0]);
                assert_eq!(src.name, api_name, "{what}: flow into {:?}", a.name);
                assert!(
                    m.tid_of(src.track).is_some(),
                    "{what}: {api_name} off-thread"
                );
                let (enter, exit) = log.api_span(api_name, u64::from(corr));
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
    assert_eq!(
        m.flows.len(),
        acts.iter().filter(|a| a.launch.is_some()).count(),
        "{what}: flows {:?}",
        m.flow_names()
    );

    // One track per stream, holding that stream's work and nothing else.
    for (stream, t) in &tracks {
        assert_eq!(t.len(), 1, "{what}: stream {stream} on tracks {t:?}");
    }
    let track_of = |stream: u32| *tracks[&stream].iter().next().unwrap();
    assert_ne!(
        track_of(7),
        track_of(13),
        "{what}: streams 7 and 13 share a track"
    );
    for stream in [7, 13] {
        let t = track_of(stream);
        assert_track_holds(&m, t, acts, stream, what);
        assumed::check_stream_track(&m.tracks[&t].name, 0, stream);
    }

    // Kernel arguments.
    let saxpy = m.named("saxpy");
    assert_eq!(saxpy.len(), 1, "{what}");
    for (k, v) in [
        ("grid_x", 4096),
        ("grid_y", 1),
        ("grid_z", 1),
        ("block_x", 256),
        ("block_y", 1),
        ("block_z", 1),
        ("registers", 32),
        ("static_shared", 0),
        ("dynamic_shared", 1024),
    ] {
        assert_eq!(
            saxpy[0].args.get(k),
            Some(&json!(v)),
            "{what}: saxpy {k}: {:?}",
            saxpy[0].args
        );
    }
}

/// The slices on device track `t` are exactly the replayed work of `stream`
/// (synchronizations aside), in time order.
fn assert_track_holds(m: &Model, t: u64, acts: &[Replayed], stream: u32, what: &str) {
    let mut got: Vec<(u64, &str)> = m
        .slices
        .iter()
        .filter(|s| s.track == t && s.category != "gpu.sync")
        .map(|s| (s.begin_ns, s.name.as_str()))
        .collect();
    got.sort();
    let mut want: Vec<(u64, &str)> = acts
        .iter()
        .filter(|a| a.stream == stream && a.kind != "gpu_sync")
        .map(|a| (a.start, a.name.as_str()))
        .collect();
    want.sort();
    let names = |v: &[(u64, &str)]| v.iter().map(|x| x.1.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&got), names(&want), "{what}: stream {stream}'s track");
}

// ------------------------------------------------------------------- tests

/// The basic scenario on CUPTI `major`'s layouts, in place and traced: the exact
/// tree, device times, memory and anomalies, the same in both modes, and the
/// trace's device tracks and flows.
fn basic(major: u32) {
    let Some(c) = cupti_or_skip(major) else {
        return;
    };
    let b = built(&c);
    let mut seen: Vec<(Mode, Value)> = Vec::new();
    for mode in MODES {
        let name = format!("cuda_basic_{major}_{mode:?}");
        let r = run_driver(
            &name,
            &b.driver,
            &["basic"],
            true,
            Some(&b.standin),
            mode,
            &[],
        );
        r.assert_ok();
        let what = format!("CUPTI {major}, {mode:?}");
        assert_eq!(r.stdout(), "basic: done\n", "{what}");
        let err = r.stderr();
        let l = lines(&err);
        assert_eq!(l.len(), 1, "{what}: stderr should be one line:\n{err}");
        assumed::check_active_line(l[0]);

        // The replay happened: every record written, none dropped for want of a
        // buffer, every buffer completed.
        let log = &r.log;
        assert_eq!(dropped_no_buffer(log), 0, "{what}: {log:?}");
        assert_eq!(
            log.count("request"),
            log.count("complete"),
            "{what}: {log:?}"
        );
        let acts = replayed(log);

        let p = r.profile();
        assert_rows(&p, &expected_basic_rows(&acts), &what);
        assert_device_times(&p, &acts, &what);
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
                .is_some_and(|v| v.contains(&json!("cuda"))),
            "{what}: plugins {}",
            p["plugins"]
        );
        assumed::check_overhead(&p, 3000);
        if mode == Mode::Perfetto {
            check_basic_trace(&r.dir, &acts, log, &what);
        }
        seen.push((mode, comparable(&p, &acts)));
    }
    assert_eq!(
        seen[0].1, seen[1].1,
        "CUPTI {major}: the profile in place differs from the traced one"
    );
}

#[test]
fn basic_replay_cupti12() {
    basic(12);
}

#[test]
fn basic_replay_cupti13() {
    basic(13);
}

/// 100,000 launches with no buffer completed before the end and a pool of 2
/// buffers: the plugin declines CUPTI's further requests instead of growing or
/// stalling, CUPTI drops and counts, and every record is either in the profile or
/// counted as dropped, exactly.
#[test]
fn full_buffer_pool_drops_and_counts() {
    // Below the 65,536 launches the plugin remembers (its correlation ring): the
    // records written are the first ones, completed only at the end.
    const N: u64 = 60_000;
    let Some(c) = cupti_or_skip(12) else {
        return;
    };
    let b = built(&c);
    for mode in MODES {
        let name = format!("cuda_pool_{mode:?}");
        let n = N.to_string();
        let r = run_driver(
            &name,
            &b.driver,
            &["pool", &n],
            true,
            Some(&b.standin),
            mode,
            &[("KPROF_CUDA_BUFFERS", "2")],
        );
        r.assert_ok();
        let what = format!("pool, {mode:?}");
        assert_eq!(r.stdout(), format!("pool: {N} launches\n"), "{what}");
        let log = &r.log;
        let written = log.records("kernel").len() as u64;
        let dropped = dropped_no_buffer(log) as u64;
        assert_eq!(written + dropped, N, "{what}");
        assert_eq!(
            log.count("request"),
            2,
            "{what}: the plugin gave CUPTI more buffers than its pool of 2"
        );
        assert_eq!(log.count("complete"), 2, "{what}: buffers never completed");
        assert!(
            dropped > 0,
            "{what}: {N} kernel records fit into 2 of the plugin's buffers: raise N"
        );

        let p = r.profile();
        let all = nodes(&p);
        assert_eq!(
            u(&kprof_tests::node(&all, &["loop", "cudaLaunchKernel"])["count"]),
            N,
            "{what}"
        );
        let tick = kprof_tests::node(&all, &["loop", "tick"]);
        assert_eq!(u(&tick["count"]), written, "{what}");
        assert_eq!(u(&tick["total_ns"]), written * 1000, "{what}");
        assert_anomalies(&p, &[("device_records_dropped", dropped)], &what);
    }
}

/// 4 threads, each launching 50 kernels on its own stream from its own region
/// "worker" (kernel records carrying the driver's correlation id or the runtime's,
/// alternately), completed after the threads are gone: every kernel under
/// "worker", one node per stream, the same in place and traced; in the trace, every
/// flow into a stream's kernels comes from the one thread that launched them.
#[test]
fn launches_from_threads_nest_under_their_thread_region() {
    const T: u64 = 4;
    const K: u64 = 50;
    let Some(c) = cupti_or_skip(12) else {
        return;
    };
    let b = built(&c);
    let mut seen = Vec::new();
    for mode in MODES {
        let what = format!("threads, {mode:?}");
        let r = run_driver(
            &format!("cuda_threads_{mode:?}"),
            &b.driver,
            &["threads", &T.to_string(), &K.to_string()],
            true,
            Some(&b.standin),
            mode,
            &[],
        );
        r.assert_ok();
        assert_eq!(
            r.stdout(),
            format!("threads: {T} x {K} launches\n"),
            "{what}"
        );
        assert_eq!(r.log.records("kernel").len() as u64, T * K, "{what}");
        assert_eq!(dropped_no_buffer(&r.log), 0, "{what}");

        let p = r.profile();
        let null = || "null".to_string();
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
                "worker / cudaLaunchKernel".into(),
                "gpu_api".into(),
                T * K,
                null(),
                null(),
                null(),
            ),
        ];
        for t in 0..T {
            want.push((
                "worker / work(int*)".into(),
                "gpu_kernel".into(),
                K,
                "\"CUDA\"".into(),
                "0".into(),
                (20 + t).to_string(),
            ));
        }
        want.sort();
        assert_rows(&p, &want, &what);
        for (path, n) in nodes(&p) {
            if path.last().is_some_and(|l| l == "work(int*)") {
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
                assert_eq!(src.name, "cudaLaunchKernel", "{what}");
                assert_eq!(m.slices[dst].name, "work(int*)", "{what}");
                assert!(m.tid_of(src.track).is_some(), "{what}");
                from.entry(m.slices[dst].track)
                    .or_default()
                    .insert(src.track);
            }
            assert_eq!(from.len() as u64, T, "{what}: device tracks {from:?}");
            let threads: BTreeSet<u64> = from
                .values()
                .map(|s| {
                    assert_eq!(s.len(), 1, "{what}: one stream, launched from {s:?}");
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

/// With CUPTI refusing (the stand-in's cuptiSubscribe answers
/// CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, as for a user not allowed to profile),
/// kprof says so in one line with CUPTI's reason, records no GPU activity, and the
/// program runs unchanged.
#[test]
fn cupti_refusing_leaves_the_program_unchanged() {
    let Some(c) = cupti_or_skip(12) else {
        return;
    };
    let b = built(&c);
    let plain = run_driver(
        "cuda_refuse_plain",
        &b.driver,
        &["basic", "3"],
        false,
        None,
        Mode::InPlace,
        &[],
    );
    let fail = format!("cuptiSubscribe:{}", 35); // CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
    let r = run_driver(
        "cuda_refuse",
        &b.driver,
        &["basic", "3"],
        true,
        Some(&b.standin),
        Mode::InPlace,
        &[("STANDIN_FAIL", &fail)],
    );
    assert_eq!(plain.out.status.code(), Some(3), "{}", plain.what());
    assert_eq!(r.out.status.code(), Some(3), "{}", r.what());
    assert_eq!(r.stdout(), plain.stdout());
    assert_eq!(plain.stderr(), "");
    let err = r.stderr();
    let l = lines(&err);
    assert_eq!(l.len(), 1, "stderr should be one line:\n{err}");
    assumed::check_off_line(l[0], Some("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"));
    let p = r.profile();
    let rows: Vec<String> = shape_rows(&p).into_iter().map(|r| r.0).collect();
    assert_eq!(rows, ["solve", "step"], "no GPU node without GPU activity");
}

/// A CUPTI whose API version kprof cannot map to record layouts (17: CUDA 11.8,
/// whose records differ) is not read at all: GPU activity is off, saying why,
/// and the program runs unchanged.
#[test]
fn cupti_of_an_unsupported_version_is_not_read() {
    let Some(c) = cupti_or_skip(12) else {
        return;
    };
    let b = built(&c);
    let r = run_driver(
        "cuda_old_version",
        &b.driver,
        &["basic", "3"],
        true,
        Some(&b.standin),
        Mode::InPlace,
        &[("STANDIN_CUPTI_VERSION", "17")],
    );
    assert_eq!(r.out.status.code(), Some(3), "{}", r.what());
    assert_eq!(r.stdout(), "basic: done\n");
    let err = r.stderr();
    let l = lines(&err);
    assert_eq!(l.len(), 1, "stderr should be one line:\n{err}");
    assumed::check_off_line(l[0], Some("17"));
    let p = r.profile();
    assert!(
        nodes(&p)
            .iter()
            .all(|(_, n)| !n["kind"].as_str().unwrap_or_default().starts_with("gpu_")),
        "GPU nodes from a CUPTI that was not read: {:?}",
        shape_rows(&p)
    );
}

/// The real libcupti.so of CUDA `major`, without a GPU or a driver: the program
/// runs to completion with its own exit code and output, and kprof prints exactly
/// one line, saying GPU activity is off and why.
fn real_cupti_without_gpu(major: u32) {
    let Some(c) = cupti_or_skip(major) else {
        return;
    };
    let b = built(&c);
    let plain = run_driver(
        &format!("cuda_real_plain_{major}"),
        &b.driver,
        &["basic", "3"],
        false,
        None,
        Mode::InPlace,
        &[],
    );
    let r = run_driver(
        &format!("cuda_real_{major}"),
        &b.driver,
        &["basic", "3"],
        true,
        Some(&c.real_lib),
        Mode::InPlace,
        &[],
    );
    assert_eq!(plain.out.status.code(), Some(3), "{}", plain.what());
    assert_eq!(r.out.status.code(), Some(3), "{}", r.what());
    assert_eq!(r.stdout(), "basic: done\n");
    assert_eq!(r.stdout(), plain.stdout());
    assert_eq!(plain.stderr(), "");
    let err = r.stderr();
    let l = lines(&err);
    assert_eq!(l.len(), 1, "stderr should be one line:\n{err}");
    assumed::check_off_line(l[0], None);
    let p = r.profile();
    let rows: Vec<String> = shape_rows(&p).into_iter().map(|r| r.0).collect();
    assert_eq!(rows, ["solve", "step"], "CUPTI {major}: regions only");
}

#[test]
fn real_cupti12_without_gpu_says_off_in_one_line() {
    real_cupti_without_gpu(12);
}

#[test]
fn real_cupti13_without_gpu_says_off_in_one_line() {
    real_cupti_without_gpu(13);
}

/// `kprof plot` of a run with GPU activity, against the replay: the GPU figure
/// has one bar per kernel the stand-in replayed (its log's kernel records, by
/// name and device), longest first, each as long on the figure's own axis as
/// the sum of that kernel's replayed durations and labelled with it; the note
/// names every device.
#[test]
fn plot_draws_the_gpu_kernels() {
    use kprof_tests::plot_check::{duration_ns, Figure};
    let Some(c) = cupti_or_skip(13) else {
        return;
    };
    let b = built(&c);
    let r = run_driver(
        "cuda_plot",
        &b.driver,
        &["basic"],
        true,
        Some(&b.standin),
        Mode::InPlace,
        &[],
    );
    r.assert_ok();
    // The reference: per kernel (the name kprof gives it) and device, the sum of
    // its replayed durations.
    let mut replayed: BTreeMap<String, u64> = BTreeMap::new();
    for k in r.log.records("kernel") {
        let label = format!("{} [CUDA:{}]", demangled(k.get("name")), k.num("dev"));
        *replayed.entry(label).or_default() += k.num("end") - k.num("start");
    }
    assert_eq!(
        replayed.len(),
        4,
        "the basic replay's kernels: {replayed:?}"
    );
    let out = r.dir.join("out");
    let o = run(clean_cmd(&lib_dir().join("kprof")).arg("plot").arg(&out));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fig = Figure::read(&out.join("plot-gpu.svg"));
    let px_per_ns = fig.px_per_unit(duration_ns);
    let rows = fig.rows(|t| t.anchor == "start" && t.text.contains(" [CUDA"));
    let drawn: Vec<&str> = rows
        .iter()
        .map(|(l, _)| l.split_once("  ").map_or(l.as_str(), |(n, _)| n))
        .collect();
    let mut want: Vec<&str> = replayed.keys().map(String::as_str).collect();
    want.sort_by_key(|k| std::cmp::Reverse(replayed[*k]));
    assert_eq!(
        drawn.iter().copied().collect::<BTreeSet<_>>(),
        want.iter().copied().collect::<BTreeSet<_>>(),
        "the rows are the replayed kernels"
    );
    let mut last = u64::MAX;
    for (label, bars) in &rows {
        let (name, value) = label.split_once("  ").expect("name  duration");
        let total = replayed[name];
        assert!(total <= last, "longest first: {drawn:?}");
        last = total;
        assert_eq!(bars.len(), 1, "{label}: {bars:?}");
        let w = bars[0].width;
        assert!(
            (w - total as f64 * px_per_ns).abs() <= 1.0,
            "{label}: bar {w} px, the replay's {total} ns is {} px",
            total as f64 * px_per_ns
        );
        let shown = duration_ns(value).expect("a duration");
        assert!(
            (shown - total as f64).abs() <= total as f64 * 0.005,
            "{label}: the replay's {total} ns"
        );
    }
    let page = std::fs::read_to_string(out.join("plot.html")).expect("plot.html");
    assert!(page.contains("<section id=\"gpu\">"));
    let devices: BTreeSet<u64> = r
        .log
        .records("kernel")
        .iter()
        .map(|k| k.num("dev"))
        .collect();
    for d in devices {
        assert!(page.contains(&format!("CUDA:{d} busy")), "CUDA:{d}");
    }
}
