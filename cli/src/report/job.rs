//! `kprof report` of a job's merged profile (`kprof-merged/1`, from `kprof
//! merge` or reduced over MPI at `MPI_Finalize`): what a rank's report shows,
//! over the ranks. Per call path min/mean/max over ranks and the imbalance
//! (max/mean); the time in MPI and the MPI functions; the job's message matrix
//! (totals, bytes per rank, the largest pairs); `--flat` by name, `--threads`
//! as the ranks (a job's profile keeps each rank's thread count, not its
//! threads' times); `--samples` the job's call-stack samples, summed over the
//! ranks.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use regex::Regex;
use serde_json::{json, Value};

use super::args::{sort_of, ReportArgs};
use super::cells::{bounded_path, cell, indented};
use crate::fmt::ranks_text;
use crate::fmt::{bytes, csv_field, duration, pct, Align, Table};
use crate::outcome::Failure;
use crate::path_text::show;
use crate::sort_key::SortKey;

/// A node of the merged tree with where it is.
struct Row<'v> {
    depth: usize,
    /// Its names from the root, joined by ` / ` (bounded as the CSV's).
    path: String,
    node: &'v Value,
    /// Whether an MPI call encloses it (its time is in that call's).
    in_mpi: bool,
    /// Whether a node of its name encloses it (recursion: its time is in that
    /// node's).
    in_itself: bool,
}

impl Row<'_> {
    fn name(&self) -> &str {
        self.node["name"].as_str().unwrap_or_default()
    }

    fn kind(&self) -> &str {
        self.node["kind"].as_str().unwrap_or_default()
    }
}

/// `n[field][stat]` as a number (0 when absent).
fn g(n: &Value, field: &str, stat: &str) -> f64 {
    n[field][stat].as_f64().unwrap_or(0.0)
}

/// Every node of the tree, depth first (a stack, not recursion, and paths
/// bounded as the CSV's: a tree can be 100,000 deep).
fn walk(tree: &Value) -> Vec<Row<'_>> {
    fn list(v: &Value) -> &[Value] {
        v.as_array().map(Vec::as_slice).unwrap_or_default()
    }
    let mut out = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    // How often each name is on the current path.
    let mut on_path: HashMap<&str, usize> = HashMap::new();
    // The depth of the outermost MPI call on the current path.
    let mut mpi_at: Option<usize> = None;
    let mut todo: Vec<(usize, &[Value])> = vec![(0, list(tree))];
    while let Some((depth, nodes)) = todo.pop() {
        let Some((n, rest)) = nodes.split_first() else {
            continue;
        };
        todo.push((depth, rest));
        for gone in names.drain(depth.min(names.len())..) {
            if let Some(c) = on_path.get_mut(gone) {
                *c -= 1;
            }
        }
        let name = n["name"].as_str().unwrap_or_default();
        let in_itself = on_path.get(name).is_some_and(|&c| c > 0);
        names.push(name);
        *on_path.entry(name).or_insert(0) += 1;
        if mpi_at.is_some_and(|d| depth <= d) {
            mpi_at = None;
        }
        out.push(Row {
            depth,
            path: bounded_path(&names).join(" / "),
            node: n,
            in_mpi: mpi_at.is_some(),
            in_itself,
        });
        if mpi_at.is_none() && n["kind"] == "mpi" {
            mpi_at = Some(depth);
        }
        todo.push((depth + 1, list(&n["children"])));
    }
    out
}

/// The report of the merged profile `v` read from `path` (a failure: `--samples`
/// of a job that has none).
pub fn render(
    v: &Value,
    path: &Path,
    args: &ReportArgs,
    filter: Option<&Regex>,
) -> Result<String, Failure> {
    let all = walk(&v["tree"]);
    let ranks = v["ranks"].as_array().map(Vec::len).unwrap_or(0);
    if args.samples {
        let mut s = header(v, path, ranks);
        let rows: Vec<(&str, &str, &Value)> = all
            .iter()
            .filter(|r| filter.is_none_or(|re| re.is_match(r.name())))
            .map(|r| (r.path.as_str(), r.kind(), r.node))
            .collect();
        super::stack_samples::render_job(&mut s, v, &rows, ranks, args)?;
        return Ok(s);
    }
    Ok(render_table(v, path, args, filter, &all, ranks))
}

