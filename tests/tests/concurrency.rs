//! The concurrency view (threads per kind of work) on a real OpenMP runtime:
//! `tests/openmp/imbalance.c` runs 3 parallel regions of 2 threads in which thread
//! 1 sleeps 200 ms while thread 0 waits in the implicit barrier. About half of the
//! two threads' time is therefore waiting in a barrier and half parallel work:
//! `profile.json`'s `concurrency` section must say so within 5 percentage points,
//! in place (no trace) and from records (a trace), and the traces' `threads wait`
//! counter track must show one thread waiting for those 600 ms (within 5%).

use kprof_tests::openmp::{build, kprof_cmd, libomp19, Compiler, Runtime};
use kprof_tests::trace_check::{perfetto_schema, read_json, read_perfetto, Model};
use std::path::PathBuf;
use std::process::Command;

use kprof_tests::{assert_ok, lib, read_profile, run, scratch, skip_unless, u};
use serde_json::Value;

/// Regions in the program, and how long thread 1 sleeps in each.
const ROUNDS: u64 = 3;
const SLEEP_NS: u64 = 200_000_000;

/// One run of the imbalance program.
struct Run {
    profile: Value,
    /// Decoded traces.
    models: Vec<Model>,
    /// kprof's summary.
    stderr: String,
    /// The output directory.
    out: PathBuf,
}

/// Runs the imbalance program on `runtime`, with the traces `trace` (empty: none,
/// the profile aggregated in place).
fn imbalance(runtime: Runtime, trace: &str, label: &str) -> Run {
    let exe = build("imbalance", Compiler::Clang);
    let dir = scratch(&format!("concurrency-{}-{label}", runtime.name()));
    let mut cmd = kprof_cmd(&exe, &dir, runtime, false);
    if trace.is_empty() {
        cmd.env_remove("KPROF_TRACE");
    } else {
        cmd.env("KPROF_TRACE", trace);
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "rounds 3 3\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Concurrency: 2 threads"),
        "no concurrency line in the summary:\n{stderr}"
    );
    let outdir = dir.join("out");
    let profile = read_profile(&outdir);
    let mut models = Vec::new();
    if trace.contains("json") {
        let m = read_json(&outdir);
        m.assert_valid();
        models.push(m);
    }
    if trace.contains("perfetto") && !skip_unless(perfetto_schema().is_some(), "protoc") {
        let m = read_perfetto(&outdir).expect("schema checked");
        m.assert_valid();
        models.push(m);
    }
    Run {
        profile,
        models,
        stderr: stderr.into_owned(),
        out: outdir,
    }
}

/// The summary's concurrency block, and `kprof report`'s of the same profile, are
/// the section's numbers: the overall line and one row per thread.
fn check_text(r: &Run) {
    let c = &r.profile["concurrency"];
    let block = |text: &str| -> Vec<String> {
        let mut lines = text.lines().skip_while(|l| !l.starts_with("Concurrency:"));
        let mut out: Vec<String> = lines.next().into_iter().map(String::from).collect();
        out.extend(lines.take_while(|l| l.starts_with("  ")).map(String::from));
        out
    };
    let summary = block(&r.stderr);
    let (wait, _) = category(&c["categories"], "wait");
    let (parallel, _) = category(&c["categories"], "parallel");
    assert_eq!(summary.len(), 3, "{summary:?}");
    assert!(
        summary[0].starts_with("Concurrency: 2 threads (")
            && summary[0].contains(&format!("{wait:.1}% wait"))
            && summary[0].contains(&format!("{parallel:.1}% parallel")),
        "{summary:?}"
    );
    for t in c["per_thread"].as_array().unwrap() {
        let row = format!("  {} ({}): ", t["name"].as_str().unwrap(), t["index"]);
        let line = summary
            .iter()
            .find(|l| l.starts_with(&row))
            .unwrap_or_else(|| panic!("no row {row:?} in {summary:?}"));
        // Shares under 0.05% are left out of the line.
        for cat in ["wait", "parallel"] {
            let (pct, _) = category(&t["categories"], cat);
            let shown = line.contains(&format!("{pct:.1}% {cat}"));
            assert_eq!(shown, pct >= 0.05, "{cat} {pct}: {line}");
        }
    }
    let o = run(Command::new(lib("kprof")).arg("report").arg(&r.out));
    assert_ok(&o);
    assert_eq!(block(&String::from_utf8_lossy(&o.stdout)), summary);
}

