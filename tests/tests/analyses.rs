//! The analysis files of every output directory, read by the tools people read them
//! with: `tasktree.json` loaded by llnl-hatchet (`GraphFrame.from_literal`, installed
//! by `tests/setup.sh` into `target/deps/hatchet`) whose dataframe must hold the
//! counts and times of `profile.json` (`tests/analyses/check_tasktree.py`), and
//! `taskgraph.dot` drawn by Graphviz (`dot -Tsvg`) and read back (`dot -Tjson`) with
//! the declared dependences of `tests/openmp/tasks.c` on it. The programs are the
//! OpenMP tests' (clang 14, real libomp 14) and the Kokkos harness.

use std::path::{Path, PathBuf};
use std::process::Command;

use kprof_tests::openmp::{build, deps_dir, kprof_cmd, Compiler, Runtime};
use kprof_tests::{
    assert_ok, build_kokkos_hosts, clean_cmd, lib, read_profile, run, scratch, skip_unless,
    test_file,
};
use serde_json::Value;

/// Where `tests/setup.sh` installs llnl-hatchet (`pip install --target`).
fn hatchet_dir() -> PathBuf {
    deps_dir().join("hatchet")
}

/// Whether Python can import hatchet from [`hatchet_dir`].
fn have_hatchet() -> bool {
    Command::new("python3")
        .args(["-c", "import hatchet"])
        .env("PYTHONPATH", hatchet_dir())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether Graphviz's `dot` runs.
fn have_dot() -> bool {
    Command::new("dot")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs the Hatchet check on `dir` (an output directory, or a merged one).
fn check_with_hatchet(dir: &Path, merged: bool) -> String {
    let mut cmd = Command::new("python3");
    cmd.arg(test_file("analyses/check_tasktree.py"))
        .arg(dir)
        .env("PYTHONPATH", hatchet_dir());
    if merged {
        cmd.arg("--merged");
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("nodes match profile.json"), "{text}");
    text
}

/// `tests/openmp/<name>.c` run under kprof on libomp 14; its output directory.
fn openmp_run(name: &str, label: &str) -> PathBuf {
    let exe = build(name, Compiler::Clang);
    let dir = scratch(&format!("analyses-{name}-{label}"));
    let mut cmd = kprof_cmd(&exe, &dir, Runtime::Llvm14, false);
    cmd.env("KPROF_TRACE", "none");
    assert_ok(&run(&mut cmd));
    dir.join("out")
}

/// The Kokkos harness's `basic` scenario under kprof; its output directory.
fn kokkos_run() -> PathBuf {
    let dir = scratch("analyses-kokkos");
    let (host, _) = build_kokkos_hosts(&dir);
    let mut cmd = clean_cmd(&host);
    cmd.current_dir(&dir)
        .args(["4", "basic"])
        .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
        .env("KPROF_OUTPUT_DIR", dir.join("out"));
    assert_ok(&run(&mut cmd));
    dir.join("out")
}

/// `taskgraph.dot` of `dir` drawn by Graphviz (SVG, checked to be a drawing of
/// every node) and read back as JSON: (from, to, type, count) per edge, each end
/// as `name [kind]`.
fn dot_edges(dir: &Path) -> Vec<(String, String, String, u64)> {
    let dot = dir.join("taskgraph.dot");
    let svg = run(Command::new("dot").arg("-Tsvg").arg(&dot));
    assert_ok(&svg);
    let svg = String::from_utf8_lossy(&svg.stdout);
    assert!(svg.contains("<svg"), "dot -Tsvg gave no SVG");
    let json = run(Command::new("dot").arg("-Tjson").arg(&dot));
    assert_ok(&json);
    let g: Value = serde_json::from_slice(&json.stdout).expect("dot -Tjson output");
    let objects = g["objects"].as_array().expect("objects");
    // Every node is drawn (one SVG group per node).
    assert_eq!(svg.matches("class=\"node\"").count(), objects.len());
    let name = |i: &Value| -> String {
        let o = &objects[i.as_u64().expect("node index") as usize];
        format!(
            "{} [{}]",
            o["fullname"].as_str().expect("fullname"),
            o["kind"].as_str().expect("kind")
        )
    };
    g["edges"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                name(&e["tail"]),
                name(&e["head"]),
                e["type"].as_str().unwrap_or_default().to_string(),
                e["count"]
                    .as_str()
                    .and_then(|c| c.parse().ok())
                    .expect("edge count"),
            )
        })
        .collect()
}

