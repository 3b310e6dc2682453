//! The merged call-path tree as the outputs read it ([`CallTree`]): each node's
//! report fields are made when the walk reaches it, so the profile files and the
//! summary never hold a second copy of a tree of a million call paths; the flat
//! view is added up by name ids, and only the rows shown get their text.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use super::merge::Merged;
use crate::base::devices::Device;
use crate::hot::aggregate::tree::ROOT;
use crate::hot::runtime::Runtime;
use crate::output::calltree::CallTree;
use crate::output::flat::{self, device_text, FlatRow, FlatTop, NodeFigures};
use crate::output::report::{self, TreeNode};
use crate::output::stack_samples::NodeStackSamples;
use crate::output::taskgraph::{self, LongestWork};

/// The merged tree of `rt`'s threads, read by the outputs.
pub struct MergedTree<'a> {
    merged: &'a Merged,
    rt: &'a Runtime,
    devices: Vec<Device>,
    counter_names: &'a [String],
    /// Per node, whether its instance samples are written (the longest paths').
    samples_shown: Vec<bool>,
    /// Call-stack samples by merged node (`KPROF_SAMPLE_HZ`).
    stacks: Option<&'a FxHashMap<u32, NodeStackSamples>>,
}

impl<'a> MergedTree<'a> {
    /// The view of `merged`, whose names and devices are `rt`'s.
    pub fn new(merged: &'a Merged, rt: &'a Runtime) -> Self {
        MergedTree {
            merged,
            rt,
            devices: rt.devices.snapshot(),
            counter_names: rt.counters.as_ref().map_or(&[][..], |c| &c.names[..]),
            samples_shown: crate::output::samples::shown(&merged.tree),
            stacks: None,
        }
    }

    /// The view, with each node's call-stack samples from `stacks`.
    pub fn with_stacks(self, stacks: Option<&'a FxHashMap<u32, NodeStackSamples>>) -> Self {
        MergedTree { stacks, ..self }
    }

    /// Calls `visit(depth, node id)` depth first, parents before children.
    fn walk_ids(&self, mut visit: impl FnMut(usize, u32)) {
        let nodes = &self.merged.tree.nodes;
        let mut todo: Vec<(usize, u32)> = nodes[ROOT as usize]
            .children
            .iter()
            .rev()
            .map(|&c| (0, c))
            .collect();
        while let Some((depth, n)) = todo.pop() {
            visit(depth, n);
            todo.extend(
                nodes[n as usize]
                    .children
                    .iter()
                    .rev()
                    .map(|&c| (depth + 1, c)),
            );
        }
    }

    /// The device label of device index `dev` (0: none), as the tables show it.
    fn device_label(&self, dev: u16) -> Cow<'static, str> {
        let d = usize::from(dev)
            .checked_sub(1)
            .and_then(|i| self.devices.get(i));
        match d {
            Some(d) => Cow::Owned(
                device_text(Some(&d.label()), Some(d.index), Some(d.instance)).into_owned(),
            ),
            None => Cow::Borrowed(""),
        }
    }
}

impl CallTree for MergedTree<'_> {
    fn walk(&self, visit: &mut dyn FnMut(usize, &TreeNode)) {
        self.walk_ids(|depth, n| visit(depth, &self.node(n, true)));
    }

    fn walk_without_samples(&self, visit: &mut dyn FnMut(usize, &TreeNode)) {
        self.walk_ids(|depth, n| visit(depth, &self.node(n, false)));
    }

    fn has_kind(&self, kinds: &[&str]) -> bool {
        let nodes = &self.merged.tree.nodes;
        // Node 0 is the root, of no kind.
        nodes
            .iter()
            .skip(1)
            .any(|n| kinds.contains(&n.kind.as_str()))
    }

    fn has_teams(&self) -> bool {
        let nodes = &self.merged.tree.nodes;
        nodes.iter().any(|n| !n.per_thread().is_empty())
    }

    fn longest_work(&self, top: usize) -> Option<LongestWork> {
        let nodes = &self.merged.tree.nodes;
        Some(taskgraph::longest_work(
            nodes.len(),
            |visit| self.walk_ids(visit),
            |n| {
                let x = &nodes[n as usize];
                (x.kind, x.name)
            },
            |n| nodes[n as usize].stats.total_ns,
            top,
        ))
    }

    fn flat_top(&self, top: usize) -> FlatTop<'_> {
        let nodes = &self.merged.tree.nodes;
        let mut rows = flat::rows_by_key(
            nodes.len(),
            |visit| self.walk_ids(visit),
            |n| {
                let x = &nodes[n as usize];
                (x.name, x.kind, x.dev)
            },
            |n| {
                let x = &nodes[n as usize];
                let s = &x.stats;
                NodeFigures {
                    count: s.count,
                    total_ns: s.total_ns,
                    self_ns: s.self_ns,
                    min_ns: s.min(),
                    max_ns: s.max_ns,
                    threads: x.per_thread().len() as u32,
                }
            },
        );
        let is_work = |kind: &str| kind != "fence" && !flat::is_device_kind(kind);
        // First the exclusive time of every row of work, to find the top-th...
        let mut selfs = Vec::new();
        rows(&mut |(_, kind, _), t| {
            if is_work(kind.as_str()) {
                selfs.push(t.self_ns);
            }
        });
        let work_rows = selfs.len();
        let least = match top {
            0 => u64::MAX,
            _ if work_rows > top => *selfs.select_nth_unstable_by(top - 1, |a, b| b.cmp(a)).1,
            _ => 0,
        };
        drop(selfs);
        // ...then the rows that may be among the top ones (ties are ordered by
        // their text, which only these get) and the fences.
        let (mut work, mut fences) = (Vec::new(), Vec::new());
        rows(&mut |(name, kind, dev), t| {
            let kind = kind.as_str();
            let into = match kind {
                "fence" => &mut fences,
                k if is_work(k) && t.self_ns >= least => &mut work,
                _ => return,
            };
            into.push(FlatRow::new(
                Cow::Owned(self.rt.names.text(name)),
                kind,
                self.device_label(dev),
                t,
            ));
        });
        FlatTop::of_candidates(work, work_rows, fences, top)
    }
}

