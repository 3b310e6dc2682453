//! `kprof report`: readable tables from a profile.

use std::fmt::Write as _;

use kprof_core::output::flat::FlatRow;
use kprof_core::output::report::{Report, TreeNode};
use regex::Regex;
use serde_json::{json, Value};

use crate::fmt::{bar, bytes, csv_field, dur, pct, Align, Table};
use crate::load::{load_any, profile_path, Loaded};
use crate::outcome::{Failure, Outcome};
use crate::sort_key::SortKey;

use kprof_core::output::mpi::MpiTally;
use shown::{CounterKeys, FlatKeys, Shown, Teams, TopK, TreeKeep};
use stream::Sink;

pub use args::ReportArgs;
use args::{sort_name, sort_of, sort_value};
use cells::{bounded_path, cell, header, indented, thread_time};

mod args;
mod by_key;
mod cells;
mod job;
mod shown;
mod stack_samples;
mod stream;
mod views;

/// Entry point.
pub fn main(mut args: ReportArgs) -> Outcome {
    args.sort = Some(args.sort.unwrap_or(if args.tree || args.flat {
        SortKey::Total
    } else {
        SortKey::SelfTime
    }));
    let filter = match &args.filter {
        Some(f) => Some(Regex::new(f).map_err(|e| {
            let text = e.to_string();
            let why = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("error: "))
                .unwrap_or_else(|| text.lines().next().unwrap_or_default())
                .to_string();
            Failure(format!("--filter: invalid regular expression {f:?}: {why}"))
        })?),
        None => None,
    };
    // One pass over the file, keeping only what the view shows; a profile that
    // cannot be streamed (a merged one, an invalid one) is loaded whole.
    let path = profile_path(&args.dir)?;
    let mut view = View::new(&args, filter.as_ref());
    let text = match stream::read(&path, &mut view) {
        Some(r) => render(&r, view, &path, &args)?,
        None => match load_any(&args.dir)? {
            (path, Loaded::Single(r)) => {
                let mut view = View::new(&args, filter.as_ref());
                stream::walk(&r.tree, &mut view);
                render(&r, view, &path, &args)?
            }
            (path, Loaded::Merged(v)) => job::render(&v, &path, &args, filter.as_ref())?,
        },
    };
    print_out(&text);
    Ok(0)
}

