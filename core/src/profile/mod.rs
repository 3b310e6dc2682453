//! Profile aggregation: a [`Consumer`] of resolved events that builds the call-path
//! tree, memory per space, copies, sections, markers and dual-view counts, and turns
//! them into a [`Report`].

pub mod memory;
pub mod stats;
pub mod task_graph;
pub mod tree;

use std::collections::BTreeMap;

use kprof_abi::{Anomaly, Kind};
use rustc_hash::FxHashMap;

use crate::report::{self, Report, TreeNode};
use crate::resolve::{Consumer, Event, Global};
use crate::runtime::Runtime;
use memory::{Freed, Label, Space};
use stats::Stats;
use task_graph::TaskGraph;
use tree::{Tree, ROOT};

/// An open slice as the profile tracks it.
struct Frame {
    guid: u64,
    node: u32,
    begin: u64,
    child_ns: u64,
    copy: Option<CopyKey>,
    /// The last child looked up under this frame: runtimes launch the same kernel
    /// in the same place again and again, so this saves most tree lookups.
    last_child: ChildCache,
    /// Deeper than the depth cap: its time is inside the frame at the cap and is
    /// counted there only.
    capped: bool,
}

/// (packed key, node) of the last child looked up; key 0 is empty.
type ChildCache = (u64, u32);

fn child_key(name: u32, kind: Kind, dev: u16) -> u64 {
    1 << 63 | u64::from(dev) << 40 | (kind as u64) << 32 | u64::from(name)
}

/// (dst space, dst label, src space, src label) name ids.
type CopyKey = (u32, u32, u32, u32);

#[derive(Default)]
struct CopyStats {
    count: u64,
    bytes: u64,
    total_ns: u64,
}

#[derive(Default)]
struct SectionStats {
    stats: Stats,
    open: Vec<u64>,
}

/// The profile under construction.
pub struct Profile {
    rt: &'static Runtime,
    /// Deepest call path kept (`KPROF_MAX_DEPTH`).
    max_depth: usize,
    tree: Tree,
    /// Open frames per thread index.
    stacks: Vec<Vec<Frame>>,
    /// Last root-level child per thread index.
    roots: Vec<ChildCache>,
    copy_names: FxHashMap<(u32, u32), u32>,
    copies: FxHashMap<CopyKey, CopyStats>,
    markers: FxHashMap<u32, u64>,
    dual_views: FxHashMap<u32, [u64; 4]>,
    spaces: FxHashMap<u32, Space>,
    /// What each allocation label id says about its owner (program or runtime).
    label_kinds: FxHashMap<u32, Label>,
    sections: FxHashMap<u32, SectionStats>,
    task_graph: TaskGraph,
    /// User counters: name id -> (count, min, max, sum, last).
    counters: FxHashMap<u32, (u64, f64, f64, f64, f64)>,
}

impl Profile {
    /// An empty profile of `rt`.
    pub fn new(rt: &'static Runtime) -> Profile {
        Profile {
            rt,
            max_depth: crate::runtime::config().max_depth as usize,
            tree: Tree::default(),
            stacks: Vec::new(),
            roots: Vec::new(),
            copy_names: FxHashMap::default(),
            copies: FxHashMap::default(),
            markers: FxHashMap::default(),
            dual_views: FxHashMap::default(),
            spaces: FxHashMap::default(),
            label_kinds: FxHashMap::default(),
            sections: FxHashMap::default(),
            task_graph: TaskGraph::default(),
            counters: FxHashMap::default(),
        }
    }

    /// What allocation label `label` says about its owner (looked up once per label).
    fn label_kind(&mut self, label: u32) -> Label {
        let rt = self.rt;
        *self
            .label_kinds
            .entry(label)
            .or_insert_with(|| Label::of(&rt.names.text(label)))
    }

