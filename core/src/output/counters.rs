//! The counters block of the summary and of `kprof report`: what the counted
//! kernels and regions counted (`KPROF_COUNTERS`), by (name, kind, device) as the
//! flat profile, and why an event asked for is not there.

use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::output::calltree::CallTree;
use crate::output::report::{HardwareCounters, Report, TreeNode};

/// One row: the counted nodes of one name, kind and device.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Device label, empty for none.
    pub device: String,
    /// Counted instances.
    pub instances: u64,
    /// Per event (in the order of the run's events): inclusive, exclusive.
    pub values: Vec<(u64, u64)>,
}

/// The block's order: exclusive count of the first event, largest first, then
/// name and kind (rows alike but for the device keep the order first met).
pub fn order(a: &Row, b: &Row) -> std::cmp::Ordering {
    let first = |r: &Row| r.values.first().map_or(0, |v| v.1);
    first(b)
        .cmp(&first(a))
        .then_with(|| (&a.name, &a.kind).cmp(&(&b.name, &b.kind)))
}

/// A count in at most 7 characters: exact below 100 000, else with a unit.
pub fn count(v: u64) -> String {
    let f = v as f64;
    match v {
        0..=99_999 => v.to_string(),
        100_000..=999_999_999 => format!("{:.2} M", f / 1e6),
        1_000_000_000..=999_999_999_999 => format!("{:.2} G", f / 1e9),
        _ => format!("{:.2} T", f / 1e12),
    }
}

/// The rows of every counted node, aggregated by (name, kind, device); a
/// recursive node's inclusive values are inside its outer one's already.
fn rows(tree: &dyn CallTree, events: &[String]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    let mut index: FxHashMap<(String, String, String), usize> = FxHashMap::default();
    // (depth, row) of the counted nodes enclosing the current one.
    let mut open: Vec<(usize, usize)> = Vec::new();
    tree.walk_without_samples(&mut |depth, n: &TreeNode| {
        while open.last().is_some_and(|&(d, _)| d >= depth) {
            open.pop();
        }
        let Some(c) = &n.counters else { return };
        let key = (n.name.to_string(), n.kind.to_string(), n.device_label());
        let at = *index.entry(key.clone()).or_insert_with(|| {
            rows.push(Row {
                name: key.0,
                kind: key.1,
                device: key.2,
                instances: 0,
                values: vec![(0, 0); events.len()],
            });
            rows.len() - 1
        });
        let recursive = open.iter().any(|&(_, r)| r == at);
        let row = &mut rows[at];
        row.instances += c.instances;
        for (e, v) in events.iter().zip(row.values.iter_mut()) {
            if let Some(t) = c.events.get(e) {
                if !recursive {
                    v.0 += t.inclusive;
                }
                v.1 += t.exclusive;
            }
        }
        open.push((depth, at));
    });
    rows
}

/// Appends the counters block to `s` (nothing when no counters were asked for).
pub fn block(s: &mut String, r: &Report, tree: &dyn CallTree, top: usize) {
    let Some(hc) = &r.hardware_counters else {
        return;
    };
    let mut shown = Vec::new();
    if !hc.events.is_empty() {
        shown = rows(tree, &hc.events);
        shown.sort_by(order);
        shown.truncate(top);
    }
    write_block(s, hc, &shown, top);
}

/// Appends the counters block of `hc` to `s`, its rows `shown` (the first `top`
/// in [`order`]).
pub fn write_block(s: &mut String, hc: &HardwareCounters, shown: &[Row], top: usize) {
    if hc.events.is_empty() {
        let _ = writeln!(s, "\nCounters: none counted");
    } else {
        let _ = writeln!(
            s,
            "\nCounters ({}{}; on {}): exclusive / inclusive per counted kernel or region, top {} by exclusive {}:",
            hc.source,
            if hc.multiplexed {
                ", multiplexed: scaled estimates"
            } else {
                ""
            },
            hc.kinds,
            top,
            hc.events[0]
        );
        let ipc = hc
            .events
            .iter()
            .position(|e| e == "PAPI_TOT_INS")
            .zip(hc.events.iter().position(|e| e == "PAPI_TOT_CYC"));
        let mut head = String::new();
        for e in &hc.events {
            let _ = write!(head, " {:>17}", short_event(e));
        }
        if ipc.is_some() {
            head.push_str("    IPC");
        }
        let _ = writeln!(s, "{head}  {:>9}  {:<15} name", "counted", "kind");
        for row in shown.iter().take(top) {
            let mut line = String::new();
            for &(incl, excl) in &row.values {
                let _ = write!(line, " {:>8}/{:<8}", count(excl), count(incl));
            }
            if let Some((i, c)) = ipc {
                let (ins, cyc) = (row.values[i].0, row.values[c].0);
                if cyc > 0 {
                    let _ = write!(line, " {:>6.2}", ins as f64 / cyc as f64);
                } else {
                    line.push_str("      -");
                }
            }
            let name = crate::output::readable::table_name(&row.name, Some(48));
            let device = if row.device.is_empty() {
                String::new()
            } else {
                format!(" [{}]", row.device)
            };
            let _ = writeln!(
                s,
                "{line}  {:>9}  {:<15} {name}{device}",
                row.instances, row.kind
            );
        }
    }
    for p in &hc.problems {
        let _ = writeln!(s, "  {p}");
    }
}

/// An event name short enough for a column header (`sde:::lib::items` keeps
/// its last part).
fn short_event(e: &str) -> String {
    let tail = e.rsplit("::").next().unwrap_or(e);
    let t: String = tail.chars().take(17).collect();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_short() {
        assert_eq!(count(4096), "4096");
        assert_eq!(count(99_999), "99999");
        assert_eq!(count(1_234_567), "1.23 M");
        assert_eq!(count(7_000_000_000), "7.00 G");
        assert_eq!(short_event("sde:::kptest::items"), "items");
        assert_eq!(short_event("PAPI_TOT_INS"), "PAPI_TOT_INS");
    }
}
