//! `kprof plot DIR [-o FILE]`: the profile as pictures. One SVG file per figure
//! (`plot-<figure>.svg`) and one HTML page holding them all inline (no link, no
//! font, image or script fetched: it renders offline; the flame graph's script
//! is inline), from one process's profile or a merged one (`kprof merge`).

mod figures;
mod flame;
mod stack_frames;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kprof_core::output::flat::{flatten, own_team, per_thread};
use kprof_core::output::report::{OverTime, Report, TreeNode};
use kprof_core::output::stack_samples::{NodeStackSamples, SamplePath};
use serde::Deserialize;
use serde_json::Value;

use crate::fmt::{bytes, duration};
use crate::load::{load_any, Loaded};
use crate::outcome::{Failure, Outcome};
use crate::path_text::show;
use figures::{Axis, Figure, PlotNode};
use stack_frames::Scale;

/// Arguments of `kprof plot`.
#[derive(clap::Args)]
pub struct PlotArgs {
    /// A kprof output directory (or its profile.json; a merged profile works too).
    pub dir: PathBuf,
    /// The HTML page to write (default: plot.html in DIR, written anew each
    /// time); the SVG files go beside it. An existing FILE is refused unless
    /// --force.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace an existing -o FILE (saying so).
    #[arg(long)]
    pub force: bool,
    /// Bars per chart.
    #[arg(long, value_name = "N", default_value_t = 15)]
    pub top: usize,
}

/// Call paths in the scatterplot.
const SCATTER_PATHS: usize = 5;

/// Kinds of device activity: device time, not threads' (the GPU figure shows them).
const DEVICE_KINDS: [&str; 4] = ["gpu_kernel", "gpu_memcpy", "gpu_memset", "gpu_sync"];

/// Entry point.
pub fn main(args: PlotArgs) -> Outcome {
    if let Some(o) = args.output.as_deref().filter(|o| o.exists()) {
        if !args.force {
            return Err(Failure(crate::out_dir::refuse_existing(o, "-o")));
        }
        eprintln!("kprof: replacing {} (--force)", show(o));
    }
    let (path, loaded) = load_any(&args.dir)?;
    let html_path = match &args.output {
        Some(o) => o.clone(),
        None => path
            .parent()
            .map(|d| d.join("plot.html"))
            .unwrap_or_else(|| PathBuf::from("plot.html")),
    };
    let (title, subtitle, figs) = match &loaded {
        Loaded::Single(r) => (
            format!("kprof: {}", r.program.executable),
            format!(
                "pid {} on {}{}, {} threads, {} run, plugins: {}",
                r.program.pid,
                r.program.host,
                r.program
                    .rank
                    .map(|k| format!(", rank {k}"))
                    .unwrap_or_default(),
                r.threads.len(),
                duration(r.clock.duration_ns as f64),
                if r.plugins.is_empty() {
                    "none".to_string()
                } else {
                    r.plugins.join(", ")
                }
            ),
            single(r, args.top)?,
        ),
        Loaded::Merged(v) => (
            format!(
                "kprof: {} (merged)",
                v["ranks"][0]["executable"].as_str().unwrap_or("?")
            ),
            format!(
                "{} ranks, mean run {}",
                v["ranks"].as_array().map_or(0, Vec::len),
                duration(v["duration_ns"]["mean"].as_f64().unwrap_or(0.0))
            ),
            merged(v, args.top)?,
        ),
    };
    let dir = html_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let stem = html_path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plot".into());
    for f in &figs {
        let p = dir.join(format!("{stem}-{}.svg", f.id));
        std::fs::write(&p, &f.svg).map_err(|e| Failure(format!("{}: {e}", show(&p))))?;
    }
    let page = html(&title, &subtitle, &show(&path), &figs);
    std::fs::write(&html_path, page).map_err(|e| Failure(format!("{}: {e}", show(&html_path))))?;
    eprintln!(
        "kprof plot: {} and {} SVG file{} ({stem}-*.svg) in {}",
        show(&html_path),
        figs.len(),
        if figs.len() == 1 { "" } else { "s" },
        show(&dir)
    );
    Ok(0)
}

