//! The call-stack samples the threads took ([`crate::hot::stack_samples`]), put
//! under the merged call paths at the end: each sample goes to the merged node
//! its thread's node became, its code addresses get function, file and line
//! (once each, on the writer thread), and each node's samples become its
//! functions, lines and the tree of the program's call paths below it.

use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::merge::Merged;
use crate::hot::aggregate::tree::ROOT;
use crate::hot::clock::Clock;
use crate::hot::stack_samples::StackSamples;
use crate::output::stack_samples::{
    FunctionSamples, LineSamples, NodeStackSamples, SamplePath, StackSamplesInfo,
};

/// One source frame of a code address: a function, and where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFrame {
    /// The function's name, demangled.
    pub function: String,
    /// Source file (with debug information).
    pub file: Option<String>,
    /// Source line (with debug information).
    pub line: Option<u32>,
}

/// What names code addresses for the samples (the writer's symbolizer).
pub trait SourceFrames {
    /// The source frames at instruction address `pc`, innermost first (the
    /// functions inlined there, then the one they are in).
    fn source_frames(&mut self, pc: u64) -> Vec<SourceFrame>;
}

/// Rows of a node's functions and lines kept, most samples first.
const MAX_ROWS: usize = 100;

/// The samples of every merged node, and how they were taken.
pub struct StackView {
    /// How the samples were taken; the samples outside every instance.
    pub info: StackSamplesInfo,
    /// Per merged node (the root's are in `info.outside`).
    pub by_node: FxHashMap<u32, NodeStackSamples>,
}

/// One node's samples while they are added up.
#[derive(Default)]
struct Acc {
    samples: u64,
    functions: FxHashMap<String, u64>,
    lines: FxHashMap<(String, String, u32), u64>,
    /// Stacks as function names, outermost first, with their counts.
    stacks: FxHashMap<Vec<Rc<str>>, u64>,
}

/// The source frames of one code address, innermost first, each with its
/// function's name shared.
type Looked = Rc<Vec<(Rc<str>, SourceFrame)>>;

/// Source frames of code addresses, each looked up once.
struct Frames<'a> {
    symbols: &'a mut dyn SourceFrames,
    cache: FxHashMap<u64, Looked>,
}

impl Frames<'_> {
    /// The source frames at lookup address `pc`, innermost first.
    fn of(&mut self, pc: u64) -> Looked {
        let symbols = &mut *self.symbols;
        self.cache
            .entry(pc)
            .or_insert_with(|| {
                Rc::new(
                    symbols
                        .source_frames(pc)
                        .into_iter()
                        .map(|f| (Rc::from(f.function.as_str()), f))
                        .collect(),
                )
            })
            .clone()
    }
}

/// Puts the samples of `buffers` under the nodes of `merged`.
pub fn collect(
    buffers: &[&StackSamples],
    merged: &Merged,
    symbols: &mut dyn SourceFrames,
    clock: &Clock,
    (hz, signal): (u64, i32),
) -> StackView {
    let mut frames = Frames {
        symbols,
        cache: FxHashMap::default(),
    };
    let mut acc: FxHashMap<u32, Acc> = FxHashMap::default();
    // A thread sampled before it reached kprof has two buffers: it counts once.
    let mut tids: Vec<i32> = buffers
        .iter()
        .filter(|b| b.signals.load(std::sync::atomic::Ordering::Relaxed) > 0)
        .map(|b| b.tid)
        .collect();
    tids.sort_unstable();
    tids.dedup();
    let mut info = StackSamplesInfo {
        hz,
        signal,
        threads: tids.len() as u64,
        ..StackSamplesInfo::default()
    };
    let mut ticks = 0u64;
    let mut signals = 0u64;
    for b in buffers {
        info.samples += b.taken.load(std::sync::atomic::Ordering::Relaxed);
        info.lost += b.lost.load(std::sync::atomic::Ordering::Relaxed);
        info.truncated += b.truncated.load(std::sync::atomic::Ordering::Relaxed);
        ticks += b.handler_ticks.load(std::sync::atomic::Ordering::Relaxed);
        signals += b.signals.load(std::sync::atomic::Ordering::Relaxed);
        // A thread that never reached kprof has no call paths: its samples
        // are the root's.
        let map = b.thread.and_then(|t| merged.node_maps.get(&t));
        for e in b.entries() {
            let node = map
                .and_then(|m| m.get(e.node as usize).copied())
                .filter(|&n| (n as usize) < merged.tree.nodes.len())
                .unwrap_or(ROOT);
            let a = acc.entry(node).or_default();
            a.samples += e.count;
            // Outermost first; a return address is looked up at the call (one
            // byte before it), the interrupted instruction where it is.
            let mut names: Vec<Rc<str>> = Vec::with_capacity(e.frames.len());
            for (i, &addr) in e.frames.iter().enumerate().rev() {
                let pc = if i == 0 { addr } else { addr.wrapping_sub(1) };
                let f = frames.of(pc);
                names.extend(f.iter().rev().map(|(n, _)| n.clone()));
                if i == 0 {
                    if let Some((name, leaf)) = f.first() {
                        *a.functions.entry(name.to_string()).or_default() += e.count;
                        if let (Some(file), Some(line)) = (&leaf.file, leaf.line) {
                            *a.lines
                                .entry((name.to_string(), file.clone(), line))
                                .or_default() += e.count;
                        }
                    }
                }
            }
            *a.stacks.entry(names).or_default() += e.count;
        }
    }
    info.signals = signals;
    info.handler_ns_mean = clock.delta_ns(0, ticks) as f64 / signals.max(1) as f64;
    let mut by_node: FxHashMap<u32, NodeStackSamples> =
        acc.into_iter().map(|(n, a)| (n, finish(a))).collect();
    info.outside = by_node.remove(&ROOT).unwrap_or_default();
    StackView { info, by_node }
}

