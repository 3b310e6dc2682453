//! `kprof diff A B`, `kprof diff A... -- B...`: call path by call path, the
//! changes of time per call between two sets of runs, told apart from the
//! run-to-run noise (a rank test over several runs per side, or a stated floor
//! with one run per side).

mod args;
mod cells;
mod inputs;
mod job_views;
mod jobs;
mod paths;
mod stats;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::fmt::{duration, signed_dur, Align, Table};
use crate::outcome::{Failure, Outcome};
use crate::path_text::show;
pub use args::DiffArgs;
use args::{Metric, RankStat};
use cells::{num, p_text, range, rel_text};
use inputs::{expand, read_run, Run, Vals};
use jobs::JobVals;
use paths::{PathId, Paths};
use stats::{median, min_max, smallest_p, Mode, RankTest};

/// The arguments of each side: `A B`, or `A... -- B...`.
fn sides(args: &DiffArgs) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Failure> {
    if args.new.is_empty() {
        if args.paths.len() != 2 {
            return Err(Failure(format!(
                "diff: {} path{} and no --: give A B (each a run directory, a directory of \
                 runs or a quoted pattern such as 'base-*'), or A... -- B...",
                args.paths.len(),
                if args.paths.len() == 1 { "" } else { "s" }
            )));
        }
        return Ok((vec![args.paths[0].clone()], vec![args.paths[1].clone()]));
    }
    if let Some(opt) = args
        .new
        .iter()
        .find(|p| p.to_string_lossy().starts_with('-') && !p.exists())
    {
        return Err(Failure(format!(
            "diff: {} after --: options go before --, which starts B's runs",
            show(opt)
        )));
    }
    Ok((args.paths.clone(), args.new.clone()))
}

/// Reads the runs of one side, their call paths interned in `paths`.
fn read_side(list: &[PathBuf], args: &DiffArgs, paths: &mut Paths) -> Result<Vec<Run>, Failure> {
    let mut runs = Vec::new();
    for arg in list {
        for file in expand(arg)? {
            runs.push(read_run(&file, args.metric, args.ranks, paths)?);
        }
    }
    Ok(runs)
}

/// A call path's values over one side's runs.
#[derive(Default)]
struct SideVals {
    /// Runs holding the call path.
    present: usize,
    /// Time per call in each run that called it.
    per_call: Vec<f64>,
    /// Median time per run (0 in a run without the call path).
    time: f64,
    /// Median calls per run.
    calls: f64,
    /// Median percentage of the run.
    share: f64,
}

impl SideVals {
    fn of(runs: &[Run], key: PathId) -> SideVals {
        let mut times = Vec::with_capacity(runs.len());
        let mut calls = Vec::with_capacity(runs.len());
        let mut shares = Vec::with_capacity(runs.len());
        let mut s = SideVals::default();
        for r in runs {
            let v = r.nodes.get(&key).copied().unwrap_or_default();
            if r.nodes.contains_key(&key) {
                s.present += 1;
                if v.count > 0.0 {
                    s.per_call.push(v.time / v.count);
                }
            }
            times.push(v.time);
            calls.push(v.count);
            shares.push(if r.duration > 0.0 {
                100.0 * v.time / r.duration
            } else {
                0.0
            });
        }
        s.time = median(&times).unwrap_or(0.0);
        s.calls = median(&calls).unwrap_or(0.0);
        s.share = median(&shares).unwrap_or(0.0);
        s
    }

    fn per_call_median(&self) -> Option<f64> {
        median(&self.per_call)
    }
}

/// What a change is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    /// Beyond the noise: time per call grew.
    Slower,
    /// Beyond the noise: time per call shrank.
    Faster,
    /// Beyond the floors, but within the run-to-run spread (p >= alpha).
    NotSignificant,
    /// Within the floors.
    Noise,
    /// Only in B.
    New,
    /// Only in A.
    Gone,
}

impl Status {
    fn text(self) -> &'static str {
        match self {
            Status::Slower => "slower",
            Status::Faster => "faster",
            Status::NotSignificant => "n/s",
            Status::Noise => "noise",
            Status::New => "new",
            Status::Gone => "gone",
        }
    }
}