const PRODUCE: &str = "deps (tasks.c:32)";
const TRANSFORM: &str = "deps (tasks.c:37)";
const CONSUME: &str = "deps (tasks.c:39)";

/// The task execution node of `name`, as [`dot_edges`] names it.
fn task(name: &str) -> String {
    format!("{name} [omp_task]")
}

fn dependences(edges: &[(String, String, String, u64)]) -> Vec<(String, String, u64)> {
    let mut d: Vec<_> = edges
        .iter()
        .filter(|e| e.2 == "dependence")
        .map(|e| (e.0.clone(), e.1.clone(), e.3))
        .collect();
    d.sort();
    d
}

#[test]
fn openmp_tasktree_loads_in_hatchet_with_the_profiles_numbers() {
    if skip_unless(have_hatchet(), "llnl-hatchet (bash tests/setup.sh)") {
        return;
    }
    for name in ["tasks", "nested", "loops"] {
        let out = openmp_run(name, "hatchet");
        let text = check_with_hatchet(&out, false);
        eprintln!("{name}: {text}");
    }
}

#[test]
fn kokkos_tasktree_loads_in_hatchet_with_the_profiles_numbers() {
    if skip_unless(have_hatchet(), "llnl-hatchet (bash tests/setup.sh)") {
        return;
    }
    let out = kokkos_run();
    check_with_hatchet(&out, false);
    // The harness's exact tree: solve > iteration > axpy (3 x 10).
    let literal: Value =
        serde_json::from_slice(&std::fs::read(out.join("tasktree.json")).unwrap()).unwrap();
    let solve = literal
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["frame"]["name"] == "solve")
        .expect("solve root");
    assert_eq!(solve["frame"]["type"], "region");
    let it = &solve["children"][0];
    assert_eq!(it["frame"]["name"], "iteration");
    assert_eq!(it["metrics"]["count"], 3);
}

#[test]
fn taskgraph_dot_draws_the_declared_dependences_with_their_counts() {
    if skip_unless(have_dot(), "Graphviz dot (bash tests/setup.sh)") {
        return;
    }
    let out = openmp_run("tasks", "dot");
    let p = read_profile(&out);
    let edges = dot_edges(&out);
    assert_eq!(
        dependences(&edges),
        [
            (task(PRODUCE), task(TRANSFORM), 3),
            (task(TRANSFORM), task(CONSUME), 3)
        ],
        "{edges:?}"
    );
    // The call edges: each task node's instances under its parents add up to the
    // profile's count of that name.
    let mut by_name = std::collections::BTreeMap::<String, u64>::new();
    for (path, n) in kprof_tests::nodes(&p) {
        if n["kind"] == "omp_task" {
            *by_name.entry(path.last().unwrap().clone()).or_default() +=
                kprof_tests::u(&n["count"]);
        }
    }
    assert!(!by_name.is_empty());
    for (name, count) in by_name {
        let into: u64 = edges
            .iter()
            .filter(|e| e.2 == "call" && e.1 == task(&name))
            .map(|e| e.3)
            .sum();
        assert_eq!(into, count, "call edges into {name}: {edges:?}");
    }
}

#[test]
fn merged_ranks_give_hatchet_min_mean_max_and_summed_dependences() {
    let hatchet = have_hatchet();
    let dot = have_dot();
    if skip_unless(
        hatchet && dot,
        "llnl-hatchet and Graphviz (bash tests/setup.sh)",
    ) {
        return;
    }
    let a = openmp_run("tasks", "rank0");
    let b = openmp_run("tasks", "rank1");
    let m = scratch("analyses-merged").join("m");
    let o = run(clean_cmd(&lib("kprof"))
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(&m)
        .arg("--no-trace"));
    assert_ok(&o);
    // The ranks' series over time are left out, and the merge says so.
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains("series over time (over_time) of 2 ranks are not merged"),
        "{said}"
    );
    assert!(read_profile(&m).get("over_time").is_none());
    check_with_hatchet(&m, true);
    // kprof plot of the merged directory: means over ranks, and per rank.
    assert_ok(&run(clean_cmd(&lib("kprof")).arg("plot").arg(&m)));
    let ranks = read_svg(&m.join("plot-ranks.svg"));
    for s in ["min", "mean", "max"] {
        assert!(ranks.texts.contains(&s.to_string()), "{:?}", ranks.texts);
    }
    let top = read_svg(&m.join("plot-top.svg"));
    assert!(
        top.texts.iter().any(|t| t.starts_with(PRODUCE)),
        "{:?}",
        top.texts
    );
    assert_eq!(
        dependences(&dot_edges(&m)),
        [
            (task(PRODUCE), task(TRANSFORM), 6),
            (task(TRANSFORM), task(CONSUME), 6)
        ]
    );
}