/// A node's samples as the profile writes them.
fn finish(a: Acc) -> NodeStackSamples {
    let mut functions: Vec<FunctionSamples> = a
        .functions
        .into_iter()
        .map(|(name, samples)| FunctionSamples { name, samples })
        .collect();
    functions.sort_by(|x, y| y.samples.cmp(&x.samples).then_with(|| x.name.cmp(&y.name)));
    functions.truncate(MAX_ROWS);
    let mut lines: Vec<LineSamples> = a
        .lines
        .into_iter()
        .map(|((function, file, line), samples)| LineSamples {
            function,
            file,
            line,
            samples,
        })
        .collect();
    lines.sort_by(|x, y| {
        y.samples
            .cmp(&x.samples)
            .then_with(|| (&x.file, x.line).cmp(&(&y.file, y.line)))
    });
    lines.truncate(MAX_ROWS);
    // The paths start at the deepest function every stack passes through (the
    // body a runtime ran: a kernel's functor, an OpenMP outlined region), each
    // stack at its last call of it; what the first stack has above it is the
    // context. Threads reach that body from different roots (the primary from
    // main, the workers from their start routine): this leaves those out.
    let stacks: Vec<(Vec<Rc<str>>, u64)> = a.stacks.into_iter().collect();
    let anchor: Option<Rc<str>> = stacks.first().and_then(|(first, _)| {
        first
            .iter()
            .rev()
            .find(|n| stacks.iter().all(|(s, _)| s.contains(n)))
            .cloned()
    });
    let start_of = |s: &[Rc<str>]| {
        anchor
            .as_ref()
            .and_then(|a| s.iter().rposition(|x| x == a))
            .unwrap_or(0)
    };
    let context = stacks
        .first()
        .map(|(s, _)| s[..start_of(s)].iter().map(|n| n.to_string()).collect())
        .unwrap_or_default();
    let mut roots: Vec<SamplePath> = Vec::new();
    for (s, count) in &stacks {
        add_path(&mut roots, &s[start_of(s)..], *count);
    }
    sort_paths(&mut roots);
    NodeStackSamples {
        samples: a.samples,
        functions,
        lines,
        context,
        paths: roots,
    }
}

/// Adds `count` samples of the stack `frames` (outermost first) to `level`.
fn add_path(mut level: &mut Vec<SamplePath>, frames: &[Rc<str>], count: u64) {
    for (i, name) in frames.iter().enumerate() {
        let at = match level.iter().position(|p| *p.name == **name) {
            Some(at) => at,
            None => {
                level.push(SamplePath {
                    name: name.to_string(),
                    samples: 0,
                    self_samples: 0,
                    children: Vec::new(),
                });
                level.len() - 1
            }
        };
        let p = &mut level[at];
        p.samples += count;
        if i + 1 == frames.len() {
            p.self_samples += count;
        }
        level = &mut p.children;
    }
}

fn sort_paths(level: &mut [SamplePath]) {
    level.sort_by(|x, y| y.samples.cmp(&x.samples).then_with(|| x.name.cmp(&y.name)));
    for p in level {
        sort_paths(&mut p.children);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<Rc<str>> {
        v.iter().map(|s| Rc::from(*s)).collect()
    }

    #[test]
    fn paths_start_at_the_last_shared_frame() {
        let mut a = Acc {
            samples: 10,
            ..Acc::default()
        };
        a.stacks
            .insert(names(&["main", "run", "kernel", "inner"]), 7);
        a.stacks
            .insert(names(&["main", "run", "kernel", "other"]), 2);
        a.stacks
            .insert(names(&["start_thread", "worker", "kernel", "other"]), 1);
        a.functions.insert("inner".into(), 7);
        a.functions.insert("other".into(), 3);
        let n = finish(a);
        assert!(
            n.context == ["main", "run"] || n.context == ["start_thread", "worker"],
            "{:?}",
            n.context
        );
        assert_eq!(n.paths.len(), 1);
        let k = &n.paths[0];
        assert_eq!(
            (k.name.as_str(), k.samples, k.self_samples),
            ("kernel", 10, 0)
        );
        assert_eq!(k.children[0].name, "inner");
        assert_eq!(k.children[0].samples, 7);
        assert_eq!(k.children[1].self_samples, 3);
        assert_eq!(n.functions[0].name, "inner");
    }
}