/// A compared call path.
struct Change {
    path: PathId,
    a: SideVals,
    b: SideVals,
    /// Median time per run, B - A.
    delta: f64,
    /// Change of the median time per call, in percent of A's; None when A's is 0
    /// or either side never called it.
    rel: Option<f64>,
    /// The rank test's p-value (two runs or more on each side).
    p: Option<f64>,
    status: Status,
}

/// Every call path of either side, compared; largest changes first, then in
/// the order of the paths as shown (`rank`, from [`Paths::order`]).
fn compare(ra: &[Run], rb: &[Run], args: &DiffArgs, rank: &[u32]) -> Vec<Change> {
    let mut keys: Vec<PathId> = ra
        .iter()
        .chain(rb)
        .flat_map(|r| r.nodes.keys().copied())
        .collect();
    keys.sort_unstable_by_key(|&k| rank[k as usize]);
    keys.dedup();
    let mode = Mode::of(ra.len(), rb.len(), args.alpha);
    let mut ranks = RankTest::default();
    let mut changes: Vec<Change> = keys
        .into_iter()
        .map(|k| {
            let a = SideVals::of(ra, k);
            let b = SideVals::of(rb, k);
            let delta = b.time - a.time;
            let (ma, mb) = (a.per_call_median(), b.per_call_median());
            let rel = match (ma, mb) {
                (Some(x), Some(y)) if x > 0.0 => Some(100.0 * (y - x) / x),
                _ => None,
            };
            let p = (a.per_call.len() >= 2 && b.per_call.len() >= 2)
                .then(|| ranks.p_value(&a.per_call, &b.per_call));
            let status = if a.present == 0 {
                Status::New
            } else if b.present == 0 {
                Status::Gone
            } else {
                let beyond_rel = match rel {
                    Some(r) => r.abs() > args.threshold,
                    None => mb.unwrap_or(0.0) != ma.unwrap_or(0.0),
                };
                let small = a.share < args.min_share && b.share < args.min_share;
                let up = rel.map_or(delta > 0.0, |r| r > 0.0);
                let (lo_a, hi_a) = min_max(&a.per_call);
                let (lo_b, hi_b) = min_max(&b.per_call);
                let apart = if up { hi_a < lo_b } else { hi_b < lo_a };
                let beyond_spread = match mode {
                    Mode::Rank => p.is_some_and(|p| p < args.alpha),
                    Mode::Apart => apart,
                };
                if !beyond_rel || delta.abs() <= args.min_time || small {
                    Status::Noise
                } else if !beyond_spread {
                    Status::NotSignificant
                } else if up {
                    Status::Slower
                } else {
                    Status::Faster
                }
            };
            Change {
                path: k,
                a,
                b,
                delta,
                rel,
                p,
                status,
            }
        })
        .collect();
    changes.sort_by(|x, y| {
        y.delta
            .abs()
            .total_cmp(&x.delta.abs())
            .then_with(|| rank[x.path as usize].cmp(&rank[y.path as usize]))
    });
    changes
}