/// The tables of the merged profile: its nodes, MPI, its messages.
fn render_table(
    v: &Value,
    path: &Path,
    args: &ReportArgs,
    filter: Option<&Regex>,
    all: &[Row],
    ranks: usize,
) -> String {
    if args.flat {
        return by_name(v, all, path, args, filter, ranks);
    }
    let mut rows: Vec<&Row> = all
        .iter()
        .filter(|r| filter.is_none_or(|re| re.is_match(r.name())))
        .collect();
    let key = |r: &Row| -> f64 {
        let field = match sort_of(args) {
            SortKey::SelfTime => "self_ns",
            SortKey::Total => "total_ns",
            SortKey::Count => "count",
        };
        g(r.node, field, "max")
    };
    if !args.tree {
        rows.sort_by(|a, b| key(b).total_cmp(&key(a)).then_with(|| a.path.cmp(&b.path)));
        rows.truncate(args.top.unwrap_or(20));
    }
    if args.csv || args.json {
        return nodes_machine(&rows, args.csv);
    }
    let mut s = header(v, path, ranks);
    if args.threads {
        ranks_table(&mut s, v, args);
        return s;
    }
    nodes_table(&mut s, &rows, args);
    mpi_block(&mut s, v, all, ranks, args);
    messages_block(&mut s, v, ranks, args);
    s
}

/// The header: the file, the program, the ranks and hosts, the run's length
/// over ranks.
fn header(v: &Value, path: &Path, ranks: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "kprof report: {} (merged, {})",
        show(path),
        ranks_text(ranks)
    );
    let list = v["ranks"].as_array().map(Vec::as_slice).unwrap_or_default();
    // Program -> its ranks' labels, in rank order.
    let mut programs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut hosts: Vec<&str> = Vec::new();
    for r in list {
        let exe = r["executable"].as_str().unwrap_or_default();
        let name = Path::new(exe)
            .file_name()
            .map_or_else(|| exe.to_string(), |n| n.to_string_lossy().into_owned());
        programs
            .entry(name)
            .or_default()
            .push(r["rank"].to_string());
        let host = r["host"].as_str().unwrap_or_default();
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    let on = format!(
        "on {} host{}",
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" }
    );
    if let (1, Some(name)) = (programs.len(), programs.keys().next()) {
        let _ = writeln!(s, "program: {name} ({} {on})", ranks_text(ranks));
    } else if !programs.is_empty() {
        let parts: Vec<String> = programs
            .iter()
            .map(|(name, labels)| format!("{name} (ranks {})", labels.join(" ")))
            .collect();
        let _ = writeln!(s, "programs: {} ({on})", parts.join(", "));
    }
    let d = &v["duration_ns"];
    let _ = writeln!(
        s,
        "run: min {}{}, mean {}, max {}{} over ranks, imbalance {:.2}",
        duration(g(v, "duration_ns", "min")),
        who(&d["min_rank"]),
        duration(g(v, "duration_ns", "mean")),
        duration(g(v, "duration_ns", "max")),
        who(&d["max_rank"]),
        g(v, "duration_ns", "imbalance")
    );
    s
}

/// ` (rank N)` for a rank label, nothing for none.
fn who(rank: &Value) -> String {
    rank.as_u64()
        .map_or_else(String::new, |r| format!(" (rank {r})"))
}

/// The call paths' table: per node min/mean/max over ranks and imbalance.
fn nodes_table(s: &mut String, rows: &[&Row], args: &ReportArgs) {
    let field = match sort_of(args) {
        SortKey::SelfTime => "self_ns",
        _ => "total_ns",
    };
    let _ = writeln!(
        s,
        "\n{} per rank: min, mean, max and imbalance (max/mean); count summed over ranks",
        if field == "self_ns" {
            "Self time"
        } else {
            "Total time"
        }
    );
    let mut t = Table::new(&[
        ("min", Align::Right),
        ("mean", Align::Right),
        ("max", Align::Right),
        ("imbalance", Align::Right),
        ("ranks", Align::Right),
        ("count", Align::Right),
        ("kind", Align::Left),
        ("name", Align::Left),
    ]);
    for r in rows {
        let n = r.node;
        t.row(vec![
            duration(g(n, field, "min")),
            duration(g(n, field, "mean")),
            duration(g(n, field, "max")),
            format!("{:.2}", g(n, field, "imbalance")),
            n["ranks"].to_string(),
            n["count"]["sum"].to_string(),
            r.kind().to_string(),
            if args.tree {
                indented(r.depth, &cell(r.name(), args))
            } else {
                cell(&r.path, args)
            },
        ]);
    }
    if t.len() == 0 {
        s.push_str("  (no nodes)\n");
    } else {
        s.push_str(&t.render());
    }
}

