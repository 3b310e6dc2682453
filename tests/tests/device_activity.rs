//! Device activities through the core's plugin table, as a GPU plugin delivers
//! them (`tests/harness/device_activity.c`): launches on the program's thread, the
//! device work from another thread later with its own times. The profile nests
//! each activity under the region open at its launch, in place and from records
//! alike; the GPU section sums kernels, copies and device time; the Perfetto and
//! JSON traces put each on its device stream's track at its own times, with a flow
//! from the launching API call.
//!
//! Times: the harness gives nanoseconds on the core clock, which the core keeps as
//! raw ticks; a round trip through the tick rate may lose a nanosecond at each end,
//! so a duration is checked to 2 ns.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kprof_tests::trace_check::{perfetto_schema, read_json, read_perfetto, Model};
use kprof_tests::{
    assert_ok, clean_cmd, core_harness, lib, node, nodes, read_profile, run, scratch, shape,
    skip_unless, u,
};
use serde_json::Value;

static HARNESS: OnceLock<PathBuf> = OnceLock::new();

/// Runs the harness (`late`: activities reported while the launching region is
/// still open) with `env`; returns the output directory.
fn run_harness(name: &str, late: bool, env: &[(&str, &str)]) -> PathBuf {
    run_mode(name, if late { "late" } else { "" }, env)
}

/// Runs the harness in `mode`; returns the output directory.
fn run_mode(name: &str, mode: &str, env: &[(&str, &str)]) -> PathBuf {
    let exe = core_harness(&HARNESS, "device_activity");
    let dir = scratch(name);
    let out = dir.join("out");
    let mut cmd: Command = clean_cmd(&exe);
    cmd.env("KPROF_OUTPUT_DIR", &out).envs(env.iter().copied());
    cmd.arg(mode);
    let o = run(&mut cmd);
    if mode == "term" {
        assert_eq!(o.status.signal(), Some(libc::SIGTERM), "{o:?}");
    } else {
        assert_ok(&o);
    }
    assert_eq!(String::from_utf8_lossy(&o.stdout), "activities 7\n");
    out
}

fn close(got: u64, want: u64, what: &str) {
    assert!(got.abs_diff(want) <= 2, "{what}: {got} ns, expected {want}");
}

/// The profile every mode must give.
fn check_profile(p: &Value) {
    check_profile_with(p, 0);
}

/// [`check_profile`] with `extra` more kernels (flushed at the end, 5 us each).
fn check_profile_with(p: &Value, extra: u64) {
    let all = nodes(p);
    let kernel = node(&all, &["step", "saxpy"]);
    assert_eq!(kernel["kind"], "gpu_kernel");
    assert_eq!(kernel["device"], "CUDA");
    assert_eq!(u(&kernel["instance"]), 7);
    assert_eq!(u(&kernel["count"]), 1);
    close(u(&kernel["total_ns"]), 250_000, "saxpy");
    assert_eq!(u(&kernel["args"]["grid_x"]["max"]), 256);
    assert_eq!(u(&kernel["args"]["block_x"]["min"]), 128);
    let copy = node(&all, &["step", "memcpy HtoD"]);
    assert_eq!(copy["kind"], "gpu_memcpy");
    close(u(&copy["total_ns"]), 100_000, "memcpy");
    assert_eq!(node(&all, &["step", "cudaLaunchKernel"])["kind"], "gpu_api");
    assert_eq!(u(&node(&all, &["solve", "cudaLaunchKernel"])["count"]), 2);
    let templated = node(&all, &["solve", "foo<int>(int*)"]);
    assert_eq!((u(&templated["count"]), u(&templated["instance"])), (2, 9));
    close(u(&templated["min_ns"]), 40_000, "foo min");
    close(u(&templated["max_ns"]), 60_000, "foo max");
    // No site: the root. End before start: zero duration, counted.
    close(u(&node(&all, &["orphan"])["total_ns"]), 10_000, "orphan");
    let bad = node(&all, &["bad"]);
    assert_eq!(
        (bad["kind"].as_str(), u(&bad["total_ns"])),
        (Some("gpu_memset"), 0)
    );
    // Device time is not the regions' time: their self time keeps it.
    let step = node(&all, &["step"]);
    assert!(u(&step["total_ns"]) < 250_000, "{step}");
    assert_eq!(u(&p["anomalies"]["device_time_invalid"]), 1);
    assert_eq!(u(&p["anomalies"]["unknown_events"]), 1);
    assert_eq!(u(&p["anomalies"]["device_unknown_correlation"]), 0);

    let gpu = &p["gpu"];
    let kernels: Vec<(&str, u64)> = gpu["kernels"]
        .as_array()
        .expect("gpu.kernels")
        .iter()
        .map(|k| (k["name"].as_str().unwrap_or_default(), u(&k["count"])))
        .collect();
    let mut want = vec![("saxpy", 1), ("foo<int>(int*)", 2), ("orphan", 1)];
    if extra > 0 {
        want.push(("flushed", extra));
    }
    assert_eq!(kernels, want, "by device time");
    let copies = gpu["copies"].as_array().expect("gpu.copies");
    assert_eq!(copies.len(), 1, "{copies:?}");
    let c = &copies[0];
    assert_eq!(
        (c["device"].as_str(), c["direction"].as_str()),
        (Some("CUDA:0"), Some("HtoD"))
    );
    assert_eq!((u(&c["count"]), u(&c["bytes"])), (1, 1 << 20));
    let gbps = c["gb_per_s"].as_f64().unwrap_or_default();
    assert!((gbps - 10.48576).abs() < 0.001, "{gbps}");
    let devices = gpu["devices"].as_array().expect("gpu.devices");
    assert_eq!(devices.len(), 1, "{devices:?}");
    let d = &devices[0];
    assert_eq!(d["device"], "CUDA:0");
    assert_eq!(u(&d["activities"]), 6 + extra);
    // One after the other: busy for exactly their sum (two ns per conversion).
    let busy = 460_000 + 5_000 * extra;
    assert!(u(&d["busy_ns"]).abs_diff(busy) <= 2 * (6 + extra), "{d}");
    assert_eq!(u(&d["memory_high_water_bytes"]), 5120);
    assert_eq!(
        (u(&d["leaked_bytes"]), u(&d["leaked_allocations"])),
        (4096, 1)
    );
}