/// Entry point.
pub fn main(args: DiffArgs) -> Outcome {
    let (la, lb) = sides(&args)?;
    let mut paths = Paths::default();
    let ra = read_side(&la, &args, &mut paths)?;
    let rb = read_side(&lb, &args, &mut paths)?;
    let jobs = |r: &[Run]| r.iter().filter(|r| r.ranks.is_some()).count();
    let (ja, jb) = (jobs(&ra), jobs(&rb));
    if !((ja == 0 && jb == 0) || (ja == ra.len() && jb == rb.len())) {
        return Err(Failure(
            "diff: some runs are jobs' merged profiles (kprof-merged/1) and some single \
             processes' profiles: compare jobs with jobs, processes with processes"
                .into(),
        ));
    }
    let rank = paths.order();
    let changes = compare(&ra, &rb, &args, &rank);
    let (na, nb) = (ra.len(), rb.len());
    let mode = Mode::of(na, nb, args.alpha);
    // A spread (min..max) to show, and n/s to tell, when a side has several runs.
    let spread = na > 1 || nb > 1;

    let mut s = String::new();
    let warn = |s: &mut String, w: String| {
        eprintln!("kprof diff: {w}");
        wrap(s, &w);
    };
    let _ = writeln!(s, "kprof diff: A = {}", side_text(&ra));
    let _ = writeln!(s, "            B = {}", side_text(&rb));
    let programs = |r: &[Run]| {
        let mut v: Vec<&str> = r.iter().map(|r| r.executable.as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v.join(", ")
    };
    let (pa, pb) = (programs(&ra), programs(&rb));
    if pa != pb {
        warn(
            &mut s,
            format!(
                "warning: A is a run of {pa}, B of {pb}: different programs (their call \
                 paths show as new and gone)"
            ),
        );
    }
    run_line(&mut s, &ra, &rb);
    let floor = format!(
        "the time per call moved by more than {}% (--threshold) and the time per run by \
         more than {} (--min-time)",
        args.threshold,
        duration(args.min_time)
    );
    let medians = format!("the medians of {floor}");
    match (mode, na, nb) {
        (Mode::Rank, _, _) => wrap(
            &mut s,
            &format!(
                "Noise: per call path, each run's time per call (time / calls); a change \
                 counts when the Mann-Whitney U test of A's runs against B's (two-sided{}) \
                 gives p < {} (--alpha), and {medians}.",
                if na + nb <= stats::EXACT_MAX {
                    ", exact"
                } else {
                    ", normal approximation"
                },
                args.alpha
            ),
        ),
        (Mode::Apart, 1, 1) => wrap(
            &mut s,
            &format!(
                "Noise: one run per side, so the run-to-run spread is unknown; the noise \
                 floor: a change counts when {floor}. Several runs per side (kprof diff \
                 'a-*' 'b-*') add a rank test."
            ),
        ),
        (Mode::Apart, 1, _) | (Mode::Apart, _, 1) => wrap(
            &mut s,
            &format!(
                "Noise: one run of {}, so its run-to-run spread is unknown; a change counts \
                 when that run is beyond every run of {}, and {medians}. Several runs per side \
                 add a rank test.",
                if na == 1 { "A" } else { "B" },
                if na == 1 { "B" } else { "A" },
            ),
        ),
        (Mode::Apart, _, _) => {
            let enough = (2..=64)
                .find(|&k| smallest_p(k, k) < args.alpha)
                .unwrap_or(64);
            wrap(
                &mut s,
                &format!(
                    "Noise: with {na} and {nb} runs the Mann-Whitney U test cannot reach p < \
                     {} (--alpha; its smallest p is {:.3}, {enough} runs per side can): a \
                     change counts when every run of one side is beyond every run of the \
                     other, and {medians}.",
                    args.alpha,
                    smallest_p(na, nb)
                ),
            )
        }
    }
    if ja > 0 {
        wrap(
            &mut s,
            &format!(
                "Jobs: each call path's time and calls per rank, the {} over the ranks \
                 (--ranks). After the call paths: each MPI function over all its call paths, \
                 each call path's imbalance over the ranks, and the job's messages.",
                match args.ranks {
                    RankStat::Mean => "mean",
                    RankStat::Max => "largest",
                }
            ),
        );
    }
    let metric = match args.metric {
        Metric::Total => "total",
        Metric::SelfTime => "self",
    };
    let count = |st: Status| changes.iter().filter(|c| c.status == st).count();
    let noise = count(Status::Noise);
    let ns = count(Status::NotSignificant);
    let beyond = changes.len() - noise - ns;
    let _ = writeln!(
        s,
        "\nChanges of {metric} time by size ({beyond} beyond the noise{}; {noise} noise)",
        if spread {
            format!(", {ns} within the run-to-run spread (n/s)")
        } else {
            String::new()
        }
    );
    s.push_str(&table(&changes, &args, spread, na > 1 && nb > 1, &paths));
    counter_changes(&mut s, (&ra, &rb), args.metric, args.top, (&paths, &rank));
    if ja > 0 {
        job_blocks(&mut s, (&ra, &rb), &args, (&paths, &rank));
    }
    let mut status = 0u8;
    if let Some(limit) = args.fail_above {
        let over = |c: &&Change, st: Status| c.status == st && c.rel.is_some_and(|r| r > limit);
        let worst: Vec<&Change> = changes.iter().filter(|c| over(c, Status::Slower)).collect();
        if let Some(w) = worst.first() {
            let _ = writeln!(
                s,
                "\nREGRESSION: {} call path{} slower by more than {limit}% beyond the noise \
                 (largest: {} {}{})",
                worst.len(),
                if worst.len() == 1 { "" } else { "s" },
                paths.shown(w.path),
                rel_text(w.rel),
                w.p.map_or(String::new(), |p| format!(", p = {}", p_text(p)))
            );
            status = 1;
        } else {
            let within = changes
                .iter()
                .filter(|c| over(c, Status::NotSignificant))
                .count();
            let _ = writeln!(
                s,
                "\nOK: no call path slower by more than {limit}% beyond the noise{}",
                if within > 0 {
                    format!(
                        " ({within} slower by more than {limit}% within the run-to-run \
                         spread: n/s)"
                    )
                } else {
                    String::new()
                }
            );
        }
    }
    print!("{s}");
    Ok(status)
}

/// What a diff of jobs shows after the call paths: each MPI function over all
/// its call paths (compared as call paths are), each call path's imbalance over
/// the ranks, and the job's messages.
fn job_blocks(
    s: &mut String,
    (ra, rb): (&[Run], &[Run]),
    args: &DiffArgs,
    (paths, rank): (&Paths, &[u32]),
) {
    // Each run with its MPI functions as its call paths.
    let functions = |runs: &[Run]| -> Vec<Run> {
        runs.iter()
            .map(|r| Run {
                file: r.file.clone(),
                executable: r.executable.clone(),
                duration: r.duration,
                nodes: r
                    .job
                    .functions
                    .iter()
                    .map(|(&k, &(count, time))| (k, Vals { count, time }))
                    .collect(),
                counters: HashMap::new(),
                ranks: r.ranks,
                job: JobVals::default(),
            })
            .collect()
    };
    let (fa, fb) = (functions(ra), functions(rb));
    if fa.iter().chain(&fb).any(|r| !r.nodes.is_empty()) {
        let changes = compare(&fa, &fb, args, rank);
        let noise = changes.iter().filter(|c| c.status == Status::Noise).count();
        let _ = writeln!(
            s,
            "\nMPI functions over all their call paths (time and calls per rank: the mean over \
             the ranks; {} beyond the noise, {noise} noise)",
            changes
                .iter()
                .filter(|c| !matches!(c.status, Status::Noise | Status::NotSignificant))
                .count()
        );
        let spread = ra.len() > 1 || rb.len() > 1;
        s.push_str(&table(
            &changes,
            args,
            spread,
            ra.len() > 1 && rb.len() > 1,
            paths,
        ));
    }
    let large = |k: PathId| {
        SideVals::of(ra, k).share >= args.min_share || SideVals::of(rb, k).share >= args.min_share
    };
    let ja: Vec<&JobVals> = ra.iter().map(|r| &r.job).collect();
    let jb: Vec<&JobVals> = rb.iter().map(|r| &r.job).collect();
    job_views::imbalance_block(s, (&ja, &jb), &large, args, (paths, rank));
    job_views::messages_block(s, (&ja, &jb));
}

/// Width of the explanatory lines.
const WIDTH: usize = 96;

/// `text` as lines of at most [`WIDTH`] characters (words kept whole), the
/// lines after the first indented by two spaces.
fn wrap(s: &mut String, text: &str) {
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.trim().is_empty() && line.chars().count() + 1 + word.chars().count() > WIDTH {
            s.push_str(&line);
            s.push('\n');
            line = String::from("  ");
        } else if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    s.push_str(&line);
    s.push('\n');
}

/// `A = ...`: the profile of one run, or how many runs and which.
fn side_text(runs: &[Run]) -> String {
    let dir = |r: &Run| -> String {
        match (r.file.file_name(), r.file.parent()) {
            (Some(f), Some(p)) if f == "profile.json" && !p.as_os_str().is_empty() => show(p),
            _ => show(&r.file),
        }
    };
    let job = |r: &Run| match r.ranks {
        Some(n) => format!(" (a job of {n} rank{})", if n == 1 { "" } else { "s" }),
        None => String::new(),
    };
    if let [one] = runs {
        return format!("{}{}", show(&one.file), job(one));
    }
    let names: Vec<String> = runs.iter().map(dir).collect();
    let list = if names.len() <= 6 {
        names.join(" ")
    } else {
        format!(
            "{} {} {} ... {}",
            names[0],
            names[1],
            names[2],
            names[names.len() - 1]
        )
    };
    let jobs = if runs.iter().all(|r| r.ranks.is_some()) {
        " (jobs)"
    } else {
        ""
    };
    format!("{} runs{jobs}: {list}", runs.len())
}

/// `run: A -> B (change, %)`, medians and their spreads with several runs.
fn run_line(s: &mut String, ra: &[Run], rb: &[Run]) {
    let d = |r: &[Run]| r.iter().map(|r| r.duration).collect::<Vec<f64>>();
    let (da, db) = (d(ra), d(rb));
    let (ma, mb) = (median(&da).unwrap_or(0.0), median(&db).unwrap_or(0.0));
    let cell = |m: f64, v: &[f64]| {
        if v.len() > 1 {
            let (lo, hi) = min_max(v);
            format!("{} ({})", duration(m), range(lo, hi))
        } else {
            duration(m)
        }
    };
    let _ = writeln!(
        s,
        "run: {} -> {} ({}, {}){}",
        cell(ma, &da),
        cell(mb, &db),
        signed_dur((mb - ma) as i128),
        rel_text((ma > 0.0).then(|| 100.0 * (mb - ma) / ma)),
        if da.len() > 1 || db.len() > 1 {
            "; medians (min..max) of the runs"
        } else {
            ""
        }
    );
}

/// The table of changes.
/// `spread`: columns of each side's spread; `p`: a column of the p-values.
/// Only the printed rows' paths are written out.
fn table(changes: &[Change], args: &DiffArgs, spread: bool, p: bool, paths: &Paths) -> String {
    let mut head = vec![
        ("change", Align::Right),
        ("%", Align::Right),
        ("A", Align::Right),
        ("B", Align::Right),
        ("calls A -> B", Align::Right),
        ("per call A", Align::Right),
    ];
    if spread {
        head.push(("spread A", Align::Right));
    }
    head.push(("per call B", Align::Right));
    if spread {
        head.push(("spread B", Align::Right));
    }
    if p {
        head.push(("p", Align::Right));
    }
    head.extend([("status", Align::Left), ("path", Align::Left)]);
    let mut t = Table::new(&head);
    let mut shown = 0;
    for c in changes {
        let calls_changed = c.a.calls != c.b.calls;
        if (c.status == Status::Noise && !calls_changed && !args.all) || shown >= args.top {
            continue;
        }
        shown += 1;
        let present = |v: &SideVals, text: String| if v.present > 0 { text } else { "-".into() };
        let per_call = |v: &SideVals| v.per_call_median().map_or("-".into(), duration);
        let range_of = |v: &SideVals| {
            if v.per_call.len() > 1 {
                let (lo, hi) = min_max(&v.per_call);
                range(lo, hi)
            } else {
                "-".into()
            }
        };
        let mut row = vec![
            signed_dur(c.delta.round() as i128),
            rel_text(c.rel),
            present(&c.a, duration(c.a.time)),
            present(&c.b, duration(c.b.time)),
            format!(
                "{} -> {}",
                present(&c.a, num(c.a.calls)),
                present(&c.b, num(c.b.calls))
            ),
            per_call(&c.a),
        ];
        if spread {
            row.push(range_of(&c.a));
        }
        row.push(per_call(&c.b));
        if spread {
            row.push(range_of(&c.b));
        }
        if p {
            row.push(c.p.map_or("-".into(), p_text));
        }
        row.push(c.status.text().into());
        row.push(paths.shown(c.path));
        t.row(row);
    }
    if t.len() == 0 {
        "  (no change beyond the noise)\n".into()
    } else {
        t.render()
    }
}

/// The counters block: per event and call path, A's and B's values (medians
/// of their runs) and the change, largest changes first (nothing when neither
/// side counted).
fn counter_changes(
    s: &mut String,
    (ra, rb): (&[Run], &[Run]),
    metric: Metric,
    top: usize,
    (paths, rank): (&Paths, &[u32]),
) {
    // (event, the path's place in the shown order): the rows' order.
    let order = |k: &(String, PathId)| (k.0.clone(), rank[k.1 as usize]);
    let medians = |runs: &[Run]| -> HashMap<(String, PathId), f64> {
        let mut keys: Vec<&(String, PathId)> =
            runs.iter().flat_map(|r| r.counters.keys()).collect();
        keys.sort_by_cached_key(|k| order(k));
        keys.dedup();
        keys.into_iter()
            .map(|k| {
                let v: Vec<f64> = runs
                    .iter()
                    .map(|r| r.counters.get(k).copied().unwrap_or(0.0))
                    .collect();
                (k.clone(), median(&v).unwrap_or(0.0))
            })
            .collect()
    };
    let (ia, ib) = (medians(ra), medians(rb));
    if ia.is_empty() && ib.is_empty() {
        return;
    }
    let mut keys: Vec<&(String, PathId)> = ia.keys().chain(ib.keys()).collect();
    keys.sort_by_cached_key(|k| order(k));
    keys.dedup();
    // (change, (event, path), A, B)
    type Row<'a> = (f64, &'a (String, PathId), Option<f64>, Option<f64>);
    let mut rows: Vec<Row<'_>> = keys
        .into_iter()
        .map(|k| {
            let (va, vb) = (ia.get(k).copied(), ib.get(k).copied());
            (vb.unwrap_or(0.0) - va.unwrap_or(0.0), k, va, vb)
        })
        .filter(|r| r.0 != 0.0 || r.2.is_none() || r.3.is_none())
        .collect();
    rows.sort_by(|x, y| {
        y.0.abs()
            .total_cmp(&x.0.abs())
            .then_with(|| order(x.1).cmp(&order(y.1)))
    });
    let which = match metric {
        Metric::Total => "inclusive",
        Metric::SelfTime => "exclusive",
    };
    let of_runs = if ra.len() > 1 || rb.len() > 1 {
        ", medians of the runs"
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "\nCounter changes ({which}{of_runs}; {} changed):",
        rows.len()
    );
    let mut t = Table::new(&[
        ("change", Align::Right),
        ("%", Align::Right),
        ("A", Align::Right),
        ("B", Align::Right),
        ("event", Align::Left),
        ("path", Align::Left),
    ]);
    for (d, (event, path), va, vb) in rows.iter().take(top) {
        let rel = va.filter(|&v| v > 0.0).map(|v| 100.0 * d / v);
        t.row(vec![
            format!("{}{}", if *d < 0.0 { "-" } else { "+" }, num(d.abs())),
            rel_text(rel),
            va.map_or("-".into(), num),
            vb.map_or("-".into(), num),
            event.clone(),
            paths.shown(*path),
        ]);
    }
    if t.len() == 0 {
        s.push_str("  (no counter changed)\n");
    } else {
        s.push_str(&t.render());
    }
}

#[cfg(test)]
mod tests {
    use super::args::parse_time;
    use super::*;

    #[test]
    fn times_and_cells() {
        assert_eq!(parse_time("1ms"), Ok(1e6));
        assert_eq!(parse_time("250us"), Ok(250e3));
        assert_eq!(parse_time("0.5s"), Ok(0.5e9));
        assert_eq!(parse_time("2"), Ok(2e6));
        assert_eq!(parse_time("800ns"), Ok(800.0));
        assert!(parse_time("-1ms").is_err());
        assert!(parse_time("fast").is_err());
        assert_eq!(range(7_990_000.0, 8_050_000.0), "7.99..8.05 ms");
        assert_eq!(range(900.0, 1500.0), "0.90..1.50 us");
        assert_eq!(p_text(0.0286), "0.029");
        assert_eq!(p_text(0.00012), "1e-4");
        assert_eq!(num(3.0), "3");
        assert_eq!(num(2.5), "2.5");
    }
}