/// The tree as the flame graph draws it: each node's exclusive time per thread
/// of the largest team around it (its own, an OpenMP construct's, or its
/// parent's), so that inside a parallel region every frame shows the mean
/// thread of the team: its implicit tasks, summed over the team's threads, are
/// then no wider than the region around them. Device activity is left out
/// (the GPU figure shows it). A node's call-stack samples (taken at `hz`) are
/// frames of their own below it, after its children, their width taken out of
/// its exclusive width ([`stack_frames::sample_frames`]).
fn plot_tree(list: &[TreeNode], parent_team: u32, hz: u64) -> Vec<PlotNode> {
    list.iter()
        .filter(|n| !DEVICE_KINDS.contains(&n.kind.as_ref()))
        .map(|n| {
            let team = own_team(n).max(parent_team);
            let instances = instances(n.count as f64);
            let details = if team > 1 {
                format!(
                    "inclusive {}/thread [{} over {team}], exclusive {}/thread [{}], {instances}",
                    duration(per_thread(n.total_ns, team) as f64),
                    duration(n.total_ns as f64),
                    duration(per_thread(n.self_ns, team) as f64),
                    duration(n.self_ns as f64),
                )
            } else {
                format!(
                    "inclusive {}, exclusive {}, {instances}",
                    duration(n.total_ns as f64),
                    duration(n.self_ns as f64),
                )
            };
            let own = per_thread(n.self_ns, team);
            let mut children = plot_tree(&n.children, team, hz);
            let scale = Scale::process(hz, team);
            let (sampled, taken) = match (n.stack_samples.as_deref(), scale) {
                (Some(s), Some(scale)) => stack_frames::sample_frames(s, scale, own),
                _ => (Vec::new(), 0),
            };
            children.extend(sampled);
            PlotNode {
                name: n.name.to_string(),
                kind: n.kind.to_string(),
                own: own - taken,
                details,
                children,
            }
        })
        .collect()
}

/// `n` instances, in words.
fn instances(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{n} instance{}", if n == 1.0 { "" } else { "s" })
    } else {
        format!("{n:.1} instances")
    }
}

/// The flame graph figure of `roots` (none where nothing has time): the SVG as
/// its file, and on the page in a frame of its own (its script finds its parts
/// by id and listens on its whole window), with the kinds' colours below it.
fn flame_figure(roots: &[PlotNode], all: &str, note: String) -> Result<Option<Figure>, Failure> {
    let Some(f) = flame::flame(roots, all)? else {
        return Ok(None);
    };
    let svg_at = f.svg.find("<svg").unwrap_or(0);
    // The graph's script keeps the zoom and search in the address
    // (history.replaceState), which a frame written inline (about:srcdoc)
    // refuses: there it keeps them in the frame only.
    let doc = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{{margin:0;overflow:hidden}} svg{{display:block;width:100%;height:auto}}</style>\
         <script>history.replaceState = function () {{}};</script></head><body>{}</body></html>",
        &f.svg[svg_at..]
    );
    let mut kinds = String::new();
    for (kind, colour) in &f.kinds {
        let _ = write!(
            kinds,
            "<span class=\"kind\"><i style=\"background:{colour}\"></i>{}</span>",
            esc(kind)
        );
    }
    let page = format!(
        "<iframe class=\"flame\" title=\"call-path flame graph\" style=\"height:{}px\" srcdoc=\"{}\"></iframe>\n<p class=\"kinds\">{kinds}</p>",
        f.height + 2,
        esc(&doc)
    );
    Ok(Some(Figure {
        id: "icicle",
        title: "Call-path tree (icicle: a flame graph, roots on top)".into(),
        note,
        svg: f.svg,
        page: Some(page),
    }))
}

