//! The summary printed on stderr at exit: what a user reads first.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::output::calltree::CallTree;
use crate::output::files::Written;
use crate::output::readable::{bytes, duration, table_name};
use crate::output::report::{ClockInfo, Report, SelfCost, System, TreeNode};

/// A JSON trace from this size on is said to be the slow format.
const LARGE_JSON: u64 = 64 << 20;

/// Longest name shown in a table (full names are in the files).
const NAME_WIDTH: usize = 60;

fn short(name: &str) -> String {
    table_name(name, Some(NAME_WIDTH))
}

/// Renders the summary of `r`, whose call-path tree is `tree`. `dir` is where the
/// files went, when the summary says so; `written` what could be written; `traces`
/// are the trace files written.
pub fn render(
    r: &Report,
    tree: &dyn CallTree,
    top: usize,
    dir: Option<&Path>,
    written: Written,
    traces: &[PathBuf],
) -> String {
    let mut s = body(r, tree, top, traces);
    s.push_str(&ending(dir, written));
    s
}

/// The run time as the headers say it: the program's, from the process's start,
/// then the span kprof measured (from its start: shares are of that span), as
/// `1.20 s, measured the last 1.05 s`; the measured span alone where the
/// process's start is not known.
pub fn run_time(c: &ClockInfo) -> String {
    match c.process_run_ns {
        Some(run) => format!(
            "{}, measured the last {}",
            duration(run as f64),
            duration(c.duration_ns as f64)
        ),
        None => duration(c.duration_ns as f64),
    }
}

