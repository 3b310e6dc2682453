//! `kprof diff A B`: node-by-node changes between two profiles.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use kprof_core::output::report::TreeNode;

use crate::fmt::{dur, signed_dur, Align, Table};
use crate::load::load_report;
use crate::{show, Outcome};

/// Arguments of `kprof diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The baseline (a kprof output directory or profile.json).
    pub a: PathBuf,
    /// The run compared with it.
    pub b: PathBuf,
    /// Changes below this percentage of a node's time in A are noise.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    pub threshold: f64,
    /// Exit with status 1 when a node's time grew by more than PCT percent (and by
    /// more than the noise threshold), for regression checks in CI.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,
    /// Nodes taking less than PCT percent of the run in both profiles are noise.
    #[arg(long, value_name = "PCT", default_value_t = 0.5)]
    pub min_share: f64,
    /// Compare inclusive (total) or exclusive (self) time.
    #[arg(long, value_enum, default_value = "total")]
    pub metric: Metric,
    /// Rows to show.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub top: usize,
    /// Show the nodes below the threshold too.
    #[arg(long)]
    pub all: bool,
}

/// Which time `diff` compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Metric {
    /// Inclusive time.
    Total,
    /// Exclusive time.
    #[value(name = "self")]
    SelfTime,
}

/// A node's values in one profile.
#[derive(Clone, Copy, Default)]
struct Vals {
    count: u64,
    time: u64,
}

impl Vals {
    /// Time per instance.
    fn mean(self) -> Option<f64> {
        (self.count > 0).then(|| self.time as f64 / self.count as f64)
    }
}

fn mean_text(v: Option<Vals>) -> String {
    v.and_then(Vals::mean)
        .map_or("-".into(), crate::fmt::duration)
}

/// Every node by call path (each step: name, kind, device).
fn index(tree: &[TreeNode], metric: Metric) -> BTreeMap<Vec<(String, String, String)>, Vals> {
    fn walk(
        nodes: &[TreeNode],
        metric: Metric,
        path: &mut Vec<(String, String, String)>,
        out: &mut BTreeMap<Vec<(String, String, String)>, Vals>,
    ) {
        for n in nodes {
            path.push((
                n.name.to_string(),
                n.kind.to_string(),
                n.device.clone().unwrap_or_default(),
            ));
            let v = out.entry(path.clone()).or_default();
            v.count += n.count;
            v.time += match metric {
                Metric::Total => n.total_ns,
                Metric::SelfTime => n.self_ns,
            };
            walk(&n.children, metric, path, out);
            path.pop();
        }
    }
    let mut out = BTreeMap::new();
    walk(tree, metric, &mut Vec::new(), &mut out);
    out
}

/// A compared node.
struct Change {
    path: String,
    a: Option<Vals>,
    b: Option<Vals>,
    delta: i128,
    /// Percent of A's time; None when the node is new or was 0.
    rel: Option<f64>,
    noise: bool,
}

