//! kprof's added wall time on a real OpenMP proxy application, LULESH 2.0 (LLNL's
//! shock-hydrodynamics proxy of the ECP proxy-application suite), as a ratio to
//! what the least recording OMPT tool adds in the same run.
//!
//! LULESH is not part of this repository: the benchmark builds a checkout given in
//! `KPROF_BENCH_LULESH` (a directory with `lulesh.cc`, for example a clone of
//! LLNL's LULESH repository, kept outside this one) with
//! `clang++ -O2 -fopenmp -DUSE_MPI=0` into `target/bench-lulesh/`, and runs it on 2
//! threads with libomp 14: `lulesh2.0 -s 8 -q` (about 80,000 parallel regions,
//! 200,000 worksharing loops and 180,000 barriers in about 0.3 s).
//!
//! Variants, interleaved round by round (`KPROF_BENCH_ROUNDS`, default 7): no tool
//! (`OMP_TOOL=disabled`); the floor tool (`tests/openmp/bench_tool.c` built with
//! `-DRDTSC -DCOUNTS`: a TSC read and a 16-byte store per callback for the same 16
//! callbacks, and a count of the parallel regions the runtime reported); kprof's
//! OMPT plugin, profile only (the default). Each run's wall time is the whole
//! process, start to exit (kprof's start and its profile written at exit
//! included). Each kprof run must count exactly the parallel regions the floor
//! tool's runtime reported.
//!
//! The verdict: (kprof - no tool) / (floor - no tool), each difference the median
//! over rounds of the difference within a round. Target: at most 1.3.
//!
//! ```text
//! KPROF_BENCH_LULESH=/path/to/LULESH cargo bench -p kprof-tests --bench openmp_app
//! ```
//!
//! `KPROF_BENCH_LULESH_ARGS` replaces `-s 8` (for example `-s 12` for a longer run).
//!
//! With `KPROF_BENCH_CALLGRIND=1` it times nothing: it runs each variant once
//! under `valgrind --tool=callgrind` and prints the instructions each tool
//! executes, where timings on a loaded machine mean little: per callback (the
//! inclusive cost of the runtime's calls into the tool: calls, instructions per
//! call and per parallel region), the tool's start (`ompt_start_tool` and
//! `initialize`) and its end and threads (its exit handler, `finalize`, and the
//! threads it started: kprof's writer, which writes the files at the end). The
//! programs' own totals are printed too, but differ by more than a tool's cost
//! from run to run: libomp's waiting threads spin for as long as the other
//! thread, serialized by valgrind, takes. Each file is kept in
//! `target/bench-lulesh/callgrind/` for `callgrind_annotate`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use kprof_tests::bench::{median, paired_delta, require_complete, Settings};
use kprof_tests::openmp::{bare_cmd, ompt_lib, Runtime};
use kprof_tests::{compile_with, target_dir, test_file};

/// The target on (kprof's added time) / (the floor tool's added time).
const TARGET_RATIO: f64 = 1.3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    NoTool,
    Floor,
    Kprof,
}

impl Variant {
    const ALL: [Variant; 3] = [Variant::NoTool, Variant::Floor, Variant::Kprof];

    fn name(self) -> &'static str {
        match self {
            Variant::NoTool => "no tool",
            Variant::Floor => "floor tool (TSC + 16 B per callback)",
            Variant::Kprof => "kprof profile-only (in place)",
        }
    }
}

/// Builds LULESH from `src` into `dir`; exits the benchmark when it cannot.
fn build_lulesh(src: &Path, dir: &Path) -> PathBuf {
    let exe = dir.join("lulesh2.0");
    let sources = [
        "lulesh.cc",
        "lulesh-comm.cc",
        "lulesh-viz.cc",
        "lulesh-util.cc",
        "lulesh-init.cc",
    ];
    let out = Command::new("clang++")
        .args(["-O2", "-fopenmp", "-DUSE_MPI=0"])
        .args(sources.iter().map(|s| src.join(s)))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("cannot run clang++: {e}"));
    if !out.status.success() {
        eprintln!(
            "openmp_app: building LULESH from {} failed:\n{}",
            src.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::process::exit(1);
    }
    exe
}