/// The summary without its last line ([`ending`]).
pub fn body(r: &Report, tree: &dyn CallTree, top: usize, traces: &[PathBuf]) -> String {
    let mut s = String::new();
    let run = r.clock.duration_ns.max(1) as f64;
    let _ = writeln!(
        s,
        "\n==== kprof: {} (pid {}{}) | run {} | {} thread(s) | clock {} ====",
        r.program.executable,
        r.program.pid,
        r.program
            .rank
            .map(|k| format!(", rank {k}"))
            .unwrap_or_default(),
        run_time(&r.clock),
        r.threads.len(),
        r.clock.source
    );

    // Times are summed over threads: shares are of all recorded threads' time
    // together, so that none exceeds 100%.
    let thread_time = r.thread_time_ns() as f64;
    let flat = tree.flat_top(top);
    let (work, rows, fences) = (flat.work, flat.work_rows, flat.fences);
    if rows == 0 {
        let _ = writeln!(s, "No kernels or regions were recorded.");
    } else {
        // Rows run by a team of threads (OpenMP) hold its threads' times added
        // up: a `thr` column says over how many, where any row has a team.
        let teams = work.iter().take(top).any(|f| f.threads > 1);
        let _ = writeln!(
            s,
            "\nTop {} of {} kernels/regions by exclusive time (%thr: share of {} thread{} x {}{}):",
            top.min(rows),
            rows,
            r.threads.len().max(1),
            if r.threads.len() > 1 { "s" } else { "" },
            duration(run),
            if teams {
                "; thr: times summed over that many threads"
            } else {
                ""
            }
        );
        let thr = |cell: &str| {
            if teams {
                format!(" {cell:>4}")
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            s,
            "{:>11} {:>6} {:>9} {:>11}{} {:>11} {:>11} {:>11}  {:<15} {:<8} name",
            "self",
            "%thr",
            "count",
            "total",
            thr("thr"),
            "mean",
            "min",
            "max",
            "kind",
            "device"
        );
        for f in work.iter().take(top) {
            let _ = writeln!(
                s,
                "{:>11} {:>5.1}% {:>9} {:>11}{} {:>11} {:>11} {:>11}  {:<15} {:<8} {}",
                duration(f.self_ns as f64),
                100.0 * f.self_ns as f64 / thread_time,
                f.count,
                duration(f.total_ns as f64),
                thr(&f.threads.to_string()),
                duration(f.mean_ns()),
                duration(f.min_ns as f64),
                duration(f.max_ns as f64),
                f.kind,
                f.device,
                short(&f.name)
            );
        }
    }

    if !fences.is_empty() {
        let mut fences = fences;
        fences.sort_by_key(|f| std::cmp::Reverse(f.total_ns));
        let n: u64 = fences.iter().map(|f| f.count).sum();
        let t: u64 = fences.iter().map(|f| f.total_ns).sum();
        let _ = writeln!(
            s,
            "\nFences: {n} in {} ({:.1}% of thread time):",
            duration(t as f64),
            100.0 * t as f64 / thread_time
        );
        for f in fences.iter().take(top) {
            let _ = writeln!(
                s,
                "{:>11} {:>9}x  {:<8} {}",
                duration(f.total_ns as f64),
                f.count,
                f.device,
                short(&f.name)
            );
        }
    }

    openmp(&mut s, tree, top);
    crate::output::counters::block(&mut s, r, tree, top);
    crate::output::mpi::block(&mut s, r, tree);
    crate::output::messages::block(&mut s, r, top);
    if let Some(c) = &r.concurrency {
        concurrency(&mut s, c, top);
    }

    if !r.deep_copies.is_empty() {
        let _ = writeln!(s, "\nDeep copies:");
        for c in r.deep_copies.iter().take(top) {
            let _ = writeln!(
                s,
                "{:>11} {:>9}x {:>12}  {}:{} <- {}:{}",
                duration(c.total_ns as f64),
                c.count,
                bytes(c.bytes),
                c.dst_space,
                short(&c.dst_label),
                c.src_space,
                short(&c.src_label)
            );
        }
    }

    if !r.sections.is_empty() {
        let _ = writeln!(s, "\nSections:");
        for sec in r.sections.iter().take(top) {
            let _ = writeln!(
                s,
                "{:>11} {:>9}x  {}",
                duration(sec.total_ns as f64),
                sec.count,
                short(&sec.name)
            );
        }
    }

    if !r.memory.is_empty() {
        let _ = writeln!(s, "\nMemory per space:");
        for m in &r.memory {
            let _ = writeln!(
                s,
                "  {:<16} high-water {} at {}, {} allocations, {} freed, {} still allocated",
                m.space,
                bytes(m.high_water_bytes),
                duration(m.high_water_ns as f64),
                m.allocations,
                m.deallocations,
                bytes(m.current_bytes)
            );
            for l in m.leaks.iter().take(top) {
                let _ = writeln!(
                    s,
                    "    never freed: {} ({})",
                    short(&l.label),
                    bytes(l.bytes)
                );
            }
        }
    }

    if let Some(g) = &r.gpu {
        gpu(&mut s, g, top);
    }
    // What the kernel times of a device back end mean (set by the Kokkos plugin).
    if let Some(how) = r.metadata.get("kokkos_device_timing") {
        let _ = writeln!(s, "\nKokkos kernels on devices: {how}");
    }

    extension_blocks(&mut s, r);

    let anomalies: Vec<String> = r
        .anomalies
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, n)| format!("{k}={n}"))
        .collect();
    if !anomalies.is_empty() {
        let _ = writeln!(
            s,
            "\nAnomalies (counted, not fatal): {}",
            anomalies.join(" ")
        );
        for note in &r.anomaly_notes {
            let _ = writeln!(s, "  {note}");
        }
    }
    if r.dropped_records > 0 {
        let _ = writeln!(
            s,
            "\nDropped records: {} (the writer fell behind; raise KPROF_BUFFER_MB)",
            r.dropped_records
        );
    }
    if let Some(sys) = &r.system {
        system(&mut s, sys);
    }
    let _ = writeln!(s, "\n{}", self_cost_line(&r.kprof));
    for t in traces {
        // An OTF2 archive is the directory around its anchor file.
        let on_disk = match t.extension().is_some_and(|e| e == "otf2") {
            true => t.parent().unwrap_or(t),
            false => t.as_path(),
        };
        let size = crate::output::files::bytes_on_disk(on_disk);
        // JSON is the slow and large format (the trace_size bench): said where it
        // grew large, so that a long run picks another.
        let json = t.extension().is_some_and(|e| e == "json") && size >= LARGE_JSON;
        let _ = writeln!(
            s,
            "kprof: trace {} ({}{})",
            t.display(),
            bytes(size),
            if json {
                "; JSON is the slow, large format: perfetto writes ~5x faster and far smaller"
            } else {
                ""
            }
        );
    }
    s
}