/// The rows of the call paths' table as CSV or JSON (times in ns).
fn nodes_machine(rows: &[&Row], csv: bool) -> String {
    let field = |r: &Row| {
        let n = r.node;
        json!({"path": r.path, "name": n["name"], "kind": n["kind"], "ranks": n["ranks"],
               "count_sum": n["count"]["sum"],
               "total_min_ns": n["total_ns"]["min"], "total_mean_ns": n["total_ns"]["mean"],
               "total_max_ns": n["total_ns"]["max"], "total_imbalance": n["total_ns"]["imbalance"],
               "self_min_ns": n["self_ns"]["min"], "self_mean_ns": n["self_ns"]["mean"],
               "self_max_ns": n["self_ns"]["max"], "self_imbalance": n["self_ns"]["imbalance"]})
    };
    let objects: Vec<Value> = rows.iter().map(|r| field(r)).collect();
    if csv {
        to_csv(
            &[
                "path",
                "name",
                "kind",
                "ranks",
                "count_sum",
                "total_min_ns",
                "total_mean_ns",
                "total_max_ns",
                "total_imbalance",
                "self_min_ns",
                "self_mean_ns",
                "self_max_ns",
                "self_imbalance",
            ],
            &objects,
        )
    } else {
        serde_json::to_string_pretty(&objects).unwrap_or_default() + "\n"
    }
}

/// `objects` as CSV with the columns `cols`.
fn to_csv(cols: &[&str], objects: &[Value]) -> String {
    let mut s = cols.join(",") + "\n";
    for o in objects {
        let cells: Vec<String> = cols
            .iter()
            .map(|c| match &o[*c] {
                Value::String(t) => csv_field(t),
                other => other.to_string(),
            })
            .collect();
        s.push_str(&cells.join(","));
        s.push('\n');
    }
    s
}

/// A name's rows summed over its call paths and the ranks.
#[derive(Default)]
struct Named {
    kind: String,
    count: u64,
    total_ns: u64,
    self_ns: u64,
    paths: usize,
}

/// `--flat`: kernels and regions by name over all their call paths and kinds,
/// summed over the ranks, with the mean per rank.
fn by_name(
    v: &Value,
    all: &[Row],
    path: &Path,
    args: &ReportArgs,
    filter: Option<&Regex>,
    ranks: usize,
) -> String {
    let mut named: BTreeMap<&str, Named> = BTreeMap::new();
    for r in all {
        if filter.is_some_and(|re| !re.is_match(r.name())) {
            continue;
        }
        let e = named.entry(r.name()).or_default();
        if e.paths == 0 {
            e.kind = r.kind().to_string();
        } else if e.kind != r.kind() {
            e.kind = "mixed".into();
        }
        e.paths += 1;
        e.count += r.node["count"]["sum"].as_u64().unwrap_or(0);
        e.self_ns += r.node["self_ns"]["sum"].as_u64().unwrap_or(0);
        // A name inside itself (recursion) counts its outermost time once.
        if r.in_itself {
            continue;
        }
        e.total_ns += r.node["total_ns"]["sum"].as_u64().unwrap_or(0);
    }
    let value = |n: &Named| match sort_of(args) {
        SortKey::SelfTime => n.self_ns,
        SortKey::Total => n.total_ns,
        SortKey::Count => n.count,
    };
    let mut rows: Vec<(&str, Named)> = named.into_iter().collect();
    rows.sort_by(|a, b| value(&b.1).cmp(&value(&a.1)).then(a.0.cmp(b.0)));
    let found = rows.len();
    rows.truncate(args.top.unwrap_or(20));
    let per_rank = |ns: u64| ns as f64 / ranks.max(1) as f64;
    if args.csv || args.json {
        let objects: Vec<Value> = rows
            .iter()
            .map(|(name, n)| {
                json!({"name": name, "kind": n.kind, "call_paths": n.paths, "count_sum": n.count,
                       "total_sum_ns": n.total_ns, "self_sum_ns": n.self_ns,
                       "total_mean_per_rank_ns": per_rank(n.total_ns),
                       "self_mean_per_rank_ns": per_rank(n.self_ns)})
            })
            .collect();
        if args.json {
            return serde_json::to_string_pretty(&objects).unwrap_or_default() + "\n";
        }
        return to_csv(
            &[
                "name",
                "kind",
                "call_paths",
                "count_sum",
                "total_sum_ns",
                "self_sum_ns",
                "total_mean_per_rank_ns",
                "self_mean_per_rank_ns",
            ],
            &objects,
        );
    }
    let mut s = header(v, path, ranks);
    let _ = writeln!(
        s,
        "\nKernels and regions by name over their call paths (top {} of {found}): summed over \
         the {}, and per rank (the mean); min/max over ranks are per call path (without --flat)",
        rows.len(),
        ranks_text(ranks)
    );
    let mut t = Table::new(&[
        ("total", Align::Right),
        ("total/rank", Align::Right),
        ("self/rank", Align::Right),
        ("count", Align::Right),
        ("per call", Align::Right),
        ("paths", Align::Right),
        ("kind", Align::Left),
        ("name", Align::Left),
    ]);
    for (name, n) in &rows {
        t.row(vec![
            crate::fmt::dur(n.total_ns),
            duration(per_rank(n.total_ns)),
            duration(per_rank(n.self_ns)),
            n.count.to_string(),
            duration(n.total_ns as f64 / n.count.max(1) as f64),
            n.paths.to_string(),
            n.kind.clone(),
            cell(name, args),
        ]);
    }
    if t.len() == 0 {
        s.push_str("  (no nodes)\n");
    } else {
        s.push_str(&t.render());
    }
    s
}

