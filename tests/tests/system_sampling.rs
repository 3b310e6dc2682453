//! The system sampler (`KPROF_SAMPLE_MS`): the writer thread samples the process
//! and the node; every metric is a counter track in each trace and a range in
//! profile.json's `system` section. The program (`tests/harness/system_sampling.c`)
//! sleeps, allocates and touches 200 MiB, holds it, frees it, then spins and sleeps, each
//! phase an annotation region: the trace's slices say when each phase ran, so the
//! samples inside each are checked against what the phase does. Windows are
//! generous: this runs on a loaded 2-core VM.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use kprof_tests::trace_check::{read_json, read_perfetto, Model};
use kprof_tests::{assert_ok, clean_cmd, core_harness, read_profile, run, scratch, skip_unless, u};
use serde_json::Value;

const MIB: f64 = 1024.0 * 1024.0;
const PERIOD_MS: u64 = 20;

fn harness() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    core_harness(&BUILT, "system_sampling")
}

/// Runs the harness (`args`) into `dir/out` with the given settings.
fn run_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd: Command = clean_cmd(&harness());
    cmd.current_dir(dir)
        .args(args)
        .env("KPROF_OUTPUT_DIR", dir.join("out"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `system` section's entry for metric `name`.
fn metric<'a>(p: &'a Value, name: &str) -> &'a Value {
    p["system"]["metrics"]
        .as_array()
        .expect("system.metrics")
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name} in {}", p["system"]))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"))
}

/// The profile's system section is consistent with a run of `run_ns` sampled
/// every [`PERIOD_MS`]: as many samples as periods (fewer when the writer is
/// late on a loaded machine, one more for the last sample at the end), every
/// fixed metric in every sample.
fn check_section(p: &Value) -> u64 {
    let sys = &p["system"];
    assert_eq!(u(&sys["period_ms"]), PERIOD_MS, "{sys}");
    let samples = u(&sys["samples"]);
    let run_ms = u(&p["clock"]["duration_ns"]) / 1_000_000;
    let expected = run_ms / PERIOD_MS;
    assert!(
        samples * 2 >= expected && samples <= expected + 2,
        "{samples} samples in {run_ms} ms at {PERIOD_MS} ms"
    );
    for name in [
        "cpu_cores",
        "cpu_share",
        "rss",
        "threads",
        "minor_faults",
        "major_faults",
        "voluntary_switches",
        "involuntary_switches",
        "load",
        "mem_available",
    ] {
        let m = metric(p, name);
        assert_eq!(u(&m["samples"]), samples, "{m}");
        assert!(
            f(&m["min"]) <= f(&m["mean"]) && f(&m["mean"]) <= f(&m["max"]),
            "{m}"
        );
        assert!(f(&m["min"]) >= 0.0, "{m}");
    }
    assert_eq!(metric(p, "rss")["unit"], "bytes");
    assert_eq!(metric(p, "cpu_cores")["unit"], "cores");
    assert!(u(&sys["sampler_cpu_ns"]) > 0, "{sys}");
    samples
}

/// The slice named `name` (exactly one) as (begin, end).
fn window(m: &Model, name: &str) -> (u64, u64) {
    let s = m.named(name);
    assert_eq!(s.len(), 1, "{:?}: slices {name}", m.format);
    (s[0].begin_ns, s[0].end_ns)
}

/// Values of `series` sampled within [begin + skip, end - skip].
fn within(series: &[(u64, f64)], (begin, end): (u64, u64), skip_ns: u64) -> Vec<f64> {
    series
        .iter()
        .filter(|(t, _)| *t >= begin + skip_ns && *t + skip_ns <= end)
        .map(|&(_, v)| v)
        .collect()
}

/// The CPU use the program measured itself in phase `name` (`<name>_cores x` on
/// its stdout).
fn measured(out: &Output, name: &str) -> f64 {
    let text = String::from_utf8_lossy(&out.stdout);
    let key = format!("{name}_cores ");
    text.lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {text}"))
}

