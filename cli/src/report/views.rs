//! `kprof report --flat` (kernels and regions by name over every call path and
//! kind, as kokkos-tools' kernel-timer prints them) and the per-thread time table
//! of `kprof report --threads`.

use std::fmt::Write as _;

use kprof_core::output::flat::Totals;
use kprof_core::output::report::Report;

use super::args::{sort_name, sort_of, sort_value, ReportArgs};
use super::cells::{cell, header, thread_time};
use super::shown::{FlatKeys, TopK};
use crate::fmt::{bar, csv_field, dur, pct, Align, Table};

/// One name over all its call paths, kinds and devices.
struct ByName<'a> {
    name: String,
    /// Kinds, in the order first met (`parallel_for`, `region`).
    kinds: Vec<&'a str>,
    /// Its figures, summed over its rows.
    t: Totals,
}

/// The flat table by name: total time, calls, time per call, shares, kinds.
pub fn flat(
    r: &Report,
    mut keys: FlatKeys,
    path: &std::path::Path,
    args: &ReportArgs,
) -> std::io::Result<String> {
    let key = sort_of(args);
    let top = args.top.unwrap_or(20);
    let order = |a: &ByName, b: &ByName| {
        sort_value(key, b.t.total_ns, b.t.self_ns, b.t.count)
            .cmp(&sort_value(key, a.t.total_ns, a.t.self_ns, a.t.count))
            .then_with(|| a.name.cmp(&b.name))
    };
    // The (name, kind, device) rows, which count recursion once, come by key,
    // those of a name together (the filter was applied as they were added
    // up): folded by name as they come, only the top names kept.
    let mut best = TopK::new(Some(top));
    // The name being folded, and its rows' kinds with when each row was first met.
    let mut open: Open = None;
    type Open<'a> = Option<(ByName<'a>, Vec<(u64, &'a str)>)>;
    fn close<'a>(
        open: &mut Open<'a>,
        best: &mut TopK<ByName<'a>>,
        order: &dyn Fn(&ByName, &ByName) -> std::cmp::Ordering,
    ) {
        if let Some((mut b, mut kinds)) = open.take() {
            kinds.sort_by_key(|&(first, _)| first);
            for (_, k) in kinds {
                if !b.kinds.contains(&k) {
                    b.kinds.push(k);
                }
            }
            best.push(b, order);
        }
    }
    keys.drain(&mut |f, first| {
        if open.as_ref().is_some_and(|(b, _)| *b.name != *f.name) {
            close(&mut open, &mut best, &order);
        }
        let (b, kinds) = open.get_or_insert_with(|| {
            let b = ByName {
                name: f.name.to_string(),
                kinds: Vec::new(),
                t: Totals::default(),
            };
            (b, Vec::new())
        });
        kinds.push((first, f.kind));
        b.t.add(&f.totals());
    })?;
    close(&mut open, &mut best, &order);
    let (rows, all) = best.finish(&order);
    let run = r.thread_time_ns() as f64;
    if args.csv || args.json {
        return Ok(flat_machine(&rows, run, args.csv));
    }
    let mut s = header(r, path);
    let _ = writeln!(
        s,
        "\nBy name over all call paths (top {} of {all} by {}; % of {})",
        all.min(top),
        sort_name(key),
        thread_time(r)
    );
    let mut t = Table::new(&[
        ("total", Align::Right),
        ("%", Align::Right),
        ("", Align::Left),
        ("calls", Align::Right),
        ("time/call", Align::Right),
        ("min", Align::Right),
        ("max", Align::Right),
        ("self", Align::Right),
        ("kind", Align::Left),
        ("name", Align::Left),
    ]);
    for b in rows.iter().take(top) {
        t.row(vec![
            dur(b.t.total_ns),
            pct(b.t.total_ns as f64, run),
            bar(b.t.total_ns as f64, run),
            b.t.count.to_string(),
            crate::fmt::duration(b.t.instance_ns as f64 / b.t.count.max(1) as f64),
            dur(b.t.min_ns),
            dur(b.t.max_ns),
            dur(b.t.self_ns),
            b.kinds.join(","),
            cell(&b.name, args),
        ]);
    }
    if t.len() == 0 {
        s.push_str("  (no nodes)\n");
    } else {
        s.push_str(&t.render());
    }
    Ok(s)
}

/// The `--flat` rows as CSV or JSON (times in ns; `kinds` joined by `,`).
fn flat_machine(rows: &[ByName], run: f64, csv: bool) -> String {
    let share = |ns: u64| {
        if run > 0.0 {
            100.0 * ns as f64 / run
        } else {
            0.0
        }
    };
    let per_call = |b: &ByName| b.t.instance_ns as f64 / b.t.count.max(1) as f64;
    if csv {
        let mut s = String::from(
            "name,kinds,calls,total_ns,time_per_call_ns,min_ns,max_ns,self_ns,total_pct\n",
        );
        for b in rows {
            let _ = writeln!(
                s,
                "{},{},{},{},{:.1},{},{},{},{:.2}",
                csv_field(&b.name),
                csv_field(&b.kinds.join(",")),
                b.t.count,
                b.t.total_ns,
                per_call(b),
                b.t.min_ns,
                b.t.max_ns,
                b.t.self_ns,
                share(b.t.total_ns)
            );
        }
        s
    } else {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|b| {
                serde_json::json!({"name": b.name, "kinds": b.kinds, "calls": b.t.count,
                    "total_ns": b.t.total_ns, "time_per_call_ns": per_call(b),
                    "min_ns": b.t.min_ns, "max_ns": b.t.max_ns, "self_ns": b.t.self_ns,
                    "total_pct": share(b.t.total_ns)})
            })
            .collect();
        serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n"
    }
}

/// Per thread its span and the share of each kind of work in it (the concurrency
/// view of `profile.json`), one column per category.
pub fn thread_times(s: &mut String, r: &Report, args: &ReportArgs) {
    let Some(c) = &r.concurrency else {
        return;
    };
    let cats: Vec<&str> = c.categories.iter().map(|x| x.category.as_str()).collect();
    let _ = writeln!(
        s,
        "\nTime per thread (share of each thread's span by kind of work)"
    );
    let mut cols = vec![("index", Align::Right), ("span", Align::Right)];
    cols.extend(cats.iter().map(|c| (*c, Align::Right)));
    cols.push(("name", Align::Left));
    let mut t = Table::new(&cols);
    for th in &c.per_thread {
        let mut row = vec![th.index.to_string(), dur(th.span_ns)];
        for cat in &cats {
            let p = th
                .categories
                .iter()
                .find(|x| x.category == *cat)
                .map_or(0.0, |x| x.pct);
            row.push(format!("{p:.1}%"));
        }
        row.push(cell(&th.name, args));
        t.row(row);
    }
    s.push_str(&t.render());
}