/// `--threads` on a job: the ranks, with their threads and run.
fn ranks_table(s: &mut String, v: &Value, args: &ReportArgs) {
    let _ = writeln!(
        s,
        "\nRanks (a job's profile keeps each rank's thread count, not its threads' times: \
         `kprof report <rank's directory> --threads` shows them; KPROF_PER_RANK=1 keeps the \
         ranks' directories)"
    );
    let mut t = Table::new(&[
        ("rank", Align::Right),
        ("threads", Align::Right),
        ("run", Align::Right),
        ("dropped", Align::Right),
        ("pid", Align::Right),
        ("host", Align::Left),
        ("directory", Align::Left),
    ]);
    let list = v["ranks"].as_array().map(Vec::as_slice).unwrap_or_default();
    let top = args.top.unwrap_or(list.len());
    for r in list.iter().take(top) {
        t.row(vec![
            r["rank"].to_string(),
            r["threads"].to_string(),
            duration(r["duration_ns"].as_f64().unwrap_or(0.0)),
            r["dropped_records"].to_string(),
            r["pid"].to_string(),
            cell(r["host"].as_str().unwrap_or_default(), args),
            cell(r["dir"].as_str().unwrap_or("-"), args),
        ]);
    }
    s.push_str(&t.render());
    if list.len() > top {
        let _ = writeln!(s, "  ... {} more (--top)", list.len() - top);
    }
}

/// The job's MPI calls: summed over ranks, and each rank's values where the
/// profile keeps them (`kprof merge --by-rank`).
#[derive(Debug, Default, PartialEq)]
struct MpiJob {
    /// Calls of every rank.
    calls: u64,
    /// Time in MPI of every rank (outermost calls only), ns.
    ns: u64,
    /// Per rank (by position) the time in MPI, when `by_rank` arrays exist.
    by_rank: Option<Vec<u64>>,
    /// Per MPI function: (calls, time in outermost calls).
    functions: BTreeMap<String, (u64, u64)>,
}

impl MpiJob {
    fn of(rows: &[Row], ranks: usize) -> MpiJob {
        let mut m = MpiJob::default();
        let mut per: Vec<u64> = vec![0; ranks];
        let mut dense = true;
        for r in rows.iter().filter(|r| r.kind() == "mpi") {
            let n = r.node;
            let calls = n["count"]["sum"].as_u64().unwrap_or(0);
            m.calls += calls;
            let f = m.functions.entry(r.name().to_string()).or_default();
            f.0 += calls;
            if r.in_mpi {
                continue;
            }
            let total = n["total_ns"]["sum"].as_u64().unwrap_or(0);
            m.ns += total;
            f.1 += total;
            match n["by_rank"]["total_ns"].as_array() {
                Some(a) if a.len() == ranks => {
                    for (p, x) in per.iter_mut().zip(a) {
                        *p += x.as_u64().unwrap_or(0);
                    }
                }
                _ => dense = false,
            }
        }
        m.by_rank = (dense && ranks > 0).then_some(per);
        m
    }
}

