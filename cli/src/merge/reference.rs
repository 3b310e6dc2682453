//! The in-memory merge `kprof merge` did before it streamed (every rank's report
//! loaded at once, per-rank arrays for every value), kept for the tests as the
//! reference the streaming merge must agree with.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kprof_core::output::report::{Report, SelfCost, TreeNode};
use kprof_core::output::stack_samples::{NodeStackSamples, SamplePath};
use kprof_core::reduce::MERGED_SCHEMA;
use serde_json::{json, Map, Value};

use crate::path_text::show;

/// Statistics of one value over ranks (ranks without the node count as 0).
fn stats(values: &[u64]) -> Value {
    let n = values.len().max(1) as f64;
    let sum: u64 = values.iter().sum();
    let min = values.iter().copied().min().unwrap_or(0);
    let max = values.iter().copied().max().unwrap_or(0);
    let mean = sum as f64 / n;
    let imbalance = if mean > 0.0 { max as f64 / mean } else { 1.0 };
    json!({"min": min, "mean": mean, "max": max, "sum": sum, "imbalance": imbalance})
}

/// A node merged over ranks: per-rank values by rank position.
struct Merged {
    name: String,
    kind: String,
    device: Option<String>,
    device_index: Option<u32>,
    instance: Option<u32>,
    count: Vec<u64>,
    total: Vec<u64>,
    self_ns: Vec<u64>,
    min: Option<u64>,
    max: u64,
    present: Vec<bool>,
    /// Per counter event: inclusive and exclusive counts by rank.
    counters: BTreeMap<String, (Vec<u64>, Vec<u64>)>,
    /// Call-stack samples by rank, where any rank had some.
    samples: Option<Samples>,
    children: Vec<Merged>,
}

/// Call-stack samples by rank: in all, by function, by (function, file, line);
/// and the call paths below the node by their names from the first frame of
/// their context, (samples, self samples) summed.
struct Samples {
    all: Vec<u64>,
    functions: BTreeMap<String, Vec<u64>>,
    lines: BTreeMap<(String, String, u32), Vec<u64>>,
    paths: BTreeMap<Vec<String>, (u64, u64)>,
}

impl Samples {
    fn new(ranks: usize) -> Samples {
        Samples {
            all: vec![0; ranks],
            functions: BTreeMap::new(),
            lines: BTreeMap::new(),
            paths: BTreeMap::new(),
        }
    }

    fn add(&mut self, s: &NodeStackSamples, rank: usize) {
        let ranks = self.all.len();
        self.all[rank] += s.samples;
        for f in &s.functions {
            self.functions
                .entry(f.name.clone())
                .or_insert_with(|| vec![0; ranks])[rank] += f.samples;
        }
        for l in &s.lines {
            self.lines
                .entry((l.function.clone(), l.file.clone(), l.line))
                .or_insert_with(|| vec![0; ranks])[rank] += l.samples;
        }
        // The context's frames hold every sample of the paths below them.
        let below: u64 = s.paths.iter().map(|p| p.samples).sum();
        let mut above = Vec::new();
        if !s.paths.is_empty() {
            for f in &s.context {
                above.push(f.clone());
                self.paths.entry(above.clone()).or_default().0 += below;
            }
        }
        self.add_paths(&s.paths, &mut above);
    }

    fn add_paths(&mut self, list: &[SamplePath], above: &mut Vec<String>) {
        for p in list {
            above.push(p.name.clone());
            let e = self.paths.entry(above.clone()).or_default();
            (e.0, e.1) = (e.0 + p.samples, e.1 + p.self_samples);
            self.add_paths(&p.children, above);
            above.pop();
        }
    }

    /// The frames every sample passes through, from the first: down from a
    /// single first frame while it has no self samples and one callee.
    fn context(&self) -> Vec<String> {
        let mut at: Vec<String> = Vec::new();
        loop {
            let below: Vec<(&Vec<String>, &(u64, u64))> = self
                .paths
                .iter()
                .filter(|(k, _)| k.len() == at.len() + 1 && k.starts_with(&at))
                .collect();
            let [(k, _)] = below[..] else {
                break;
            };
            let callees = self
                .paths
                .keys()
                .filter(|c| c.len() == k.len() + 1 && c.starts_with(k))
                .count();
            if self.paths[k].1 != 0 || callees != 1 {
                break;
            }
            at = k.clone();
        }
        at
    }

