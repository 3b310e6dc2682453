//! The profile: per-thread call-path trees ([`crate::hot::aggregate`], built in
//! place by the recording threads, or here by the writer from records), merged at
//! the end ([`merge`]), plus what only makes sense across threads in time order (memory
//! per space, sections), turned into a [`Report`].

pub mod gpu;
pub mod memory;
pub mod merge;
pub mod stacks;
pub mod tree_view;

use std::collections::BTreeMap;

use kprof_abi::Anomaly;
use rustc_hash::FxHashMap;

use crate::consume::concurrency::Category;
use crate::hot::aggregate::local::ThreadProfile;
use crate::hot::aggregate::series::{coalesce, Grid};
use crate::hot::aggregate::stats::Stats;
use crate::hot::nesting::{Consumer, DeviceActivity, Event, Global, SiteRef};
use crate::hot::runtime::Runtime;
use crate::output::report::{self, Report};
use memory::{Freed, Label, MemorySeries, Space};
use merge::Merged;

#[derive(Default)]
struct SectionStats {
    stats: Stats,
    open: Vec<u64>,
}

/// The profile under construction on the writer thread.
pub struct Profile {
    rt: &'static Runtime,
    /// Per-thread profiles built here from records (a trace is on), by thread
    /// index.
    threads: Vec<Option<Box<ThreadProfile>>>,
    spaces: FxHashMap<u32, Space>,
    /// Bytes in use per space over the run.
    memory_series: MemorySeries,
    /// What each allocation label id says about its owner (program or runtime).
    label_kinds: FxHashMap<u32, Label>,
    sections: FxHashMap<u32, SectionStats>,
    /// Site records (a trace is on) -> the launching thread and its node then
    /// (`None`: nothing was open).
    sites: FxHashMap<u64, Option<(u32, u32)>>,
    /// Device activities whose site record has not been seen yet (the launching
    /// thread's records come later than the vendor's buffer).
    pending: Vec<DeviceActivity>,
}

/// Device activities kept waiting for their site, at most: past this they go
/// to the root at once (counted).
const MAX_PENDING_ACTIVITIES: usize = 1 << 20;

