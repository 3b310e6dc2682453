//! Numbers a user can trust in every view (the exit summary, `kprof report`,
//! `profile.csv`, `kprof plot`, `kprof diff`):
//!
//! - a team's nodes: an OpenMP program whose 2 threads both work for the whole
//!   of each parallel region (`tests/openmp/balanced.c`, clang on the system's
//!   libomp 14). The implicit tasks, summed over the team, take about twice the
//!   region's time; no view shows them larger than the region without saying
//!   that they are summed (`thr`), and the tree, the CSV's per-thread columns
//!   and the flame graph show them per thread, no larger than the region;
//! - deep trees: `tests/cli/deep.c` nested 2,000 and 8,000 deep. Every view's
//!   output and memory grow with the depth, not with its square, and a tree
//!   100,000 deep (the largest `KPROF_MAX_DEPTH`) is read.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kprof_tests::openmp::{build, have, Compiler};
use kprof_tests::{
    assert_ok, clean_cmd, compile, compile_with_core, lib, run, scratch, skip_unless, test_file,
};

fn kprof() -> PathBuf {
    lib("kprof")
}

/// `exe` in `dir`, with no tool, kprof or OpenMP setting inherited.
fn clean_in(exe: &Path, dir: &Path) -> Command {
    let mut cmd = clean_cmd(exe);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("OMP_") || k.starts_with("KMP_") || k == "LD_PRELOAD" {
            cmd.env_remove(k);
        }
    }
    cmd.current_dir(dir).stdin(Stdio::null());
    cmd
}

/// `kprof <args>` in `dir`, with no tool, kprof or OpenMP setting inherited.
fn kprof_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = clean_in(&kprof(), dir);
    cmd.args(args);
    cmd
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A duration as the tables print it (`102.33 ms`), in ns.
fn ns(value: &str, unit: &str) -> f64 {
    let v: f64 = value
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {value:?}"));
    v * match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => panic!("not a unit of time: {other:?}"),
    }
}

/// The only line of `text` holding `word`.
fn line_with<'a>(text: &'a str, word: &str) -> &'a str {
    let found: Vec<&str> = text.lines().filter(|l| l.contains(word)).collect();
    assert_eq!(found.len(), 1, "one line with {word:?} in:\n{text}");
    found[0]
}

/// The shown value of a child may exceed its parent's by what the threads'
/// own timestamps allow (a worker's implicit task can end a moment after the
/// master ends the region): 2% of the parent.
fn at_most(child: f64, parent: f64, what: &str, text: &str) {
    assert!(
        child <= parent * 1.02,
        "{what}: the implicit task shows {child} ns under a parallel region of {parent} ns:\n{text}"
    );
}