/// The command of one run of `v` in the fresh directory `dir`, under
/// `wrapper` (valgrind) when given.
fn variant_cmd(
    exe: &Path,
    args: &[String],
    tools: (&Path, &Path),
    dir: &Path,
    v: Variant,
    wrapper: &[String],
) -> Command {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("scratch dir");
    let mut cmd = match wrapper.split_first() {
        None => bare_cmd(exe, dir, Runtime::Llvm14, false),
        Some((program, rest)) => {
            let mut cmd = bare_cmd(Path::new(program), dir, Runtime::Llvm14, false);
            cmd.args(rest).arg(exe);
            cmd
        }
    };
    cmd.args(args);
    let out_dir = dir.join("out");
    match v {
        Variant::NoTool => {
            cmd.env("OMP_TOOL", "disabled");
        }
        Variant::Floor => {
            cmd.env("OMP_TOOL_LIBRARIES", tools.0);
        }
        Variant::Kprof => {
            cmd.env("OMP_TOOL_LIBRARIES", tools.1)
                .env("KPROF_OUTPUT_DIR", &out_dir)
                .env("KPROF_SUMMARY", "0");
        }
    }
    cmd
}

/// One run of `v`: its wall ms, and the floor tool's count of parallel regions.
fn run_once(
    exe: &Path,
    args: &[String],
    tools: (&Path, &Path),
    dir: &Path,
    v: Variant,
) -> (f64, Option<u64>) {
    let mut cmd = variant_cmd(exe, args, tools, dir, v, &[]);
    let t = Instant::now();
    let out = cmd.output().expect("run LULESH");
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        eprintln!(
            "openmp_app: LULESH ({v:?}) failed: {:?}\n{stderr}",
            out.status
        );
        std::process::exit(1);
    }
    let count = stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("bench_tool: ")?
                .strip_suffix(" parallel regions")
        })
        .and_then(|n| n.parse().ok());
    (ms, count)
}

/// What a callgrind run of one variant executed.
#[derive(Default)]
struct Costs {
    /// Instructions of the whole process.
    total: u64,
    /// Calls into the tool from outside it, by (bucket, callee): inclusive
    /// instructions and calls.
    calls: BTreeMap<(Bucket, String), (u64, u64)>,
}

/// Where a call into the tool belongs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Bucket {
    /// A callback of the runtime's, per event.
    Callback,
    /// The tool's start (`ompt_start_tool`, `initialize`).
    Start,
    /// `finalize`, exit handlers, and the threads the tool started (kprof's
    /// writer, which writes the files at the end).
    End,
}

/// The file name of a callgrind object (`ob=`) path.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Reads a callgrind output file: the calls into the objects whose file names
/// start with one of `tool` from objects that do not.
fn read_callgrind(path: &Path, tool: &[&str]) -> Costs {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // Name compression: `(id) name` defines, `(id)` refers (one table for
    // objects, one for functions, one for files).
    let mut tables: [BTreeMap<String, String>; 3] = Default::default();
    let mut name = |table: usize, v: &str| -> String {
        let v = v.trim();
        let Some(rest) = v.strip_prefix('(') else {
            return v.to_string();
        };
        let (id, n) = rest.split_once(')').unwrap_or((rest, ""));
        let n = n.trim();
        if !n.is_empty() {
            tables[table].insert(id.to_string(), n.to_string());
        }
        tables[table].get(id).cloned().unwrap_or_default()
    };
    let is_tool = |ob: &str| tool.iter().any(|t| file_name(ob).starts_with(t));
    let mut costs = Costs::default();
    let (mut ob, mut cob, mut cfn) = (String::new(), None::<String>, String::new());
    let mut pending: Option<u64> = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            if let Some(n) = line
                .strip_prefix("summary:")
                .or(line.strip_prefix("totals:"))
            {
                costs.total = costs.total.max(n.trim().parse().unwrap_or(0));
            }
            let Some(calls) = pending.take() else {
                continue;
            };
            // The cost line after `calls=`: the call's inclusive cost.
            let cost: u64 = line
                .split_whitespace()
                .nth(1)
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let callee_ob = cob.take().unwrap_or_else(|| ob.clone());
            if is_tool(&callee_ob) && !is_tool(&ob) {
                let bucket = if cfn.contains("initialize") || cfn.contains("start_tool") {
                    Bucket::Start
                } else if file_name(&ob).starts_with("libomp") && !cfn.contains("finalize") {
                    Bucket::Callback
                } else {
                    Bucket::End
                };
                let c = costs.calls.entry((bucket, cfn.clone())).or_default();
                c.0 += cost;
                c.1 += calls;
            }
            continue;
        };
        match key {
            "ob" => ob = name(0, value),
            "cob" => cob = Some(name(0, value)),
            "fn" => {
                name(1, value);
                cob = None;
            }
            "cfn" => cfn = name(1, value),
            "fl" | "fi" | "fe" | "cfi" | "cfl" => {
                name(2, value);
            }
            "calls" => pending = value.split_whitespace().next().and_then(|n| n.parse().ok()),
            _ => {}
        }
    }
    costs
}