    /// The call paths called from `above`, most samples first, ties by name.
    fn paths_json(&self, above: &[String]) -> Vec<Value> {
        let mut below: Vec<_> = self
            .paths
            .iter()
            .filter(|(k, _)| k.len() == above.len() + 1 && k.starts_with(above))
            .collect();
        below.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then_with(|| a.0.cmp(b.0)));
        below
            .into_iter()
            .map(|(k, v)| {
                json!({"name": k[above.len()], "samples": v.0, "self_samples": v.1,
                       "children": self.paths_json(k)})
            })
            .collect()
    }

    /// Most samples first, ties by name.
    fn to_json(&self) -> Value {
        let total = |v: &Vec<u64>| v.iter().sum::<u64>();
        let mut functions: Vec<_> = self.functions.iter().collect();
        functions.sort_by_key(|(_, v)| std::cmp::Reverse(total(v)));
        let mut lines: Vec<_> = self.lines.iter().collect();
        lines.sort_by_key(|(_, v)| std::cmp::Reverse(total(v)));
        json!({
            "samples": stats(&self.all),
            "functions": functions.iter().map(|(name, v)| json!({"name": name,
                "samples": stats(v)})).collect::<Vec<_>>(),
            "lines": lines.iter().map(|((function, file, line), v)| json!({
                "function": function, "file": file, "line": line,
                "samples": stats(v)})).collect::<Vec<_>>(),
            "context": self.context(),
            "paths": self.paths_json(&self.context()),
        })
    }
}

type Key = (String, String, Option<String>, Option<u32>, Option<u32>);

fn key(n: &TreeNode) -> Key {
    (
        n.name.to_string(),
        n.kind.to_string(),
        n.device.clone(),
        n.device_index,
        n.instance,
    )
}

fn add(into: &mut Vec<Merged>, nodes: &[TreeNode], rank: usize, ranks: usize) {
    for n in nodes {
        let k = key(n);
        let pos = into.iter().position(|m| {
            (
                m.name.clone(),
                m.kind.clone(),
                m.device.clone(),
                m.device_index,
                m.instance,
            ) == k
        });
        let i = match pos {
            Some(i) => i,
            None => {
                into.push(Merged {
                    name: n.name.to_string(),
                    kind: n.kind.to_string(),
                    device: n.device.clone(),
                    device_index: n.device_index,
                    instance: n.instance,
                    count: vec![0; ranks],
                    total: vec![0; ranks],
                    self_ns: vec![0; ranks],
                    min: None,
                    max: 0,
                    present: vec![false; ranks],
                    counters: BTreeMap::new(),
                    samples: None,
                    children: Vec::new(),
                });
                into.len() - 1
            }
        };
        let m = &mut into[i];
        m.count[rank] += n.count;
        m.total[rank] += n.total_ns;
        m.self_ns[rank] += n.self_ns;
        m.min = Some(m.min.map_or(n.min_ns, |x| x.min(n.min_ns)));
        m.max = m.max.max(n.max_ns);
        m.present[rank] = true;
        for (e, t) in n.counters.iter().flat_map(|c| &c.events) {
            let (incl, excl) = m
                .counters
                .entry(e.clone())
                .or_insert_with(|| (vec![0; ranks], vec![0; ranks]));
            incl[rank] += t.inclusive;
            excl[rank] += t.exclusive;
        }
        if let Some(s) = &n.stack_samples {
            m.samples
                .get_or_insert_with(|| Samples::new(ranks))
                .add(s, rank);
        }
        add(&mut m.children, &n.children, rank, ranks);
    }
}

fn to_json(list: &mut [Merged]) -> Vec<Value> {
    list.sort_by(|a, b| {
        let sa: u64 = a.total.iter().sum();
        let sb: u64 = b.total.iter().sum();
        sb.cmp(&sa).then_with(|| a.name.cmp(&b.name))
    });
    list.iter_mut()
        .map(|m| {
            let counters: Map<String, Value> = m
                .counters
                .iter()
                .map(|(e, (incl, excl))| {
                    let v = json!({"inclusive": stats(incl), "exclusive": stats(excl),
                                   "by_rank": {"inclusive": incl, "exclusive": excl}});
                    (e.clone(), v)
                })
                .collect();
            let mut v = json!({
                "name": m.name,
                "kind": m.kind,
                "device": m.device,
                "device_index": m.device_index,
                "instance": m.instance,
                "ranks": m.present.iter().filter(|p| **p).count(),
                "count": stats(&m.count),
                "total_ns": stats(&m.total),
                "self_ns": stats(&m.self_ns),
                "min_ns": m.min.unwrap_or(0),
                "max_ns": m.max,
                "by_rank": {"count": m.count, "total_ns": m.total, "self_ns": m.self_ns},
                "counters": counters,
                "children": to_json(&mut m.children),
            });
            if let Some(s) = &m.samples {
                v["stack_samples"] = s.to_json();
            }
            v
        })
        .collect()
}