#[test]
fn a_teams_implicit_tasks_never_read_larger_than_their_region() {
    if skip_unless(have("clang"), "clang") {
        return;
    }
    let dir = scratch("views_trust_team");
    let exe = build("balanced", Compiler::Clang);
    let o = run(kprof_cmd(&dir, &["run", "-o", "out", "--"])
        .arg(&exe)
        .env("OMP_NUM_THREADS", "2")
        .env("OMP_PROC_BIND", "false"));
    assert_ok(&o);
    assert_eq!(stdout(&o), "spun both\n");
    let summary = String::from_utf8_lossy(&o.stderr).into_owned();
    let out = dir.join("out");

    // The exit summary: flat rows, times summed over threads (shares of the
    // threads' time), and a `thr` column saying over how many.
    let title = line_with(&summary, "kernels/regions by exclusive time");
    assert!(
        title.contains("thr: times summed over that many threads"),
        "{summary}"
    );
    let head: Vec<&str> = summary
        .lines()
        .skip_while(|l| !l.contains("kernels/regions by exclusive time"))
        .nth(1)
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        head,
        ["self", "%thr", "count", "total", "thr", "mean", "min", "max", "kind", "device", "name"],
        "{summary}"
    );
    // self (2), %thr, count, total (2), thr
    let row = |kind: &str| -> (f64, u32) {
        let t: Vec<&str> = line_with(&summary, kind).split_whitespace().collect();
        (ns(t[4], t[5]), t[6].parse().unwrap())
    };
    let (task_sum, task_thr) = row("omp_implicit_task");
    let (region, region_thr) = row("omp_parallel");
    assert_eq!((task_thr, region_thr), (2, 1), "{summary}");
    // Both threads worked the whole region: the sum is about twice the region.
    assert!(task_sum > 1.5 * region, "{summary}");
    at_most(task_sum / 2.0, region, "summary, per thread", &summary);

    // kprof report --tree: a team's node per thread, no larger than its parent,
    // nor its share.
    let o = run(&mut kprof_cmd(&dir, &["report", "out", "--tree"]));
    assert_ok(&o);
    let tree = stdout(&o);
    let title = line_with(&tree, "Call-path tree");
    assert!(
        title.contains("thr: the threads of a node's team, its total and self per thread"),
        "{tree}"
    );
    // total (2), %, [bar], self (2), count, mean (2), thr
    let row = |kind: &str| -> (f64, f64, u32) {
        let t: Vec<&str> = line_with(&tree, kind).split_whitespace().collect();
        let pct: f64 = t[2].trim_end_matches('%').parse().unwrap();
        let i = if t[3].starts_with('#') { 4 } else { 3 };
        (ns(t[0], t[1]), pct, t[i + 5].parse().unwrap())
    };
    let (task, task_pct, thr) = row("omp_implicit_task");
    let (region, region_pct, region_thr) = row("omp_parallel");
    assert_eq!((thr, region_thr), (2, 1), "{tree}");
    at_most(task, region, "report --tree", &tree);
    at_most(task_pct, region_pct, "report --tree, share", &tree);
    assert!(task > 0.35 * region, "{tree}");

    // profile.csv: the summed columns keep their meaning; `threads` and the
    // per-thread columns compare; `parent` links the task to its region.
    let csv = std::fs::read_to_string(out.join("profile.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    };
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let by_kind = |kind: &str| {
        let found: Vec<&Vec<&str>> = rows.iter().filter(|r| r[col("kind")] == kind).collect();
        assert_eq!(found.len(), 1, "one {kind} row in:\n{csv}");
        found[0]
    };
    let (task, region) = (by_kind("omp_implicit_task"), by_kind("omp_parallel"));
    let num = |r: &Vec<&str>, c: &str| -> u64 { r[col(c)].parse().unwrap() };
    assert_eq!((num(task, "threads"), num(region, "threads")), (2, 1));
    assert_eq!(task[col("parent")], region[col("id")], "{csv}");
    assert!(num(task, "total_ns") as f64 > 1.5 * num(region, "total_ns") as f64);
    assert!(num(task, "per_thread_total_ns").abs_diff(num(task, "total_ns") / 2) <= 1);
    at_most(
        num(task, "per_thread_total_ns") as f64,
        num(region, "per_thread_total_ns") as f64,
        "profile.csv",
        &csv,
    );

    // kprof report --tree --csv: the same columns.
    let o = run(&mut kprof_cmd(&dir, &["report", "out", "--tree", "--csv"]));
    assert_ok(&o);
    let text = stdout(&o);
    assert!(text.starts_with(
        "path,depth,name,kind,device,count,total_ns,self_ns,mean_ns,min_ns,max_ns,threads,\
         per_thread_total_ns,per_thread_self_ns\n"
    ));
    let field = |kind: &str, i: usize| -> u64 {
        line_with(&text, kind)
            .split(',')
            .nth(i)
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(field("omp_implicit_task", 11), 2);
    at_most(
        field("omp_implicit_task", 12) as f64,
        field("omp_parallel", 12) as f64,
        "report --tree --csv",
        &text,
    );

    // kprof plot: the flame graph draws the task per thread, saying so in
    // its hover text, no wider than its region.
    let o = run(&mut kprof_cmd(&dir, &["plot", "out"]));
    assert_ok(&o);
    let svg = std::fs::read_to_string(out.join("plot-icicle.svg")).unwrap();
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&svg, opt).unwrap();
    // (title, fg:w) of each frame.
    let frames: Vec<(String, f64)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g"))
        .filter_map(|g| {
            let title = g.children().find(|c| c.has_tag_name("title"))?.text()?;
            let rect = g.children().find(|c| c.has_tag_name("rect"))?;
            let w = rect
                .attributes()
                .find(|a| a.name() == "w" || a.name() == "fg:w")?
                .value();
            Some((title.to_string(), w.parse().ok()?))
        })
        .collect();
    let frame = |kind: &str| {
        let found: Vec<&(String, f64)> = frames
            .iter()
            .filter(|(t, _)| t.contains(&format!(" ({kind}, ")))
            .collect();
        assert_eq!(found.len(), 1, "one {kind} frame in {frames:?}");
        found[0].clone()
    };
    let (task, region) = (frame("omp_implicit_task"), frame("omp_parallel"));
    assert!(task.0.contains(" over 2], "), "{}", task.0);
    assert!(region.1 > 0.0, "{svg}");
    assert!(
        task.1 <= region.1 && task.1 > 0.35 * region.1,
        "{task:?} {region:?}\n{svg}"
    );
}

/// `tests/cli/peak_rss.c`, built once per test process.
fn peak_rss() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = scratch("views_trust_bin");
        compile(&[&test_file("cli/peak_rss.c")], &dir.join("peak_rss"), &[])
    })
}