/// What the chosen view keeps of the tree.
enum View<'f> {
    /// The flat table by (name, kind, device), the counter block's rows, and
    /// the time in MPI.
    Table(Box<FlatKeys<'f>>, Box<CounterKeys>, MpiTally),
    /// `--flat`: the rows by (name, kind, device label), folded by name later.
    ByName(Box<FlatKeys<'f>>),
    /// `--tree`.
    Tree(TreeKeep<'f>),
    /// `--threads`.
    Threads(Teams),
    /// `--samples`.
    Samples(stack_samples::Keep),
}

impl<'f> View<'f> {
    fn new(args: &ReportArgs, filter: Option<&'f Regex>) -> Self {
        if args.samples {
            View::Samples(stack_samples::Keep::default())
        } else if args.threads {
            View::Threads(Teams::new(args.top.unwrap_or(20)))
        } else if args.flat {
            View::ByName(Box::new(FlatKeys::new(true, filter)))
        } else if args.tree {
            View::Tree(TreeKeep::new(filter, sort_of(args), args.top))
        } else {
            View::Table(
                Box::new(FlatKeys::new(false, filter)),
                Box::default(),
                MpiTally::default(),
            )
        }
    }
}

impl Sink for View<'_> {
    fn enter(&mut self, depth: usize, n: &TreeNode) {
        match self {
            View::Table(flat, counted, mpi) => {
                flat.enter(depth, n);
                counted.enter(depth, n);
                mpi.add(depth, n);
            }
            View::ByName(flat) => flat.enter(depth, n),
            View::Tree(t) => t.enter(depth, n),
            View::Threads(t) => t.enter(depth, n),
            View::Samples(k) => k.enter(depth, n),
        }
    }

    fn leave(&mut self, depth: usize) {
        match self {
            View::Table(..) | View::ByName(_) | View::Threads(_) | View::Samples(_) => {}
            View::Tree(t) => t.leave(depth),
        }
    }
}

/// Writes to stdout, ending quietly when the reader went away (`| head`).
fn print_out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn render(
    r: &Report,
    view: View,
    path: &std::path::Path,
    args: &ReportArgs,
) -> Result<String, Failure> {
    // Times are summed over threads: shares are of all recorded threads' time.
    let run = r.thread_time_ns() as f64;
    let (flat, counted, mpi) = match view {
        View::Threads(teams) => {
            let mut s = header(r, path);
            threads(&mut s, r, teams, args);
            return Ok(s);
        }
        View::ByName(keys) => return views::flat(r, *keys, path, args).map_err(spill_failure),
        View::Tree(tree) => return Ok(render_tree(r, tree, path, args)),
        View::Samples(keep) => {
            let mut s = header(r, path);
            stack_samples::render(&mut s, r, keep, args)?;
            return Ok(s);
        }
        View::Table(flat, counted, mpi) => (flat, counted, mpi),
    };
    flat_table(r, *flat, *counted, &mpi, path, args, run).map_err(spill_failure)
}

/// The line for a flat view's rows that could not be read back.
fn spill_failure(e: std::io::Error) -> Failure {
    Failure(format!(
        "cannot read back the table's rows from the temporary directory: {e}"
    ))
}

/// The tree view.
fn render_tree(r: &Report, tree: TreeKeep, path: &std::path::Path, args: &ReportArgs) -> String {
    let run = r.thread_time_ns() as f64;
    let (roots, more) = tree.finish();
    let rows = tree_rows(&roots, more);
    if args.csv || args.json {
        return tree_machine(&rows, args.csv);
    }
    // A team's nodes (OpenMP constructs run by several threads, and what they
    // hold) show their times per thread, and say over how many threads.
    let teams = rows
        .iter()
        .any(|l| matches!(l, Line::Node(_, n) if n.team > 1));
    let mut s = header(r, path);
    let _ = writeln!(
        s,
        "\nCall-path tree (siblings by {}; % of {}{})",
        sort_name(sort_of(args)),
        thread_time(r),
        if teams {
            "; thr: the threads of a node's team, its total and self per thread"
        } else {
            ""
        }
    );
    let mut columns = vec![
        ("total", Align::Right),
        ("%", Align::Right),
        ("", Align::Left),
        ("self", Align::Right),
        ("count", Align::Right),
        ("mean", Align::Right),
    ];
    if teams {
        columns.push(("thr", Align::Right));
    }
    columns.extend([
        ("kind", Align::Left),
        ("device", Align::Left),
        ("name", Align::Left),
    ]);
    let mut t = Table::new(&columns);
    for row in &rows {
        let mut cells = match row {
            Line::Node(_, n) => vec![
                dur(n.total()),
                pct(n.total() as f64, run),
                bar(n.total() as f64, run),
                dur(n.self_time()),
                n.node.count.to_string(),
                crate::fmt::duration(n.node.mean_ns),
            ],
            Line::More(_, _, total) => vec![
                dur(*total),
                pct(*total as f64, run),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
        };
        if teams {
            cells.push(match row {
                Line::Node(_, n) => n.team.to_string(),
                Line::More(..) => String::new(),
            });
        }
        match row {
            Line::Node(depth, n) => cells.extend([
                n.node.kind.to_string(),
                n.node.device_label(),
                indented(*depth, &cell(&n.node.name, args)),
            ]),
            Line::More(depth, hidden, _) => {
                let what = if *hidden == 1 { "node" } else { "nodes" };
                cells.extend([
                    String::new(),
                    String::new(),
                    indented(*depth, &format!("... {hidden} more {what} (--top)")),
                ]);
            }
        }
        t.row(cells);
    }
    if t.len() == 0 {
        s.push_str("  (no nodes)\n");
    } else {
        s.push_str(&t.render());
    }
    s
}

/// The default view: the flat table and the blocks after it.
fn flat_table(
    r: &Report,
    mut rows: FlatKeys,
    counted: CounterKeys,
    mpi: &MpiTally,
    path: &std::path::Path,
    args: &ReportArgs,
    run: f64,
) -> std::io::Result<String> {
    // Ties in the order first met, as the rows were kept before.
    let order = |a: &(FlatRow, u64), b: &(FlatRow, u64)| {
        let (x, y) = (&a.0, &b.0);
        sort_value(sort_of(args), y.total_ns, y.self_ns, y.count)
            .cmp(&sort_value(sort_of(args), x.total_ns, x.self_ns, x.count))
            .then_with(|| (&x.name, x.kind, &x.device).cmp(&(&y.name, y.kind, &y.device)))
            .then(a.1.cmp(&b.1))
    };
    let top = args.top.unwrap_or(20);
    // Only the top rows are shown: they are kept as the rows come (a million
    // names; the filter was applied as they were added up).
    let mut best = TopK::new(Some(top));
    rows.drain(&mut |row, first| best.push((row, first), &order))?;
    let (flat, all) = best.finish(&order);
    let flat: Vec<FlatRow> = flat.into_iter().map(|(row, _)| row).collect();
    if args.csv || args.json {
        return Ok(flat_machine(&flat, run, args.csv));
    }
    let mut s = header(r, path);
    // Rows run by a team of threads (OpenMP) hold its threads' times added up,
    // as in the exit summary: a `thr` column says over how many.
    let teams = flat.iter().any(|f| f.threads > 1);
    let _ = writeln!(
        s,
        "\nKernels and regions by {} (top {} of {all}; % of {}{})",
        sort_name(sort_of(args)),
        flat.len(),
        thread_time(r),
        if teams {
            "; thr: times summed over that many threads"
        } else {
            ""
        }
    );
    let mut columns = vec![
        ("self", Align::Right),
        ("%", Align::Right),
        ("", Align::Left),
        ("total", Align::Right),
    ];
    if teams {
        columns.push(("thr", Align::Right));
    }
    columns.extend([
        ("count", Align::Right),
        ("mean", Align::Right),
        ("min", Align::Right),
        ("max", Align::Right),
        ("kind", Align::Left),
        ("device", Align::Left),
        ("name", Align::Left),
    ]);
    let mut t = Table::new(&columns);
    for f in &flat {
        let mut cells = vec![
            dur(f.self_ns),
            pct(f.self_ns as f64, run),
            bar(f.self_ns as f64, run),
            dur(f.total_ns),
        ];
        if teams {
            cells.push(f.threads.to_string());
        }
        cells.extend([
            f.count.to_string(),
            crate::fmt::duration(f.mean_ns()),
            dur(f.min_ns),
            dur(f.max_ns),
            f.kind.to_string(),
            f.device.to_string(),
            cell(&f.name, args),
        ]);
        t.row(cells);
    }
    if t.len() == 0 {
        s.push_str("  (no nodes)\n");
    } else {
        s.push_str(&t.render());
    }
    sections(&mut s, r, top, args);
    if let Some(hc) = &r.hardware_counters {
        let shown = counted.top(&hc.events, top)?;
        kprof_core::output::counters::write_block(&mut s, hc, &shown, top);
    }
    kprof_core::output::mpi::line(&mut s, mpi.time(r));
    kprof_core::output::messages::block(&mut s, r, top);
    if let Some(c) = &r.concurrency {
        kprof_core::output::summary::concurrency(&mut s, c, top);
    }
    if let Some(g) = &r.gpu {
        kprof_core::output::summary::gpu(&mut s, g, top);
    }
    kprof_core::output::summary::extension_blocks(&mut s, r);
    Ok(s)
}

/// The threads, and per team construct how its time spread over the threads.
fn threads(s: &mut String, r: &Report, teams: Teams, args: &ReportArgs) {
    let top = args.top.unwrap_or(20);
    let _ = writeln!(s, "\nThreads");
    let mut t = Table::new(&[
        ("index", Align::Right),
        ("tid", Align::Right),
        ("records", Align::Right),
        ("name", Align::Left),
    ]);
    for th in &r.threads {
        t.row(vec![
            th.index.to_string(),
            th.tid.to_string(),
            th.records.to_string(),
            cell(&th.name, args),
        ]);
    }
    s.push_str(&t.render());
    views::thread_times(s, r, args);

    // Worst first: the time lost to imbalance is max - mean per thread.
    let (spread, all) = teams.finish();
    if all == 0 {
        let _ = writeln!(
            s,
            "\nNo node carries per-thread totals (OpenMP constructs do)."
        );
        return;
    }
    let _ = writeln!(
        s,
        "\nWork per thread (top {} of {all} nodes by max - mean; imbalance = max/mean)",
        spread.len().min(top),
    );
    let mut t = Table::new(&[
        ("imbalance", Align::Right),
        ("threads", Align::Right),
        ("min", Align::Right),
        ("mean", Align::Right),
        ("max", Align::Right),
        ("kind", Align::Left),
        ("path", Align::Left),
    ]);
    for team in &spread {
        let (path, n) = (&team.path, &team.node);
        let Some(th) = &n.threads else { continue };
        t.row(vec![
            format!("{:.2}x", th.imbalance),
            th.threads.to_string(),
            dur(th.min_ns),
            crate::fmt::duration(th.mean_ns),
            dur(th.max_ns),
            n.kind.to_string(),
            cell(path, args),
        ]);
    }
    s.push_str(&t.render());
}

/// Deep copies, memory, sections, events, counters, system samples, anomalies.
fn sections(s: &mut String, r: &Report, top: usize, args: &ReportArgs) {
    if !r.deep_copies.is_empty() {
        let mut copies: Vec<_> = r.deep_copies.iter().collect();
        copies.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.bytes.cmp(&a.bytes)));
        let _ = writeln!(
            s,
            "\nDeep copies by time (top {} of {})",
            copies.len().min(top),
            copies.len()
        );
        let mut t = Table::new(&[
            ("time", Align::Right),
            ("count", Align::Right),
            ("bytes", Align::Right),
            ("rate", Align::Right),
            ("destination <- source", Align::Left),
        ]);
        for c in copies.iter().take(top) {
            let rate = if c.total_ns > 0 {
                format!(
                    "{}/s",
                    bytes((c.bytes as f64 * 1e9 / c.total_ns as f64) as u64)
                )
            } else {
                "-".into()
            };
            t.row(vec![
                dur(c.total_ns),
                c.count.to_string(),
                bytes(c.bytes),
                rate,
                format!(
                    "{}:{} <- {}:{}",
                    c.dst_space,
                    cell(&c.dst_label, args),
                    c.src_space,
                    cell(&c.src_label, args)
                ),
            ]);
        }
        s.push_str(&t.render());
    }
    if !r.memory.is_empty() {
        let _ = writeln!(s, "\nMemory per space");
        let mut t = Table::new(&[
            ("high water", Align::Right),
            ("at", Align::Right),
            ("in use at end", Align::Right),
            ("allocs", Align::Right),
            ("frees", Align::Right),
            ("leaks", Align::Right),
            ("space", Align::Left),
        ]);
        for m in &r.memory {
            let leaked: u64 = m.leaks.iter().map(|l| l.bytes).sum();
            t.row(vec![
                bytes(m.high_water_bytes),
                dur(m.high_water_ns),
                bytes(m.current_bytes),
                m.allocations.to_string(),
                m.deallocations.to_string(),
                if m.leaks.is_empty() {
                    "0".into()
                } else {
                    format!("{} ({})", m.leaks.len(), bytes(leaked))
                },
                m.space.clone(),
            ]);
        }
        s.push_str(&t.render());
        for m in &r.memory {
            if m.largest.is_empty() {
                continue;
            }
            let list: Vec<String> = m
                .largest
                .iter()
                .take(5)
                .map(|a| format!("{} {}", cell(&a.label, args), bytes(a.bytes)))
                .collect();
            let _ = writeln!(s, "  largest in {}: {}", m.space, list.join(", "));
        }
    }
    if !r.sections.is_empty() {
        let _ = writeln!(s, "\nSections");
        let mut t = Table::new(&[
            ("total", Align::Right),
            ("count", Align::Right),
            ("min", Align::Right),
            ("max", Align::Right),
            ("name", Align::Left),
        ]);
        for x in r.sections.iter().take(top) {
            t.row(vec![
                dur(x.total_ns),
                x.count.to_string(),
                dur(x.min_ns),
                dur(x.max_ns),
                cell(&x.name, args),
            ]);
        }
        s.push_str(&t.render());
    }
    if !r.events.is_empty() {
        let _ = writeln!(s, "\nEvents");
        let mut t = Table::new(&[("count", Align::Right), ("name", Align::Left)]);
        for e in r.events.iter().take(top) {
            t.row(vec![e.count.to_string(), cell(&e.name, args)]);
        }
        s.push_str(&t.render());
    }
    if !r.counters.is_empty() {
        let _ = writeln!(s, "\nCounters");
        let mut t = Table::new(&[
            ("count", Align::Right),
            ("min", Align::Right),
            ("mean", Align::Right),
            ("max", Align::Right),
            ("last", Align::Right),
            ("name", Align::Left),
        ]);
        for c in r.counters.iter().take(top) {
            t.row(vec![
                c.count.to_string(),
                num(c.min),
                num(c.mean),
                num(c.max),
                num(c.last),
                cell(&c.name, args),
            ]);
        }
        s.push_str(&t.render());
    }
    if let Some(sys) = &r.system {
        kprof_core::output::summary::system(s, sys);
    }
    let anomalies: Vec<String> = r
        .anomalies
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !anomalies.is_empty() {
        let _ = writeln!(s, "\nAnomalies: {}", anomalies.join(", "));
        for note in &r.anomaly_notes {
            let _ = writeln!(s, "  {note}");
        }
    }
    if r.dropped_records > 0 {
        let _ = writeln!(
            s,
            "\nDropped records: {} (the writer fell behind; raise --buffer-mb)",
            r.dropped_records
        );
    }
    if !r.metadata.is_empty() {
        let _ = writeln!(s, "\nMetadata");
        let mut t = Table::new(&[("key", Align::Left), ("value", Align::Left)]);
        for (k, v) in &r.metadata {
            t.row(vec![k.clone(), v.clone()]);
        }
        s.push_str(&t.render());
    }
    let _ = writeln!(
        s,
        "\n{}",
        kprof_core::output::summary::self_cost_line(&r.kprof)
    );
}

