//! `kprof merge DIR... -o OUT`: the outputs of several processes (MPI ranks) as one
//! profile (`kprof-merged/1`: per node min/mean/max over ranks and imbalance) and
//! one Perfetto trace with each rank as its own process.
//!
//! Streaming: each directory is read, folded into the job's reducible form (the
//! core's [`kprof_core::reduce`], the same functions the MPI plugin reduces with
//! inside a job) and dropped, so memory is bounded by the merged tree, not by
//! the number of ranks; per-rank arrays are kept only with `--by-rank`. Two
//! threads read at once (folding is commutative), each into its own form.

mod analyses;
mod checks;
#[cfg(test)]
mod reference;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use kprof_core::reduce::{render, Fold};

use crate::fmt::ranks_text;
#[cfg(test)]
use crate::load::load_report;
use crate::load::load_report_fast;
use crate::outcome::{Failure, Outcome};
use crate::path_text::show;

/// Arguments of `kprof merge`.
#[derive(clap::Args)]
pub struct MergeArgs {
    /// The output directories of the processes (one per rank), each once. One
    /// without a readable profile (a rank killed with SIGKILL) is left out with a
    /// warning naming it and the missing rank.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Directory to create for the merged profile.json and trace.pftrace; one that
    /// exists is refused (exit 2) unless --force.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace an existing OUT (its old files are removed; kprof says so).
    #[arg(long)]
    pub force: bool,
    /// Do not merge the Perfetto traces.
    #[arg(long)]
    pub no_trace: bool,
    /// Keep every rank's value of every node (`by_rank` arrays): memory then grows
    /// with the number of ranks.
    #[arg(long)]
    pub by_rank: bool,
}

/// Metadata key of the number of processes in the MPI job (the MPI plugin's).
const MPI_SIZE: &str = "MPI size";

/// Threads that read and fold rank directories.
const READERS: usize = 2;

/// Folds the profiles of `dirs` (read one at a time per reader).
#[cfg(test)]
pub fn fold_dirs(dirs: &[PathBuf], by_rank: bool) -> Result<Fold, Failure> {
    fold_dirs_with_extras(dirs, by_rank, None).map(|r| r.fold)
}

/// What the merge takes from each rank besides its folded profile.
#[derive(Default)]
struct Extras {
    /// The ranks' task dependence edges, summed.
    deps: analyses::Dependences,
    /// Per rank read (by its position in the arguments): when it left its first
    /// OpenSHMEM barrier (`actor.barrier_ns`), where it says.
    barriers: Vec<(u32, i64)>,
    /// Ranks whose profile has a series over time (`over_time`), which the
    /// merge leaves out.
    over_time: usize,
    /// The job sizes the ranks recorded (`MPI size` in their metadata).
    sizes: std::collections::BTreeSet<u64>,
}

impl Extras {
    fn add(&mut self, o: Extras) {
        for (edge, count) in o.deps {
            *self.deps.entry(edge).or_insert(0) += count;
        }
        self.barriers.extend(o.barriers);
        self.over_time += o.over_time;
        self.sizes.extend(o.sizes);
    }
}

/// The ranks read, and the directories that could not be read: (position in
/// the arguments, why).
struct Read {
    fold: Fold,
    extras: Extras,
    skipped: Vec<(usize, Failure)>,
}