/// A node's counter totals by event name, with the rates derived from them.
fn node_counters(
    c: &crate::hot::aggregate::tree::NodeCounters,
    names: &[String],
    total_ns: u64,
) -> report::NodeCounters {
    let seconds = total_ns as f64 / 1e9;
    let events: std::collections::BTreeMap<String, report::CounterTotal> = names
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let inclusive = c.inclusive[k];
            let per_second = if seconds > 0.0 {
                inclusive as f64 / seconds
            } else {
                0.0
            };
            let total = report::CounterTotal {
                inclusive,
                exclusive: c.exclusive[k],
                per_second,
            };
            (name.clone(), total)
        })
        .collect();
    let ipc = match (events.get("PAPI_TOT_INS"), events.get("PAPI_TOT_CYC")) {
        (Some(i), Some(c)) if c.inclusive > 0 => Some(i.inclusive as f64 / c.inclusive as f64),
        _ => None,
    };
    report::NodeCounters {
        instances: c.instances,
        events,
        ipc,
    }
}

impl MergedTree<'_> {
    /// The report node of merged node `n`, without its children; with its
    /// instance samples when `samples` (and it is among the shown).
    fn node(&self, n: u32, samples: bool) -> TreeNode {
        let text = |id: u32| self.rt.names.text(id);
        let devices = &self.devices;
        let counter_names = self.counter_names;
        let node = &self.merged.tree.nodes[n as usize];
        let dev = usize::from(node.dev)
            .checked_sub(1)
            .and_then(|i| devices.get(i));
        let s = &node.stats;
        let threads = (!node.per_thread().is_empty()).then(|| {
            let totals: Vec<u64> = node.per_thread().iter().map(|&(_, t)| t).collect();
            let (min, max) = (
                totals.iter().copied().min().unwrap_or(0),
                totals.iter().copied().max().unwrap_or(0),
            );
            let mean = totals.iter().sum::<u64>() as f64 / totals.len() as f64;
            Box::new(report::ThreadSpread {
                threads: totals.len() as u32,
                min_ns: min,
                max_ns: max,
                mean_ns: mean,
                imbalance: if mean > 0.0 { max as f64 / mean } else { 1.0 },
            })
        });
        let args = node
            .args()
            .iter()
            .map(|&(k, min, max)| (text(k), report::ArgRange { min, max }))
            .collect();
        let counters = node
            .counters()
            .map(|c| Box::new(node_counters(c, counter_names, s.total_ns)));
        TreeNode {
            name: self.rt.names.text_ref(node.name),
            kind: Cow::Borrowed(node.kind.as_str()),
            threads,
            args,
            counters,
            device: dev.map(|d| d.label()),
            device_index: dev.map(|d| d.index),
            instance: dev.map(|d| d.instance),
            count: s.count,
            total_ns: s.total_ns,
            self_ns: s.self_ns,
            min_ns: s.min(),
            max_ns: s.max_ns,
            mean_ns: s.mean(),
            stddev_ns: s.stddev(),
            samples: node
                .samples()
                .filter(|_| samples && self.samples_shown[n as usize])
                .map(|r| {
                    Box::new(crate::output::samples::report(
                        r,
                        &self.rt.clock,
                        self.rt.start_raw,
                    ))
                }),
            stack_samples: self
                .stacks
                .and_then(|s| s.get(&n))
                .map(|s| Box::new(s.clone())),
            children: Vec::new(),
        }
    }
}