/// A counter value: integers as such, others with up to 6 significant digits.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A line of the tree view.
enum Line<'a> {
    /// (depth, node).
    Node(usize, &'a Shown),
    /// Siblings that `--top` hid: (depth, how many, their total time per thread).
    More(usize, usize, u64),
}

/// Tree lines in display order: each node shown, its children below it, then
/// what `--top` hid of them.
fn tree_rows(roots: &[Shown], more: (usize, u64)) -> Vec<Line<'_>> {
    // A stack, not recursion: a tree can be 100,000 deep.
    let mut out = Vec::new();
    let mut todo: Vec<(usize, &[Shown], (usize, u64))> = vec![(0, roots, more)];
    while let Some((depth, nodes, more)) = todo.pop() {
        match nodes.split_first() {
            Some((n, rest)) => {
                out.push(Line::Node(depth, n));
                todo.push((depth, rest, more));
                todo.push((depth + 1, &n.kids, n.more));
            }
            None if more.0 > 0 => out.push(Line::More(depth, more.0, more.1)),
            None => {}
        }
    }
    out
}

fn flat_machine(flat: &[FlatRow], run: f64, csv: bool) -> String {
    if csv {
        let mut s = String::from(
            "name,kind,device,count,total_ns,self_ns,mean_ns,min_ns,max_ns,self_pct\n",
        );
        for f in flat {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{:.1},{},{},{:.2}",
                csv_field(&f.name),
                f.kind,
                csv_field(&f.device),
                f.count,
                f.total_ns,
                f.self_ns,
                f.mean_ns(),
                f.min_ns,
                f.max_ns,
                if run > 0.0 {
                    100.0 * f.self_ns as f64 / run
                } else {
                    0.0
                }
            );
        }
        s
    } else {
        let rows: Vec<Value> = flat
            .iter()
            .map(|f| {
                json!({"name": f.name, "kind": f.kind, "device": f.device, "count": f.count,
                       "total_ns": f.total_ns, "self_ns": f.self_ns, "mean_ns": f.mean_ns(),
                       "min_ns": f.min_ns, "max_ns": f.max_ns})
            })
            .collect();
        serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n"
    }
}