/// Runs each variant once under callgrind and prints the instructions each
/// tool executed: per callback, at its start, at its end.
fn callgrind(exe: &Path, args: &[String], tools: (&Path, &Path), dir: &Path) {
    let out = dir.join("callgrind");
    std::fs::create_dir_all(&out).expect("callgrind dir");
    let mut regions = 0u64;
    let mut per_region = BTreeMap::new();
    println!(
        "openmp_app: LULESH 2.0 {} on 2 threads (libomp 14), instructions (callgrind)",
        args.join(" ")
    );
    for v in Variant::ALL {
        let file = out.join(format!("{v:?}.out"));
        let wrapper = [
            "valgrind".to_string(),
            "--tool=callgrind".to_string(),
            format!("--callgrind-out-file={}", file.display()),
        ];
        let run_dir = dir.join(format!("callgrind-{v:?}"));
        let res = variant_cmd(exe, args, tools, &run_dir, v, &wrapper)
            .output()
            .unwrap_or_else(|e| {
                eprintln!(
                    "openmp_app: cannot run valgrind ({e}): install it (apt-get install valgrind)"
                );
                std::process::exit(1)
            });
        let stderr = String::from_utf8_lossy(&res.stderr);
        if !res.status.success() {
            eprintln!(
                "openmp_app: LULESH ({v:?}) under callgrind failed: {:?}\n{stderr}",
                res.status
            );
            std::process::exit(1);
        }
        if let Some(n) = stderr.lines().find_map(|l| {
            l.strip_prefix("bench_tool: ")?
                .strip_suffix(" parallel regions")?
                .parse()
                .ok()
        }) {
            regions = n;
        }
        if v == Variant::Kprof && regions > 0 {
            require_complete(
                &run_dir.join("out"),
                "LULESH kprof",
                "omp_parallel",
                regions,
            );
        }
        let _ = std::fs::remove_dir_all(&run_dir);
        let costs = read_callgrind(&file, &["floor_tool", "libkprof_"]);
        let per = |x: u64| x as f64 / regions.max(1) as f64;
        println!(
            "{}: {} instructions in all (the spinning of idle threads included)",
            v.name(),
            costs.total
        );
        if costs.calls.is_empty() {
            continue;
        }
        println!(
            "  {:<44} {:>10} {:>12} {:>10}",
            "called in the tool", "calls", "instr/call", "instr/region"
        );
        let mut sums: BTreeMap<Bucket, u64> = BTreeMap::new();
        for ((bucket, callee), (instr, calls)) in &costs.calls {
            *sums.entry(*bucket).or_default() += instr;
            if *bucket == Bucket::Callback {
                println!(
                    "  {callee:<44} {calls:>10} {:>12.0} {:>10.1}",
                    *instr as f64 / (*calls).max(1) as f64,
                    per(*instr)
                );
            }
        }
        let sum = |b| sums.get(&b).copied().unwrap_or(0);
        println!(
            "  all callbacks: {:.0} per parallel region; start {} instructions; end and the tool's threads {} ({:.0} per region)",
            per(sum(Bucket::Callback)),
            sum(Bucket::Start),
            sum(Bucket::End),
            per(sum(Bucket::End)),
        );
        per_region.insert(
            v.name(),
            per(sum(Bucket::Callback) + sum(Bucket::Start) + sum(Bucket::End)),
        );
    }
    println!("parallel regions per run: {regions} (the floor tool's count)");
    let floor = per_region
        .get(Variant::Floor.name())
        .copied()
        .unwrap_or(0.0);
    let kprof = per_region
        .get(Variant::Kprof.name())
        .copied()
        .unwrap_or(0.0);
    println!(
        "instructions in the tool per parallel region, start and end included: floor tool {floor:.0}, kprof {kprof:.0} ({:.2}x)",
        kprof / floor.max(1.0)
    );
}

