//! The analysis files of every output directory, read by the tools people read them
//! with: `tasktree.json` loaded by llnl-hatchet (`GraphFrame.from_literal`, installed
//! by `tests/setup.sh` into `target/deps/hatchet`) whose dataframe must hold the
//! counts and times of `profile.json` (`tests/analyses/check_tasktree.py`), and
//! `taskgraph.dot` drawn by Graphviz (`dot -Tsvg`) and read back (`dot -Tjson`) with
//! the declared dependences of `tests/openmp/tasks.c` on it. The programs are the
//! OpenMP tests' (clang 14, real libomp 14) and the Kokkos harness.

use std::collections::{BTreeMap, BTreeSet};
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

/// `page` as headless Chromium shows it to a user (`tests/analyses/plot_page.py`,
/// which drives it over the DevTools protocol): the console messages, each
/// figure's size and screenshot (PNGs in `shots`), and in the flame graph the
/// details line each hover writes, a click's zoom and a search (`args`).
fn plot_page(page: &Path, shots: &Path, args: &[&str]) -> Value {
    let o = run(Command::new("python3")
        .arg(test_file("analyses/plot_page.py"))
        .arg(page)
        .arg(shots)
        .args(args));
    assert_ok(&o);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("plot_page.py: {e}: {}", String::from_utf8_lossy(&o.stdout)))
}

use kprof_tests::plot_check::FlameFrame as Frame;

/// The frames of the flame graph SVG at `path`.
fn flame_frames(path: &Path) -> Vec<Frame> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    kprof_tests::plot_check::flame_frames(&text)
}

/// A time summed over `team` threads, per thread (kprof's rounding).
fn per_thread(ns: u64, team: u64) -> u64 {
    let t = team.max(1);
    (ns + t / 2) / t
}

/// The flame graph's frames checked against profile.json's tree, the
/// independent reference: each drawn call path is a frame titled with its name
/// and kind, in the row below its parent's, starting where its elder
/// siblings end, exactly as wide as its subtree's exclusive times per thread
/// of the largest team around it, and within 1% of the whole of its own
/// inclusive time per thread (a construct over a team: between half of it and
/// it, the team's mean thread); its title holds its share and instances.
/// Subtrees under 0.01% of the whole are not drawn. Returns the frames.
fn check_flame(path: &Path, p: &Value) -> Vec<Frame> {
    let frames = flame_frames(path);
    const DEVICE: [&str; 4] = ["gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_sync"];
    fn team_of(n: &Value, parent: u64) -> u64 {
        n["threads"]["threads"].as_u64().unwrap_or(0).max(parent)
    }
    fn width(n: &Value, parent: u64) -> u64 {
        let team = team_of(n, parent);
        per_thread(kprof_tests::u(&n["self_ns"]), team)
            + n["children"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| !DEVICE.contains(&c["kind"].as_str().unwrap()))
                .map(|c| width(c, team))
                .sum::<u64>()
    }
    let roots: Vec<&Value> = p["tree"].as_array().unwrap().iter().collect();
    let total: u64 = roots.iter().map(|r| width(r, 1)).sum();
    let top = frames.iter().map(|f| f.y).fold(f64::INFINITY, f64::min);
    let root = frames.iter().find(|f| f.y == top).expect("a root frame");
    assert!(root.title.starts_with("all ("), "{}", root.title);
    assert_eq!((root.x, root.w), (0, total));
    let row = frames
        .iter()
        .map(|f| f.y)
        .filter(|&y| y > top)
        .fold(f64::INFINITY, f64::min)
        - top;
    let mut drawn = 0;
    fn walk(
        list: &[&Value],
        parent: &Frame,
        team: u64,
        total: u64,
        row: f64,
        frames: &[Frame],
        drawn: &mut usize,
    ) {
        let mut at = parent.x;
        for n in list {
            let kind = n["kind"].as_str().unwrap();
            if DEVICE.contains(&kind) {
                continue;
            }
            let w = width(n, team);
            if w == 0 || (w as f64) < 1e-4 * total as f64 {
                continue;
            }
            let name = n["name"].as_str().unwrap();
            let title = format!("{name} ({kind}, ");
            let f = frames
                .iter()
                .find(|f| f.y == parent.y + row && f.x == at && f.title.starts_with(&title))
                .unwrap_or_else(|| {
                    panic!(
                        "no frame {title}... at x {at} below {}: {frames:#?}",
                        parent.title
                    )
                });
            *drawn += 1;
            assert_eq!(f.w, w, "{}", f.title);
            let t = team_of(n, team);
            let inclusive = per_thread(kprof_tests::u(&n["total_ns"]), t);
            // Where a team starts below it, the frame holds the team's mean
            // thread, which is no longer than the construct around it (the
            // slowest thread) and at least half of it; elsewhere the
            // exclusive times add up to the inclusive one.
            fn same_team(n: &Value, team: u64) -> bool {
                n["children"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|c| team_of(c, team) == team && same_team(c, team))
            }
            let slack = 0.01 * total as f64;
            if same_team(n, t) {
                assert!(
                    f.w.abs_diff(inclusive) as f64 <= slack,
                    "{}: {} wide, inclusive {inclusive} per thread",
                    f.title,
                    f.w
                );
            } else {
                assert!(
                    f.w as f64 <= inclusive as f64 + slack && 2 * f.w >= inclusive,
                    "{}: {} wide, inclusive {inclusive} per thread",
                    f.title,
                    f.w
                );
            }
            let count = kprof_tests::u(&n["count"]);
            let share = format!("{:.2}%: ", 100.0 * w as f64 / total as f64);
            assert!(
                f.title.starts_with(&format!("{title}{share}")),
                "{} {share}",
                f.title
            );
            assert!(
                f.title.ends_with(&format!(
                    ", {count} instance{})",
                    if count == 1 { "" } else { "s" }
                )),
                "{}",
                f.title
            );
            assert_eq!(
                f.title.contains(&format!(" over {t}]")),
                t > 1,
                "{}",
                f.title
            );
            let children: Vec<&Value> = n["children"].as_array().unwrap().iter().collect();
            walk(&children, f, t, total, row, frames, drawn);
            at += w;
        }
    }
    walk(&roots, root, 1, total, row, &frames, &mut drawn);
    assert_eq!(
        drawn + 1,
        frames.len(),
        "every frame is a call path: {frames:#?}"
    );
    frames
}