/// What the flame graph's hover, click and search do, for the figures' notes.
const FLAME_USE: &str = "Hover a frame for its name, kind, share of the whole, inclusive and exclusive time (inside a team: per thread, and [summed over the team's N threads]) and instances; click it to zoom into its subtree (Reset Zoom, top left, to go back); Search (top right, or Ctrl-F) colours the frames whose name matches a regular expression and says what share of the whole they hold.";

/// The figures of one process's profile.
fn single(r: &Report, top: usize) -> Result<Vec<Figure>, Failure> {
    let mut figs = Vec::new();
    let mut flat: Vec<_> = flatten(&r.tree)
        .into_iter()
        .filter(|f| !DEVICE_KINDS.contains(&f.kind) && f.kind != "fence")
        .collect();
    flat.sort_by(|a, b| b.self_ns.cmp(&a.self_ns).then_with(|| a.name.cmp(&b.name)));
    let rows: Vec<(String, f64)> = flat
        .iter()
        .take(top)
        .map(|f| (format!("{} [{}]", f.name, f.kind), f.self_ns as f64))
        .collect();
    figs.push(figures::bars(
        "top",
        "Top kernels and regions (exclusive time)",
        format!(
            "The {} of {} kernels/regions with the most exclusive time, summed over threads and call paths.",
            rows.len(),
            flat.len()
        ),
        &rows,
        duration,
    )?);
    let hz = r.stack_samples.as_ref().map_or(0, |s| s.hz);
    let mut roots = plot_tree(&r.tree, 1, hz);
    roots.extend(
        r.stack_samples
            .as_ref()
            .zip(Scale::process(hz, 1))
            .and_then(|(s, scale)| stack_frames::outside_frame(&s.outside, scale)),
    );
    figs.extend(flame_figure(
        &roots,
        "the run's call paths, time per thread",
        format!("Each call path is a frame as wide as its time, nested ones below it; colour by kind. A frame is as wide as the exclusive times below it: its inclusive time; inside an OpenMP team of N threads, its time summed over the threads divided by N (the team's mean thread), so that the team's frames add up to the region around them.{} {FLAME_USE}", if r.stack_samples.is_some() { " Below a construct, its call-stack samples: the program's functions as frames of kind sample, each as wide as its samples' CPU time (1/hz s a sample, per thread of the team), taken out of the construct's exclusive width. The samples taken outside every construct (the threads' own code, and threads kprof gets no event from) are a frame of their own at the top, `outside every construct`, as wide as their CPU time." } else { "" }),
    )?);

    // Scatter: the sampled instances of the longest sampled call paths (ties
    // in tree order).
    let mut sampled: Vec<&TreeNode> = Vec::new();
    fn sampled_nodes<'a>(list: &'a [TreeNode], out: &mut Vec<&'a TreeNode>) {
        for n in list {
            if n.samples.as_ref().is_some_and(|s| !s.is_empty()) {
                out.push(n);
            }
            sampled_nodes(&n.children, out);
        }
    }
    sampled_nodes(&r.tree, &mut sampled);
    if !sampled.is_empty() {
        sampled.sort_by_key(|n| std::cmp::Reverse(n.total_ns));
        sampled.truncate(SCATTER_PATHS);
        let series: Vec<(String, Vec<(f64, f64)>)> = sampled
            .iter()
            .map(|n| {
                let pts = n
                    .samples
                    .as_deref()
                    .into_iter()
                    .flatten()
                    .map(|&[s, d]| (s as f64, d as f64))
                    .collect();
                // The node's own name (a legend line has room for ~60 characters).
                (
                    format!(
                        "{} [{}] ({} of {})",
                        n.name,
                        n.kind,
                        n.samples.as_ref().map_or(0, |s| s.len()),
                        n.count
                    ),
                    pts,
                )
            })
            .collect();
        figs.push(figures::scatter(
            format!(
                "Start and duration of a uniform sample of the instances (KPROF_SAMPLES) of the {} longest sampled call paths.",
                series.len()
            ),
            &series,
            r.clock.duration_ns as f64,
        )?);
    }

    if let Some(c) = &r.concurrency {
        let cats: Vec<String> = c.categories.iter().map(|x| x.category.clone()).collect();
        let share = |list: &[kprof_core::output::report::CategoryTime]| -> Vec<f64> {
            cats.iter()
                .map(|k| {
                    list.iter()
                        .find(|x| &x.category == k)
                        .map_or(0.0, |x| x.pct)
                })
                .collect()
        };
        let mut rows = vec![("all threads".to_string(), share(&c.categories))];
        for t in &c.per_thread {
            rows.push((format!("{} {}", t.index, t.name), share(&t.categories)));
        }
        figs.push(figures::stacked(
            "concurrency",
            "Concurrency: the threads' time by kind of work",
            format!(
                "Share of each thread's span (first begin to last end) in each kind of work; {} threads, {} of thread time.",
                c.threads,
                duration(c.thread_ns as f64)
            ),
            &cats,
            &rows,
        )?);
    }

    if let Some(o) = &r.over_time {
        over_time(o, r.clock.duration_ns as f64, &mut figs)?;
    }

    // Imbalance: the team constructs whose slowest thread is furthest from the mean.
    let mut spread = Vec::new();
    fn walk<'a>(list: &'a [TreeNode], out: &mut Vec<&'a TreeNode>) {
        for n in list {
            if n.threads.as_ref().is_some_and(|t| t.threads > 1) {
                out.push(n);
            }
            walk(&n.children, out);
        }
    }
    walk(&r.tree, &mut spread);
    if !spread.is_empty() {
        let lost = |n: &TreeNode| {
            n.threads
                .as_ref()
                .map_or(0.0, |t| t.max_ns as f64 - t.mean_ns)
        };
        spread.sort_by(|a, b| lost(b).total_cmp(&lost(a)));
        let rows: Vec<(String, Vec<f64>)> = spread
            .iter()
            .take(top.min(10))
            .filter_map(|n| {
                let t = n.threads.as_ref()?;
                Some((
                    format!(
                        "{} [{}] {:.2}x over {} threads",
                        n.name, n.kind, t.imbalance, t.threads
                    ),
                    vec![t.min_ns as f64, t.mean_ns, t.max_ns as f64],
                ))
            })
            .collect();
        figs.push(figures::grouped(
            "threads",
            "Per-thread imbalance",
            "Per team construct the least, mean and most time a thread spent in it (imbalance = max/mean), worst first.".into(),
            &["min", "mean", "max"],
            &rows,
            Axis::Time,
        )?);
    }

    if !r.memory.is_empty() {
        let rows: Vec<(String, Vec<f64>)> = r
            .memory
            .iter()
            .map(|m| {
                (
                    format!(
                        "{} (high water at {})",
                        m.space,
                        duration(m.high_water_ns as f64)
                    ),
                    vec![m.high_water_bytes as f64, m.current_bytes as f64],
                )
            })
            .collect();
        figs.push(figures::grouped(
            "memory",
            "Memory per space",
            "Per memory space the most bytes in use at once and the bytes still in use at the end."
                .into(),
            &["high water", "at end"],
            &rows,
            Axis::Bytes,
        )?);
    }

    if !r.messages.is_empty() {
        let mut peers: Vec<u32> = r
            .messages
            .iter()
            .flat_map(|m| m.peers.iter().map(|p| p.peer))
            .collect();
        peers.sort_unstable();
        peers.dedup();
        let rows: Vec<String> = r
            .messages
            .iter()
            .map(|m| format!("{} {}", m.channel, m.direction))
            .collect();
        let values: Vec<Vec<f64>> = r
            .messages
            .iter()
            .map(|m| {
                peers
                    .iter()
                    .map(|p| {
                        m.peers
                            .iter()
                            .find(|x| x.peer == *p)
                            .map_or(0.0, |x| x.bytes as f64)
                    })
                    .collect()
            })
            .collect();
        let total: u64 = r.messages.iter().map(|m| m.bytes).sum();
        figs.push(figures::heatmap(
            "messages",
            "Messages: bytes per channel and peer",
            format!(
                "This process's rows of the communication matrices ({} in all); darker is more.",
                bytes(total)
            ),
            &rows,
            &peers.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            &values,
            false,
        )?);
    }

    if let Some(g) = &r.gpu {
        let rows: Vec<(String, f64)> = g
            .kernels
            .iter()
            .take(top)
            .map(|k| (format!("{} [{}]", k.name, k.device), k.total_ns as f64))
            .collect();
        if !rows.is_empty() {
            figs.push(figures::bars(
                "gpu",
                "GPU kernels (device time)",
                format!(
                    "Kernels by device time; devices: {}.",
                    g.devices
                        .iter()
                        .map(|d| format!(
                            "{} busy {} ({:.1}% idle)",
                            d.device,
                            duration(d.busy_ns as f64),
                            d.idle_pct
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                &rows,
                duration,
            )?);
        }
    }
    Ok(figs)
}

/// The figures over time (profile.json's `over_time`): threads per kind of work
/// stacked (idle on top), and bytes in use per memory space.
fn over_time(o: &OverTime, run_ns: f64, figs: &mut Vec<Figure>) -> Result<(), Failure> {
    let width = o.bucket_ns as f64;
    if !o.threads.is_empty() {
        let mut series: Vec<(String, Vec<f64>)> = o
            .threads
            .iter()
            .map(|t| (t.category.clone(), t.mean.clone()))
            .collect();
        // Busy kinds of work at the bottom, idle threads above them.
        series.sort_by_key(|(c, _)| c == "idle");
        // The series' own lengths, not the file's `buckets` (outside input: a
        // huge count would loop for ever over nothing).
        let buckets = series.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        let peak = (0..buckets)
            .map(|i| {
                series
                    .iter()
                    .filter(|(c, _)| c != "idle")
                    .map(|(_, v)| v.get(i).copied().unwrap_or(0.0))
                    .sum::<f64>()
            })
            .fold(0.0, f64::max);
        figs.push(figures::stacked_over_time(
            "threads-over-time",
            "Concurrency over time: threads per kind of work",
            format!(
                "Mean number of threads in each kind of work per {} (idle: between instances), at most {peak:.1} busy at once.",
                duration(width)
            ),
            &series,
            width,
            run_ns,
            "threads",
        )?);
    }
    if !o.memory.is_empty() {
        let series: Vec<(String, Vec<f64>)> = o
            .memory
            .iter()
            .map(|m| {
                (
                    m.space.clone(),
                    m.max_bytes.iter().map(|&x| x as f64).collect(),
                )
            })
            .collect();
        figs.push(figures::lines_over_time(
            "memory-over-time",
            "Memory per space over time",
            format!(
                "The most bytes in use at once in each memory space per {}.",
                duration(width)
            ),
            &series,
            width,
            run_ns,
            Axis::Bytes,
        )?);
    }
    Ok(())
}

/// The merged tree as the flame graph draws it: each node as wide as its mean
/// exclusive time over the ranks (summed over each rank's threads). A node's
/// call-stack samples, summed over the ranks, are frames of their own below it,
/// after its children, each sample `scale` wide (the mean rank's share of it),
/// their width taken out of the node's ([`stack_frames::sample_frames`]).
fn merged_tree(list: &Value, scale: Option<Scale>) -> Vec<PlotNode> {
    list.as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|n| !DEVICE_KINDS.contains(&n["kind"].as_str().unwrap_or_default()))
        .map(|n| {
            let stat = |k: &str, s: &str| n[k][s].as_f64().unwrap_or(0.0);
            let own = stat("self_ns", "mean").round() as u64;
            let mut children = merged_tree(&n["children"], scale);
            let (sampled, taken) = match (merged_samples(&n["stack_samples"]), scale) {
                (Some(s), Some(scale)) => stack_frames::sample_frames(&s, scale, own),
                _ => (Vec::new(), 0),
            };
            children.extend(sampled);
            PlotNode {
                name: n["name"].as_str().unwrap_or_default().into(),
                kind: n["kind"].as_str().unwrap_or_default().into(),
                own: own - taken,
                details: format!(
                    "means over ranks: inclusive {} [ranks {} to {}], exclusive {}, {}",
                    duration(stat("total_ns", "mean")),
                    duration(stat("total_ns", "min")),
                    duration(stat("total_ns", "max")),
                    duration(stat("self_ns", "mean")),
                    instances(stat("count", "mean")),
                ),
                children,
            }
        })
        .collect()
}

/// A merged node's call-stack samples as the flame graph needs them: their sum
/// over the ranks and the call paths below the node (summed over the ranks).
/// None where it has none.
fn merged_samples(s: &Value) -> Option<NodeStackSamples> {
    let samples = s["samples"]["sum"].as_u64()?;
    let paths = Vec::<SamplePath>::deserialize(&s["paths"]).ok()?;
    Some(NodeStackSamples {
        samples,
        paths,
        ..NodeStackSamples::default()
    })
}

/// The scale of a merged profile's call-stack samples on its flame graph (see
/// [`merged_tree`]), with what its frames' counts are; None where the ranks
/// were not sampled, or at different rates (their samples then stand for
/// different times: the merge said so).
fn merged_scale<'a>(v: &Value, of: &'a str) -> Option<Scale<'a>> {
    let ranks = v["ranks"].as_array().map_or(0, Vec::len);
    Scale::job(v["stack_samples"]["hz"].as_u64()?, ranks, of)
}