/// Folds the profiles of `dirs` (as `fold_dirs`, the tests' form), with what
/// else the merge needs of each rank ([`Extras`]). A directory that cannot be read (a rank killed before it wrote its profile,
/// a truncated file) is left out and kept in [`Read::skipped`]; only when none
/// can be read is that a failure. Each rank read also goes into `cali`, the
/// job's `profile.cali`, when given.
fn fold_dirs_with_extras(
    dirs: &[PathBuf],
    by_rank: bool,
    cali: Option<&Mutex<analyses::CaliJob>>,
) -> Result<Read, Failure> {
    let total = dirs.len();
    let next = AtomicUsize::new(0);
    let skipped: Mutex<Vec<(usize, Failure)>> = Mutex::new(Vec::new());
    let step = (total / 100).max(1);
    let readers = READERS.min(total).max(1);
    let folds: Vec<(Fold, Extras)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..readers)
            .filter_map(|_| {
                // Deeply nested profiles are read recursively: the reader's stack.
                let b = std::thread::Builder::new().stack_size(crate::reader_stack::READER_STACK);
                b.spawn_scoped(s, || {
                    let mut fold = Fold::new(by_rank);
                    let mut extras = Extras::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            break;
                        }
                        let d = &dirs[i];
                        if total > 8 && (i + 1).is_multiple_of(step) {
                            eprintln!("kprof merge: [{}/{total}] reading {}", i + 1, show(d));
                        }
                        match load_report_fast(d) {
                            Ok(r) => {
                                analyses::add_dependences(&mut extras.deps, &r.task_graph.edges);
                                if let Some(b) = crate::timebase::barrier_ns(&r.metadata) {
                                    extras.barriers.push((i as u32, b));
                                }
                                extras.over_time += usize::from(r.over_time.is_some());
                                if let Some(n) =
                                    r.metadata.get(MPI_SIZE).and_then(|n| n.parse().ok())
                                {
                                    extras.sizes.insert(n);
                                }
                                if let Some(Ok(mut c)) = cali.map(Mutex::lock) {
                                    c.add(&r, r.program.rank.unwrap_or(i as u64));
                                }
                                fold.add_report(&r, i as u32, Some(show(d)))
                            }
                            Err(e) => {
                                if let Ok(mut list) = skipped.lock() {
                                    list.push((i, e));
                                }
                            }
                        }
                    }
                    (fold, extras)
                })
                .ok()
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut skipped = skipped.into_inner().unwrap_or_default();
    skipped.sort_by_key(|x| x.0);
    let mut folds = folds.into_iter();
    let (mut fold, mut extras) = folds
        .next()
        .unwrap_or_else(|| (Fold::new(by_rank), Extras::default()));
    for (f, x) in folds {
        fold.fold(f.into_form());
        extras.add(x);
    }
    if fold.processes() == 0 && !skipped.is_empty() {
        return Err(skipped.swap_remove(0).1);
    }
    if fold.processes() + skipped.len() != total {
        return Err(Failure(format!(
            "kprof merge: {} of {total} ranks were read",
            fold.processes()
        )));
    }
    Ok(Read {
        fold,
        extras,
        skipped,
    })
}

/// Entry point.
pub fn main(args: MergeArgs) -> Outcome {
    checks::distinct_dirs(&args.dirs)?;
    let replace = crate::out_dir::claim(&args.output, args.force, "-o").map_err(Failure)?;
    let cali = analyses::CaliJob::open();
    let Read {
        fold,
        extras,
        skipped,
    } = fold_dirs_with_extras(&args.dirs, args.by_rank, cali.as_ref())?;
    checks::distinct_ranks(fold.form())?;
    if let Some(line) = checks::programs_line(fold.form()) {
        eprintln!("{line}");
    }
    if let Some(line) = checks::sampling_line(fold.form()) {
        eprintln!("{line}");
    }
    let size = match extras.sizes.iter().collect::<Vec<_>>()[..] {
        [&n] => n,
        _ => args.dirs.len() as u64,
    };
    for line in checks::left_out_lines(fold.form(), size, &args.dirs, &skipped) {
        eprintln!("{line}");
    }
    // The ranks merged.
    let total = fold.processes();
    if replace {
        crate::out_dir::remove(&args.output).map_err(Failure)?;
        eprintln!(
            "kprof merge: replacing {} (--force): its old files were removed",
            show(&args.output)
        );
    }
    let merged = render(fold.form());
    // (rank label, who) in the merged profile's order, and each rank's clock
    // offset to rank 0's.
    let order = kprof_core::reduce::render::order(fold.form());
    let offsets = clock_offsets(&fold, &order, &extras.barriers);
    drop(fold);
    if extras.over_time > 0 {
        eprintln!(
            "kprof merge: the series over time (over_time) of {} are not merged (each \
             rank's buckets are on its own clock and width); kprof plot draws them from \
             each rank's directory",
            ranks_text(extras.over_time)
        );
    }
    std::fs::create_dir_all(&args.output)
        .map_err(|e| Failure(format!("cannot create {}: {e}", show(&args.output))))?;
    let path = args.output.join("profile.json");
    // Compact, as the runtime writes profile.json: indentation would grow with
    // the depth of each node (quadratic in a deep tree's size).
    let text = serde_json::to_string(&merged)? + "\n";
    std::fs::write(&path, text).map_err(|e| Failure(format!("{}: {e}", show(&path))))?;
    analyses::write(&args.output, &merged, &extras.deps, total);
    if let Some(Err(e)) = cali.map(|c| {
        c.into_inner()
            .map_err(|_| "internal error".to_string())
            .and_then(|c| c.write(&args.output))
    }) {
        eprintln!("kprof merge: profile.cali was not written: {e}");
    }
    drop(merged);
    eprintln!("kprof merge: {} ({})", show(&path), ranks_text(total));

    if !args.no_trace {
        let traces: Vec<(u64, &Path, PathBuf, i64)> = order
            .iter()
            .map(|&(label, who)| {
                let d = args.dirs[who as usize].as_path();
                let offset = offsets.get(&who).copied().unwrap_or(0);
                (label, d, trace_of(d), offset)
            })
            .filter(|(_, _, t, _)| t.is_file())
            .collect();
        if !traces.is_empty() {
            if traces.len() < total {
                eprintln!(
                    "kprof merge: {} of {total} ranks have a trace.pftrace; merging those",
                    traces.len()
                );
            }
            let out = args.output.join("trace.pftrace");
            crate::pftrace::merge(&traces, &out)?;
            eprintln!("kprof merge: {} ({})", show(&out), ranks_text(traces.len()));
        }
    }
    Ok(0)
}