/// `kprof report <args> <dir>`'s stdout.
fn report(dir: &Path, args: &[&str]) -> String {
    let o = run(clean_cmd(&lib("kprof")).arg("report").args(args).arg(dir));
    assert_ok(&o);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn report_flat_and_threads_tables_hold_the_profiles_numbers() {
    let out = openmp_run("tasks", "report");
    let p = read_profile(&out);

    // --flat: one row per name, its instances over every call path and kind.
    let mut want: std::collections::BTreeMap<String, (u64, Vec<String>)> = Default::default();
    for (path, n) in kprof_tests::nodes(&p) {
        let e = want.entry(path.last().unwrap().clone()).or_default();
        e.0 += kprof_tests::u(&n["count"]);
        let kind = n["kind"].as_str().unwrap().to_string();
        if !e.1.contains(&kind) {
            e.1.push(kind);
        }
    }
    let text = report(&out, &["--flat", "--wide", "--top", "1000"]);
    let at = text
        .lines()
        .position(|l| l.trim_start().starts_with("total"))
        .unwrap_or_else(|| panic!("{text}"));
    let mut got = std::collections::BTreeMap::new();
    let mut totals = Vec::new();
    for line in text.lines().skip(at + 1) {
        let t: Vec<&str> = line.split_whitespace().collect();
        // total (2 tokens), %, [bar], calls, time/call, min, max, self (2 each), kind, name
        let mut i = 3;
        if t[i].starts_with('#') {
            i += 1;
        }
        let calls: u64 = t[i].parse().unwrap_or_else(|_| panic!("{line}"));
        let mut kinds: Vec<String> = t[i + 9].split(',').map(String::from).collect();
        kinds.sort();
        got.insert(t[i + 10..].join(" "), (calls, kinds));
        totals.push(t[0].parse::<f64>().unwrap() * unit(t[1]));
    }
    let want: std::collections::BTreeMap<String, (u64, Vec<String>)> = want
        .into_iter()
        .map(|(k, (c, mut kinds))| {
            kinds.sort();
            (k, (c, kinds))
        })
        .collect();
    assert_eq!(got, want, "{text}");
    // Longest total first (kernel-timer's order).
    assert!(totals.windows(2).all(|w| w[0] >= w[1]), "{text}");
    assert!(got[PRODUCE].1.contains(&"omp_task".to_string()));

    // --flat --json and --csv: the same rows, in the same order, exact numbers.
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&report(&out, &["--flat", "--json", "--top", "1000"])).unwrap();
    let mut got_json = std::collections::BTreeMap::new();
    for r in &rows {
        let mut kinds: Vec<String> = r["kinds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        kinds.sort();
        got_json.insert(
            r["name"].as_str().unwrap().to_string(),
            (kprof_tests::u(&r["calls"]), kinds),
        );
    }
    assert_eq!(got_json, want, "{rows:?}");
    let csv = report(&out, &["--flat", "--csv", "--top", "1000"]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("name,kinds,calls,total_ns,time_per_call_ns,min_ns,max_ns,self_ns,total_pct")
    );
    let csv_rows: Vec<&str> = lines.collect();
    assert_eq!(csv_rows.len(), rows.len(), "{csv}");
    for (line, r) in csv_rows.iter().zip(&rows) {
        let total = r["total_ns"].to_string();
        let calls = r["calls"].to_string();
        assert!(
            line.contains(&format!(",{calls},{total},")),
            "{line} vs {r}"
        );
    }

    // --threads: per thread its span and each category's share, as in profile.json.
    let text = report(&out, &["--threads", "--wide"]);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("Time per thread"))
        .unwrap_or_else(|| panic!("{text}"));
    let head: Vec<&str> = lines[at + 1].split_whitespace().collect();
    let per_thread = p["concurrency"]["per_thread"]
        .as_array()
        .expect("per_thread");
    assert_eq!(per_thread.len(), 2, "2 OpenMP threads");
    for (row, th) in lines[at + 2..].iter().zip(per_thread) {
        let t: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(t[0], th["index"].to_string(), "{row}");
        let span = t[1].parse::<f64>().unwrap() * unit(t[2]);
        let want_span = th["span_ns"].as_f64().unwrap();
        assert!((span - want_span).abs() <= want_span * 0.01, "{row}");
        for c in th["categories"].as_array().unwrap() {
            let col = head
                .iter()
                .position(|h| *h == c["category"].as_str().unwrap())
                .unwrap_or_else(|| panic!("{c} not in {head:?}"));
            // The header has `span` as one token, the row two.
            assert_eq!(
                t[col + 1],
                format!("{:.1}%", c["pct"].as_f64().unwrap()),
                "{row}"
            );
        }
        assert!(row.ends_with(th["name"].as_str().unwrap()), "{row}");
    }
}