fn tree_machine(lines: &[Line], csv: bool) -> String {
    // The names from the root to the current row's node.
    let mut names: Vec<&str> = Vec::new();
    let mut s = String::new();
    let mut rows = PrettyArray::default();
    if csv {
        s.push_str(
            "path,depth,name,kind,device,count,total_ns,self_ns,mean_ns,min_ns,max_ns,\
             threads,per_thread_total_ns,per_thread_self_ns\n",
        );
    }
    for line in lines {
        let Line::Node(depth, shown) = line else {
            continue;
        };
        let (depth, n) = (*depth, &shown.node);
        names.truncate(depth);
        names.push(&n.name);
        let path = bounded_path(&names);
        if csv {
            let _ = writeln!(
                s,
                "{},{depth},{},{},{},{},{},{},{:.1},{},{},{},{},{}",
                csv_field(&path.join(";")),
                csv_field(&n.name),
                n.kind,
                csv_field(&n.device_label()),
                n.count,
                n.total_ns,
                n.self_ns,
                n.mean_ns,
                n.min_ns,
                n.max_ns,
                shown.team,
                shown.total(),
                shown.self_time()
            );
        } else {
            rows.push(
                &json!({"path": path, "depth": depth, "name": n.name, "kind": n.kind,
                   "device": n.device_label(), "count": n.count, "total_ns": n.total_ns,
                   "self_ns": n.self_ns, "mean_ns": n.mean_ns, "min_ns": n.min_ns,
                   "max_ns": n.max_ns, "threads": shown.team,
                   "per_thread_total_ns": shown.total(),
                   "per_thread_self_ns": shown.self_time()}),
            );
        }
    }
    if csv {
        s
    } else {
        rows.finish()
    }
}