/// The RSS and CPU tracks follow the program's phases; `out`: the program's
/// output, with its own measure of its CPU use.
fn check_phases(m: &Model, p: &Value, out: &Output) {
    let rss = m.counter("rss");
    let cpu = m.counter("cpu_cores");
    let samples = u(&p["system"]["samples"]) as usize;
    assert_eq!(
        rss.len(),
        samples,
        "{:?}: one rss value per sample",
        m.format
    );
    assert_eq!(
        cpu.len(),
        samples,
        "{:?}: one cpu value per sample",
        m.format
    );
    assert!(
        rss.windows(2).all(|w| w[0].0 < w[1].0),
        "{:?}: times grow",
        m.format
    );

    // RSS before the allocation (the run starts at the first region); during the hold (after the first period, and
    // not in the last ms: the free follows the hold's end); after the free.
    let before = within(rss, window(m, "before"), 0);
    let base = before.iter().cloned().fold(f64::INFINITY, f64::min);
    let hold = within(rss, window(m, "hold"), 2_000_000);
    let freed = within(rss, window(m, "freed"), 0);
    let what = format!(
        "{:?}: rss before {before:?}, held {hold:?}, freed {freed:?}",
        m.format
    );
    assert!(
        !before.is_empty() && hold.len() >= 3 && freed.len() >= 3,
        "{what}"
    );
    // Every sample within the phases shows it: the rise and the fall are seen
    // within one sample period.
    assert!(hold.iter().all(|&v| v >= base + 180.0 * MIB), "{what}");
    assert!(freed.iter().all(|&v| v <= base + 20.0 * MIB), "{what}");

    // CPU: what the program measured itself while spinning (one core, or what
    // a loaded machine leaves of it) and while sleeping (none). Each value is a
    // rate over the interval before its sample: the first period of each phase
    // is skipped.
    let period = PERIOD_MS * 1_000_000;
    let spin = within(cpu, window(m, "spin"), period + 2_000_000);
    let sleep = within(cpu, window(m, "sleep"), period + 2_000_000);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (spin_self, sleep_self) = (measured(out, "spin"), measured(out, "sleep"));
    let what = format!(
        "{:?}: cpu spinning {spin:?} (measured by the program: {spin_self}), sleeping \
         {sleep:?} (measured: {sleep_self})",
        m.format
    );
    assert!(spin.len() >= 3 && sleep.len() >= 3, "{what}");
    assert!(
        spin_self >= 0.15,
        "the machine left the spinning thread too little: {what}"
    );
    // The program's own measure includes kprof's writer, the samples do not:
    // hardly any difference.
    assert!((mean(&spin) - spin_self).abs() <= 0.15, "{what}");
    assert!(
        mean(&sleep) <= 0.05 && mean(&sleep) >= sleep_self - 0.02,
        "{what}"
    );
    // One thread spins: never much more than a core.
    assert!(spin.iter().all(|&v| v <= 1.2), "{what}");
}

#[test]
fn rss_and_cpu_tracks_follow_the_phases() {
    let dir = scratch("system_sampling_phases");
    let out = run_with(
        &dir,
        &["phases"],
        &[("KPROF_SAMPLE_MS", "20"), ("KPROF_TRACE", "perfetto,json")],
    );
    let p = read_profile(&dir.join("out"));
    check_section(&p);
    let rss = metric(&p, "rss");
    assert!(f(&rss["max"]) >= 200.0 * MIB, "{rss}");
    assert!(f(&rss["min"]) < f(&rss["max"]) - 180.0 * MIB, "{rss}");
    let faults = metric(&p, "minor_faults");
    // 51200 pages touched within a few samples.
    assert!(f(&faults["max"]) > 10_000.0, "{faults}");
    let err = stderr(&out);
    assert!(err.contains("System (sampled every 20 ms: "), "{err}");
    match read_perfetto(&dir.join("out")) {
        Some(m) => check_phases(m.assert_valid(), &p, &out),
        None => eprintln!("protoc not installed: Perfetto trace not decoded"),
    }
    check_phases(read_json(&dir.join("out")).assert_valid(), &p, &out);
}