/// The summary's last line: where the files are (`dir`, when the summary says so),
/// or what could not be written.
pub fn ending(dir: Option<&Path>, written: Written) -> String {
    let mut s = String::new();
    match (dir, written) {
        (_, Written::Nothing) => {
            let _ = writeln!(s, "kprof: no files were written (see above)");
        }
        (Some(d), Written::NoProfile) => {
            let _ = writeln!(
                s,
                "kprof: files in {}, without profile.json (see above)",
                d.display()
            );
        }
        (Some(d), Written::All) => {
            let _ = writeln!(s, "kprof: files in {}", d.display());
        }
        (None, _) => {}
    }
    s
}

/// The categories of `list` with a share, largest first: `"61.0% kernel, 30.0%
/// wait, 9.0% idle"`.
fn shares(list: &[crate::output::report::CategoryTime]) -> String {
    let mut l: Vec<_> = list.iter().filter(|c| c.pct >= 0.05).collect();
    l.sort_by(|a, b| {
        b.pct
            .total_cmp(&a.pct)
            .then_with(|| a.category.cmp(&b.category))
    });
    let parts: Vec<String> = l
        .iter()
        .map(|c| format!("{:.1}% {}", c.pct, c.category))
        .collect();
    if parts.is_empty() {
        "no time".into()
    } else {
        parts.join(", ")
    }
}

/// The concurrency block: the threads' time by kind of work (the summary's and
/// `kprof report`'s); per thread when there are at most `top` threads.
pub fn concurrency(s: &mut String, c: &crate::output::report::Concurrency, top: usize) {
    let _ = writeln!(
        s,
        "\nConcurrency: {} thread{} ({} of thread time): {}",
        c.threads,
        if c.threads == 1 { "" } else { "s" },
        duration(c.thread_ns as f64),
        shares(&c.categories)
    );
    if c.threads as usize <= top && c.threads > 1 {
        for t in &c.per_thread {
            let name = if t.name.is_empty() {
                format!("thread {}", t.index)
            } else {
                format!("{} ({})", short(&t.name), t.index)
            };
            let _ = writeln!(
                s,
                "  {name}: {} over {}",
                shares(&t.categories),
                duration(t.span_ns as f64)
            );
        }
    }
}

/// The GPU block: kernels by device time, copies by direction, each device (the
/// summary's and `kprof report`'s).
pub fn gpu(s: &mut String, g: &crate::output::report::Gpu, top: usize) {
    if !g.kernels.is_empty() {
        let _ = writeln!(
            s,
            "\nGPU kernels (device time):\n{:>11} {:>6} {:>9} {:>11} {:>11} {:>11}  name",
            "total", "%busy", "count", "mean", "min", "max"
        );
        for k in g.kernels.iter().take(top) {
            let _ = writeln!(
                s,
                "{:>11} {:>5.1}% {:>9} {:>11} {:>11} {:>11}  {} [{}]",
                duration(k.total_ns as f64),
                k.busy_pct,
                k.count,
                duration(k.mean_ns),
                duration(k.min_ns as f64),
                duration(k.max_ns as f64),
                short(&k.name),
                k.device
            );
        }
    }
    if !g.copies.is_empty() {
        let _ = writeln!(s, "\nGPU copies:");
        for c in &g.copies {
            let _ = writeln!(
                s,
                "  {:<8} {:<5} {:>9}x {:>10} in {:>10}  {:.2} GB/s",
                c.device,
                c.direction,
                c.count,
                bytes(c.bytes),
                duration(c.total_ns as f64),
                c.gb_per_s
            );
        }
    }
    let _ = writeln!(s, "\nGPU devices:");
    for d in &g.devices {
        let _ = writeln!(
            s,
            "  {:<8} busy {} ({:.1}% idle), {} activities, memory high-water {}, \
             never freed {} in {} allocations",
            d.device,
            duration(d.busy_ns as f64),
            d.idle_pct,
            d.activities,
            bytes(d.memory_high_water_bytes),
            bytes(d.leaked_bytes),
            d.leaked_allocations
        );
    }
}