/// A JSON array written as `serde_json::to_string_pretty` writes it, one
/// element at a time (a tree's rows are never all held as JSON values).
#[derive(Default)]
struct PrettyArray {
    text: String,
}

impl PrettyArray {
    /// Appends `v`.
    fn push(&mut self, v: &Value) {
        self.text
            .push_str(if self.text.is_empty() { "[\n" } else { ",\n" });
        let item = serde_json::to_string_pretty(v).unwrap_or_default();
        // Strings are escaped: every line break is the layout's.
        for (i, line) in item.lines().enumerate() {
            if i > 0 {
                self.text.push('\n');
            }
            self.text.push_str("  ");
            self.text.push_str(line);
        }
    }

    /// The array and a line break.
    fn finish(self) -> String {
        if self.text.is_empty() {
            "[]\n".into()
        } else {
            self.text + "\n]\n"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows written one at a time read as the whole array pretty-printed.
    #[test]
    fn pretty_array_is_serde_jsons() {
        let rows = [
            json!({"path": ["a", "b\nc"], "depth": 1, "x": {"y": [1, 2]}}),
            json!({"path": [], "name": "q\"", "threads": 2}),
        ];
        for n in 0..=rows.len() {
            let mut a = PrettyArray::default();
            for r in &rows[..n] {
                a.push(r);
            }
            let want = serde_json::to_string_pretty(&rows[..n]).unwrap() + "\n";
            assert_eq!(a.finish(), want);
        }
    }

    #[test]
    fn deep_lines_are_indented_as_the_32nd_level() {
        assert_eq!(indented(2, "x"), "    x");
        assert_eq!(indented(32, "x"), format!("{}x", " ".repeat(64)));
        assert_eq!(
            indented(5000, "x"),
            format!("{}[depth 5000] x", " ".repeat(64))
        );
    }
}