#[test]
fn sampling_without_a_trace() {
    // In place (the default): the writer is otherwise idle, and still samples.
    let dir = scratch("system_sampling_in_place");
    let out = run_with(&dir, &["phases"], &[("KPROF_SAMPLE_MS", "20")]);
    let p = read_profile(&dir.join("out"));
    assert!(u(&p["kprof"]["events_in_place"]) > 0, "{}", p["kprof"]);
    check_section(&p);
    assert!(f(&metric(&p, "rss")["max"]) >= 200.0 * MIB);
    // Spinning then sleeping: the range spans both.
    let cpu = metric(&p, "cpu_cores");
    let spin = measured(&out, "spin");
    assert!(
        f(&cpu["max"]) >= spin - 0.15 && f(&cpu["min"]) <= 0.1,
        "{cpu} {spin}"
    );
    let err = stderr(&out);
    assert!(err.contains("System (sampled every 20 ms: "), "{err}");
    assert!(err.contains("  rss "), "{err}");

    // A run shorter than the period gets its last sample at the end, and its
    // exit does not wait for the next sample (a minute away): the writer naps
    // until then, and the end wakes it.
    let dir = scratch("system_sampling_short");
    let started = std::time::Instant::now();
    run_with(&dir, &["idle", "50"], &[("KPROF_SAMPLE_MS", "60000")]);
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    let p = read_profile(&dir.join("out"));
    assert_eq!(u(&p["system"]["samples"]), 1, "{}", p["system"]);
    assert_eq!(u(&p["system"]["period_ms"]), 60000);
    assert!(f(&metric(&p, "rss")["max"]) > 0.0);
    assert!(f(&metric(&p, "mem_available")["max"]) > 0.0);
}

#[test]
fn no_sampling_unless_asked() {
    let dir = scratch("system_sampling_off");
    let out = run_with(&dir, &["idle", "100"], &[("KPROF_TRACE", "perfetto")]);
    let p = read_profile(&dir.join("out"));
    assert!(p.get("system").is_none(), "{}", p["system"]);
    let err = stderr(&out);
    assert!(!err.contains("System ("), "{err}");
    let m = read_perfetto(&dir.join("out"));
    skip_unless(
        m.is_some(),
        "Perfetto's protos (protoc) to decode the trace",
    );
    if let Some(m) = m {
        // The concurrency view's tracks (`threads <category>`) are always there.
        let system: Vec<&String> = m
            .assert_valid()
            .counters
            .keys()
            .filter(|k| !k.starts_with("threads "))
            .collect();
        assert!(system.is_empty(), "{:?}", m.counters);
    }

    // Off, the writer does no sampling work: in place it naps, and its CPU time
    // while the program ran is a small part of what sampling every 10 ms costs.
    let writer_cpu = |sample: Option<&str>| {
        let dir = scratch("system_sampling_cost");
        let mut env = vec![];
        if let Some(ms) = sample {
            env.push(("KPROF_SAMPLE_MS", ms));
        }
        run_with(&dir, &["idle", "500"], &env);
        let p = read_profile(&dir.join("out"));
        (
            u(&p["kprof"]["writer_run_cpu_ns"]),
            p["system"]["samples"].as_u64(),
        )
    };
    let (off, none) = writer_cpu(None);
    let (on, samples) = writer_cpu(Some("10"));
    assert_eq!(none, None);
    assert!(samples.unwrap() >= 20, "{samples:?}");
    assert!(
        off * 4 < on,
        "writer CPU: {off} ns without sampling, {on} ns with"
    );

    // An invalid period: one line, and the default (off).
    for bad in ["5", "60001", "often"] {
        let dir = scratch("system_sampling_invalid");
        let out = run_with(&dir, &["idle", "10"], &[("KPROF_SAMPLE_MS", bad)]);
        let err = stderr(&out);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("KPROF_SAMPLE_MS"))
            .collect();
        assert_eq!(
            lines,
            [format!(
                "kprof: KPROF_SAMPLE_MS={bad} is invalid (milliseconds, 10 to 60000, or 0 (off)); using 0"
            )],
            "{err}"
        );
        assert!(read_profile(&dir.join("out")).get("system").is_none());
    }
}