/// ns per unit of kprof's duration format.
fn unit(u: &str) -> f64 {
    match u {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => panic!("unit {other}"),
    }
}

/// Whether Debian's `chromium` runs.
fn have_chromium() -> bool {
    Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Renders `page` in headless Chromium (no GPU, every name lookup failing) into a
/// 1100x1600 screenshot at `shot`; the console messages it logged.
fn chromium_console(page: &Path, shot: &Path) -> Vec<String> {
    let o = run(Command::new("chromium")
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1100,1600",
        ])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display())));
    assert_ok(&o);
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("ERR_NAME_NOT_RESOLVED"))
        .map(String::from)
        .collect()
}

/// An SVG file of `kprof plot`, parsed: its text, and its rectangles' fills.
struct Svg {
    texts: Vec<String>,
    fills: Vec<String>,
}

fn read_svg(path: &Path) -> Svg {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().trim().to_string())
        .collect();
    let fills = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .map(|n| {
            format!(
                "{}/{}",
                n.attribute("fill").unwrap_or(""),
                n.attribute("opacity").unwrap_or("1")
            )
        })
        .collect();
    Svg { texts, fills }
}

#[test]
fn plot_draws_svg_figures_and_an_offline_page_chromium_renders() {
    let out = openmp_run("tasks", "plot");
    let p = read_profile(&out);
    let html = out.join("plot.html");
    let o = run(clean_cmd(&lib("kprof")).arg("plot").arg(&out));
    assert_ok(&o);

    // Top bars: the 15 (name, kind) with the most exclusive time, as profile.json
    // gives them, in that order, one bar each.
    let mut flat: std::collections::BTreeMap<(String, String), u64> = Default::default();
    for (path, n) in kprof_tests::nodes(&p) {
        let kind = n["kind"].as_str().unwrap().to_string();
        *flat
            .entry((path.last().unwrap().clone(), kind))
            .or_default() += kprof_tests::u(&n["self_ns"]);
    }
    let mut flat: Vec<((String, String), u64)> = flat.into_iter().collect();
    flat.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let top = read_svg(&out.join("plot-top.svg"));
    let bars = top.fills.iter().filter(|f| *f == "#4682B4/0.55").count();
    assert_eq!(bars, flat.len().min(15), "{:?}", top.fills);
    let labels: Vec<&String> = top.texts.iter().filter(|t| t.contains(" [omp_")).collect();
    for (i, ((name, kind), _)) in flat.iter().take(15).enumerate() {
        assert!(
            labels[i].starts_with(&format!("{name} [{kind}]")),
            "bar {i}: {} is not {name} [{kind}]",
            labels[i]
        );
    }

    // The icicle names the roots; the concurrency chart has a row per thread and
    // a legend entry per category; the imbalance chart min/mean/max per construct.
    let icicle = read_svg(&out.join("plot-icicle.svg"));
    let roots = p["tree"].as_array().unwrap();
    let all: u64 = roots.iter().map(|r| kprof_tests::u(&r["total_ns"])).sum();
    // A root a fifth of the width or more has room for its whole name.
    for root in roots
        .iter()
        .filter(|r| kprof_tests::u(&r["total_ns"]) * 5 >= all)
    {
        let name = root["name"].as_str().unwrap().to_string();
        assert!(icicle.texts.contains(&name), "{name}: {:?}", icicle.texts);
    }
    let conc = read_svg(&out.join("plot-concurrency.svg"));
    assert!(
        conc.texts.contains(&"all threads".to_string()),
        "{:?}",
        conc.texts
    );
    for t in p["concurrency"]["per_thread"].as_array().unwrap() {
        let row = format!("{} {}", t["index"], t["name"].as_str().unwrap());
        assert!(conc.texts.contains(&row), "{row}: {:?}", conc.texts);
    }
    for c in p["concurrency"]["categories"].as_array().unwrap() {
        assert!(conc
            .texts
            .contains(&c["category"].as_str().unwrap().to_string()));
    }
    let threads = read_svg(&out.join("plot-threads.svg"));
    for s in ["min", "mean", "max"] {
        assert!(
            threads.texts.contains(&s.to_string()),
            "{:?}",
            threads.texts
        );
    }

    // The scatter: one point per sample of the 5 longest sampled call paths (and
    // one legend mark each), from the profile's samples (KPROF_SAMPLES).
    let mut sampled: Vec<(u64, usize)> = kprof_tests::nodes(&p)
        .iter()
        .filter_map(|(_, n)| {
            let s = n["samples"].as_array()?;
            Some((kprof_tests::u(&n["total_ns"]), s.len()))
        })
        .collect();
    sampled.sort_by(|a, b| b.cmp(a));
    sampled.truncate(5);
    assert!(!sampled.is_empty());
    let points: usize = sampled.iter().map(|s| s.1).sum();
    let svg = std::fs::read_to_string(out.join("plot-scatter.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("scatter SVG");
    let circles = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .count();
    assert_eq!(circles, points + sampled.len());

    // The page: every figure inline, nothing fetched.
    let page = std::fs::read_to_string(&html).unwrap();
    for id in ["top", "icicle", "scatter", "concurrency", "threads"] {
        assert!(page.contains(&format!("<section id=\"{id}\">")), "{id}");
    }
    // ... and the threads over time.
    assert!(page.contains("<section id=\"threads-over-time\">"));
    assert_eq!(page.matches("<svg").count(), 6);
    for fetch in ["src=", "<link", "<script", "url(", "@import"] {
        assert!(!page.contains(fetch), "the page fetches something: {fetch}");
    }

    if skip_unless(have_chromium(), "chromium (bash tests/setup.sh)") {
        return;
    }
    // The check itself: a page with a console error is caught.
    let bad = out.join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let errors = chromium_console(&bad, &out.join("bad.png"));
    assert!(errors.iter().any(|l| l.contains("boom")), "{errors:?}");
    let shot = out.join("plot.png");
    let errors = chromium_console(&html, &shot);
    assert!(errors.is_empty(), "console messages: {errors:?}");
    let decoder = png::Decoder::new(std::fs::File::open(&shot).expect("screenshot"));
    let mut reader = decoder.read_info().expect("PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let drawn = pixels
        .chunks(px)
        .filter(|c| c[..3].iter().any(|v| *v < 235))
        .count();
    let share = drawn as f64 / (pixels.len() / px) as f64;
    assert_eq!((info.width, info.height), (1100, 1600));
    assert!(
        share > 0.08,
        "only {:.1}% of the screenshot is drawn",
        100.0 * share
    );
}

/// The harness's `basic` scenario with `n` (3n `axpy` kernels, each spinning
/// 1 us) under kprof with `env`; its profile.
fn kokkos_basic(label: &str, n: u64, env: &[(&str, &str)]) -> Value {
    let dir = scratch(&format!("analyses-samples-{label}"));
    let (host, _) = build_kokkos_hosts(&dir);
    let mut cmd = clean_cmd(&host);
    cmd.current_dir(&dir)
        .args(["4", "basic", &n.to_string()])
        .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
        .env("KPROF_OUTPUT_DIR", dir.join("out"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    assert_ok(&run(&mut cmd));
    read_profile(&dir.join("out"))
}

#[test]
fn a_million_kernels_keep_exactly_the_configured_samples_uniformly() {
    // 3 x 333,334 = 1,000,002 axpy instances, in place and through records.
    for (label, env) in [
        ("in-place", vec![("KPROF_SAMPLES", "500")]),
        (
            "records",
            vec![("KPROF_SAMPLES", "500"), ("KPROF_IN_PLACE", "0")],
        ),
    ] {
        let launches = scratch(&format!("analyses-launches-{label}")).join("starts.bin");
        let mut env = env;
        let path = launches.display().to_string();
        env.push(("KOKKOS_HOST_STARTS", path.as_str()));
        let p = kokkos_basic(label, 333_334, &env);
        let all = kprof_tests::nodes(&p);
        let axpy = kprof_tests::node(&all, &["solve", "iteration", "axpy"]);
        assert_eq!(kprof_tests::u(&axpy["count"]), 1_000_002, "{label}");
        let samples = axpy["samples"]
            .as_array()
            .unwrap_or_else(|| panic!("{label}: no samples"));
        assert_eq!(samples.len(), 500, "{label}");
        let run = kprof_tests::u(&p["clock"]["duration_ns"]);
        let (min, max) = (
            kprof_tests::u(&axpy["min_ns"]),
            kprof_tests::u(&axpy["max_ns"]),
        );
        let starts: Vec<u64> = samples
            .iter()
            .map(|s| {
                let (start, dur) = (kprof_tests::u(&s[0]), kprof_tests::u(&s[1]));
                assert!(start <= run && (min..=max).contains(&dur), "{label}: {s}");
                start
            })
            .collect();
        assert!(
            starts.windows(2).all(|w| w[0] < w[1]),
            "{label}: by start, distinct"
        );
        // Uniform over the instances: each sample is the instance launched
        // last before its start (the harness's launch times, on the same
        // clock), binned by that index, so a stalled machine that spreads the
        // instances unevenly over time changes nothing. Chi-square over ten
        // bins (9 degrees of freedom; 0.1% critical value).
        let launched: Vec<u64> = std::fs::read(&launches)
            .expect("the harness's launch times")
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(launched.len(), 1_000_002, "{label}");
        assert!(launched.windows(2).all(|w| w[0] < w[1]));
        let t0 = kprof_tests::u(&p["clock"]["start_ns"]);
        let mut bins = [0u64; 10];
        for s in &starts {
            let at = launched.partition_point(|&l| l <= t0 + s).max(1) - 1;
            bins[at * 10 / launched.len()] += 1;
        }
        let chi2: f64 = bins.iter().map(|&o| (o as f64 - 50.0).powi(2) / 50.0).sum();
        assert!(chi2 < 27.88, "{label}: bins {bins:?}, chi-square {chi2}");
    }
    // KPROF_SAMPLES=0: none.
    let p = kokkos_basic("off", 10, &[("KPROF_SAMPLES", "0")]);
    assert!(!serde_json::to_string(&p).unwrap().contains("\"samples\""));
}

/// `kprof plot` of a Kokkos run with allocations: the memory figure has a row per
/// memory space of the profile, named with its high-water time, and both series.
#[test]
fn plot_draws_memory_per_space() {
    let out = kokkos_run();
    let p = read_profile(&out);
    let spaces = p["memory"].as_array().expect("memory");
    assert!(!spaces.is_empty(), "the harness allocates");
    let o = run(clean_cmd(&lib("kprof")).arg("plot").arg(&out));
    assert_ok(&o);
    let svg = read_svg(&out.join("plot-memory.svg"));
    for s in spaces {
        let row = format!("{} (high water at ", s["space"].as_str().unwrap());
        assert!(
            svg.texts.iter().any(|t| t.starts_with(&row)),
            "{row}: {:?}",
            svg.texts
        );
    }
    for series in ["high water", "at end"] {
        assert!(svg.texts.contains(&series.to_string()), "{:?}", svg.texts);
    }
    let page = std::fs::read_to_string(out.join("plot.html")).unwrap();
    assert!(page.contains("<section id=\"memory\">"));
}