/// Each rank's clock offset to the first rank's, by `who`: measured at
/// `MPI_Init` by the MPI plugin where any rank has one; otherwise, in an
/// OpenSHMEM job where every rank left a first barrier, from those barriers
/// ([`crate::timebase`]); otherwise none (0).
fn clock_offsets(
    fold: &Fold,
    order: &[(u64, u32)],
    barriers: &[(u32, i64)],
) -> std::collections::HashMap<u32, i64> {
    let ranks = &fold.form().ranks;
    if ranks.iter().any(|r| r.clock_offset_ns.is_some()) {
        return ranks
            .iter()
            .map(|r| (r.who, r.clock_offset_ns.unwrap_or(0)))
            .collect();
    }
    let by_who: std::collections::HashMap<u32, i64> = barriers.iter().copied().collect();
    let times: Vec<Option<i64>> = order
        .iter()
        .map(|(_, who)| by_who.get(who).copied())
        .collect();
    match crate::timebase::barrier_offsets(&times) {
        Some(offsets) if order.len() > 1 => {
            eprintln!(
                "kprof merge: clock offsets from the PEs' first barrier (actor.barrier_ns), up \
                 to {} us",
                offsets.iter().map(|o| o.unsigned_abs()).max().unwrap_or(0) / 1000
            );
            order.iter().map(|&(_, who)| who).zip(offsets).collect()
        }
        _ => std::collections::HashMap::new(),
    }
}