/// A figure's screenshot: its size, and whether something is drawn on it.
fn check_shot(png_path: &Path, width: f64, height: f64) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).expect("screenshot"));
    let mut reader = decoder.read_info().expect("PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    assert_eq!(
        (info.width, info.height),
        (width.round() as u32, height.round() as u32),
        "{}",
        png_path.display()
    );
    let px = info.color_type.samples();
    let pixels = &buf[..info.buffer_size()];
    let drawn = pixels
        .chunks(px)
        .filter(|c| c[..3].iter().any(|v| *v < 200))
        .count();
    assert!(
        drawn * 100 > pixels.len() / px,
        "{}: under 1% of it drawn",
        png_path.display()
    );
}

/// An SVG file of `kprof plot`, parsed: its text, and its rectangles' fills.
struct Svg {
    texts: Vec<String>,
    /// Each text with its x.
    text_x: Vec<(String, f64)>,
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
    let text_x = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            (
                n.text().unwrap_or_default().trim().to_string(),
                n.attribute("x").and_then(|x| x.parse().ok()).unwrap_or(0.0),
            )
        })
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
    Svg {
        texts,
        text_x,
        fills,
    }
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

    // The flame graph, frame by frame against the profile's tree.
    let frames = check_flame(&out.join("plot-icicle.svg"), &p);

    // The concurrency chart: a row per thread, an axis from 0 to 100% and no
    // further, the legend (an entry per category) right of it.
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
    let ticks: Vec<&String> = conc.texts.iter().filter(|t| t.ends_with('%')).collect();
    let want: Vec<String> = (0..=10).map(|i| format!("{}%", i * 10)).collect();
    assert_eq!(ticks, want.iter().collect::<Vec<_>>());
    let x_of = |t: &str| {
        conc.text_x
            .iter()
            .find(|(s, _)| s == t)
            .map(|(_, x)| *x)
            .unwrap()
    };
    for c in p["concurrency"]["categories"].as_array().unwrap() {
        let name = c["category"].as_str().unwrap();
        assert!(x_of(name) > x_of("100%"), "{name} is left of 100%");
    }
    let threads = read_svg(&out.join("plot-threads.svg"));
    for s in ["min", "mean", "max"] {
        assert!(
            threads.texts.contains(&s.to_string()),
            "{:?}",
            threads.texts
        );
    }

    // The scatter: one point per sample of the 5 longest sampled call paths that
    // starts within the run (and one legend mark each), from the profile's
    // samples (KPROF_SAMPLES); the longest drawn near the top of the plot (its
    // duration axis ends at the longest point drawn).
    let run_ns = kprof_tests::u(&p["clock"]["duration_ns"]);
    let mut sampled: Vec<(u64, usize)> = kprof_tests::nodes(&p)
        .iter()
        .filter_map(|(_, n)| {
            let s = n["samples"].as_array()?;
            let within = s.iter().filter(|x| kprof_tests::u(&x[0]) <= run_ns).count();
            Some((kprof_tests::u(&n["total_ns"]), within))
        })
        .collect();
    sampled.sort_by(|a, b| b.cmp(a));
    sampled.truncate(5);
    assert!(!sampled.is_empty());
    let points: usize = sampled.iter().map(|s| s.1).sum();
    let svg = std::fs::read_to_string(out.join("plot-scatter.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("scatter SVG");
    let circles: Vec<f64> = doc
        .descendants()
        .filter(|n| n.has_tag_name("circle"))
        .map(|n| n.attribute("cy").unwrap().parse().unwrap())
        .collect();
    assert_eq!(circles.len(), points + sampled.len());
    // The x axis's labels sit just below the plot, which starts 10 px down.
    let bottom = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.text().is_some_and(|t| t.trim() == "0 ns"))
        .filter_map(|n| n.attribute("y")?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    let highest = circles.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(
        highest - 10.0 <= 0.12 * (bottom - 10.0),
        "the longest instance is drawn at y {highest}, the plot is 10..{bottom}"
    );

    // The page: every figure inline, nothing fetched.
    let page = std::fs::read_to_string(&html).unwrap();
    let ids = [
        "top",
        "icicle",
        "scatter",
        "concurrency",
        "threads-over-time",
        "threads",
    ];
    for id in ids {
        assert!(page.contains(&format!("<section id=\"{id}\">")), "{id}");
    }
    for fetch in [
        "src=", "<link", "url(h", "url(f", "url(/", "@import", "href=\"h",
    ] {
        assert!(!page.contains(fetch), "the page fetches something: {fetch}");
    }

    if skip_unless(have_chromium(), "chromium (bash tests/setup.sh)") {
        return;
    }
    let shots = out.join("screenshots");
    println!("plot page screenshots: {}", shots.display());
    // The check itself: a page with a console error is caught.
    let bad = out.join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>console.error('boom')</script></body></html>",
    )
    .unwrap();
    let seen = plot_page(&bad, &out.join("bad"), &[]);
    assert!(seen["console"].to_string().contains("boom"), "{seen}");

    // The root call path with the most time is clicked; a name found at
    // several call paths is searched.
    let biggest = p["tree"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|r| kprof_tests::u(&r["total_ns"]))
        .unwrap()["name"]
        .as_str()
        .unwrap()
        .to_string();
    let seen = plot_page(
        &html,
        &shots,
        &[
            "--click",
            &format!("{biggest} ("),
            "--search",
            "^implicit barrier$",
        ],
    );
    assert_eq!(seen["console"], serde_json::json!([]), "{seen}");
    let figs = seen["figures"].as_array().unwrap();
    assert_eq!(
        figs.iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ids
    );
    for f in figs {
        let (w, h) = (f["width"].as_f64().unwrap(), f["height"].as_f64().unwrap());
        assert!(w > 100.0 && h > 50.0, "{f}");
        check_shot(Path::new(f["png"].as_str().unwrap()), w, h);
    }
    assert_eq!(figs[1]["tag"], "iframe");

    // The flame graph as drawn: each frame as wide on screen as its samples'
    // share of the container, each title the SVG's.
    let total = frames.iter().map(|f| f.w).max().unwrap() as f64;
    let container = seen["flame"]["container"].as_f64().unwrap();
    let shown = seen["flame"]["frames"].as_array().unwrap();
    assert_eq!(shown.len(), frames.len());
    for f in shown {
        let want = f["fg_w"].as_f64().unwrap() / total * container;
        assert!(
            (f["w"].as_f64().unwrap() - want).abs() <= 1.5,
            "{f} vs {want} px"
        );
        assert!(frames
            .iter()
            .any(|g| g.title == f["title"].as_str().unwrap()));
    }
    // A hover on a frame writes its title (name, kind, share, times,
    // instances) in the details line.
    let hovers = seen["hovers"].as_array().unwrap();
    assert!(hovers.len() >= 5, "{seen}");
    for h in hovers {
        assert_eq!(
            h["details"].as_str().unwrap().trim(),
            h["title"].as_str().unwrap(),
            "{h}"
        );
    }
    // A click zooms: the clicked frame spans the container, its subtree and
    // its ancestors stay, every other frame is hidden; Reset Zoom shows all.
    let clicked = &seen["zoom"]["clicked"];
    let zoomed = seen["zoom"]["layout"]["frames"].as_array().unwrap();
    let c = zoomed.iter().find(|f| &f["title"] == clicked).unwrap();
    let (cx, cw, cy) = (
        c["fg_x"].as_u64().unwrap(),
        c["fg_w"].as_u64().unwrap(),
        c["y"].as_f64().unwrap(),
    );
    assert!((c["w"].as_f64().unwrap() - container).abs() <= 1.0, "{c}");
    for f in zoomed {
        let (x, w, y) = (
            f["fg_x"].as_u64().unwrap(),
            f["fg_w"].as_u64().unwrap(),
            f["y"].as_f64().unwrap(),
        );
        let inside = y >= cy && x >= cx && x < cx + cw;
        let around = y < cy && x <= cx && x + w >= cx + cw;
        assert_eq!(f["hidden"].as_bool().unwrap(), !(inside || around), "{f}");
    }
    assert!(seen["unzoomed"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["hidden"] == false));
    // Search colours exactly the frames of that name (not those whose numbers
    // match) and says what share they hold.
    let colour = &seen["search"]["searchcolor"];
    let mut lit: Vec<&str> = seen["search"]["layout"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| &f["fill"] == colour)
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    let mut want: Vec<&str> = frames
        .iter()
        .filter(|f| f.title.starts_with("implicit barrier ("))
        .map(|f| f.title.as_str())
        .collect();
    lit.sort_unstable();
    want.sort_unstable();
    assert!(!want.is_empty());
    assert_eq!(lit, want);
    assert!(
        seen["search"]["matched"]
            .as_str()
            .unwrap()
            .starts_with("Matched: "),
        "{seen}"
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

/// `kprof plot` of a Kokkos run with allocations, against the harness: the
/// memory figure has a row per memory space the harness allocates in, named with
/// its high-water time, with two bars as long on the figure's own byte axis as
/// the most bytes the harness had allocated there at once and the bytes it
/// left allocated (its `basic` scenario's allocations, replayed here).
#[test]
fn plot_draws_memory_per_space() {
    use kprof_tests::plot_check::{bytes, Figure};
    let out = kokkos_run();
    // What `scenario_basic` (tests/harness/kokkos_host.c) allocates and frees,
    // in its order: space, bytes (negative: freed).
    let calls: [(&str, i64); 9] = [
        ("Host", 8000),
        ("Host", 8000),
        ("Host", 4096),
        ("Cuda", 8000),
        ("Host", 100_000),
        ("Host", -100_000),
        ("Host", -8000),
        ("Host", -8000),
        ("Cuda", -8000),
    ];
    let mut known: BTreeMap<&str, (i64, i64)> = BTreeMap::new(); // (high water, now)
    for (space, b) in calls {
        let (high, now) = known.entry(space).or_default();
        *now += b;
        *high = (*high).max(*now);
    }
    assert_eq!(
        known["Host"],
        (120_096, 4096),
        "the harness's documented numbers"
    );
    let o = run(clean_cmd(&lib("kprof")).arg("plot").arg(&out));
    assert_ok(&o);
    let fig = Figure::read(&out.join("plot-memory.svg"));
    let px_per_byte = fig.px_per_unit(bytes);
    let legend = fig.legend();
    let colour = |series: &str| -> String {
        legend
            .iter()
            .find(|(n, _)| n == series)
            .unwrap_or_else(|| panic!("no {series} in the legend {legend:?}"))
            .1
            .clone()
    };
    let (high_fill, end_fill) = (colour("high water"), colour("at end"));
    let rows = fig.rows(|t| t.text.contains(" (high water at "));
    let spaces: Vec<&str> = rows
        .iter()
        .map(|(l, _)| l.split(" (high water at ").next().unwrap())
        .collect();
    assert_eq!(
        spaces.iter().copied().collect::<BTreeSet<_>>(),
        known.keys().copied().collect::<BTreeSet<_>>(),
        "a row per space the harness allocates in"
    );
    for ((label, bars), space) in rows.iter().zip(&spaces) {
        let (high, now) = known[space];
        for (fill, want) in [(&high_fill, high), (&end_fill, now)] {
            let w: Vec<f64> = bars
                .iter()
                .filter(|r| &r.fill == fill)
                .map(|r| r.width)
                .collect();
            assert_eq!(w.len(), 1, "{label}: one bar of {fill}: {bars:?}");
            assert!(
                (w[0] - want as f64 * px_per_byte).abs() <= 1.0,
                "{label}: bar {} px, the harness's {want} bytes are {} px",
                w[0],
                want as f64 * px_per_byte
            );
        }
    }
    // Byte axes tick at binary steps (2^k bytes), each label a whole number
    // of its unit or a short binary fraction of it (not 97.66 KiB).
    for figure in ["plot-memory.svg", "plot-memory-over-time.svg"] {
        let texts = read_svg(&out.join(figure)).texts;
        let ticks: Vec<f64> = texts.iter().filter_map(|t| bytes(t)).collect();
        assert!(ticks.len() >= 3, "{figure}: {texts:?}");
        let step = ticks[1] - ticks[0];
        assert!(
            step >= 1.0 && (step.log2().fract()) == 0.0,
            "{figure}: {ticks:?}"
        );
        for (i, t) in ticks.iter().enumerate() {
            assert_eq!(*t, i as f64 * step, "{figure}: {ticks:?}");
        }
    }
    let page = std::fs::read_to_string(out.join("plot.html")).unwrap();
    assert!(page.contains("<section id=\"memory\">"));
}