/// The merged profile of `reports` (in rank order), `dirs` naming their sources.
/// The ranks' GPU sections as one (None when no rank has one): kernels by name and
/// device with their device time per rank, copies by device and direction summed
/// (bandwidth from the sums), devices with their busy time per rank.
fn merge_gpu(reports: &[(PathBuf, Report)]) -> Option<Value> {
    let n = reports.len();
    if reports.iter().all(|(_, r)| r.gpu.is_none()) {
        return None;
    }
    // (name, device) -> launches, device time per rank
    let mut kernels: BTreeMap<(String, String), (u64, Vec<u64>)> = BTreeMap::new();
    // (device, direction) -> count, bytes, time
    let mut copies: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
    // device -> activities, busy time per rank
    let mut devices: BTreeMap<String, (u64, Vec<u64>)> = BTreeMap::new();
    for (i, (_, r)) in reports.iter().enumerate() {
        let Some(g) = &r.gpu else { continue };
        for k in &g.kernels {
            let e = kernels
                .entry((k.name.clone(), k.device.clone()))
                .or_insert_with(|| (0, vec![0; n]));
            e.0 += k.count;
            e.1[i] += k.total_ns;
        }
        for c in &g.copies {
            let e = copies
                .entry((c.device.clone(), c.direction.clone()))
                .or_default();
            (e.0, e.1, e.2) = (e.0 + c.count, e.1 + c.bytes, e.2 + c.total_ns);
        }
        for d in &g.devices {
            let e = devices
                .entry(d.device.clone())
                .or_insert_with(|| (0, vec![0; n]));
            e.0 += d.activities;
            e.1[i] += d.busy_ns;
        }
    }
    let mut kernels: Vec<(u64, Value)> = kernels
        .into_iter()
        .map(|((name, device), (count, times))| {
            let total: u64 = times.iter().sum();
            (
                total,
                json!({"name": name, "device": device, "count": count, "total_ns": stats(&times)}),
            )
        })
        .collect();
    kernels.sort_by_key(|k| std::cmp::Reverse(k.0));
    let copies: Vec<Value> = copies
        .into_iter()
        .map(|((device, direction), (count, bytes, ns))| {
            let gbps = if ns == 0 {
                0.0
            } else {
                bytes as f64 / ns as f64
            };
            json!({"device": device, "direction": direction, "count": count, "bytes": bytes,
                   "total_ns": ns, "gb_per_s": gbps})
        })
        .collect();
    let devices: Vec<Value> = devices
        .into_iter()
        .map(|(device, (activities, busy))| {
            json!({"device": device, "activities": activities, "busy_ns": stats(&busy)})
        })
        .collect();
    let kernels: Vec<Value> = kernels.into_iter().map(|(_, k)| k).collect();
    Some(json!({"kernels": kernels, "copies": copies, "devices": devices}))
}