/// Entry point.
pub fn main(args: DiffArgs) -> Outcome {
    let (pa, ra) = load_report(&args.a)?;
    let (pb, rb) = load_report(&args.b)?;
    let ia = index(&ra.tree, args.metric);
    let ib = index(&rb.tree, args.metric);
    let run_a = ra.clock.duration_ns as f64;
    let run_b = rb.clock.duration_ns as f64;
    let mut keys: Vec<&Vec<(String, String, String)>> = ia.keys().chain(ib.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut changes = Vec::new();
    for k in keys {
        let a = ia.get(k).copied();
        let b = ib.get(k).copied();
        let ta = a.map_or(0, |v| v.time);
        let tb = b.map_or(0, |v| v.time);
        let delta = i128::from(tb) - i128::from(ta);
        let rel = (ta > 0).then(|| 100.0 * delta as f64 / ta as f64);
        let small_share = 100.0 * ta as f64 <= args.min_share * run_a
            && 100.0 * tb as f64 <= args.min_share * run_b;
        let same_count = a.map(|v| v.count) == b.map(|v| v.count);
        let below = match rel {
            Some(r) => r.abs() < args.threshold,
            None => tb == 0,
        };
        let noise = same_count && (below || small_share);
        let path = k
            .iter()
            .map(|(name, _, dev)| {
                if dev.is_empty() {
                    name.clone()
                } else {
                    format!("{name} [{dev}]")
                }
            })
            .collect::<Vec<_>>()
            .join(" / ");
        changes.push(Change {
            path,
            a,
            b,
            delta,
            rel,
            noise,
        });
    }
    changes.sort_by(|x, y| {
        y.delta
            .unsigned_abs()
            .cmp(&x.delta.unsigned_abs())
            .then_with(|| x.path.cmp(&y.path))
    });

    let mut s = String::new();
    let _ = writeln!(s, "kprof diff: A = {}", show(&pa));
    let _ = writeln!(s, "            B = {}", show(&pb));
    if ra.program.executable != rb.program.executable {
        let warning = format!(
            "warning: A is a run of {}, B of {}: different programs (their nodes show as \
             new and gone)",
            ra.program.executable, rb.program.executable
        );
        eprintln!("kprof diff: {warning}");
        let _ = writeln!(s, "{warning}");
    }
    let run_delta = i128::from(rb.clock.duration_ns) - i128::from(ra.clock.duration_ns);
    let _ = writeln!(
        s,
        "run: {} -> {} ({}, {})",
        dur(ra.clock.duration_ns),
        dur(rb.clock.duration_ns),
        signed_dur(run_delta),
        rel_text((ra.clock.duration_ns > 0).then(|| 100.0 * run_delta as f64 / run_a))
    );
    let metric = match args.metric {
        Metric::Total => "total",
        Metric::SelfTime => "self",
    };
    let significant = changes.iter().filter(|c| !c.noise).count();
    let noise = changes.len() - significant;
    let _ = writeln!(
        s,
        "\nChanges of {metric} time by size ({significant} above the noise threshold of {}% \
         or with a different count; {noise} below)",
        args.threshold
    );
    let mut t = Table::new(&[
        ("change", Align::Right),
        ("%", Align::Right),
        ("A", Align::Right),
        ("B", Align::Right),
        ("count A -> B", Align::Right),
        ("mean A -> B", Align::Right),
        ("mean %", Align::Right),
        ("", Align::Left),
        ("path", Align::Left),
    ]);
    let mut shown = 0;
    for c in &changes {
        if (c.noise && !args.all) || shown >= args.top {
            continue;
        }
        shown += 1;
        let count = |v: Option<Vals>| v.map_or("-".to_string(), |v| v.count.to_string());
        let status = match (c.a, c.b) {
            (None, Some(_)) => "new",
            (Some(_), None) => "gone",
            _ if c.noise => "noise",
            _ => "",
        };
        t.row(vec![
            signed_dur(c.delta),
            rel_text(c.rel),
            c.a.map_or("-".into(), |v| dur(v.time)),
            c.b.map_or("-".into(), |v| dur(v.time)),
            format!("{} -> {}", count(c.a), count(c.b)),
            format!("{} -> {}", mean_text(c.a), mean_text(c.b)),
            match (c.a.and_then(Vals::mean), c.b.and_then(Vals::mean)) {
                (Some(a), Some(b)) if a > 0.0 => rel_text(Some(100.0 * (b - a) / a)),
                _ => "-".into(),
            },
            status.into(),
            c.path.clone(),
        ]);
    }
    if t.len() == 0 {
        s.push_str("  (no change above the threshold)\n");
    } else {
        s.push_str(&t.render());
    }
    counter_changes(&mut s, &ra.tree, &rb.tree, args.metric, args.top);
    let mut status = 0u8;
    if let Some(limit) = args.fail_above {
        let worst: Vec<&Change> = changes
            .iter()
            .filter(|c| !c.noise && c.delta > 0 && c.rel.is_some_and(|r| r > limit))
            .collect();
        if worst.is_empty() {
            let _ = writeln!(s, "\nOK: no node grew by more than {limit}%");
        } else {
            let _ = writeln!(
                s,
                "\nREGRESSION: {} node{} grew by more than {limit}% (largest: {} {})",
                worst.len(),
                if worst.len() == 1 { "" } else { "s" },
                worst[0].path,
                rel_text(worst[0].rel)
            );
            status = 1;
        }
    }
    print!("{s}");
    Ok(status)
}

/// Every counted node's value of each event by call path (inclusive or exclusive
/// by `metric`).
type CounterIndex = BTreeMap<(String, String), u64>;

fn counter_index(tree: &[TreeNode], metric: Metric) -> CounterIndex {
    fn walk(nodes: &[TreeNode], metric: Metric, path: &mut Vec<String>, out: &mut CounterIndex) {
        for n in nodes {
            path.push(match &n.device {
                Some(d) => format!("{} [{d}]", n.name),
                None => n.name.to_string(),
            });
            for (e, t) in n.counters.iter().flat_map(|c| &c.events) {
                let v = match metric {
                    Metric::Total => t.inclusive,
                    Metric::SelfTime => t.exclusive,
                };
                *out.entry((e.clone(), path.join(" / "))).or_default() += v;
            }
            walk(&n.children, metric, path, out);
            path.pop();
        }
    }
    let mut out = BTreeMap::new();
    walk(tree, metric, &mut Vec::new(), &mut out);
    out
}

/// The counters block: per event and call path, A's and B's counts and the
/// change, largest changes first (nothing when neither run counted).
fn counter_changes(s: &mut String, a: &[TreeNode], b: &[TreeNode], metric: Metric, top: usize) {
    let (ia, ib) = (counter_index(a, metric), counter_index(b, metric));
    if ia.is_empty() && ib.is_empty() {
        return;
    }
    let mut keys: Vec<&(String, String)> = ia.keys().chain(ib.keys()).collect();
    keys.sort();
    keys.dedup();
    // (change, (event, path), A, B)
    type Row<'a> = (i128, &'a (String, String), Option<u64>, Option<u64>);
    let mut rows: Vec<Row<'_>> = keys
        .into_iter()
        .map(|k| {
            let (va, vb) = (ia.get(k).copied(), ib.get(k).copied());
            let d = i128::from(vb.unwrap_or(0)) - i128::from(va.unwrap_or(0));
            (d, k, va, vb)
        })
        .filter(|r| r.0 != 0 || r.2.is_none() || r.3.is_none())
        .collect();
    rows.sort_by(|x, y| {
        y.0.unsigned_abs()
            .cmp(&x.0.unsigned_abs())
            .then(x.1.cmp(y.1))
    });
    let which = match metric {
        Metric::Total => "inclusive",
        Metric::SelfTime => "exclusive",
    };
    let _ = writeln!(s, "\nCounter changes ({which}; {} changed):", rows.len());
    let mut t = Table::new(&[
        ("change", Align::Right),
        ("%", Align::Right),
        ("A", Align::Right),
        ("B", Align::Right),
        ("event", Align::Left),
        ("path", Align::Left),
    ]);
    for (d, (event, path), va, vb) in rows.iter().take(top) {
        let rel = va.filter(|&v| v > 0).map(|v| 100.0 * *d as f64 / v as f64);
        t.row(vec![
            format!("{}{}", if *d < 0 { "-" } else { "+" }, d.unsigned_abs()),
            rel_text(rel),
            va.map_or("-".into(), |v| v.to_string()),
            vb.map_or("-".into(), |v| v.to_string()),
            event.clone(),
            path.clone(),
        ]);
    }
    if t.len() == 0 {
        s.push_str("  (no counter changed)\n");
    } else {
        s.push_str(&t.render());
    }
}

fn rel_text(rel: Option<f64>) -> String {
    match rel {
        Some(r) => format!("{r:+.1}%"),
        None => "-".into(),
    }
}