    /// The name id of a copy's node, `"<dst_label> <- <src_label>"`.
    fn copy_name(&mut self, dst_label: u32, src_label: u32) -> u32 {
        let rt = self.rt;
        *self
            .copy_names
            .entry((dst_label, src_label))
            .or_insert_with(|| {
                let text = format!(
                    "{} <- {}",
                    rt.names.text(dst_label),
                    rt.names.text(src_label)
                );
                rt.names.intern(text.as_bytes(), &rt.anomalies).0
            })
    }
}

impl Consumer for Profile {
    #[inline]
    fn event(&mut self, ev: &Event<'_>) {
        match *ev {
            Event::Begin(s) => {
                if s.kind == Kind::OmpTaskCreate {
                    self.task_graph.task(s.guid, s.name);
                }
                let (name, copy) = match (s.copy, s.transfer) {
                    (Some(c), _) => (
                        self.copy_name(s.name, c.src_label),
                        Some((c.dst_space, s.name, c.src_space, c.src_label)),
                    ),
                    (None, Some(t)) => (s.name, self.transfer_key(s, t)),
                    (None, None) => (s.name, None),
                };
                let t = s.thread as usize;
                if self.stacks.len() <= t {
                    self.stacks.resize_with(t + 1, Vec::new);
                    self.roots.resize(t + 1, (0, 0));
                }
                let key = child_key(name, s.kind, s.dev);
                // An explicit parent (on another thread) places the node under the
                // parent's while it is open; the time still counts on this thread.
                let remote = if s.parent != 0 {
                    self.open_frame(s.parent)
                } else {
                    None
                };
                // Deepest call path kept (runaway recursion, or a runtime that never
                // ends what it begins): deeper instances are counted, and their time
                // stays in the node at the cap, so the tree stays bounded and no
                // total exceeds the time spent.
                let capped = remote.is_none() && self.stacks[t].len() >= self.max_depth;
                let node = if capped {
                    self.rt.anomalies.count(Anomaly::BeyondMaxDepth);
                    self.stacks[t][self.max_depth - 1].node
                } else {
                    // The parent's cache of its last child: a remote parent's too (the
                    // implicit tasks of one region share their node).
                    let (parent, cache) = match remote {
                        Some((pt, i)) => {
                            let f = &mut self.stacks[pt][i];
                            (f.node, &mut f.last_child)
                        }
                        None => match self.stacks[t].last_mut() {
                            Some(f) => (f.node, &mut f.last_child),
                            None => (ROOT, &mut self.roots[t]),
                        },
                    };
                    if cache.0 == key {
                        cache.1
                    } else {
                        let n = self.tree.child(parent, name, s.kind, s.dev);
                        *cache = (key, n);
                        n
                    }
                };
                let copy = copy.filter(|_| !capped);
                if let Some(key) = copy {
                    let c = self.copies.entry(key).or_default();
                    c.count += 1;
                    c.bytes += s
                        .copy
                        .map(|c| c.bytes)
                        .or(s.transfer.map(|t| t.bytes))
                        .unwrap_or(0);
                }
                self.stacks[t].push(Frame {
                    guid: s.guid,
                    node,
                    begin: s.begin,
                    child_ns: 0,
                    copy,
                    last_child: (0, 0),
                    capped,
                });
            }
            Event::End(s, end) => {
                let Some(stack) = self.stacks.get_mut(s.thread as usize) else {
                    return;
                };
                let Some(f) = stack.pop() else {
                    return;
                };
                if f.capped {
                    return;
                }
                if s.end_lost {
                    // Closed where recording resumed, not where it ended: a duration
                    // that would be wrong by up to the whole gap. Counted, not timed.
                    self.rt.anomalies.count(Anomaly::EndLost);
                    return;
                }
                let dur = self.rt.clock.delta_ns(f.begin, end);
                let node = &mut self.tree.nodes[f.node as usize];
                node.stats.add(dur, dur.saturating_sub(f.child_ns));
                if s.kind.model() == "openmp" {
                    node.add_thread_time(s.thread, dur);
                }
                for &(key, value) in s.args() {
                    node.add_arg(key, value);
                }
                if let Some(parent) = stack.last_mut() {
                    parent.child_ns += dur;
                }
                if let Some(key) = f.copy {
                    self.copies.entry(key).or_default().total_ns += dur;
                }
            }
            Event::Edge { from, to, .. } => self.task_graph.edge(from, to),
            Event::Instant {
                kind, name, a, b, ..
            } => match kind {
                Kind::UserCounter => {
                    let v = f64::from_bits(a);
                    if v.is_finite() {
                        let c = self.counters.entry(name).or_insert((
                            0,
                            f64::INFINITY,
                            f64::NEG_INFINITY,
                            0.0,
                            0.0,
                        ));
                        *c = (c.0 + 1, c.1.min(v), c.2.max(v), c.3 + v, v);
                    }
                }
                Kind::DualViewSync | Kind::DualViewModify => {
                    let c = self.dual_views.entry(name).or_default();
                    let on_device = b != 0;
                    let i = match (kind, on_device) {
                        (Kind::DualViewSync, true) => 0,
                        (Kind::DualViewSync, false) => 1,
                        (_, true) => 2,
                        (_, false) => 3,
                    };
                    c[i] += 1;
                }
                _ => *self.markers.entry(name).or_default() += 1,
            },
        }
    }