/// The MPI line and the MPI functions (nothing without MPI calls).
fn mpi_block(s: &mut String, v: &Value, all: &[Row], ranks: usize, args: &ReportArgs) {
    let m = MpiJob::of(all, ranks);
    if m.calls == 0 {
        return;
    }
    let n = ranks.max(1) as f64;
    let mean = m.ns as f64 / n;
    let run = g(v, "duration_ns", "mean");
    let _ = writeln!(
        s,
        "\nMPI: {} calls over {}, {} in MPI per rank (mean) = {:.1}% of the mean run ({})",
        m.calls,
        ranks_text(ranks),
        duration(mean),
        100.0 * mean / run.max(1.0),
        duration(run)
    );
    let labels: Vec<String> = v["ranks"]
        .as_array()
        .map(|a| a.iter().map(|r| r["rank"].to_string()).collect())
        .unwrap_or_default();
    match &m.by_rank {
        Some(per) => {
            let (lo, hi) = (
                per.iter().enumerate().min_by_key(|x| x.1),
                per.iter().enumerate().max_by_key(|x| x.1),
            );
            if let (Some((il, l)), Some((ih, h))) = (lo, hi) {
                let label = |i: usize| labels.get(i).cloned().unwrap_or_else(|| i.to_string());
                let _ = writeln!(
                    s,
                    "  per rank: min {} (rank {}), max {} (rank {}), imbalance {:.2}",
                    crate::fmt::dur(*l),
                    label(il),
                    crate::fmt::dur(*h),
                    label(ih),
                    if mean > 0.0 { *h as f64 / mean } else { 1.0 }
                );
            }
        }
        None => {
            let _ = writeln!(
                s,
                "  (each call path's spread over ranks is in the table above; `kprof merge \
                 --by-rank` keeps each rank's values, and each rank's time in MPI)"
            );
        }
    }
    let mut functions: Vec<(&String, &(u64, u64))> = m.functions.iter().collect();
    functions.sort_by(|a, b| (b.1 .1, b.1 .0).cmp(&(a.1 .1, a.1 .0)).then(a.0.cmp(b.0)));
    let top = args.top.unwrap_or(20);
    let mut t = Table::new(&[
        ("time/rank", Align::Right),
        ("% MPI", Align::Right),
        ("calls", Align::Right),
        ("per call", Align::Right),
        ("function", Align::Left),
    ]);
    for (name, (calls, ns)) in functions.iter().take(top) {
        t.row(vec![
            duration(*ns as f64 / n),
            pct(*ns as f64, m.ns as f64),
            calls.to_string(),
            duration(*ns as f64 / (*calls).max(1) as f64),
            cell(name, args),
        ]);
    }
    let _ = writeln!(
        s,
        "\nMPI functions over all their call paths (time per rank: the mean; calls summed over \
         ranks)"
    );
    s.push_str(&t.render());
}

/// One (channel, direction) of the job's message matrix, as the report shows it.
struct Channel<'v> {
    name: &'v str,
    direction: &'v str,
    count: u64,
    bytes: u64,
    /// (rank, peer, count, bytes).
    entries: Vec<(u64, u64, u64, u64)>,
}