fn trace_of(dir: &Path) -> PathBuf {
    if dir.is_dir() {
        dir.join("trace.pftrace")
    } else {
        dir.parent()
            .map(|p| p.join("trace.pftrace"))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// `v` without the fields the streaming merge added (who holds the minimum
    /// and maximum, the deviation over ranks, the mean of the ranks' means).
    fn without_additions(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| {
                        !matches!(
                            k.as_str(),
                            "stddev" | "min_rank" | "max_rank" | "mean_of_ranks"
                        )
                    })
                    .map(|(k, x)| (k.clone(), without_additions(x)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(without_additions).collect()),
            x => x.clone(),
        }
    }

    fn without_by_rank(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| k.as_str() != "by_rank")
                    .map(|(k, x)| (k.clone(), without_by_rank(x)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(without_by_rank).collect()),
            x => x.clone(),
        }
    }

    /// The in-memory merge of `dirs`, as `kprof merge` computed it before it
    /// streamed (reports sorted by rank).
    fn reference(dirs: &[PathBuf]) -> Value {
        let mut reports: Vec<_> = dirs
            .iter()
            .map(|d| (d.clone(), load_report(d).unwrap().1))
            .collect();
        reports.sort_by_key(|(_, r)| r.program.rank);
        let ranks: Vec<u64> = reports
            .iter()
            .map(|(_, r)| r.program.rank.unwrap())
            .collect();
        reference::merge_reports(&reports, &ranks)
    }

    /// Where `a` and `b` first differ (a JSON path), if they do.
    fn difference(a: &Value, b: &Value, at: &str) -> Option<String> {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => difference(p, q, &format!("{at}.{k}")),
                    (p, q) => Some(format!("{at}.{k}: {p:?} vs {q:?}")),
                })
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| difference(p, q, &format!("{at}[{i}]"))),
            _ if a == b => None,
            _ => Some(format!("{at}: {a} vs {b}")),
        }
    }

    fn check_against_reference(dirs: &[PathBuf], shuffled: &[PathBuf]) {
        let old = reference(dirs);
        let by_rank = render(fold_dirs(shuffled, true).unwrap().form());
        let new = without_additions(&by_rank);
        assert_eq!(difference(&new, &old, ""), None);
        // Without --by-rank: the same, less the per-rank arrays.
        let plain = render(fold_dirs(shuffled, false).unwrap().form());
        assert_eq!(plain, without_by_rank(&by_rank));
        assert!(plain["tree"][0].get("by_rank").is_none());
    }

    #[test]
    fn same_as_the_in_memory_merge_on_synthetic_ranks() {
        let base = std::env::temp_dir().join(format!("kprof-merge-ref-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dirs = kprof_tests::synthetic::write_ranks(&base, 7, 180);
        // Given out of rank order: the result is in rank order all the same.
        let mut shuffled = dirs.clone();
        shuffled.rotate_left(3);
        shuffled.swap(0, 5);
        check_against_reference(&dirs, &shuffled);
        let merged = render(fold_dirs(&shuffled, false).unwrap().form());
        // Who holds the extremes: the run time grows with the rank.
        assert_eq!(merged["duration_ns"]["min_rank"], 0);
        assert_eq!(merged["duration_ns"]["max_rank"], 6);
        // A node missing on some ranks: its minimum over ranks is theirs, 0.
        fn all(v: &Value) -> Vec<&Value> {
            let mut out = vec![v];
            for c in v["children"].as_array().into_iter().flatten() {
                out.extend(all(c));
            }
            out
        }
        let nodes: Vec<&Value> = merged["tree"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(all)
            .collect();
        assert_eq!(nodes.len(), 180);
        let partial = nodes
            .iter()
            .find(|k| k["ranks"].as_u64() != Some(7))
            .expect("a node that some ranks lack");
        assert_eq!(partial["total_ns"]["min"], 0);
        assert_eq!(partial["total_ns"]["min_rank"], Value::Null);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn same_as_the_in_memory_merge_on_the_fixtures() {
        let dirs: Vec<PathBuf> = (0..3)
            .map(|r| kprof_tests::test_file(&format!("cli/fixtures/rank{r}")))
            .collect();
        check_against_reference(&dirs, &[dirs[2].clone(), dirs[0].clone(), dirs[1].clone()]);
    }

    /// The fixtures' ranks with call-stack samples: ranks 0 and 1 sampled
    /// (every other node, at different rates), rank 2 not.
    fn sampled_fixtures(base: &Path) -> Vec<PathBuf> {
        use kprof_core::output::report::TreeNode;
        use kprof_core::output::stack_samples::{
            FunctionSamples, LineSamples, NodeStackSamples, SamplePath, StackSamplesInfo,
        };
        fn sampled(k: u64, r: u64) -> NodeStackSamples {
            let functions = vec![
                FunctionSamples {
                    name: format!("f{}", k % 3),
                    samples: k + r,
                },
                FunctionSamples {
                    name: "shared".into(),
                    samples: 2,
                },
            ];
            NodeStackSamples {
                samples: functions.iter().map(|f| f.samples).sum(),
                functions,
                lines: vec![LineSamples {
                    function: "shared".into(),
                    file: "x.c".into(),
                    line: 10 + (k % 2) as u32,
                    samples: 1 + r,
                }],
                context: Vec::new(),
                // One path every rank has (its samples by rank and node), one
                // of rank 1 only.
                paths: [(format!("f{}", k % 3), k + r), ("only1".to_string(), r)]
                    .into_iter()
                    .filter(|p| p.1 > 0)
                    .map(|(name, n)| SamplePath {
                        name,
                        samples: n + 2,
                        self_samples: n,
                        children: vec![SamplePath {
                            name: "shared".into(),
                            samples: 2,
                            self_samples: 2,
                            children: Vec::new(),
                        }],
                    })
                    .collect(),
            }
        }
        fn mark(nodes: &mut [TreeNode], k: &mut u64, r: u64) {
            for n in nodes {
                *k += 1;
                if *k % 2 == r % 2 {
                    n.stack_samples = Some(Box::new(sampled(*k, r)));
                }
                mark(&mut n.children, k, r);
            }
        }
        (0..3u64)
            .map(|r| {
                let src = kprof_tests::test_file(&format!("cli/fixtures/rank{r}"));
                let mut report = load_report(&src).unwrap().1;
                if r < 2 {
                    mark(&mut report.tree, &mut 0, r);
                    report.stack_samples = Some(StackSamplesInfo {
                        hz: 100 * (r + 1),
                        threads: 1,
                        samples: 50 + r,
                        signals: 40,
                        lost: r,
                        truncated: 1,
                        outside: sampled(7, r),
                        ..StackSamplesInfo::default()
                    });
                }
                let d = base.join(format!("rank{r}"));
                std::fs::create_dir_all(&d).unwrap();
                std::fs::write(
                    d.join("profile.json"),
                    serde_json::to_string(&report).unwrap(),
                )
                .unwrap();
                d
            })
            .collect()
    }

    #[test]
    fn same_as_the_in_memory_merge_with_call_stack_samples() {
        let base = std::env::temp_dir().join(format!("kprof-merge-stk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dirs = sampled_fixtures(&base);
        check_against_reference(&dirs, &[dirs[1].clone(), dirs[2].clone(), dirs[0].clone()]);
        let fold = fold_dirs(&dirs, false).unwrap();
        let merged = render(fold.form());
        // The nodes carry theirs (the reference compared them too).
        let tree = merged["tree"].to_string();
        assert_eq!(tree.matches("\"stack_samples\"").count(), 2, "{tree}");
        let job = &merged["stack_samples"];
        assert_eq!(
            (job["ranks"].as_u64(), job["lost"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(job["outside"]["functions"][0]["name"], "f1");
        assert_eq!(job["outside"]["functions"][0]["samples"]["sum"], 7 + 7 + 1);
        // The call paths below: one by name path, summed over the ranks.
        let paths = &job["outside"]["paths"];
        assert_eq!(paths[0]["name"], "f1");
        assert_eq!(paths[0]["samples"], 7 + 2 + 7 + 1 + 2);
        assert_eq!(paths[0]["children"][0]["self_samples"], 2 + 2);
        assert_eq!(paths[1]["name"], "only1");
        assert_eq!(paths[1]["samples"], 1 + 2);
        let line = checks::sampling_line(fold.form()).unwrap();
        assert!(line.contains("(100 to 200 Hz)"), "{line}");
        assert!(
            line.contains("2 of 3 ranks have call-stack samples"),
            "{line}"
        );
        // Alike ranks: no warning.
        let alike = fold_dirs(&dirs[..1], false).unwrap();
        assert_eq!(checks::sampling_line(alike.form()), None);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_encoded_form_folds_the_same() {
        let base = std::env::temp_dir().join(format!("kprof-merge-enc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dirs = kprof_tests::synthetic::write_ranks(&base, 4, 60);
        // Pairwise along a binomial tree, through the encoding, as ranks do.
        let forms: Vec<Vec<u8>> = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mut f = Fold::new(false);
                f.add_report(&load_report(d).unwrap().1, i as u32, Some(show(d)));
                f.encode()
            })
            .collect();
        let fold2 = |a: &[u8], b: &[u8]| {
            let mut f = Fold::decode(a).unwrap();
            f.fold(Fold::decode(b).unwrap().into_form());
            f.encode()
        };
        let (a, b) = (fold2(&forms[0], &forms[1]), fold2(&forms[2], &forms[3]));
        let tree = Fold::decode(&fold2(&a, &b)).unwrap();
        assert_eq!(
            render(tree.form()),
            render(fold_dirs(&dirs, false).unwrap().form())
        );
        assert!(Fold::decode(b"\x0a\xff").is_err());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