    fn global(&mut self, ts: u64, ev: &Global) {
        let anomalies = &self.rt.anomalies;
        match *ev {
            Global::Alloc {
                space,
                label,
                ptr,
                bytes,
            } => {
                let kind = self.label_kind(label);
                self.spaces
                    .entry(space)
                    .or_default()
                    .alloc_labelled(ts, label, kind, ptr, bytes)
            }
            Global::Free {
                space, label, ptr, ..
            } => {
                let kind = self.label_kind(label);
                if self
                    .spaces
                    .entry(space)
                    .or_default()
                    .free_labelled(ptr, kind)
                    == Freed::Unknown
                {
                    anomalies.count(Anomaly::UnknownFree);
                }
            }
            Global::SectionStart(id) => {
                if self.section_known(id) {
                    self.sections.entry(id).or_default().open.push(ts);
                }
            }
            Global::SectionStop(id) => {
                let start = self.sections.get_mut(&id).and_then(|s| s.open.pop());
                match start {
                    Some(start) => {
                        let dur = self.rt.clock.delta_ns(start, ts);
                        if let Some(s) = self.sections.get_mut(&id) {
                            s.stats.add(dur, dur);
                        }
                    }
                    None => anomalies.count(Anomaly::UnknownSection),
                }
            }
        }
    }
}

impl Profile {
    /// The copy-table key of a device transfer: to the device (direction 1) or from
    /// it (2), between "Host" and the device, labelled with the transfer's name.
    fn transfer_key(
        &mut self,
        s: &crate::resolve::Slice,
        t: crate::resolve::Transfer,
    ) -> Option<CopyKey> {
        let rt = self.rt;
        let intern = |text: &str| rt.names.intern(text.as_bytes(), &rt.anomalies).0;
        let device = rt
            .devices
            .get(s.dev)
            .map_or_else(|| "Device".to_string(), |d| d.label());
        let (host, device) = (intern("Host"), intern(&device));
        match t.direction {
            1 => Some((device, s.name, host, s.name)),
            2 => Some((host, s.name, device, s.name)),
            _ => None,
        }
    }

    /// Where the open instance `guid` is: its thread (in the GUID) and its index
    /// in that thread's stack.
    fn open_frame(&self, guid: u64) -> Option<(usize, usize)> {
        let thread = (guid >> crate::thread::GUID_SEQ_BITS) as usize;
        let i = self
            .stacks
            .get(thread)?
            .iter()
            .rposition(|f| f.guid == guid)?;
        Some((thread, i))
    }

    fn section_known(&self, id: u32) -> bool {
        let n = self.rt.sections.lock().map(|s| s.len()).unwrap_or(0);
        let known = id >= 1 && id as usize <= n;
        if !known {
            self.rt.anomalies.count(Anomaly::UnknownSection);
        }
        known
    }

