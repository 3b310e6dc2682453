//! Synthetic rank directories for `kprof merge` at scale: one `profile.json`
//! (schema `kprof-profile/1`) per rank, written as text (fast enough for 10,000
//! ranks of 1,000 nodes). The ranks differ the way a job's do: some nodes run
//! only on some ranks, counts and times depend on the rank, rank 1 lists its
//! plugins in another order, every rank sends and receives messages to its
//! neighbours, even ranks have a GPU section, some have system samples.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A call-path node of the synthetic tree.
struct Shape {
    name: String,
    kind: &'static str,
    children: Vec<usize>,
}

/// The tree of `nodes` nodes: 10 phases, 10 regions under each, the rest
/// kernels spread evenly under the regions.
fn shape(nodes: usize) -> (Vec<Shape>, Vec<usize>) {
    let mut all: Vec<Shape> = Vec::with_capacity(nodes);
    let mut roots = Vec::new();
    let mut regions = Vec::new();
    for p in 0..10.min(nodes) {
        roots.push(all.len());
        all.push(Shape {
            name: format!("phase {p}"),
            kind: "user_region",
            children: Vec::new(),
        });
    }
    'outer: for r in 0..10 {
        for &p in &roots.clone() {
            if all.len() >= nodes {
                break 'outer;
            }
            let i = all.len();
            all.push(Shape {
                name: format!("region {r}"),
                kind: "user_region",
                children: Vec::new(),
            });
            all[p].children.push(i);
            regions.push(i);
        }
    }
    let mut k = 0;
    while all.len() < nodes {
        let parent = regions[k % regions.len().max(1)];
        let i = all.len();
        all.push(Shape {
            name: format!("kernel {k}"),
            kind: "kokkos_parallel_for",
            children: Vec::new(),
        });
        all[parent].children.push(i);
        k += 1;
    }
    (all, roots)
}

/// Whether node `i` ran on `rank` (each node is missing on about 1 rank in 17).
pub fn present(i: usize, rank: u64) -> bool {
    i < 10 || !(i as u64 + rank).is_multiple_of(17)
}