pub fn merge_reports(reports: &[(PathBuf, Report)], ranks: &[u64]) -> Value {
    let n = reports.len();
    let mut tree = Vec::new();
    for (i, (_, r)) in reports.iter().enumerate() {
        add(&mut tree, &r.tree, i, n);
    }
    let rank_list: Vec<Value> = reports
        .iter()
        .zip(ranks)
        .map(|((dir, r), rank)| {
            json!({"rank": rank, "dir": show(dir), "executable": r.program.executable,
                   "pid": r.program.pid, "host": r.program.host,
                   "duration_ns": r.clock.duration_ns, "start_ns": r.clock.start_ns,
                   "threads": r.threads.len(), "dropped_records": r.dropped_records})
        })
        .collect();
    let durations: Vec<u64> = reports.iter().map(|(_, r)| r.clock.duration_ns).collect();

    // Deep copies by (dst space, dst label, src space, src label).
    // (dst space, dst label, src space, src label) -> count, bytes, time per rank
    type CopyKey = (String, String, String, String);
    let mut copies: BTreeMap<CopyKey, (u64, u64, Vec<u64>)> = BTreeMap::new();
    for (i, (_, r)) in reports.iter().enumerate() {
        for c in &r.deep_copies {
            let e = copies
                .entry((
                    c.dst_space.clone(),
                    c.dst_label.clone(),
                    c.src_space.clone(),
                    c.src_label.clone(),
                ))
                .or_insert_with(|| (0, 0, vec![0; n]));
            e.0 += c.count;
            e.1 += c.bytes;
            e.2[i] += c.total_ns;
        }
    }
    let copies: Vec<Value> = copies
        .into_iter()
        .map(|((ds, dl, ss, sl), (count, bytes, times))| {
            json!({"dst_space": ds, "dst_label": dl, "src_space": ss, "src_label": sl,
                   "count": count, "bytes": bytes, "total_ns": stats(&times)})
        })
        .collect();

    // Memory per space.
    // allocations, deallocations, high water per rank, leaks, leaked bytes
    type SpaceSums = (u64, u64, Vec<u64>, u64, u64);
    let mut spaces: BTreeMap<String, SpaceSums> = BTreeMap::new();
    for (i, (_, r)) in reports.iter().enumerate() {
        for m in &r.memory {
            let e = spaces
                .entry(m.space.clone())
                .or_insert_with(|| (0, 0, vec![0; n], 0, 0));
            e.0 += m.allocations;
            e.1 += m.deallocations;
            e.2[i] = e.2[i].max(m.high_water_bytes);
            e.3 += m.leaks.len() as u64;
            e.4 += m.leaks.iter().map(|l| l.bytes).sum::<u64>();
        }
    }
    let memory: Vec<Value> = spaces
        .into_iter()
        .map(|(space, (allocs, frees, hw, leaks, leaked))| {
            json!({"space": space, "allocations": allocs, "deallocations": frees,
                   "high_water_bytes": stats(&hw), "leaks": leaks, "leaked_bytes": leaked})
        })
        .collect();

    let gpu = merge_gpu(reports);

    let mut anomalies: BTreeMap<String, u64> = BTreeMap::new();
    for (_, r) in reports {
        for (k, v) in &r.anomalies {
            *anomalies.entry(k.clone()).or_default() += v;
        }
    }
    let mut plugins: Vec<String> = Vec::new();
    for (_, r) in reports {
        for p in &r.plugins {
            if !plugins.contains(p) {
                plugins.push(p.clone());
            }
        }
    }
    let mut out = Map::new();
    out.insert("schema".into(), json!(MERGED_SCHEMA));
    out.insert("kprof_version".into(), json!(env!("CARGO_PKG_VERSION")));
    out.insert("ranks".into(), json!(rank_list));
    out.insert("plugins".into(), json!(plugins));
    out.insert("duration_ns".into(), stats(&durations));
    out.insert("tree".into(), json!(to_json(&mut tree)));
    out.insert("deep_copies".into(), json!(copies));
    out.insert("memory".into(), json!(memory));
    if let Some(g) = gpu {
        out.insert("gpu".into(), g);
    }
    // The job's message matrices: each rank's rows (sparse), and per channel
    // the totals each rank sent or received.
    let mut matrices: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    for ((_, r), rank) in reports.iter().zip(ranks) {
        for m in &r.messages {
            let rows = matrices
                .entry((m.channel.clone(), m.direction.clone()))
                .or_default();
            for p in &m.peers {
                rows.push(
                    json!({"rank": rank, "peer": p.peer, "count": p.count, "bytes": p.bytes}),
                );
            }
        }
    }
    if !matrices.is_empty() {
        let list: Vec<Value> = matrices
            .into_iter()
            .map(|((channel, direction), entries)| {
                let count: u64 = entries
                    .iter()
                    .map(|e| e["count"].as_u64().unwrap_or(0))
                    .sum();
                let bytes: u64 = entries
                    .iter()
                    .map(|e| e["bytes"].as_u64().unwrap_or(0))
                    .sum();
                json!({"channel": channel, "direction": direction, "count": count,
                       "bytes": bytes, "entries": entries})
            })
            .collect();
        out.insert("messages".into(), json!(list));
    }
    // The ranks' system samples: per metric, the range over ranks of each rank's
    // range, and each rank's mean.
    // (name, unit) -> (min, max, mean per rank)
    type Ranges = BTreeMap<(String, String), (f64, f64, Vec<Option<f64>>)>;
    let mut system: Ranges = BTreeMap::new();
    for (i, (_, r)) in reports.iter().enumerate() {
        for m in r.system.iter().flat_map(|s| &s.metrics) {
            let e = system
                .entry((m.name.clone(), m.unit.clone()))
                .or_insert_with(|| (f64::INFINITY, f64::NEG_INFINITY, vec![None; n]));
            e.0 = e.0.min(m.min);
            e.1 = e.1.max(m.max);
            e.2[i] = Some(m.mean);
        }
    }
    if !system.is_empty() {
        let metrics: Vec<Value> = system
            .into_iter()
            .map(|((name, unit), (min, max, means))| {
                json!({"name": name, "unit": unit, "min": min, "max": max,
                       "by_rank": {"mean": means}})
            })
            .collect();
        out.insert("system".into(), json!({ "metrics": metrics }));
    }
    // The job's concurrency view: per category the time summed over ranks, its
    // share of all ranks' thread time, and each rank's share.
    let views: Vec<Option<&kprof_core::output::report::Concurrency>> = reports
        .iter()
        .map(|(_, r)| r.concurrency.as_ref())
        .collect();
    if views.iter().any(Option::is_some) {
        let thread_ns: u64 = views.iter().flatten().map(|c| c.thread_ns).sum();
        let mut categories: Vec<String> = Vec::new();
        for c in views.iter().flatten().flat_map(|c| &c.categories) {
            if !categories.contains(&c.category) {
                categories.push(c.category.clone());
            }
        }
        let list: Vec<Value> = categories
            .iter()
            .map(|cat| {
                let of = |c: &kprof_core::output::report::Concurrency| {
                    c.categories
                        .iter()
                        .find(|x| &x.category == cat)
                        .map(|x| (x.ns, x.pct))
                };
                let ns: u64 = views
                    .iter()
                    .flatten()
                    .filter_map(|c| of(c))
                    .map(|x| x.0)
                    .sum();
                let pct = if thread_ns > 0 {
                    100.0 * ns as f64 / thread_ns as f64
                } else {
                    0.0
                };
                let by_rank: Vec<Option<f64>> =
                    views.iter().map(|c| c.and_then(&of).map(|x| x.1)).collect();
                json!({"category": cat, "ns": ns, "pct": pct, "by_rank": {"pct": by_rank}})
            })
            .collect();
        out.insert(
            "concurrency".into(),
            json!({"thread_ns": thread_ns, "categories": list}),
        );
    }
    // The ranks' counter settings: the same program under one setting gives one
    // entry; ranks that differ are listed as they are.
    let mut counter_setups: Vec<&kprof_core::output::report::HardwareCounters> = Vec::new();
    for hc in reports
        .iter()
        .filter_map(|(_, r)| r.hardware_counters.as_ref())
    {
        if !counter_setups.contains(&hc) {
            counter_setups.push(hc);
        }
    }
    if !counter_setups.is_empty() {
        out.insert("hardware_counters".into(), json!(counter_setups));
    }
    out.insert("anomalies".into(), json!(anomalies));
    out.insert(
        "dropped_records".into(),
        json!(reports.iter().map(|(_, r)| r.dropped_records).sum::<u64>()),
    );
    let mut cost = SelfCost::default();
    for (_, r) in reports {
        cost.add(&r.kprof);
    }
    out.insert("kprof".into(), json!(cost));
    // Call-stack sampling: the ranks that sampled, their rates' range, the
    // counts summed, and the samples outside every construct by rank.
    let sampled: Vec<(usize, &kprof_core::output::stack_samples::StackSamplesInfo)> = reports
        .iter()
        .enumerate()
        .filter_map(|(i, (_, r))| r.stack_samples.as_ref().map(|s| (i, s)))
        .collect();
    if !sampled.is_empty() {
        let mut outside = Samples::new(n);
        for (i, s) in &sampled {
            outside.add(&s.outside, *i);
        }
        let hz_min = sampled.iter().map(|s| s.1.hz).min().unwrap_or(0);
        let hz_max = sampled.iter().map(|s| s.1.hz).max().unwrap_or(0);
        let sum = |f: fn(&kprof_core::output::stack_samples::StackSamplesInfo) -> u64| {
            sampled.iter().map(|s| f(s.1)).sum::<u64>()
        };
        out.insert(
            "stack_samples".into(),
            json!({"hz": if hz_min == hz_max { json!(hz_min) } else { Value::Null },
                   "hz_min": hz_min, "hz_max": hz_max, "ranks": sampled.len(),
                   "threads": sum(|s| s.threads), "samples": sum(|s| s.samples),
                   "signals": sum(|s| s.signals), "lost": sum(|s| s.lost),
                   "truncated": sum(|s| s.truncated), "outside": outside.to_json()}),
        );
    }
    Value::Object(out)
}