#[test]
fn otf2_metrics_on_a_system_location() {
    let have = Command::new("otf2-print")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if skip_unless(have, "OTF2 (otf2-print)") {
        return;
    }
    let dir = scratch("system_sampling_otf2");
    run_with(
        &dir,
        &["phases"],
        &[("KPROF_SAMPLE_MS", "20"), ("KPROF_TRACE", "otf2")],
    );
    let p = read_profile(&dir.join("out"));
    let samples = check_section(&p);
    let anchor = dir.join("out/otf2/traces.otf2");
    let print = |args: &[&str]| {
        let o = run(Command::new("otf2-print").args(args).arg(&anchor));
        assert_ok(&o);
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    // The definitions: one metric location, each metric with its unit, and as
    // many events there as metrics times samples.
    let defs = print(&["-G"]);
    let metrics = p["system"]["metrics"].as_array().unwrap();
    let location = defs
        .lines()
        .find(|l| l.starts_with("LOCATION ") && l.contains("Name: \"system\""))
        .unwrap_or_else(|| panic!("no system location:\n{defs}"));
    assert!(location.contains("Type: METRIC"), "{location}");
    let id = location.split_whitespace().nth(1).unwrap();
    assert!(
        location.contains(&format!("# Events: {},", samples as usize * metrics.len())),
        "{location}: {samples} samples of {} metrics",
        metrics.len()
    );
    for m in metrics {
        let member = format!("Name: \"{}\"", m["name"].as_str().unwrap());
        let line = defs
            .lines()
            .find(|l| l.starts_with("METRIC_MEMBER") && l.contains(&member))
            .unwrap_or_else(|| panic!("no metric member {member}"));
        assert!(
            line.contains(&format!("Unit: \"{}\"", m["unit"].as_str().unwrap())),
            "{line}"
        );
    }
    // The events: the rss values, their largest that of the profile.
    let events = print(&[]);
    let rss: Vec<f64> = events
        .lines()
        .filter(|l| l.starts_with("METRIC") && l.split_whitespace().nth(1) == Some(id))
        .filter_map(|l| l.split("(\"rss\"").nth(1))
        .map(|rest| {
            let v = rest.rsplit("; ").next().unwrap().trim_end_matches(')');
            v.parse::<f64>().unwrap_or_else(|_| panic!("{v}"))
        })
        .collect();
    assert_eq!(rss.len() as u64, samples);
    let max = rss.iter().cloned().fold(0.0, f64::max);
    // otf2-print shows 6 significant digits.
    let expected = f(&metric(&p, "rss")["max"]);
    assert!(
        (max - expected).abs() <= expected * 1e-5,
        "{max} vs {expected}"
    );
    assert!(max >= 200.0 * MIB);
}

#[test]
fn kprof_run_and_report() {
    let kprof = kprof_tests::lib("kprof");
    let dir = scratch("system_sampling_cli");
    let o = run(clean_cmd(&kprof)
        .current_dir(&dir)
        .args(["run", "--sample-ms", "20", "-o", "out", "--"])
        .arg(harness())
        .arg("phases"));
    assert_ok(&o);
    let p = read_profile(&dir.join("out"));
    check_section(&p);
    // `kprof report` shows the same block as the summary.
    let o = run(clean_cmd(&kprof)
        .current_dir(&dir)
        .args(["report", "out/profile.json"]));
    assert_ok(&o);
    let text = String::from_utf8_lossy(&o.stdout);
    let samples = u(&p["system"]["samples"]);
    assert!(
        text.contains(&format!("System (sampled every 20 ms: {samples} samples, ")),
        "{text}"
    );
    let rss = text
        .lines()
        .find(|l| l.trim_start().starts_with("rss "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(rss.contains("MiB"), "{rss}");

    // An invalid period: one line, exit 2, the program not run.
    let o = run(clean_cmd(&kprof)
        .current_dir(&dir)
        .args(["run", "--sample-ms", "5", "-o", "bad", "--"])
        .arg(harness())
        .arg("phases"));
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        "kprof: --sample-ms=5 is invalid (milliseconds, 10 to 60000, or 0 (off))"
    );
    assert!(!dir.join("bad").exists());
}

/// `kprof merge` of two sampled runs: per metric the range over both runs'
/// ranges, and each run's mean.
#[test]
fn merge_keeps_each_ranks_samples() {
    let kprof = kprof_tests::lib("kprof");
    let dir = scratch("system_sampling_merge");
    let mut profiles = Vec::new();
    for r in ["r0", "r1"] {
        let o = run(clean_cmd(&kprof)
            .current_dir(&dir)
            .args(["run", "--sample-ms", "20", "--summary", "0", "-o", r, "--"])
            .arg(harness())
            .arg("phases"));
        assert_ok(&o);
        profiles.push(read_profile(&dir.join(r)));
    }
    let o = run(clean_cmd(&kprof).current_dir(&dir).args([
        "merge",
        "--by-rank",
        "r0",
        "r1",
        "-o",
        "merged",
        "--no-trace",
    ]));
    assert_ok(&o);
    let m = read_profile(&dir.join("merged"));
    let rss = m["system"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "rss")
        .expect("rss");
    let (a, b) = (metric(&profiles[0], "rss"), metric(&profiles[1], "rss"));
    assert_eq!(f(&rss["min"]), f(&a["min"]).min(f(&b["min"])));
    assert_eq!(f(&rss["max"]), f(&a["max"]).max(f(&b["max"])));
    assert_eq!(
        rss["by_rank"]["mean"],
        serde_json::json!([f(&a["mean"]), f(&b["mean"])])
    );
}

/// NVML's header from the nvidia-nvml-dev wheel (tests/scripts/install-cupti.sh).
fn nvml_include() -> PathBuf {
    kprof_tests::openmp::deps_dir().join("nvml/nvidia/nvml_dev/include")
}

#[test]
fn nvml_power_of_each_gpu() {
    let include = nvml_include();
    if skip_unless(
        include.join("nvml.h").is_file(),
        "NVML's header (install-cupti.sh)",
    ) {
        return;
    }
    let dir = scratch("system_sampling_nvml");
    let lib = kprof_tests::compile(
        &[&kprof_tests::test_file("harness/nvml_standin.c")],
        &dir.join("libnvidia-ml.so.1"),
        &["-shared", "-fPIC", "-I", include.to_str().unwrap()],
    );
    let log = dir.join("nvml.log");
    run_with(
        &dir,
        &["idle", "300"],
        &[
            ("KPROF_SAMPLE_MS", "20"),
            ("KPROF_TRACE", "perfetto,json"),
            ("KPROF_NVML_LIB", lib.to_str().unwrap()),
            ("KPROF_TEST_NVML_LOG", log.to_str().unwrap()),
        ],
    );
    let p = read_profile(&dir.join("out"));
    let samples = check_section(&p);
    // Devices 0 and 1 report their power, device 2 does not: no metric for it.
    // The k-th query of device i answers 100 + i W + k * 10 mW; the first was
    // the probe at start, so sample j reads query j + 1.
    for i in 0..2u64 {
        let m = metric(&p, &format!("power gpu{i}"));
        assert_eq!(
            (m["unit"].as_str(), u(&m["samples"])),
            (Some("W"), samples),
            "{m}"
        );
        let watts = |k: u64| (100 + i) as f64 + k as f64 * 0.01;
        assert!((f(&m["min"]) - watts(2)).abs() < 1e-9, "{m}");
        assert!((f(&m["max"]) - watts(samples + 1)).abs() < 1e-9, "{m}");
        let want: Vec<f64> = (2..samples + 2).map(watts).collect();
        let mut traces = vec![read_json(&dir.join("out"))];
        traces.extend(read_perfetto(&dir.join("out")));
        for t in &traces {
            let got: Vec<f64> = t
                .counter(&format!("gpu{i}"))
                .iter()
                .map(|&(_, v)| v)
                .collect();
            assert_eq!(got.len(), want.len(), "{:?}", t.format);
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 1e-9, "{:?}: gpu{i} {got:?}", t.format);
            }
        }
    }
    let names: Vec<&str> = p["system"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .filter(|n| n.starts_with("power gpu"))
        .collect();
    assert_eq!(names, ["power gpu0", "power gpu1"]);
    // NVML initialized once, and shut down at the end.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "init\nshutdown\n");

    // NVML there but failing: one line in the section, no power, the run goes on.
    let dir = scratch("system_sampling_nvml_fail");
    let out = run_with(
        &dir,
        &["idle", "50"],
        &[
            ("KPROF_SAMPLE_MS", "20"),
            ("KPROF_NVML_LIB", lib.to_str().unwrap()),
            ("KPROF_TEST_NVML", "init_fail"),
        ],
    );
    let p = read_profile(&dir.join("out"));
    let unavailable = &p["system"]["unavailable"];
    assert!(
        unavailable
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "NVML's nvmlInit_v2 failed (error 9): no GPU power"),
        "{unavailable}"
    );
    assert!(stderr(&out).contains("(NVML's nvmlInit_v2 failed (error 9): no GPU power)"));
    // No NVML at all (no NVIDIA driver): nothing said about it.
    let dir = scratch("system_sampling_no_nvml");
    run_with(
        &dir,
        &["idle", "50"],
        &[
            ("KPROF_SAMPLE_MS", "20"),
            ("KPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1"),
        ],
    );
    let p = read_profile(&dir.join("out"));
    let sys = p["system"].to_string();
    assert!(!sys.contains("gpu") && !sys.contains("NVML"), "{sys}");
}