fn node(out: &mut String, all: &[Shape], i: usize, rank: u64) {
    let s = &all[i];
    let count = 1 + (i as u64 * 7 + rank) % 5;
    let child_total: u64 = s
        .children
        .iter()
        .filter(|&&c| present(c, rank))
        .map(|&c| total(all, c, rank))
        .sum();
    let t = total(all, i, rank);
    let own = t - child_total;
    let _ = write!(
        out,
        r#"{{"name":"{}","kind":"{}","device":null,"device_index":null,"instance":null,"count":{count},"total_ns":{t},"self_ns":{own},"min_ns":{},"max_ns":{},"mean_ns":{},"stddev_ns":0.0"#,
        s.name,
        s.kind,
        t / count / 2,
        t / count + 1,
        t as f64 / count as f64,
    );
    if i % 50 == 7 {
        let _ = write!(
            out,
            r#","counters":{{"instances":{count},"events":{{"PAPI_TOT_INS":{{"inclusive":{},"exclusive":{},"per_second":1.0}}}}}}"#,
            t * 3,
            own * 3
        );
    }
    out.push_str(r#","children":["#);
    let mut first = true;
    for &c in &s.children {
        if present(c, rank) {
            if !first {
                out.push(',');
            }
            first = false;
            node(out, all, c, rank);
        }
    }
    out.push_str("]}");
}

/// Inclusive time of node `i` on `rank`.
fn total(all: &[Shape], i: usize, rank: u64) -> u64 {
    let own = 1_000 + (i as u64 * 131 + rank * 17) % 10_000;
    own + all[i]
        .children
        .iter()
        .filter(|&&c| present(c, rank))
        .map(|&c| total(all, c, rank))
        .sum::<u64>()
}

/// The text of `rank`'s `profile.json` in a job of `ranks` ranks, its tree of
/// `nodes` nodes.
pub fn profile(rank: u64, ranks: u64, nodes: usize) -> String {
    let (all, roots) = shape(nodes);
    profile_of(&all, &roots, rank, ranks)
}

fn profile_of(all: &[Shape], roots: &[usize], rank: u64, ranks: u64) -> String {
    let mut s = String::with_capacity(all.len() * 260 + 4096);
    let duration = 1_000_000 + rank * 1_000;
    let plugins = if rank == 1 {
        r#"["mpi","kokkos"]"#
    } else {
        r#"["kokkos","mpi"]"#
    };
    let _ = write!(
        s,
        r#"{{"schema":"kprof-profile/1","kprof_version":"0.1.0","program":{{"executable":"app","pid":{},"host":"node{}","rank":{rank}}},"clock":{{"source":"tsc","domain":"monotonic","start_ns":{},"end_ns":{},"duration_ns":{duration}}},"plugins":{plugins},"threads":[{{"index":0,"tid":1,"name":"main","records":10}}],"tree":["#,
        1000 + rank,
        rank % 4,
        rank * 10,
        rank * 10 + duration
    );
    for (j, &r) in roots.iter().enumerate() {
        if j > 0 {
            s.push(',');
        }
        node(&mut s, all, r, rank);
    }
    let (next, prev) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
    let _ = write!(
        s,
        r#"],"sections":[],"events":[],"deep_copies":[{{"dst_space":"Host","dst_label":"a","src_space":"Cuda","src_label":"b","count":{},"bytes":{},"total_ns":{}}}],"memory":[{{"space":"Host","allocations":{},"deallocations":{},"current_bytes":0,"high_water_bytes":{},"high_water_ns":5,"largest":[],"leaks":[]}}],"dual_views":[],"metadata":{{}},"anomalies":{{"unbalanced end":{}}},"dropped_records":{},"messages":[{{"channel":"MPI p2p","direction":"send","count":{},"bytes":{},"peers":[{{"peer":{next},"count":{},"bytes":{}}}]}},{{"channel":"MPI p2p","direction":"recv","count":{},"bytes":{},"peers":[{{"peer":{prev},"count":{},"bytes":{}}}]}}]"#,
        1 + rank % 3,
        64 * (1 + rank % 3),
        100 + rank,
        10 + rank,
        9 + rank,
        4096 + rank * 8,
        rank % 2,
        rank % 3,
        2 + rank,
        16 * (2 + rank),
        2 + rank,
        16 * (2 + rank),
        2 + prev,
        16 * (2 + prev),
        2 + prev,
        16 * (2 + prev),
    );
    if rank.is_multiple_of(2) {
        let _ = write!(
            s,
            r#","gpu":{{"kernels":[{{"name":"k1","device":"GPU 0","count":{},"total_ns":{},"mean_ns":1.0,"min_ns":1,"max_ns":2,"busy_pct":1.0}}],"copies":[{{"device":"GPU 0","direction":"HtoD","count":2,"bytes":{},"total_ns":{},"gb_per_s":1.0}}],"devices":[{{"device":"GPU 0","activities":{},"busy_ns":{},"idle_pct":1.0,"memory_high_water_bytes":0,"leaked_bytes":0,"leaked_allocations":0}}]}}"#,
            3 + rank,
            500 + rank * 7,
            1024 * (rank + 1),
            200 + rank,
            5 + rank,
            700 + rank,
        );
    }
    if !rank.is_multiple_of(3) {
        let _ = write!(
            s,
            r#","system":{{"period_ms":10,"samples":4,"metrics":[{{"name":"process rss","unit":"bytes","samples":4,"min":{}.0,"mean":{}.5,"max":{}.0}}],"sampler_cpu_ns":1,"unavailable":[]}}"#,
            1000 + rank,
            1500 + rank,
            2000 + rank
        );
    }
    let busy = 600_000 + rank * 10;
    let _ = write!(
        s,
        r#","concurrency":{{"threads":1,"wall_ns":{duration},"thread_ns":{duration},"categories":[{{"category":"compute","ns":{busy},"pct":{}}},{{"category":"runtime","ns":{},"pct":{}}}],"per_thread":[]}}"#,
        100.0 * busy as f64 / duration as f64,
        duration - busy,
        100.0 * (duration - busy) as f64 / duration as f64,
    );
    let _ = write!(
        s,
        r#","hardware_counters":{{"source":"PAPI","events":["PAPI_TOT_INS"],"kinds":"software","multiplexed":false,"problems":[]}},"kprof":{{"records":{},"buffer_bytes":4096,"buffer_budget_bytes":8192,"huge_page_blocks":1,"small_page_blocks":0,"buffer_fault_ns":5,"writer_cpu_ns":{}}}}}"#,
        100 + rank,
        1000 + rank
    );
    s.push('\n');
    s
}

/// Writes `ranks` rank directories (`rank<N>/profile.json`) under `dir`, each
/// with a tree of `nodes` nodes; returns them in rank order.
pub fn write_ranks(dir: &Path, ranks: u64, nodes: usize) -> Vec<PathBuf> {
    let (all, roots) = shape(nodes);
    (0..ranks)
        .map(|r| {
            let d = dir.join(format!("rank{r}"));
            std::fs::create_dir_all(&d).expect("create a rank directory");
            std::fs::write(d.join("profile.json"), profile_of(&all, &roots, r, ranks))
                .expect("write a synthetic profile");
            d
        })
        .collect()
}

/// What running a command cost: wall time, the peak resident memory of that
/// process, and whether it succeeded.
pub struct ChildCost {
    /// Wall time (s).
    pub seconds: f64,
    /// Peak resident set (bytes).
    pub peak_bytes: u64,
    /// Exit status 0.
    pub success: bool,
}

/// Runs `cmd` and measures it: `wait4`'s resource usage of exactly that child.
///
/// Call it from a small process (the `peak_rss` program): Linux records the
/// peak of the address space a child replaces at `exec`, and a child spawned
/// by a large process (a test holding profiles) would report that process's peak.
pub fn measure(cmd: &mut std::process::Command) -> ChildCost {
    let start = std::time::Instant::now();
    let child = cmd.spawn().expect("spawn the command");
    let pid = child.id() as i32;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waiting for our own child, with valid out-pointers; `child` is not
    // waited for again (it is forgotten below).
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    std::mem::forget(child);
    assert_eq!(r, pid, "wait4: {}", std::io::Error::last_os_error());
    ChildCost {
        seconds,
        // Linux reports ru_maxrss in KiB.
        peak_bytes: usage.ru_maxrss as u64 * 1024,
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    }
}

/// Runs `program args...` under the `peak_rss` program at `peak_rss` (from a
/// test or benchmark: `env!("CARGO_BIN_EXE_peak_rss")`) and reads back its
/// measurement.
pub fn measure_via(peak_rss: &Path, program: &Path, args: &[std::ffi::OsString]) -> ChildCost {
    measure_cmd(peak_rss, std::process::Command::new(program).args(args))
}

/// Runs `cmd` (its program, arguments, environment and directory as set)
/// under the `peak_rss` program at `peak_rss` and reads back its measurement:
/// [`measure_via`] for a command built with [`crate::clean_cmd`]. The
/// program's output is discarded.
pub fn measure_cmd(peak_rss: &Path, cmd: &std::process::Command) -> ChildCost {
    let mut via = std::process::Command::new(peak_rss);
    via.arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => via.env(k, v),
            None => via.env_remove(k),
        };
    }
    if let Some(d) = cmd.get_current_dir() {
        via.current_dir(d);
    }
    let out = via
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("run peak_rss");
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(f.len(), 3, "peak_rss printed {text:?}");
    ChildCost {
        seconds: f[0].parse().expect("seconds"),
        peak_bytes: f[1].parse().expect("bytes"),
        success: f[2] == "0",
    }
}