/// The figures of a merged profile: means over ranks, and per rank.
fn merged(v: &Value, top: usize) -> Result<Vec<Figure>, Failure> {
    let mut figs = Vec::new();
    // (name [kind], mean self, min/mean/max total over ranks)
    let mut nodes: Vec<(String, f64, [f64; 3])> = Vec::new();
    fn walk(list: &Value, out: &mut Vec<(String, f64, [f64; 3])>) {
        for n in list.as_array().map(|v| v.as_slice()).unwrap_or_default() {
            let t = &n["total_ns"];
            out.push((
                format!(
                    "{} [{}]",
                    n["name"].as_str().unwrap_or_default(),
                    n["kind"].as_str().unwrap_or_default()
                ),
                n["self_ns"]["mean"].as_f64().unwrap_or(0.0),
                [
                    t["min"].as_f64().unwrap_or(0.0),
                    t["mean"].as_f64().unwrap_or(0.0),
                    t["max"].as_f64().unwrap_or(0.0),
                ],
            ));
            walk(&n["children"], out);
        }
    }
    walk(&v["tree"], &mut nodes);
    nodes.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let rows: Vec<(String, f64)> = nodes.iter().take(top).map(|n| (n.0.clone(), n.1)).collect();
    figs.push(figures::bars(
        "top",
        "Top call paths (mean exclusive time per rank)",
        format!(
            "The {} of {} call paths with the most exclusive time, mean over ranks.",
            rows.len(),
            nodes.len()
        ),
        &rows,
        duration,
    )?);
    let ranks = v["ranks"].as_array().map_or(0, Vec::len);
    let of = format!(" (summed over {ranks} ranks)");
    let scale = merged_scale(v, &of);
    let samples_note = match (scale, v["stack_samples"].is_object()) {
        (Some(_), _) => " Below a construct, its call-stack samples: the program's functions as frames of kind sample, nested as their call paths, each as wide as its samples summed over the ranks times 1/hz s divided by the ranks (the mean rank's CPU time in it, summed over its threads, as the constructs' widths are), taken out of the construct's exclusive width. The samples taken outside every construct are a frame of their own at the top, `outside every construct`, on the same scale.",
        (None, true) => " The ranks' call-stack samples are not drawn: they were taken at different rates.",
        (None, false) => "",
    };
    let mut roots = merged_tree(&v["tree"], scale);
    roots.extend(
        merged_samples(&v["stack_samples"]["outside"])
            .zip(scale)
            .and_then(|(s, scale)| stack_frames::outside_frame(&s, scale)),
    );
    figs.extend(flame_figure(
        &roots,
        "the call paths' mean time over ranks",
        format!("Each call path is a frame as wide as the mean over ranks of the exclusive times below it, summed over threads (a merged profile keeps no team sizes), nested ones below; colour by kind.{samples_note} {FLAME_USE}"),
    )?);
    nodes.sort_by(|a, b| {
        (b.2[2] - b.2[1])
            .total_cmp(&(a.2[2] - a.2[1]))
            .then_with(|| a.0.cmp(&b.0))
    });
    let rows: Vec<(String, Vec<f64>)> = nodes
        .iter()
        .take(top.min(10))
        .map(|n| {
            let imb = if n.2[1] > 0.0 { n.2[2] / n.2[1] } else { 1.0 };
            (format!("{} {imb:.2}x", n.0), n.2.to_vec())
        })
        .collect();
    figs.push(figures::grouped(
        "ranks",
        "Per-rank imbalance",
        "Per call path the least, mean and most inclusive time of a rank (imbalance = max/mean), worst first.".into(),
        &["min", "mean", "max"],
        &rows,
        Axis::Time,
    )?);
    // Each channel's matrix (the first MATRIX_IDS of them): rank rows, peer
    // columns, with each rank's and peer's totals.
    let channels = v["messages"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default();
    for (m, id) in channels.iter().zip(MATRIX_IDS) {
        let entries = m["entries"]
            .as_array()
            .map(|v| v.as_slice())
            .unwrap_or_default();
        let n = entries
            .iter()
            .flat_map(|e| {
                [
                    e["rank"].as_u64().unwrap_or(0),
                    e["peer"].as_u64().unwrap_or(0),
                ]
            })
            .max()
            .map_or(0, |x| x.saturating_add(1).min(256) as usize);
        let mut values = vec![vec![0.0; n]; n];
        for e in entries {
            let (r, p) = (
                e["rank"].as_u64().unwrap_or(0) as usize,
                e["peer"].as_u64().unwrap_or(0) as usize,
            );
            if r < n && p < n {
                values[r][p] += e["bytes"].as_f64().unwrap_or(0.0);
            }
        }
        let labels: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let (channel, direction) = (
            m["channel"].as_str().unwrap_or_default(),
            m["direction"].as_str().unwrap_or_default(),
        );
        figs.push(figures::heatmap(
            id,
            &format!("Messages: bytes rank x peer, {channel} ({direction})"),
            format!(
                "Channel {channel} ({direction}): rows are ranks, columns peers, darker is more; \
                 the grey row and column `all` are each peer's and rank's totals."
            ),
            &labels,
            &labels,
            &values,
            true,
        )?);
    }
    if channels.len() > MATRIX_IDS.len() {
        eprintln!(
            "kprof plot: the first {} of {} message channels are drawn",
            MATRIX_IDS.len(),
            channels.len()
        );
    }
    actor_breakdown(v, &mut figs)?;
    Ok(figs)
}

/// Figure ids of a merged directory's message matrices, one per channel.
const MATRIX_IDS: [&str; 8] = [
    "messages",
    "messages-2",
    "messages-3",
    "messages-4",
    "messages-5",
    "messages-6",
    "messages-7",
    "messages-8",
];

/// The MAIN/PROC/COMM breakdown of an FA-BSP job's PEs (HClib-Actor): each
/// rank's own profile (the directories `kprof merge` read, listed in `ranks`)
/// holds its `actor.*` metadata. Drawn absolute (`actor`) and as shares of each
/// PE's phase (`actor-share`) when every rank's profile is still there.
fn actor_breakdown(v: &Value, figs: &mut Vec<Figure>) -> Result<(), Failure> {
    const PARTS: [&str; 3] = ["main_ns", "proc_ns", "comm_ns"];
    let ranks = v["ranks"]
        .as_array()
        .map(|v| v.as_slice())
        .unwrap_or_default();
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    for r in ranks {
        let Some(dir) = r["dir"].as_str() else {
            return Ok(());
        };
        let Ok(text) = std::fs::read_to_string(Path::new(dir).join("profile.json")) else {
            return Ok(());
        };
        let Ok(p) = serde_json::from_str::<Value>(&text) else {
            return Ok(());
        };
        let part = |k: &str| {
            p["metadata"][format!("actor.{k}")]
                .as_str()
                .and_then(|s| s.parse::<f64>().ok())
        };
        let Some(values) = PARTS.iter().map(|k| part(k)).collect::<Option<Vec<f64>>>() else {
            return Ok(());
        };
        rows.push((format!("PE {}", r["rank"].as_u64().unwrap_or(0)), values));
    }
    if rows.is_empty() {
        return Ok(());
    }
    figs.push(figures::grouped(
        "actor",
        "Actor phase per PE: MAIN, PROC, COMM",
        "Per PE the time of its actor phase in the program's own work (MAIN), in message handlers (PROC) and in Conveyors and OpenSHMEM (COMM), from each rank's profile.".into(),
        &["MAIN", "PROC", "COMM"],
        &rows,
        Axis::Time,
    )?);
    let shares: Vec<(String, Vec<f64>)> = rows
        .iter()
        .map(|(pe, v)| {
            let phase: f64 = v.iter().sum();
            let share = |x: f64| if phase > 0.0 { 100.0 * x / phase } else { 0.0 };
            (pe.clone(), v.iter().map(|&x| share(x)).collect())
        })
        .collect();
    figs.push(figures::stacked(
        "actor-share",
        "Actor phase per PE: shares",
        "Per PE the shares of its actor phase in MAIN, PROC and COMM.".into(),
        &["MAIN".into(), "PROC".into(), "COMM".into()],
        &shares,
    )?);
    Ok(())
}

/// `s` escaped for HTML text.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The page: the figures' SVG inline, a heading and a line of text each.
fn html(title: &str, subtitle: &str, source: &str, figs: &[Figure]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{}</title><style>\
         body{{font-family:sans-serif;margin:24px;color:#222;background:#fff}}\
         h1{{font-size:22px;margin:0 0 4px}} h2{{font-size:17px;margin:28px 0 4px}}\
         p{{margin:2px 0 8px;color:#555}} .fig svg{{max-width:100%;height:auto;border:1px solid #ddd}}\
         nav a{{margin-right:12px}}\
         iframe.flame{{width:100%;max-width:962px;border:1px solid #ddd;display:block;box-sizing:border-box}}\
         .kinds .kind{{margin-right:14px;white-space:nowrap}}\
         .kinds i{{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}}\
         </style></head><body>\n<h1>{}</h1><p>{}</p><p>from {}</p>\n<nav>",
        esc(title),
        esc(title),
        esc(subtitle),
        esc(source)
    );
    for f in figs {
        let _ = write!(s, "<a href=\"#{}\">{}</a>", f.id, esc(&f.title));
    }
    s.push_str("</nav>\n");
    for f in figs {
        let _ = writeln!(
            s,
            "<section id=\"{}\"><h2>{}</h2><p>{}</p><div class=\"fig\">{}</div></section>",
            f.id,
            esc(&f.title),
            esc(&f.note),
            f.page.as_deref().unwrap_or(&f.svg)
        );
    }
    s.push_str("</body></html>\n");
    s
}