impl Channel<'_> {
    fn of(m: &Value) -> Channel<'_> {
        let entries = m["entries"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        let u = |k: &str| e[k].as_u64().unwrap_or(0);
                        (u("rank"), u("peer"), u("count"), u("bytes"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Channel {
            name: m["channel"].as_str().unwrap_or_default(),
            direction: m["direction"].as_str().unwrap_or_default(),
            count: m["count"].as_u64().unwrap_or(0),
            bytes: m["bytes"].as_u64().unwrap_or(0),
            entries,
        }
    }

    /// Bytes per rank label (ranks without a row: none).
    fn per_rank(&self) -> BTreeMap<u64, u64> {
        let mut per: BTreeMap<u64, u64> = BTreeMap::new();
        for &(rank, _, _, b) in &self.entries {
            *per.entry(rank).or_insert(0) += b;
        }
        per
    }

    /// The entries, the most bytes first (then the most messages, then rank
    /// and peer).
    fn largest(&self) -> Vec<(u64, u64, u64, u64)> {
        let mut e = self.entries.clone();
        e.sort_by(|a, b| (b.3, b.2, a.0, a.1).cmp(&(a.3, a.2, b.0, b.1)));
        e
    }
}

/// Pairs listed per channel without `--top`.
const PAIRS_SHOWN: usize = 10;

/// The job's message matrix: per channel and direction the totals, the bytes
/// per rank over ranks, and the largest pairs.
fn messages_block(s: &mut String, v: &Value, ranks: usize, args: &ReportArgs) {
    let Some(list) = v["messages"].as_array().filter(|l| !l.is_empty()) else {
        return;
    };
    let _ = writeln!(
        s,
        "\nMessages (the job's matrix, the largest pairs; all of it is in profile.json's \
         \"messages\"):"
    );
    let shown = args.top.unwrap_or(PAIRS_SHOWN);
    for m in list.iter().map(Channel::of) {
        let per = m.per_rank();
        let n = ranks.max(per.len()).max(1);
        let mean = m.bytes as f64 / n as f64;
        let (max_rank, max) = per
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .map_or((0, 0), |(r, b)| (*r, *b));
        let min = if per.len() < n {
            0
        } else {
            per.values().copied().min().unwrap_or(0)
        };
        let _ = writeln!(
            s,
            "  {} {}: {} msgs, {} from {} of {}; bytes per rank: min {}, mean {}, max {} \
             (rank {max_rank}), imbalance {:.2}",
            cell(m.name, args),
            m.direction,
            m.count,
            bytes(m.bytes),
            per.len(),
            ranks_text(n),
            bytes(min),
            bytes(mean.round() as u64),
            bytes(max),
            if mean > 0.0 { max as f64 / mean } else { 1.0 }
        );
        let arrow = if m.direction.starts_with("rec") {
            "<-"
        } else {
            "->"
        };
        let mut t = Table::new(&[
            ("rank", Align::Right),
            ("", Align::Left),
            ("peer", Align::Right),
            ("msgs", Align::Right),
            ("bytes", Align::Right),
        ]);
        let largest = m.largest();
        for &(rank, peer, count, b) in largest.iter().take(shown) {
            t.row(vec![
                rank.to_string(),
                arrow.into(),
                peer.to_string(),
                count.to_string(),
                bytes(b),
            ]);
        }
        for line in t.render().lines() {
            let _ = writeln!(s, "  {line}");
        }
        if largest.len() > shown {
            let _ = writeln!(s, "      ... {} more pairs (--top)", largest.len() - shown);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A merged tree: `main` holding two MPI calls, one holding another.
    fn job() -> Value {
        let stat = |sum: u64, per: &[u64]| {
            json!({"sum": sum, "min": per.iter().min(), "max": per.iter().max(),
                   "mean": sum as f64 / per.len() as f64})
        };
        json!({"ranks": [{"rank": 0}, {"rank": 1}], "duration_ns": stat(200, &[100, 100]),
               "tree": [{"name": "main", "kind": "region", "count": stat(2, &[1, 1]),
                         "total_ns": stat(200, &[100, 100]), "children": [
                   {"name": "MPI_Send", "kind": "mpi", "count": stat(6, &[3, 3]),
                    "total_ns": stat(40, &[10, 30]),
                    "by_rank": {"total_ns": [10, 30]}, "children": []},
                   {"name": "MPI_Wait", "kind": "mpi", "count": stat(2, &[1, 1]),
                    "total_ns": stat(20, &[15, 5]), "by_rank": {"total_ns": [15, 5]},
                    "children": [
                       {"name": "MPI_Test", "kind": "mpi", "count": stat(4, &[2, 2]),
                        "total_ns": stat(8, &[4, 4]), "children": []}]}]}]})
    }

    #[test]
    fn mpi_time_counts_outermost_calls_and_every_call() {
        let v = job();
        let m = MpiJob::of(&walk(&v["tree"]), 2);
        assert_eq!((m.calls, m.ns), (12, 60));
        assert_eq!(m.by_rank, Some(vec![25, 35]));
        assert_eq!(m.functions["MPI_Test"], (4, 0));
        assert_eq!(m.functions["MPI_Send"], (6, 40));
    }
}