/// Peak memory (KiB) and stdout size of `kprof <args>` run in `dir`, its
/// stdout into `into`. (Measured by a small process that forks it: a command
/// the test forked itself would count the test's memory too.)
fn measured(dir: &Path, args: &[&OsStr], into: &Path) -> Measured {
    let o = run(clean_in(peak_rss(), dir).arg(into).arg(kprof()).args(args));
    assert_ok(&o);
    let said = stdout(&o);
    let f: Vec<u64> = said
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(
        f[0],
        0,
        "kprof {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (f[1], std::fs::metadata(into).unwrap().len())
}

/// A command's peak memory (KiB) and the bytes it printed.
type Measured = (u64, u64);

/// The deep program (`tests/cli/deep.c`) run `depth` deep into `dir/d<depth>`.
fn deep_run(dir: &Path, bin: &Path, depth: usize) -> PathBuf {
    let out = dir.join(format!("d{depth}"));
    let _ = std::fs::remove_dir_all(&out);
    let o = run(clean_cmd(bin)
        .current_dir(dir)
        .arg(depth.to_string())
        .arg("1")
        .env("KPROF_OUTPUT_DIR", &out)
        .env("KPROF_MAX_DEPTH", depth.to_string()));
    assert_ok(&o);
    out
}

#[test]
fn every_view_of_a_deep_tree_grows_with_its_depth_not_its_square() {
    let dir = scratch("views_trust_deep");
    let bin = compile_with_core(&[&test_file("cli/deep.c")], &dir.join("deep"), &[]);
    let views: [&[&str]; 8] = [
        &["report", "--tree", "--top", "1"],
        &["report", "--tree", "--top", "1", "--csv"],
        &["report", "--tree", "--top", "1", "--json"],
        &["report"],
        &["report", "--flat"],
        &["plot", "-o"],
        // The run against itself: every call path compared, the rows printed.
        &["diff", "--all"],
        &["diff", "--all", "--metric", "self"],
    ];
    // Per depth: profile.csv's size, then per view (peak KiB, bytes printed).
    let mut seen: Vec<(usize, u64, Vec<Measured>)> = Vec::new();
    for depth in [10, 2_000, 8_000] {
        let out = deep_run(&dir, &bin, depth);
        let csv = std::fs::metadata(out.join("profile.csv")).unwrap().len();
        let mut per_view = Vec::new();
        let page = dir.join(format!("plot{depth}.html"));
        for args in views {
            let mut all: Vec<&OsStr> = vec![OsStr::new(args[0]), out.as_os_str()];
            all.extend(args[1..].iter().map(OsStr::new));
            match args[0] {
                "plot" => all.push(page.as_os_str()),
                "diff" => all.push(out.as_os_str()),
                _ => {}
            }
            per_view.push(measured(&dir, &all, &dir.join("view.out")));
        }
        seen.push((depth, csv, per_view));
    }
    let table: String = seen
        .iter()
        .map(|(d, csv, v)| format!("depth {d}: profile.csv {csv} B, views (KiB, B) {v:?}\n"))
        .collect();
    eprint!("{table}");
    let [(_, csv0, v0), (_, csv1, v1), (d2, csv2, v2)] = &seen[..] else {
        unreachable!()
    };
    // What grew from 10 deep to 2,000 and to 8,000 deep: 4x the levels gives
    // about 4x (linear), not 16x (quadratic).
    let growth =
        |small: u64, a: u64, b: u64| (b - small) as f64 / (a.max(small + 1) - small) as f64;
    assert!(growth(*csv0, *csv1, *csv2) < 6.0, "profile.csv\n{table}");
    // A row is as long as its node's fields and a bounded path.
    assert!(*csv2 < 600 * *d2 as u64, "profile.csv\n{table}");
    for (i, args) in views.iter().enumerate() {
        let ((m0, o0), (m1, o1), (m2, o2)) = (v0[i], v1[i], v2[i]);
        if o2 > o0 + 4096 {
            assert!(growth(o0, o1, o2) < 6.0, "output of {args:?}\n{table}");
            assert!(o2 < 4_000 * *d2 as u64, "output of {args:?}\n{table}");
        }
        // Memory: within a few KiB a level of the depth beyond the small tree's.
        assert!(m2 < m0 + 8 * *d2 as u64, "peak memory of {args:?}\n{table}");
        if m2 > m0 + 8 * 1024 {
            assert!(growth(m0, m1, m2) < 8.0, "memory of {args:?}\n{table}");
        }
    }
    // The tree's lines stay short past the indented levels: the depth written out.
    let out = dir.join(format!("d{d2}"));
    let o = run(kprof_cmd(&dir, &["report", "--tree", "--top", "1"]).arg(&out));
    assert_ok(&o);
    let text = stdout(&o);
    let last = text.lines().last().unwrap();
    assert!(
        last.ends_with(&format!("[depth {}] d{}", d2 - 1, d2 - 1)),
        "{last}"
    );
    assert!(text.lines().all(|l| l.len() < 200), "a long line");
}

#[test]
fn a_tree_as_deep_as_kprof_keeps_is_read_by_every_view() {
    let dir = scratch("views_trust_deepest");
    let bin = compile_with_core(&[&test_file("cli/deep.c")], &dir.join("deep"), &[]);
    let depth = 100_000;
    let out = deep_run(&dir, &bin, depth);
    let printed = dir.join("view.out");
    for args in [
        &["report", "--tree", "--top", "1"][..],
        &["report"],
        &["report", "--flat"],
        &["report", "--threads"],
        &["plot"],
        &["diff"],
    ] {
        let mut all: Vec<&OsStr> = vec![OsStr::new(args[0]), out.as_os_str()];
        all.extend(args[1..].iter().map(OsStr::new));
        if args[0] == "diff" {
            all.push(out.as_os_str());
        }
        let (kib, bytes) = measured(&dir, &all, &printed);
        eprintln!("depth {depth}: {args:?}: {kib} KiB, {bytes} B");
        // Linear in the depth: a few KiB a level at most (the readers recurse
        // per level), a short line per level.
        assert!(kib < 4 * depth as u64, "{args:?}: {kib} KiB");
        assert!(bytes < 250 * depth as u64, "{args:?}: {bytes} B");
        if args.contains(&"--tree") {
            let text = std::fs::read_to_string(&printed).unwrap();
            let last = text.lines().last().unwrap();
            let want = format!("[depth {}] d{}", depth - 1, depth - 1);
            assert!(last.ends_with(&want), "{last}");
        }
    }
    let csv = std::fs::metadata(out.join("profile.csv")).unwrap().len();
    assert!(csv < 600 * depth as u64, "profile.csv {csv} B");
}