impl Profile {
    /// An empty profile of `rt`.
    pub fn new(rt: &'static Runtime) -> Profile {
        Profile {
            rt,
            threads: Vec::new(),
            spaces: FxHashMap::default(),
            memory_series: MemorySeries::new(Grid::new(&rt.clock, rt.start_raw)),
            label_kinds: FxHashMap::default(),
            sections: FxHashMap::default(),
            sites: FxHashMap::default(),
            pending: Vec::new(),
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

    /// The profile of thread `index`, made on its first event.
    #[inline]
    fn thread(&mut self, index: u32) -> Option<&mut ThreadProfile> {
        let i = index as usize;
        if self.threads.get(i).is_none_or(Option::is_none) {
            let rt = self.rt;
            let slot = rt.threads.by_index(index)?;
            if self.threads.len() <= i {
                self.threads.resize_with(i + 1, || None);
            }
            let depth = rt.threads.depth();
            self.threads[i] = Some(Box::new(ThreadProfile::new(
                rt.shared(),
                (index, &slot.open),
                depth,
            )));
        }
        self.threads.get_mut(i)?.as_deref_mut()
    }

    /// The per-thread profiles built here, once the device activities still
    /// waiting for their site are placed (at the root when it never came).
    pub fn thread_profiles(&mut self) -> impl Iterator<Item = &mut ThreadProfile> {
        for a in std::mem::take(&mut self.pending) {
            let at = match a.site {
                SiteRef::Token(t) => self.sites.get(&t).copied(),
                _ => None,
            };
            if at.is_none() {
                self.rt.anomalies.count(Anomaly::UnknownCorrelation);
            }
            if let Some(t) = self.thread(a.thread) {
                t.activity(&a, at.flatten());
            }
        }
        self.threads.iter_mut().flatten().map(|b| &mut **b)
    }

    /// A device activity (from records): under its site's node once known.
    fn activity(&mut self, a: &DeviceActivity) {
        let at = match a.site {
            SiteRef::Root => None,
            SiteRef::Node { thread, node } => Some((thread, node)),
            SiteRef::Token(t) => match self.sites.get(&t) {
                Some(&at) => at,
                None if self.pending.len() < MAX_PENDING_ACTIVITIES => {
                    self.pending.push(*a);
                    return;
                }
                None => {
                    self.rt.anomalies.count(Anomaly::UnknownCorrelation);
                    None
                }
            },
        };
        if let Some(t) = self.thread(a.thread) {
            t.activity(a, at);
        }
    }
}

impl Consumer for Profile {
    #[inline]
    fn event(&mut self, ev: &Event<'_>) {
        let index = match *ev {
            Event::Begin(s) | Event::End(s, _) => s.thread,
            Event::Instant { thread, .. } | Event::Edge { thread, .. } => thread,
            Event::Activity(a) => return self.activity(a),
            Event::Site { thread, token, .. } => {
                let at = self
                    .thread(thread)
                    .and_then(|t| t.top())
                    .map(|(_, node)| (thread, node));
                self.sites.insert(token, at);
                return;
            }
        };
        if let Some(t) = self.thread(index) {
            t.event(ev);
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
                let s = self.spaces.entry(space).or_default();
                s.alloc_labelled(ts, label, kind, ptr, bytes);
                self.memory_series.set(space, ts, s.current);
            }
            Global::Free {
                space, label, ptr, ..
            } => {
                let kind = self.label_kind(label);
                let s = self.spaces.entry(space).or_default();
                let freed = s.free_labelled(ptr, kind);
                if freed == Freed::Known {
                    self.memory_series.set(space, ts, s.current);
                }
                if freed == Freed::Unknown {
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
    /// The profile's `over_time` section: `threads`, the threads' time per
    /// category summed on its grid ([`crate::consume::concurrency::series`]),
    /// and the bytes in use per space, both on one grid that spans the run;
    /// `None` when neither holds anything.
    pub fn over_time(
        &mut self,
        threads: (Grid, Vec<[u64; crate::consume::concurrency::CATEGORIES]>),
    ) -> Option<report::OverTime> {
        let rt = self.rt;
        let end = rt.end();
        let (tgrid, mut ticks) = threads;
        let grid = Grid::new(&rt.clock, rt.start_raw);
        let memory = std::mem::replace(&mut self.memory_series, MemorySeries::new(grid));
        let (grid, spaces) = memory.finish(end, tgrid.shift);
        for _ in tgrid.shift..grid.shift {
            coalesce(&mut ticks, |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            });
        }
        let n = grid.index(end) + 1;
        let busy = ticks.iter().flatten().any(|&t| t > 0);
        if !busy && spaces.is_empty() {
            return None;
        }
        // Mean threads: ticks over the bucket's ticks (the last one ends with
        // the run), to three decimals.
        let covered = |i: usize| {
            let (a, b) = (
                grid.start(i),
                grid.start(i + 1).min(end.max(grid.start(i) + 1)),
            );
            (b - a) as f64
        };
        let threads = if busy {
            Category::ALL
                .iter()
                .filter(|&&c| ticks.iter().any(|r| r[c as usize] > 0))
                .map(|&c| report::ThreadsOverTime {
                    category: c.as_str().into(),
                    mean: (0..n)
                        .map(|i| {
                            let t = ticks.get(i).map_or(0, |r| r[c as usize]);
                            (t as f64 / covered(i) * 1000.0).round() / 1000.0
                        })
                        .collect(),
                })
                .collect()
        } else {
            Vec::new()
        };
        let mut memory: Vec<report::MemoryOverTime> = spaces
            .into_iter()
            .map(|(space, max_bytes)| report::MemoryOverTime {
                space: rt.names.text(space),
                max_bytes,
            })
            .collect();
        memory.sort_by(|a, b| a.space.cmp(&b.space));
        Some(report::OverTime {
            bucket_ns: rt.clock.delta_ns(grid.origin, grid.start(1)),
            buckets: n as u32,
            threads,
            memory,
        })
    }

    fn section_known(&self, id: u32) -> bool {
        let n = self.rt.sections.lock().map(|s| s.len()).unwrap_or(0);
        let known = id >= 1 && id as usize <= n;
        if !known {
            self.rt.anomalies.count(Anomaly::UnknownSection);
        }
        known
    }

    /// Renders everything aggregated into a [`Report`]: `merged`, the threads'
    /// profiles as one, and what this profile kept across threads; all but the
    /// call-path tree, which the outputs read from `merged`
    /// ([`tree_view::MergedTree`]). `records`
    /// gives each thread index's processed record or event count.
    pub fn report(&self, merged: &Merged, records: &FxHashMap<u32, u64>) -> Report {
        let rt = self.rt;
        let text = |id: u32| rt.names.text(id);
        let devices = rt.devices.snapshot();
        let start = rt.start_raw;
        let end = rt.end();

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

        let mut events: Vec<report::EventCount> = merged
            .markers
            .iter()
            .map(|(&n, &count)| report::EventCount {
                name: text(n),
                count,
            })
            .collect();
        events.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));

        let mut deep_copies: Vec<report::DeepCopy> = merged
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

        let mut dual_views: Vec<report::DualView> = merged
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

        let mut edges: Vec<report::TaskEdge> = merged
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
            tasks: merged.task_graph.tasks() as u64,
            edges,
            unresolved_edges: merged.task_graph.unresolved,
        };

        let mut counters: Vec<report::Counter> = merged
            .counters
            .iter()
            .map(|(&n, c)| report::Counter {
                name: text(n),
                count: c.count,
                min: c.min,
                max: c.max,
                mean: c.sum / c.count.max(1) as f64,
                last: c.last,
            })
            .collect();
        counters.sort_by(|a, b| a.name.cmp(&b.name));

        let start_ns = rt.clock.to_ns(start);
        let end_ns = rt.clock.to_ns(end);
        let gpu = gpu::section(
            merged,
            &memory,
            &devices,
            &text,
            end_ns.saturating_sub(start_ns),
        );
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
                // Never after kprof's start (the kernel's start time is in ticks).
                process_start_ns: rt.process.start_ns.map(|p| p.min(start_ns)),
                process_run_ns: rt
                    .process
                    .start_ns
                    .map(|p| end_ns.saturating_sub(p.min(start_ns))),
            },
            plugins: rt.plugins.lock().map(|p| p.clone()).unwrap_or_default(),
            threads,
            // Written from `merged` by the outputs (see `tree_view`).
            tree: Vec::new(),
            sections,
            events,
            deep_copies,
            memory,
            dual_views,
            metadata,
            anomalies,
            anomaly_notes: rt.anomalies.notes(),
            dropped_records,
            task_graph,
            counters,
            kprof: report::SelfCost::default(),
            gpu,
            hardware_counters: hardware_counters(rt),
            messages: messages(merged, &text),
            // The writer adds the sampler's section.
            system: None,
            stack_samples: None,
            concurrency: None,
            // The writer adds it (`Profile::over_time`).
            over_time: None,
            extensions: crate::base::extensions::all()
                .into_iter()
                .map(|e| (e.name, e.json))
                .collect(),
            extension_summaries: crate::base::extensions::all()
                .into_iter()
                .map(|e| e.summary)
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

/// The message matrices' rows of this process: per channel and direction, by
/// peer, channels and peers in order.
fn messages(merged: &Merged, text: &dyn Fn(u32) -> String) -> Vec<report::MessageChannel> {
    let mut rows: BTreeMap<(String, u8), Vec<report::MessagePeer>> = BTreeMap::new();
    for (&(channel, direction, peer), m) in &merged.messages {
        rows.entry((text(channel), direction))
            .or_default()
            .push(report::MessagePeer {
                peer,
                count: m.count,
                bytes: m.bytes,
            });
    }
    rows.into_iter()
        .map(|((channel, direction), mut peers)| {
            peers.sort_by_key(|p| p.peer);
            report::MessageChannel {
                channel,
                direction: if direction == kprof_abi::message::RECEIVE {
                    "receive".into()
                } else {
                    "send".into()
                },
                count: peers.iter().map(|p| p.count).sum(),
                bytes: peers.iter().map(|p| p.bytes).sum(),
                peers,
            }
        })
        .collect()
}

/// The run's counters section: absent when none were asked for.
fn hardware_counters(rt: &Runtime) -> Option<report::HardwareCounters> {
    if rt.counters.is_none() && rt.counter_problems.is_empty() {
        return None;
    }
    let c = rt.counters.as_ref();
    Some(report::HardwareCounters {
        source: c.map_or(String::new(), |c| format!("PAPI {}", c.version())),
        events: c.map_or(Vec::new(), |c| c.names.clone()),
        kinds: crate::hot::runtime::config().counter_kinds.clone(),
        multiplexed: c.is_some_and(|c| c.multiplexed),
        problems: rt.counter_problems.clone(),
    })
}