/// The system block: each sampled metric's range over the run, and what this
/// node could not show (the summary's and `kprof report`'s).
pub fn system(s: &mut String, sys: &System) {
    let _ = writeln!(
        s,
        "\nSystem (sampled every {} ms: {} samples, {} of writer CPU):\n  {:<28} {:>12} {:>12} {:>12}",
        sys.period_ms,
        sys.samples,
        duration(sys.sampler_cpu_ns as f64),
        "metric",
        "min",
        "mean",
        "max"
    );
    for m in sys.metrics.iter().filter(|m| m.samples > 0) {
        let _ = writeln!(
            s,
            "  {:<28} {:>12} {:>12} {:>12}",
            short(&m.name),
            value(m.min, &m.unit),
            value(m.mean, &m.unit),
            value(m.max, &m.unit)
        );
    }
    for u in &sys.unavailable {
        let _ = writeln!(s, "  ({u})");
    }
}

/// A sampled value with its unit, for a table cell.
pub fn value(v: f64, unit: &str) -> String {
    match unit {
        "bytes" => bytes(v.max(0.0) as u64),
        "bytes/s" => format!("{}/s", bytes(v.max(0.0) as u64)),
        "cores" => format!("{v:.2} cores"),
        "%" => format!("{v:.1}%"),
        "/s" => format!("{v:.0}/s"),
        "W" => format!("{v:.1} W"),
        "count" if v.fract() == 0.0 => format!("{v:.0}"),
        "count" => format!("{v:.2}"),
        other => format!("{v:.3} {other}"),
    }
}

/// One line of what kprof cost: its records, buffer memory (and the kernel's time
/// to provide it) and its writer's CPU time.
pub fn self_cost_line(c: &SelfCost) -> String {
    let paths = format!(
        "{} call paths ({} of profile)",
        c.call_paths,
        bytes(c.profile_bytes)
    );
    let in_place = if c.events_in_place > 0 {
        format!(
            "{} events aggregated in place into {paths}; ",
            c.events_in_place
        )
    } else if c.call_paths > 0 {
        format!("{paths}; ")
    } else {
        String::new()
    };
    format!(
        "kprof itself: {in_place}{} records ({}) in {} of buffers ({} huge-page and {} \
         small-page blocks, {} to fault in), writer thread {} CPU{}",
        c.records,
        bytes(c.record_bytes),
        bytes(c.buffer_bytes),
        c.huge_page_blocks,
        c.small_page_blocks,
        duration(c.buffer_fault_ns as f64),
        duration(c.writer_cpu_ns as f64),
        if c.call_paths == 0 && c.writer_run_cpu_ns == 0 {
            String::new()
        } else {
            format!(
                " ({} while the program ran)",
                duration(c.writer_run_cpu_ns as f64)
            )
        }
    ) + &if c.device_tool_ns > 0 {
        format!(
            "; the GPU tool library's own overhead {}",
            duration(c.device_tool_ns as f64)
        )
    } else {
        String::new()
    } + &if c.own_ns > 0 {
        format!(
            "; {} on the program's threads adding call paths and names (left out of every region's time)",
            duration(c.own_ns as f64)
        )
    } else {
        String::new()
    }
}

