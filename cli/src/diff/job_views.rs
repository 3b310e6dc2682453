//! The blocks a diff of jobs prints after the call paths that are not call
//! paths' times: each call path's imbalance over the ranks, told from the
//! run-to-run noise as times are, and the job's messages per channel.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::args::DiffArgs;
use super::cells::{num, p_text, rel_text};
use super::jobs::{Imbalance, JobVals};
use super::paths::{PathId, Paths};
use super::stats::{median, min_max, Mode, RankTest};
use crate::fmt::{bytes, signed_dur, Align, Table};

/// A call path's imbalance on both sides, compared.
struct Row {
    path: PathId,
    /// Median imbalance of each side's runs.
    a: f64,
    b: f64,
    /// Median time lost to it (slowest rank - mean) of each side's runs, ns.
    lost_a: f64,
    lost_b: f64,
    /// The rank test's p-value (two runs or more on each side).
    p: Option<f64>,
    status: &'static str,
}

/// Each side's values of `path`, over the runs holding it.
fn of_side(side: &[&JobVals], path: PathId) -> Vec<Imbalance> {
    side.iter()
        .filter_map(|j| j.imbalance.get(&path).copied())
        .collect()
}

/// Compares one call path's imbalance: a change counts when the imbalance
/// moved by more than `--threshold` percent, the time lost to it by more than
/// `--min-time`, and beyond the run-to-run spread (as call paths' times).
fn judge(path: PathId, a: &[Imbalance], b: &[Imbalance], mode: Mode, args: &DiffArgs) -> Row {
    let ratios = |v: &[Imbalance]| v.iter().map(|i| i.ratio).collect::<Vec<f64>>();
    let losts = |v: &[Imbalance]| v.iter().map(|i| i.lost).collect::<Vec<f64>>();
    let (ra, rb) = (ratios(a), ratios(b));
    let (ma, mb) = (median(&ra).unwrap_or(1.0), median(&rb).unwrap_or(1.0));
    let (lost_a, lost_b) = (
        median(&losts(a)).unwrap_or(0.0),
        median(&losts(b)).unwrap_or(0.0),
    );
    let p = (ra.len() >= 2 && rb.len() >= 2).then(|| RankTest::default().p_value(&ra, &rb));
    let up = mb > ma;
    let rel = if ma > 0.0 {
        100.0 * (mb - ma) / ma
    } else {
        0.0
    };
    let ((lo_a, hi_a), (lo_b, hi_b)) = (min_max(&ra), min_max(&rb));
    let apart = if up { hi_a < lo_b } else { hi_b < lo_a };
    let beyond_spread = match mode {
        Mode::Rank => p.is_some_and(|p| p < args.alpha),
        Mode::Apart => apart,
    };
    let status = if rel.abs() <= args.threshold || (lost_b - lost_a).abs() <= args.min_time {
        "noise"
    } else if !beyond_spread {
        "n/s"
    } else if up {
        "higher"
    } else {
        "lower"
    };
    Row {
        path,
        a: ma,
        b: mb,
        lost_a,
        lost_b,
        p,
        status,
    }
}