/// `kprof report` shows the GPU section as the summary does.
fn check_report(out: &Path) {
    let o = run(Command::new(lib("kprof")).arg("report").arg(out));
    assert_ok(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    let gpu = text
        .split_once("GPU kernels (device time):")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no GPU section in kprof report:\n{text}"));
    let kernels: Vec<&str> = gpu
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().nth(3))
        .collect();
    // Rows by device time: saxpy (1 launch), foo (2), orphan (1).
    assert_eq!(kernels, ["1", "2", "1"], "{gpu}");
    assert!(gpu.contains("saxpy [CUDA:0]"), "{gpu}");
    let copies = gpu
        .lines()
        .find(|l| l.contains("HtoD"))
        .expect("a copy row");
    assert!(
        copies.contains("1.00 MiB") && copies.contains("10.49 GB/s"),
        "{copies}"
    );
    assert!(
        gpu.contains("never freed 4.00 KiB in 1 allocations"),
        "{gpu}"
    );
}

#[test]
fn device_activities_nest_under_their_launch_in_every_mode() {
    type Env = &'static [(&'static str, &'static str)];
    let modes: [(&str, bool, Env); 4] = [
        ("device_in_place", false, &[]),
        ("device_in_place_late", true, &[]),
        ("device_records", false, &[("KPROF_IN_PLACE", "0")]),
        ("device_trace_late", true, &[("KPROF_TRACE", "json")]),
    ];
    let mut shapes = Vec::new();
    for (name, late, env) in modes {
        let out = run_harness(name, late, env);
        let p = read_profile(&out);
        check_profile(&p);
        shapes.push((name, shape(&p)));
        if name == "device_in_place" {
            check_report(&out);
        }
    }
    for (name, s) in &shapes[1..] {
        assert_eq!(s, &shapes[0].1, "{name} vs in place");
    }
}

#[test]
fn activities_a_plugin_flushes_at_the_end_are_in_the_profile() {
    // At exit the ending thread runs the flush; at SIGTERM the writer thread
    // does (not the handler), both before the output.
    for (name, mode, env) in [
        ("device_flush_exit", "flush", &[][..]),
        ("device_flush_term", "term", &[][..]),
        (
            "device_flush_term_trace",
            "term",
            &[("KPROF_TRACE", "perfetto")][..],
        ),
    ] {
        let p = read_profile(&run_mode(name, mode, env));
        check_profile_with(&p, 1);
        let all = nodes(&p);
        let f = node(&all, &["solve", "flushed"]);
        assert_eq!(u(&f["count"]), 1, "{name}");
        close(u(&f["total_ns"]), 5_000, name);
    }
}