/// OpenMP: how evenly teams shared each parallel region's work, and where threads
/// waited (synchronization, locks).
fn openmp(s: &mut String, tree: &dyn CallTree, top: usize) {
    const KINDS: [&str; 4] = [
        "omp_implicit_task",
        "omp_barrier",
        "omp_sync_wait",
        "omp_mutex_wait",
    ];
    if !tree.has_kind(&KINDS) {
        return;
    }
    // (region name, spread of its implicit tasks)
    let mut regions: Vec<(String, u32, u64, u64, f64, f64)> = Vec::new();
    let mut waits: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    // The names of the nodes enclosing the current one.
    let mut path: Vec<String> = Vec::new();
    tree.walk_without_samples(&mut |depth, n: &TreeNode| {
        path.truncate(depth);
        let parent = path.last().map_or("", String::as_str);
        if let (Some(t), "omp_implicit_task") = (&n.threads, n.kind.as_ref()) {
            regions.push((
                parent.to_string(),
                t.threads,
                t.min_ns,
                t.max_ns,
                t.mean_ns,
                t.imbalance,
            ));
        }
        // An implicit barrier's slice is its wait (no separate wait inside).
        let implicit = n.kind == "omp_barrier" && n.name == "implicit barrier";
        if n.kind == "omp_sync_wait" || n.kind == "omp_mutex_wait" || implicit {
            let (kind, what) = match n.kind.as_ref() {
                "omp_mutex_wait" => ("omp_mutex_wait", n.name.as_ref()),
                _ => ("omp_sync_wait", parent),
            };
            let e = waits
                .entry((kind.to_string(), what.to_string()))
                .or_default();
            e.0 += n.total_ns;
            e.1 += n.count;
        }
        path.push(n.name.to_string());
    });
    if regions.is_empty() && waits.is_empty() {
        return;
    }
    if !regions.is_empty() {
        regions.sort_by(|a, b| (b.3 as f64 * b.5).total_cmp(&(a.3 as f64 * a.5)));
        let _ = writeln!(
            s,
            "\nOpenMP parallel regions: work per thread (imbalance = max/mean):"
        );
        for (name, threads, min, max, mean, imb) in regions.iter().take(top) {
            let _ = writeln!(
                s,
                "{:>5.2}x  {threads} threads  min {:>10}  mean {:>10}  max {:>10}  {}",
                imb,
                duration(*min as f64),
                duration(*mean),
                duration(*max as f64),
                short(name)
            );
        }
    }
    if !waits.is_empty() {
        let mut waits: Vec<_> = waits.into_iter().collect();
        waits.sort_by_key(|(_, (t, _))| std::cmp::Reverse(*t));
        let _ = writeln!(s, "\nOpenMP waiting (synchronization and locks):");
        for ((kind, what), (total, count)) in waits.iter().take(top) {
            let label = if kind == "omp_sync_wait" {
                "sync wait in"
            } else {
                "lock wait"
            };
            let _ = writeln!(
                s,
                "{:>11} {:>9}x  {label} {}",
                duration(*total as f64),
                count,
                short(what)
            );
        }
    }
}

/// The blocks plugins added to the summary (`CoreApi::extension`), as they gave them.
pub fn extension_blocks(s: &mut String, r: &Report) {
    for lines in &r.extension_summaries {
        let _ = write!(s, "\n{lines}");
        if !lines.ends_with('\n') {
            s.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(duration(12.0), "12 ns");
        assert_eq!(duration(1500.0), "1.50 us");
        assert_eq!(duration(2.5e9), "2.500 s");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 20), "3.00 MiB");
        assert_eq!(short(&"x".repeat(100)).len(), NAME_WIDTH);
        assert_eq!(short(&"x".repeat(NAME_WIDTH)).len(), NAME_WIDTH);
        assert_eq!(table_name("a\nb\tc", None), "a\\nb\\tc");
        assert_eq!(table_name("abcdef", Some(5)), "ab...");
        assert_eq!(table_name("ab\ncdef", Some(5)), "ab...");
    }

    #[test]
    fn self_cost_in_one_line() {
        let c = SelfCost {
            records: 4800,
            record_bytes: 48000,
            buffer_bytes: 3 << 21,
            buffer_budget_bytes: 64 << 20,
            huge_page_blocks: 1,
            small_page_blocks: 2,
            buffer_fault_ns: 1_500_000,
            writer_cpu_ns: 2_500_000_000,
            ..SelfCost::default()
        };
        assert_eq!(
            self_cost_line(&c),
            "kprof itself: 4800 records (46.88 KiB) in 6.00 MiB of buffers (1 huge-page \
             and 2 small-page blocks, 1.50 ms to fault in), writer thread 2.500 s CPU"
        );
        let c = SelfCost {
            events_in_place: 2_000_000,
            call_paths: 12,
            profile_bytes: 6 << 10,
            ..c
        };
        assert!(self_cost_line(&c).starts_with(
            "kprof itself: 2000000 events aggregated in place into 12 call paths (6.00 KiB of \
             profile); 4800 records"
        ));
    }
}