/// The imbalance block: per call path that `large` keeps and both sides hold,
/// A's and B's imbalance, largest change of the time lost to it first.
pub fn imbalance_block(
    s: &mut String,
    (a, b): (&[&JobVals], &[&JobVals]),
    large: &dyn Fn(PathId) -> bool,
    args: &DiffArgs,
    (paths, rank): (&Paths, &[u32]),
) {
    let keys: BTreeSet<(u32, PathId)> = a
        .iter()
        .chain(b)
        .flat_map(|j| j.imbalance.keys())
        .map(|&k| (rank[k as usize], k))
        .collect();
    let mode = Mode::of(a.len(), b.len(), args.alpha);
    let mut rows: Vec<Row> = keys
        .into_iter()
        .map(|(_, k)| k)
        .filter(|&k| large(k))
        .filter_map(|k| {
            let (va, vb) = (of_side(a, k), of_side(b, k));
            (!va.is_empty() && !vb.is_empty()).then(|| judge(k, &va, &vb, mode, args))
        })
        .collect();
    rows.sort_by(|x, y| {
        (y.lost_b - y.lost_a)
            .abs()
            .total_cmp(&(x.lost_b - x.lost_a).abs())
            .then_with(|| rank[x.path as usize].cmp(&rank[y.path as usize]))
    });
    let noise = rows.iter().filter(|r| r.status == "noise").count();
    let ns = rows.iter().filter(|r| r.status == "n/s").count();
    let _ = writeln!(
        s,
        "\nImbalance over the ranks (per call path over {}% of the run: its slowest rank's \
         time / the mean of the ranks; lost: the slowest rank's time - the mean; {} beyond \
         the noise, {ns} n/s, {noise} noise)",
        args.min_share,
        rows.len() - noise - ns
    );
    let with_p = a.len() > 1 && b.len() > 1;
    let mut head = vec![
        ("change", Align::Right),
        ("%", Align::Right),
        ("A", Align::Right),
        ("B", Align::Right),
        ("lost A", Align::Right),
        ("lost B", Align::Right),
    ];
    if with_p {
        head.push(("p", Align::Right));
    }
    head.extend([("status", Align::Left), ("path", Align::Left)]);
    let mut t = Table::new(&head);
    let shown = rows
        .iter()
        .filter(|r| args.all || r.status != "noise")
        .take(args.top);
    for r in shown {
        let mut row = vec![
            signed_dur((r.lost_b - r.lost_a).round() as i128),
            rel_text((r.a > 0.0).then(|| 100.0 * (r.b - r.a) / r.a)),
            format!("{:.2}x", r.a),
            format!("{:.2}x", r.b),
            crate::fmt::duration(r.lost_a),
            crate::fmt::duration(r.lost_b),
        ];
        if with_p {
            row.push(r.p.map_or("-".into(), p_text));
        }
        row.extend([r.status.to_string(), paths.shown(r.path)]);
        t.row(row);
    }
    if t.len() == 0 {
        s.push_str("  (no change beyond the noise)\n");
    } else {
        s.push_str(&t.render());
    }
}

/// The messages block: per channel and direction, the messages and bytes of
/// every rank on each side (medians of the runs). Messages are counted
/// exactly, so any change is one. Nothing when neither side sent any.
pub fn messages_block(s: &mut String, (a, b): (&[&JobVals], &[&JobVals])) {
    let keys: BTreeSet<&(String, String)> =
        a.iter().chain(b).flat_map(|j| j.messages.keys()).collect();
    if keys.is_empty() {
        return;
    }
    let of_runs = if a.len() > 1 || b.len() > 1 {
        ", medians of the runs"
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "\nMessages of the job (every rank's, per channel and direction{of_runs}; counted \
         exactly: any change is one)"
    );
    let mut t = Table::new(&[
        ("msgs A", Align::Right),
        ("msgs B", Align::Right),
        ("bytes A", Align::Right),
        ("bytes B", Align::Right),
        ("%", Align::Right),
        ("status", Align::Left),
        ("channel", Align::Left),
        ("direction", Align::Left),
    ]);
    for k in keys {
        let side = |jobs: &[&JobVals]| {
            let held = jobs.iter().any(|j| j.messages.contains_key(k));
            let values = |f: fn(&(f64, f64)) -> f64| {
                let v: Vec<f64> = jobs
                    .iter()
                    .map(|j| j.messages.get(k).map_or(0.0, f))
                    .collect();
                median(&v).unwrap_or(0.0)
            };
            (held, values(|m| m.0), values(|m| m.1))
        };
        let ((in_a, ca, ba), (in_b, cb, bb)) = (side(a), side(b));
        let status = match (in_a, in_b) {
            (false, _) => "new",
            (_, false) => "gone",
            _ if ba == bb && ca == cb => "same",
            _ if bb > ba || (bb == ba && cb > ca) => "more",
            _ => "less",
        };
        let shown = |held: bool, text: String| if held { text } else { "-".into() };
        t.row(vec![
            shown(in_a, num(ca)),
            shown(in_b, num(cb)),
            shown(in_a, bytes(ba.round() as u64)),
            shown(in_b, bytes(bb.round() as u64)),
            rel_text((in_a && in_b && ba > 0.0).then(|| 100.0 * (bb - ba) / ba)),
            status.into(),
            k.0.clone(),
            k.1.clone(),
        ]);
    }
    s.push_str(&t.render());
}