fn main() {
    let Some(settings) = Settings::from_env(7) else {
        return;
    };
    let Some(src) = std::env::var_os("KPROF_BENCH_LULESH").map(PathBuf::from) else {
        eprintln!(
            "openmp_app: set KPROF_BENCH_LULESH to a LULESH 2.0 checkout (a directory with \
             lulesh.cc), kept outside this repository"
        );
        std::process::exit(1);
    };
    let args: Vec<String> = std::env::var("KPROF_BENCH_LULESH_ARGS")
        .unwrap_or_else(|_| "-s 8".into())
        .split_whitespace()
        .map(String::from)
        .chain(["-q".to_string()])
        .collect();
    let dir = target_dir().join("bench-lulesh");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let exe = build_lulesh(&src, &dir);
    let floor = compile_with(
        "clang",
        &[&test_file("openmp/bench_tool.c")],
        &dir.join("floor_tool.so"),
        &["-shared", "-fPIC", "-DRDTSC", "-DCOUNTS"],
    );
    let kprof = ompt_lib();
    if std::env::var("KPROF_BENCH_CALLGRIND").is_ok_and(|v| v == "1") {
        callgrind(&exe, &args, (&floor, &kprof), &dir);
        return;
    }
    println!(
        "openmp_app: LULESH 2.0 {} on 2 threads (libomp 14), {} rounds, wall ms per run",
        args.join(" "),
        settings.rounds
    );
    let mut rows: Vec<(&str, Vec<f64>)> = Variant::ALL.iter().map(|v| (v.name(), vec![])).collect();
    let mut regions = None;
    for round in 0..settings.rounds {
        for (i, v) in Variant::ALL.into_iter().enumerate() {
            let run_dir = dir.join(format!("{v:?}-{round}"));
            let (ms, count) = run_once(&exe, &args, (&floor, &kprof), &run_dir, v);
            rows[i].1.push(ms);
            if v == Variant::Floor {
                let n = count.unwrap_or_else(|| {
                    eprintln!("openmp_app: the floor tool printed no count");
                    std::process::exit(1)
                });
                if regions.is_some_and(|r| r != n) {
                    eprintln!("openmp_app: LULESH ran {n} regions, earlier {regions:?}");
                    std::process::exit(1);
                }
                regions = Some(n);
            }
            if v == Variant::Kprof {
                if let Some(n) = regions {
                    // kprof counted every parallel region the runtime reported.
                    require_complete(&run_dir.join("out"), "LULESH kprof", "omp_parallel", n);
                }
            }
            let _ = std::fs::remove_dir_all(&run_dir);
        }
    }
    let regions = regions.unwrap_or(0);
    println!("parallel regions per run: {regions} (the runtime's, as the floor tool counted them; kprof's equal)");
    let floor_added = paired_delta(&rows[1].1, &rows[0].1);
    let kprof_added = paired_delta(&rows[2].1, &rows[0].1);
    let ratio = kprof_added / floor_added;
    let mut ratios: Vec<f64> = rows[2]
        .1
        .iter()
        .zip(&rows[1].1)
        .zip(&rows[0].1)
        .map(|((k, f), n)| (k - n) / (f - n))
        .collect();
    let round_ratio = median(&mut ratios);
    println!(
        "  {:<38} {:>10} {:>12}  rounds",
        "variant", "wall ms", "vs no tool"
    );
    for (name, list) in &rows {
        let ms = median(&mut list.clone());
        let rounds: Vec<String> = list.iter().map(|x| format!("{x:.1}")).collect();
        let vs = paired_delta(list, &rows[0].1);
        println!("  {name:<38} {ms:>10.1} {vs:>+12.2}  {}", rounds.join("/"));
    }
    println!(
        "added wall time: floor tool {floor_added:+.2} ms, kprof {kprof_added:+.2} ms \
         ({:+.0} ns per parallel region)",
        kprof_added * 1e6 / regions.max(1) as f64
    );
    println!(
        "kprof / floor tool added time: {ratio:.2}x (median of per-round ratios {round_ratio:.2}x; \
         target <= {TARGET_RATIO}x)"
    );
    if std::env::var("KPROF_BENCH_ENFORCE").is_ok_and(|v| v == "1") && ratio > TARGET_RATIO {
        std::process::exit(1);
    }
}