/// `kprof merge` of two runs (two ranks) keeps the GPU section: launches summed,
/// device time per rank, copies summed, busy time per device and rank.
#[test]
fn merged_ranks_keep_the_gpu_section() {
    let a = run_harness("device_merge_a", false, &[]);
    let b = run_harness("device_merge_b", true, &[]);
    let dir = a.parent().expect("scratch").to_path_buf();
    let merged = dir.join("merged");
    let o = run(Command::new(lib("kprof"))
        .args(["merge", "-o"])
        .arg(&merged)
        .arg(&a)
        .arg(&b));
    assert_ok(&o);
    let p = read_profile(&merged);
    let gpu = &p["gpu"];
    let kernels = gpu["kernels"].as_array().expect("gpu.kernels");
    let saxpy = kernels
        .iter()
        .find(|k| k["name"] == "saxpy")
        .unwrap_or_else(|| panic!("{kernels:?}"));
    assert_eq!(
        (saxpy["device"].as_str(), u(&saxpy["count"])),
        (Some("CUDA:0"), 2)
    );
    assert_eq!(u(&saxpy["total_ns"]["sum"]), 500_000);
    assert_eq!(u(&saxpy["total_ns"]["max"]), 250_000);
    let copy = &gpu["copies"][0];
    assert_eq!((u(&copy["count"]), u(&copy["bytes"])), (2, 2 << 20));
    let dev = &gpu["devices"][0];
    assert_eq!(
        (dev["device"].as_str(), u(&dev["activities"])),
        (Some("CUDA:0"), 12)
    );
    assert!(u(&dev["busy_ns"]["sum"]).abs_diff(920_000) <= 24, "{dev}");
}

/// The device slices of a trace: (track name, slice name, begin, duration).
fn device_slices(m: &Model) -> Vec<(String, String, u64, u64)> {
    let mut v: Vec<(String, String, u64, u64)> = m
        .slices
        .iter()
        .filter(|s| s.category.starts_with("gpu.") && s.category != "gpu.api")
        .map(|s| {
            let track = m.tracks.get(&s.track).map(|t| t.name.clone());
            (
                track.unwrap_or_default(),
                s.name.clone(),
                s.begin_ns,
                s.end_ns - s.begin_ns,
            )
        })
        .collect();
    v.sort_by(|a, b| (a.2, &a.1).cmp(&(b.2, &b.1)));
    v
}

fn check_trace(m: &Model) {
    m.assert_valid();
    let slices = device_slices(m);
    let names: Vec<(&str, &str)> = slices
        .iter()
        .map(|(t, n, _, _)| (t.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("CUDA:0 stream 7", "saxpy"),
            ("CUDA:0 stream 7", "memcpy HtoD"),
            ("CUDA:0 stream 9", "foo<int>(int*)"),
            ("CUDA:0 stream 9", "foo<int>(int*)"),
            ("CUDA:0 stream 7", "orphan"),
            ("CUDA:0 stream 7", "bad"),
        ]
    );
    let durations: Vec<u64> = slices.iter().map(|s| s.3).collect();
    for (got, want) in durations
        .iter()
        .zip([250_000, 100_000, 40_000, 60_000, 10_000, 0])
    {
        close(*got, want, "device slice");
    }
    // The launched four back to back, as the harness made them (the orphan
    // starts when the reporting thread gets to it).
    for w in slices.windows(2).take(3) {
        close(w[1].2, w[0].2 + w[0].3, "next start");
    }
}

#[test]
fn device_activities_are_slices_on_stream_tracks_with_flows_from_their_launch() {
    let out = run_harness("device_trace_json", false, &[("KPROF_TRACE", "json")]);
    check_trace(&read_json(&out));
    if skip_unless(perfetto_schema().is_some(), "protoc") {
        return;
    }
    let out: &Path = &run_harness(
        "device_trace_perfetto",
        true,
        &[("KPROF_TRACE", "perfetto")],
    );
    let m = read_perfetto(out).expect("trace.pftrace");
    check_trace(&m);
    // Each launch's arrow starts at a mark inside the call and ends at its device
    // slice; the orphan has none.
    let mut flows: Vec<(String, String)> = m
        .flows
        .iter()
        .map(|&(src, dst)| {
            let mark = &m.slices[src];
            assert_eq!((mark.name.as_str(), mark.end_ns), ("launch", mark.begin_ns));
            let call = mark.parent.map(|p| m.slices[p].name.clone());
            (call.unwrap_or_default(), m.slices[dst].name.clone())
        })
        .collect();
    flows.sort();
    assert_eq!(
        flows,
        [
            ("cudaLaunchKernel".to_string(), "foo<int>(int*)".to_string()),
            ("cudaLaunchKernel".to_string(), "foo<int>(int*)".to_string()),
            ("cudaLaunchKernel".to_string(), "saxpy".to_string()),
            ("cudaMemcpyAsync".to_string(), "memcpy HtoD".to_string()),
        ]
    );
    // The trace and the profile start from the same clock: the kernel's begin is
    // after its launch's end.
    let launch = m.named("cudaLaunchKernel")[0].end_ns;
    let kernel = m.named("saxpy")[0].begin_ns;
    assert!(
        kernel > launch && kernel - launch < 1_000_000,
        "{launch} {kernel}"
    );
}