    /// Renders everything aggregated into a [`Report`]. `records` gives each thread
    /// index's processed record count.
    pub fn report(&self, records: &FxHashMap<u32, u64>) -> Report {
        let rt = self.rt;
        let text = |id: u32| rt.names.text(id);
        let devices = rt.devices.snapshot();
        let start = rt.start_raw;
        let end = rt.end();

        let tree = self.tree.nodes[ROOT as usize]
            .children
            .iter()
            .map(|&c| self.tree_node(c, &text, &devices))
            .collect();

        // One row per section name, as regions are: a section created again and
        // again (inside a loop) is one section; its row keeps the first id.
        let mut sections: Vec<report::Section> = {
            let names = rt.sections.lock().map(|s| s.clone()).unwrap_or_default();
            let mut ids: Vec<u32> = self.sections.keys().copied().collect();
            ids.sort_unstable();
            let mut by_name: FxHashMap<Option<u32>, (u32, Stats)> = FxHashMap::default();
            for id in ids {
                let name = names.get(id as usize - 1).copied();
                let row = by_name.entry(name).or_insert((id, Stats::default()));
                row.1.merge(&self.sections[&id].stats);
            }
            by_name
                .into_iter()
                .map(|(name, (id, s))| report::Section {
                    id,
                    name: name.map_or_else(|| "<unknown>".into(), text),
                    count: s.count,
                    total_ns: s.total_ns,
                    min_ns: s.min(),
                    max_ns: s.max_ns,
                })
                .collect()
        };
        sections.sort_by_key(|s| s.id);

        let mut events: Vec<report::EventCount> = self
            .markers
            .iter()
            .map(|(&n, &count)| report::EventCount {
                name: text(n),
                count,
            })
            .collect();
        events.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));

        let mut deep_copies: Vec<report::DeepCopy> = self
            .copies
            .iter()
            .map(|(&(ds, dl, ss, sl), c)| report::DeepCopy {
                dst_space: text(ds),
                dst_label: text(dl),
                src_space: text(ss),
                src_label: text(sl),
                count: c.count,
                bytes: c.bytes,
                total_ns: c.total_ns,
            })
            .collect();
        deep_copies.sort_by(|a, b| {
            b.bytes
                .cmp(&a.bytes)
                .then_with(|| a.dst_label.cmp(&b.dst_label))
        });

        let mut memory: Vec<report::MemorySpace> = self
            .spaces
            .iter()
            .map(|(&space, s)| {
                let mut leaks: Vec<(u64, u32, u64)> =
                    s.leaks().map(|(p, l)| (l.bytes, l.label, p)).collect();
                leaks.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
                report::MemorySpace {
                    space: text(space),
                    allocations: s.allocations,
                    deallocations: s.deallocations,
                    current_bytes: s.current,
                    high_water_bytes: s.high_water,
                    high_water_ns: rt.clock.delta_ns(start, s.high_water_ts),
                    largest: s
                        .largest
                        .iter()
                        .map(|&(bytes, l)| report::Allocation {
                            label: text(l),
                            bytes,
                            address: None,
                        })
                        .collect(),
                    leaks: leaks
                        .into_iter()
                        .map(|(bytes, l, p)| report::Allocation {
                            label: text(l),
                            bytes,
                            address: Some(format!("{p:#x}")),
                        })
                        .collect(),
                }
            })
            .collect();
        memory.sort_by(|a, b| a.space.cmp(&b.space));

        let mut dual_views: Vec<report::DualView> = self
            .dual_views
            .iter()
            .map(|(&l, c)| report::DualView {
                label: text(l),
                sync_to_device: c[0],
                sync_to_host: c[1],
                modify_on_device: c[2],
                modify_on_host: c[3],
            })
            .collect();
        dual_views.sort_by(|a, b| a.label.cmp(&b.label));

        let slots = rt.threads.snapshot();
        let threads = slots
            .iter()
            .map(|s| report::ThreadInfo {
                index: s.index,
                tid: s.tid,
                name: s.name(),
                records: records.get(&s.index).copied().unwrap_or(0),
            })
            .collect();
        let dropped_records = slots
            .iter()
            .map(|s| s.dropped.load(std::sync::atomic::Ordering::Relaxed))
            .sum();

        let metadata: BTreeMap<String, String> = rt
            .metadata
            .lock()
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default();
        let caught = kprof_abi::guard::take_caught();
        if caught > 0 {
            rt.anomalies.add(Anomaly::InternalError, caught);
        }
        // Frees of unknown `[unlabeled]` blocks that no runtime allocation replaced
        // are unknown frees after all (see memory.rs).
        let unmatched: u64 = self.spaces.values().map(Space::unmatched_frees).sum();
        let anomalies = rt
            .anomalies
            .snapshot()
            .into_iter()
            .map(|(a, n)| {
                let n = if a == Anomaly::UnknownFree {
                    n + unmatched
                } else {
                    n
                };
                (a.key().to_string(), n)
            })
            .collect();

        let mut edges: Vec<report::TaskEdge> = self
            .task_graph
            .edges
            .iter()
            .map(|(&(f, t), &count)| report::TaskEdge {
                from: text(f),
                to: text(t),
                count,
            })
            .collect();
        edges.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
        let task_graph = report::TaskGraph {
            tasks: self.task_graph.tasks() as u64,
            edges,
            unresolved_edges: self.task_graph.unresolved,
        };

        let mut counters: Vec<report::Counter> = self
            .counters
            .iter()
            .map(|(&n, &(count, min, max, sum, last))| report::Counter {
                name: text(n),
                count,
                min,
                max,
                mean: sum / count.max(1) as f64,
                last,
            })
            .collect();
        counters.sort_by(|a, b| a.name.cmp(&b.name));

        let start_ns = rt.clock.to_ns(start);
        let end_ns = rt.clock.to_ns(end);
        Report {
            schema: report::SCHEMA.into(),
            kprof_version: env!("CARGO_PKG_VERSION").into(),
            program: report::Program {
                executable: rt.process.executable.clone(),
                pid: rt.process.pid,
                host: rt.process.host.clone(),
                rank: rt.process.rank,
            },
            clock: report::ClockInfo {
                source: rt.clock.source().as_str().into(),
                domain: "CLOCK_MONOTONIC".into(),
                start_ns,
                end_ns,
                duration_ns: end_ns.saturating_sub(start_ns),
            },
            plugins: rt.plugins.lock().map(|p| p.clone()).unwrap_or_default(),
            threads,
            tree,
            sections,
            events,
            deep_copies,
            memory,
            dual_views,
            metadata,
            anomalies,
            dropped_records,
            task_graph,
            counters,
            kprof: report::SelfCost::default(),
        }
    }

    fn tree_node(
        &self,
        n: u32,
        text: &dyn Fn(u32) -> String,
        devices: &[crate::devices::Device],
    ) -> TreeNode {
        let node = &self.tree.nodes[n as usize];
        let dev = usize::from(node.dev)
            .checked_sub(1)
            .and_then(|i| devices.get(i));
        let s = &node.stats;
        let threads = (!node.per_thread.is_empty()).then(|| {
            let totals: Vec<u64> = node.per_thread.iter().map(|&(_, t)| t).collect();
            let (min, max) = (
                totals.iter().copied().min().unwrap_or(0),
                totals.iter().copied().max().unwrap_or(0),
            );
            let mean = totals.iter().sum::<u64>() as f64 / totals.len() as f64;
            report::ThreadSpread {
                threads: totals.len() as u32,
                min_ns: min,
                max_ns: max,
                mean_ns: mean,
                imbalance: if mean > 0.0 { max as f64 / mean } else { 1.0 },
            }
        });
        let args = node
            .args
            .iter()
            .map(|&(k, min, max)| (text(k), report::ArgRange { min, max }))
            .collect();
        TreeNode {
            name: text(node.name),
            kind: node.kind.as_str().into(),
            threads,
            args,
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
            children: node
                .children
                .iter()
                .map(|&c| self.tree_node(c, text, devices))
                .collect(),
        }
    }
}