/// The share (percent) and time of `category` in a list of category times.
fn category(list: &Value, category: &str) -> (f64, u64) {
    let c = list
        .as_array()
        .expect("categories")
        .iter()
        .find(|c| c["category"] == category)
        .unwrap_or_else(|| panic!("no category {category} in {list}"));
    (c["pct"].as_f64().expect("pct"), u(&c["ns"]))
}

/// The profile's concurrency section says: 2 threads, half waiting (thread 0,
/// the initial thread, all the time), half parallel (thread 1, sleeping in its
/// implicit task), little else; returns the total wait time.
fn check_section(p: &Value) -> u64 {
    let c = &p["concurrency"];
    assert_eq!(u(&c["threads"]), 2, "{c}");
    let cats = &c["categories"];
    let names: Vec<&str> = cats
        .as_array()
        .expect("categories")
        .iter()
        .map(|c| c["category"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["kernel", "parallel", "task", "wait", "data", "region", "runtime", "idle"]
    );
    // The categories divide the threads' spans exactly.
    let sum: u64 = cats.as_array().unwrap().iter().map(|c| u(&c["ns"])).sum();
    assert_eq!(sum, u(&c["thread_ns"]), "{c}");
    let spans: u64 = c["per_thread"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| u(&t["span_ns"]))
        .sum();
    assert_eq!(spans, u(&c["thread_ns"]));
    assert!(u(&c["wall_ns"]) >= u(&c["thread_ns"]) / 2, "{c}");

    let (wait, wait_ns) = category(cats, "wait");
    let (parallel, _) = category(cats, "parallel");
    assert!(
        (wait - 50.0).abs() <= 5.0,
        "wait {wait}% (want 50 +- 5): {c}"
    );
    assert!(
        (parallel - 50.0).abs() <= 5.0,
        "parallel {parallel}% (want 50 +- 5): {c}"
    );
    for other in ["kernel", "task", "data", "region", "runtime"] {
        assert_eq!(category(cats, other), (0.0, 0), "{other}: {c}");
    }
    // The waiting is the sleep's length on the other thread, 3 times: never
    // less, and more only by how late a loaded machine wakes the sleeper.
    let want = (ROUNDS * SLEEP_NS) as f64;
    assert!(
        within_sleep(wait_ns as f64, want),
        "wait {wait_ns} ns, want {want} -5% +30%"
    );

    // Per thread: the initial thread waits, the worker works.
    let threads = c["per_thread"].as_array().expect("per_thread");
    assert_eq!(threads.len(), 2);
    let by_name = |name: &str| {
        threads
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no thread {name}: {c}"))
    };
    let initial = by_name("OpenMP initial thread");
    let worker = by_name("OpenMP worker thread");
    let (w0, _) = category(&initial["categories"], "wait");
    let (p1, _) = category(&worker["categories"], "parallel");
    assert!(w0 >= 90.0, "initial thread waits {w0}%: {initial}");
    assert!(p1 >= 90.0, "worker works {p1}%: {worker}");
    wait_ns
}

/// Whether `ns` is the length of sleeps of `want` ns in all: not shorter (but
/// for the clock's and the timestamps' slack), and longer only by the wake-up
/// delays that a loaded machine adds to each.
fn within_sleep(ns: f64, want: f64) -> bool {
    ns >= 0.95 * want && ns <= 1.3 * want
}

/// A counter series' step function: total time at each value, and the integral
/// (value x ns), from its first point to its last.
fn steps(series: &[(u64, f64)]) -> (std::collections::BTreeMap<u64, u64>, f64) {
    let mut at = std::collections::BTreeMap::new();
    let mut integral = 0.0;
    for w in series.windows(2) {
        let ((t0, v), (t1, _)) = (w[0], w[1]);
        assert!(t1 >= t0, "counter goes back in time: {series:?}");
        *at.entry(v as u64).or_insert(0) += t1 - t0;
        integral += v * (t1 - t0) as f64;
    }
    (at, integral)
}

#[test]
fn imbalance_waits_in_the_barrier_in_place() {
    let mut runtimes = vec![Runtime::Llvm14];
    // libomp 19 is optional here, but under KPROF_REQUIRE_ALL_TESTS its absence
    // fails rather than quietly testing one runtime.
    if !skip_unless(libomp19().is_some(), "libomp 19 (tests/setup.sh)") {
        runtimes.push(Runtime::Llvm19);
    }
    for rt in runtimes {
        let r = imbalance(rt, "", "in-place");
        let p = &r.profile;
        assert!(
            u(&p["kprof"]["events_in_place"]) > 0,
            "not aggregated in place"
        );
        check_section(p);
        check_text(&r);
    }
}

#[test]
fn imbalance_waits_in_the_barrier_in_traces() {
    let r = imbalance(Runtime::Llvm14, "perfetto,json", "traces");
    let p = &r.profile;
    assert_eq!(
        u(&p["kprof"]["events_in_place"]),
        0,
        "a trace takes records"
    );
    let wait_ns = check_section(p);
    assert!(!r.models.is_empty());
    for m in &r.models {
        let names: Vec<&String> = m
            .counters
            .keys()
            .filter(|k| k.starts_with("threads "))
            .collect();
        let wait = m
            .counters
            .get("threads wait")
            .unwrap_or_else(|| panic!("{:?}: no 'threads wait' track in {names:?}", m.format));
        let (at, integral) = steps(wait);
        // Never more than one thread waits; one waits 3 x 200 ms (and briefly
        // between regions, the worker).
        assert!(at.keys().all(|&v| v <= 2), "{:?}: {at:?}", m.format);
        let one = *at.get(&1).unwrap_or(&0) as f64;
        let want = (ROUNDS * SLEEP_NS) as f64;
        assert!(
            within_sleep(one, want),
            "{:?}: one thread waits {one} ns, want {want} -5% +30% ({at:?})",
            m.format
        );
        // The same waiting as the profile's.
        assert!(
            (integral - wait_ns as f64).abs() <= 0.05 * wait_ns as f64,
            "{:?}: waiting integral {integral}, profile {wait_ns}",
            m.format
        );
        // The worker sleeps in its implicit task: one thread in parallel work.
        let (par, _) = steps(&m.counters["threads parallel"]);
        let one = *par.get(&1).unwrap_or(&0) as f64;
        assert!(
            one >= 0.95 * want,
            "{:?}: parallel {par:?}, want 1 for {want} ns",
            m.format
        );
        // Every point is a change, and few: not one per event.
        assert!(wait.len() < 100, "{:?}: {} points", m.format, wait.len());
        // At the end, both threads are idle.
        let idle = &m.counters["threads idle"];
        assert_eq!(idle.last().map(|&(_, v)| v), Some(2.0), "{:?}", m.format);
    }
}

/// Phases of `tests/openmp/phases.c`: (start, end) CLOCK_MONOTONIC ns of one
/// thread busy, four threads busy, and 123456789 bytes in the Host space.
const PHASE_BYTES: u64 = 123_456_789;

/// The interior buckets of `[a, b)` (a tenth of it kept off each end), as
/// bucket indices of a series starting at `start` with width `w`.
fn interior(a: u64, b: u64, start: u64, w: u64) -> std::ops::Range<usize> {
    let margin = (b - a) / 10;
    let first = (a + margin - start).div_ceil(w) as usize;
    let last = ((b - margin - start) / w) as usize; // exclusive: whole buckets only
    first..last.max(first)
}

fn mean_of(v: &[f64], r: std::ops::Range<usize>) -> f64 {
    assert!(!r.is_empty(), "no whole bucket in the phase");
    v[r.clone()].iter().sum::<f64>() / r.len() as f64
}

/// The profile's series over time (`over_time`) and `kprof plot`'s figures of
/// it, on a real OpenMP runtime: one thread in parallel work, then four, then
/// 123456789 bytes in the Host space and no parallel work (300 ms each). After
/// a region, libomp reports its workers' implicit barrier and implicit task
/// ending only when it next wakes them (here after the run): kprof ends them at
/// the region's join, so in phase 3 no thread works or waits. In place and
/// from records, the series show that structure bucket by bucket, add up to
/// the concurrency section's totals, and the SVG figures hold the same series.
#[test]
fn over_time_shows_the_phases_and_plot_draws_them() {
    let exe = build("phases", Compiler::Clang);
    for (label, records) in [("in-place", false), ("records", true)] {
        let dir = scratch(&format!("concurrency-over-time-{label}"));
        let mut cmd = kprof_cmd(&exe, &dir, Runtime::Llvm14, false);
        cmd.env_remove("KPROF_TRACE")
            .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
            .env("KPROF_SUMMARY", "0");
        if records {
            cmd.env("KPROF_IN_PLACE", "0");
        }
        let out = run(&mut cmd);
        assert_ok(&out);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let phases: Vec<(u64, u64)> = stdout
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.first() == Some(&"phase"))
                    .then(|| (f[2].parse().unwrap(), f[3].parse().unwrap()))
            })
            .collect();
        assert_eq!(phases.len(), 3, "{stdout}");
        assert!(stdout.contains("ran 2 1 1 1"), "{stdout}");
        let outdir = dir.join("out");
        let p = read_profile(&outdir);
        assert_eq!(
            u(&p["kprof"]["events_in_place"]) > 0,
            !records,
            "{label}: in place or not"
        );
        let o = &p["over_time"];
        let (w, n) = (u(&o["bucket_ns"]), u(&o["buckets"]) as usize);
        let start = u(&p["clock"]["start_ns"]);
        let run_ns = u(&p["clock"]["duration_ns"]);
        // Between half and all of the 512 buckets span the run.
        assert!(
            (256..=512).contains(&n) && (n as u64 - 1) * w < run_ns && run_ns <= n as u64 * w + 1,
            "{label}: {n} buckets of {w} ns for {run_ns} ns"
        );
        let series = |c: &str| -> Vec<f64> {
            o["threads"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["category"] == c)
                .map(|t| {
                    t["mean"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap())
                        .collect()
                })
                .unwrap_or_else(|| vec![0.0; n])
        };
        let cats = o["threads"].as_array().unwrap();
        for t in cats {
            assert_eq!(t["mean"].as_array().unwrap().len(), n);
        }
        // Only parallel work and its barriers: the bottom area of the plot.
        assert_eq!(cats[0]["category"], "parallel", "{label}");
        let busy = series("parallel");
        let (wait, idle) = (series("wait"), series("idle"));
        let [(a1, b1), (a2, b2), (a3, b3)] = [phases[0], phases[1], phases[2]];
        let (r1, r2, r3) = (
            interior(a1, b1, start, w),
            interior(a2, b2, start, w),
            interior(a3, b3, start, w),
        );
        let (busy1, busy2, busy3) = (
            mean_of(&busy, r1.clone()),
            mean_of(&busy, r2.clone()),
            mean_of(&busy, r3.clone()),
        );
        let wait3 = mean_of(&wait, r3.clone());
        eprintln!(
            "{label}: parallel {busy1:.2} / {busy2:.2} / {busy3:.2}; waiting in 3 {wait3:.2}"
        );
        assert!(
            (0.95..=1.05).contains(&busy1),
            "{label}: phase 1 parallel {busy1}"
        );
        assert!(
            (3.6..=4.05).contains(&busy2),
            "{label}: phase 2 parallel {busy2}"
        );
        assert!(busy3 < 0.05, "{label}: phase 3 parallel {busy3}");
        assert!(wait3 < 0.05, "{label}: phase 3 waiting {wait3}");
        // Nobody waits inside phases 1 and 2, and no known thread is between
        // instances there.
        assert!(
            mean_of(&wait, r1.clone()) + mean_of(&wait, r2.clone()) < 0.05,
            "{label}"
        );
        assert!(
            mean_of(&idle, r1.clone()) + mean_of(&idle, r2.clone()) < 0.05,
            "{label}"
        );
        // The series add up to the concurrency section's time per category.
        for t in cats {
            let c = t["category"].as_str().unwrap();
            let v = series(c);
            let last = run_ns - (n as u64 - 1) * w;
            let ns: f64 =
                v[..n - 1].iter().map(|x| x * w as f64).sum::<f64>() + v[n - 1] * last as f64;
            let want = p["concurrency"]["categories"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["category"] == c)
                .map(|x| u(&x["ns"]))
                .unwrap() as f64;
            assert!(
                (ns - want).abs() <= 0.01 * want + 2.0 * w as f64,
                "{label}: {c}: series {ns} ns, section {want} ns"
            );
        }
        // Memory: the block's bytes in phase 3's buckets, none before or after.
        let host = o["memory"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["space"] == "Host")
            .expect("Host space");
        let mem: Vec<u64> = host["max_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(u)
            .collect();
        assert_eq!(mem.len(), n);
        assert!(mem[r3.clone()].iter().all(|&b| b == PHASE_BYTES), "{label}");
        assert!(mem[..r2.end].iter().all(|&b| b == 0), "{label}");
        let after = ((b3 - start) / w) as usize + 1;
        assert!(mem[after..].iter().all(|&b| b == 0), "{label}");
        assert_eq!(mem.iter().max(), Some(&PHASE_BYTES));

        // kprof plot: the stacked areas (drawn first, all threads; drawn last,
        // the bottom category: parallel work) and the memory line, in phase
        // order.
        let o = run(std::process::Command::new(lib("kprof"))
            .arg("plot")
            .arg(&outdir));
        assert_ok(&o);
        let frac = |x: f64, xs: &[f64]| {
            let (l, r) = (xs[0], xs[xs.len() - 1]);
            (x - l) / (r - l)
        };
        let threads_svg =
            std::fs::read_to_string(outdir.join("plot-threads-over-time.svg")).unwrap();
        let doc = roxmltree::Document::parse(&threads_svg).expect("SVG");
        let polygons: Vec<Vec<(f64, f64)>> = doc
            .descendants()
            .filter(|n| n.has_tag_name("polygon"))
            .map(|n| points(n.attribute("points").unwrap()))
            .collect();
        assert_eq!(polygons.len(), cats.len(), "{label}: one area per category");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for t in cats {
            assert!(
                texts.contains(&t["category"].as_str().unwrap()),
                "{texts:?}"
            );
        }
        // Height of an area at time t (its steps' mean over a phase's interior).
        let height = |poly: &[(f64, f64)], a: u64, b: u64| -> f64 {
            let base = poly.iter().map(|p| p.1).fold(f64::MIN, f64::max);
            let top = poly;
            let xs: Vec<f64> = {
                let mut v: Vec<f64> = top.iter().map(|p| p.0).collect();
                v.sort_by(f64::total_cmp);
                v
            };
            let (fa, fb) = (
                (a + (b - a) / 5 - start) as f64 / run_ns as f64,
                (b - (b - a) / 5 - start) as f64 / run_ns as f64,
            );
            let hs: Vec<f64> = top
                .iter()
                .filter(|p| (fa..=fb).contains(&frac(p.0, &xs)))
                .map(|p| base - p.1)
                .collect();
            assert!(!hs.is_empty());
            hs.iter().sum::<f64>() / hs.len() as f64
        };
        let (all, busy_area) = (&polygons[0], &polygons[polygons.len() - 1]);
        let (h1, h2, h3) = (
            height(busy_area, a1, b1),
            height(busy_area, a2, b2),
            height(busy_area, a3, b3),
        );
        assert!(
            (3.4..=4.3).contains(&(h2 / h1)) && h3 < 0.05 * h2,
            "{label}: busy area {h1} / {h2} / {h3} px"
        );
        // All threads: four in phase 2, none in phase 3 (the workers are
        // idle after their last region's join).
        let (all2, all3) = (height(all, a2, b2), height(all, a3, b3));
        assert!(
            (all2 - h2).abs() < 0.05 * h2 && all3 < 0.05 * all2,
            "{label}: all threads {all2} / {all3} px vs {h2}"
        );

        let mem_svg = std::fs::read_to_string(outdir.join("plot-memory-over-time.svg")).unwrap();
        let doc = roxmltree::Document::parse(&mem_svg).expect("SVG");
        let lines: Vec<Vec<(f64, f64)>> = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
            .map(|n| points(n.attribute("points").unwrap()))
            .collect();
        assert_eq!(lines.len(), o_memory_len(&p), "{label}: one line per space");
        let line = lines
            .iter()
            .max_by(|a, b| {
                let h = |l: &Vec<(f64, f64)>| {
                    l.iter().map(|p| p.1).fold(f64::MIN, f64::max)
                        - l.iter().map(|p| p.1).fold(f64::MAX, f64::min)
                };
                h(a).total_cmp(&h(b))
            })
            .unwrap();
        let xs: Vec<f64> = line.iter().map(|p| p.0).collect();
        let top_y = line.iter().map(|p| p.1).fold(f64::MAX, f64::min);
        let high: Vec<f64> = line
            .iter()
            .filter(|p| p.1 < top_y + 0.5)
            .map(|p| frac(p.0, &xs) * run_ns as f64 + start as f64)
            .collect();
        let (lo, hi) = (
            high.iter().copied().fold(f64::MAX, f64::min),
            high.iter().copied().fold(f64::MIN, f64::max),
        );
        let slack = 2.0 * w as f64;
        assert!(
            lo >= a3 as f64 - slack && hi <= b3 as f64 + slack && hi - lo >= 0.8 * (b3 - a3) as f64,
            "{label}: the memory line is high from {lo} to {hi}, phase 3 is {a3}..{b3}"
        );
        let page = std::fs::read_to_string(outdir.join("plot.html")).unwrap();
        for id in ["threads-over-time", "memory-over-time"] {
            assert!(page.contains(&format!("<section id=\"{id}\">")), "{id}");
        }
    }
}

fn o_memory_len(p: &Value) -> usize {
    p["over_time"]["memory"].as_array().map_or(0, Vec::len)
}

/// An SVG `points` attribute.
fn points(s: &str) -> Vec<(f64, f64)> {
    s.split_whitespace()
        .filter_map(|xy| {
            let (x, y) = xy.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        })
        .collect()
}
