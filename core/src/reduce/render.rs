//! The folded form as the merged profile (`kprof-merged/1`): per node and per
//! value the min/mean/max/sum over processes and the imbalance (a process
//! without the value counts as 0), plus who holds the minimum and the maximum
//! and the standard deviation over processes; per-process arrays (`by_rank`)
//! only when they were kept.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use serde_json::{json, Map, Value};

use crate::reduce::form::{FloatStat, JobProfile, Node, NodeSamples, Ordered, SampledPath, Stat};
use crate::reduce::schema::MERGED_SCHEMA;

/// Where each process is in the merged profile, and how it is named there.
struct Order {
    /// who -> position.
    position: FxHashMap<u32, usize>,
    /// Position -> label (its MPI rank when every process has a distinct one,
    /// else its position).
    label: Vec<u64>,
    /// who -> order key (rank, none last; then who).
    key: FxHashMap<u32, (u64, u32)>,
}

impl Order {
    fn new(f: &JobProfile) -> Order {
        let mut list: Vec<(u64, u32, Option<u64>)> = f
            .ranks
            .iter()
            .map(|r| (r.rank.unwrap_or(u64::MAX), r.who, r.rank))
            .collect();
        list.sort_unstable();
        let mut distinct: Vec<u64> = list.iter().filter_map(|x| x.2).collect();
        distinct.dedup();
        let by_rank = distinct.len() == list.len();
        Order {
            position: list.iter().enumerate().map(|(i, x)| (x.1, i)).collect(),
            label: list
                .iter()
                .enumerate()
                .map(|(i, x)| if by_rank { x.0 } else { i as u64 })
                .collect(),
            key: list.iter().map(|x| (x.1, (x.0, x.1))).collect(),
        }
    }

    fn label_of(&self, who: u32) -> Value {
        self.position
            .get(&who)
            .map_or(Value::Null, |&p| json!(self.label[p]))
    }

    fn n(&self) -> usize {
        self.label.len()
    }
}

/// The processes in the merged profile's order: (label, who).
pub fn order(f: &JobProfile) -> Vec<(u64, u32)> {
    let o = Order::new(f);
    let mut v: Vec<(usize, u64, u32)> = o
        .position
        .iter()
        .map(|(&who, &p)| (p, o.label[p], who))
        .collect();
    v.sort_unstable();
    v.into_iter().map(|(_, l, w)| (l, w)).collect()
}

/// Statistics of `s` over `o.n()` processes.
fn stats(s: &Stat, o: &Order) -> Value {
    let n = o.n().max(1) as f64;
    let all = s.ranks as usize >= o.n();
    let min = if all { s.min } else { 0 };
    let max = if s.ranks > 0 { s.max } else { 0 };
    let mean = s.sum as f64 / n;
    let imbalance = if mean > 0.0 { max as f64 / mean } else { 1.0 };
    let var = (s.sumsq() as f64 / n - mean * mean).max(0.0);
    json!({
        "min": min, "mean": mean, "max": max, "sum": s.sum, "imbalance": imbalance,
        "stddev": var.sqrt(),
        "min_rank": if all { o.label_of(s.min_who) } else { Value::Null },
        "max_rank": if s.ranks > 0 { o.label_of(s.max_who) } else { Value::Null },
    })
}

/// Per-process values by position (0 where a process has none).
fn dense(s: &Stat, o: &Order) -> Vec<u64> {
    let mut v = vec![0; o.n()];
    for (w, x) in s.by_who.iter().zip(&s.by_value) {
        if let Some(&p) = o.position.get(w) {
            v[p] += x;
        }
    }
    v
}

/// Per-process floating values by position (null where a process has none).
fn dense_f(s: &FloatStat, o: &Order) -> Vec<Option<f64>> {
    let mut v = vec![None; o.n()];
    for (w, x) in s.by_who.iter().zip(&s.by_value) {
        if let Some(&p) = o.position.get(w) {
            v[p] = Some(*x);
        }
    }
    v
}

fn ordered<'a>(list: &'a [Ordered], o: &Order) -> Vec<&'a Ordered> {
    let mut v: Vec<&Ordered> = list.iter().collect();
    let key = |x: &Ordered| {
        (
            o.key.get(&x.who).copied().unwrap_or((u64::MAX, x.who)),
            x.pos,
        )
    };
    v.sort_by_key(|x| key(x));
    v
}

/// A node's call-stack samples (or those outside every node): in all, by
/// function and by line, each over processes; most samples first; and the
/// call paths below it, summed over the processes.
fn samples(s: &NodeSamples, strings: &[String], o: &Order) -> Value {
    let string = |i: u32| strings.get(i as usize).map_or("", String::as_str);
    let mut functions: Vec<_> = s.functions.iter().collect();
    functions.sort_by(|a, b| {
        (b.samples.sum.cmp(&a.samples.sum)).then_with(|| string(a.name).cmp(string(b.name)))
    });
    let mut lines: Vec<_> = s.lines.iter().collect();
    lines.sort_by(|a, b| {
        (b.samples.sum.cmp(&a.samples.sum)).then_with(|| {
            (string(a.function), string(a.file), a.line).cmp(&(
                string(b.function),
                string(b.file),
                b.line,
            ))
        })
    });
    let mut v = json!({
        "samples": stats(&s.samples, o),
        "functions": functions.iter().map(|f| json!({"name": string(f.name),
            "samples": stats(&f.samples, o)})).collect::<Vec<_>>(),
        "lines": lines.iter().map(|l| json!({"function": string(l.function),
            "file": string(l.file), "line": l.line,
            "samples": stats(&l.samples, o)})).collect::<Vec<_>>(),
    });
    let (context, below) = paths(&s.paths, &string);
    v["context"] = json!(context);
    v["paths"] = json!(below);
    v
}

/// The call paths `list` (parents before children, from the processes'
/// outermost frames) as one process's `profile.json` has them: the chain of
/// functions every sample passes through (`context`), then the tree from the
/// deepest of them (`name`, `samples`, `self_samples`, `children`), the counts
/// summed over the processes; most samples first (ties by name). Built
/// bottom-up, without recursion.
fn paths<'a>(list: &[SampledPath], string: &impl Fn(u32) -> &'a str) -> (Vec<&'a str>, Vec<Value>) {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); list.len() + 1];
    for (i, p) in list.iter().enumerate() {
        if let Some(c) = children.get_mut(p.parent as usize) {
            c.push(i);
        }
    }
    // Down the chain while one function holds every sample: none of its own,
    // one callee.
    let mut roots = std::mem::take(&mut children[0]);
    let mut context = Vec::new();
    while let [r] = *roots.as_slice() {
        if list[r].self_samples != 0 || children[r + 1].len() != 1 {
            break;
        }
        context.push(string(list[r].name));
        roots = std::mem::take(&mut children[r + 1]);
    }
    let mut done: Vec<Option<Value>> = vec![None; list.len()];
    let take = |ids: &mut Vec<usize>, done: &mut Vec<Option<Value>>| -> Vec<Value> {
        ids.sort_by(|&a, &b| {
            let (x, y) = (&list[a], &list[b]);
            y.samples
                .cmp(&x.samples)
                .then_with(|| string(x.name).cmp(string(y.name)))
        });
        ids.iter().filter_map(|&i| done[i].take()).collect()
    };
    for i in (0..list.len()).rev() {
        let p = &list[i];
        let kids = take(&mut children[i + 1], &mut done);
        done[i] = Some(json!({"name": string(p.name), "samples": p.samples,
                              "self_samples": p.self_samples, "children": kids}));
    }
    (context, take(&mut roots, &mut done))
}

fn tree(f: &JobProfile, o: &Order) -> Vec<Value> {
    let mut children: Vec<Vec<u32>> = vec![Vec::new(); f.nodes.len() + 1];
    for (i, n) in f.nodes.iter().enumerate() {
        if let Some(c) = children.get_mut(n.parent as usize) {
            c.push(i as u32);
        }
    }
    // Bottom-up (children come after their parents), no recursion: trees may
    // be deep.
    let mut done: Vec<Option<Value>> = vec![None; f.nodes.len()];
    let string = |i: u32| f.strings.get(i as usize).cloned().unwrap_or_default();
    let list = |ids: &[u32], done: &mut Vec<Option<Value>>| -> Vec<Value> {
        let mut ids = ids.to_vec();
        ids.sort_by(|&a, &b| {
            let (x, y) = (&f.nodes[a as usize], &f.nodes[b as usize]);
            y.total
                .sum
                .cmp(&x.total.sum)
                .then_with(|| string(x.name).cmp(&string(y.name)))
        });
        ids.iter()
            .map(|&i| done[i as usize].take().unwrap_or(Value::Null))
            .collect()
    };
    for i in (0..f.nodes.len()).rev() {
        let n: &Node = &f.nodes[i];
        let kids = list(&children[i + 1], &mut done);
        let mut events: Vec<(String, Value)> = n
            .counters
            .iter()
            .map(|c| {
                let mut v = json!({"inclusive": stats(&c.inclusive, o),
                                   "exclusive": stats(&c.exclusive, o)});
                if f.by_rank {
                    v["by_rank"] = json!({"inclusive": dense(&c.inclusive, o),
                                          "exclusive": dense(&c.exclusive, o)});
                }
                (string(c.event), v)
            })
            .collect();
        events.sort_by(|a, b| a.0.cmp(&b.0));
        let mut v = json!({
            "name": string(n.name),
            "kind": string(n.kind),
            "device": n.device.map(string),
            "device_index": n.device_index,
            "instance": n.instance,
            "ranks": n.count.ranks,
            "count": stats(&n.count, o),
            "total_ns": stats(&n.total, o),
            "self_ns": stats(&n.self_ns, o),
            "min_ns": n.min_ns.unwrap_or(0),
            "max_ns": n.max_ns,
            "counters": events.into_iter().collect::<Map<String, Value>>(),
            "children": kids,
        });
        if f.by_rank {
            v["by_rank"] = json!({"count": dense(&n.count, o), "total_ns": dense(&n.total, o),
                                  "self_ns": dense(&n.self_ns, o)});
        }
        if let Some(s) = &n.stack_samples {
            v["stack_samples"] = samples(s, &f.strings, o);
        }
        done[i] = Some(v);
    }
    list(&children[0], &mut done)
}

/// The merged profile of the processes folded in `f`.
pub fn render(f: &JobProfile) -> Value {
    let o = Order::new(f);
    let br = f.by_rank;
    let mut ranks: Vec<_> = f.ranks.iter().collect();
    ranks.sort_by_key(|r| o.position.get(&r.who).copied().unwrap_or(usize::MAX));
    let rank_list: Vec<Value> = ranks
        .iter()
        .map(|r| {
            let mut v = json!({"rank": o.label_of(r.who), "dir": r.dir,
                   "executable": r.executable, "pid": r.pid, "host": r.host,
                   "duration_ns": r.duration_ns, "start_ns": r.start_ns,
                   "threads": r.threads, "dropped_records": r.dropped_records});
            if let Some(off) = r.clock_offset_ns {
                v["clock_offset_ns"] = json!(off);
                v["clock_error_ns"] = json!(r.clock_error_ns);
            }
            v
        })
        .collect();

    let mut out = Map::new();
    out.insert("schema".into(), json!(MERGED_SCHEMA));
    out.insert("kprof_version".into(), json!(env!("CARGO_PKG_VERSION")));
    out.insert("ranks".into(), json!(rank_list));
    let plugins: Vec<&str> = ordered(&f.plugins, &o)
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    out.insert("plugins".into(), json!(plugins));
    out.insert("duration_ns".into(), stats(&f.duration, &o));
    out.insert("tree".into(), json!(tree(f, &o)));

    let copies: BTreeMap<&[String], _> = f.deep_copies.iter().map(|c| (&c.key[..], c)).collect();
    let copies: Vec<Value> = copies
        .into_values()
        .map(|c| {
            let k = |i: usize| c.key.get(i).cloned().unwrap_or_default();
            json!({"dst_space": k(0), "dst_label": k(1), "src_space": k(2), "src_label": k(3),
                   "count": c.count, "bytes": c.bytes, "total_ns": stats(&c.total, &o)})
        })
        .collect();
    out.insert("deep_copies".into(), json!(copies));
    let memory: BTreeMap<&str, _> = f.memory.iter().map(|m| (m.space.as_str(), m)).collect();
    let memory: Vec<Value> = memory
        .into_values()
        .map(|m| {
            json!({"space": m.space, "allocations": m.allocations,
                   "deallocations": m.deallocations,
                   "high_water_bytes": stats(&m.high_water, &o), "leaks": m.leaks,
                   "leaked_bytes": m.leaked_bytes})
        })
        .collect();
    out.insert("memory".into(), json!(memory));

    if f.gpu {
        let kernels: BTreeMap<(&str, &str), _> = f
            .kernels
            .iter()
            .map(|k| ((k.name.as_str(), k.device.as_str()), k))
            .collect();
        let mut kernels: Vec<_> = kernels.into_values().collect();
        kernels.sort_by_key(|k| std::cmp::Reverse(k.total.sum));
        let kernels: Vec<Value> = kernels
            .into_iter()
            .map(|k| {
                json!({"name": k.name, "device": k.device, "count": k.count,
                       "total_ns": stats(&k.total, &o)})
            })
            .collect();
        let copies: BTreeMap<(&str, &str), _> = f
            .gpu_copies
            .iter()
            .map(|c| ((c.device.as_str(), c.direction.as_str()), c))
            .collect();
        let copies: Vec<Value> = copies
            .into_values()
            .map(|c| {
                let gbps = if c.total_ns == 0 {
                    0.0
                } else {
                    c.bytes as f64 / c.total_ns as f64
                };
                json!({"device": c.device, "direction": c.direction, "count": c.count,
                       "bytes": c.bytes, "total_ns": c.total_ns, "gb_per_s": gbps})
            })
            .collect();
        let devices: BTreeMap<&str, _> = f.devices.iter().map(|d| (d.device.as_str(), d)).collect();
        let devices: Vec<Value> = devices
            .into_values()
            .map(|d| {
                json!({"device": d.device, "activities": d.activities,
                       "busy_ns": stats(&d.busy, &o)})
            })
            .collect();
        out.insert(
            "gpu".into(),
            json!({"kernels": kernels, "copies": copies, "devices": devices}),
        );
    }

    // The job's message matrices: each process's rows (sparse), in process order.
    if !f.messages.is_empty() {
        let mut rows: Vec<_> = f.messages.iter().collect();
        rows.sort_by_key(|m| {
            (
                m.channel.as_str(),
                m.direction.as_str(),
                o.position.get(&m.who).copied().unwrap_or(usize::MAX),
                m.seq,
            )
        });
        let mut list: Vec<Value> = Vec::new();
        for group in rows.chunk_by(|a, b| a.channel == b.channel && a.direction == b.direction) {
            let entries: Vec<Value> = group
                .iter()
                .map(|m| {
                    json!({"rank": o.label_of(m.who), "peer": m.peer, "count": m.count,
                           "bytes": m.bytes})
                })
                .collect();
            list.push(
                json!({"channel": group[0].channel, "direction": group[0].direction,
                             "count": group.iter().map(|m| m.count).sum::<u64>(),
                             "bytes": group.iter().map(|m| m.bytes).sum::<u64>(),
                             "entries": entries}),
            );
        }
        out.insert("messages".into(), json!(list));
    }
    if !f.system.is_empty() {
        let metrics: BTreeMap<(&str, &str), _> = f
            .system
            .iter()
            .map(|m| ((m.name.as_str(), m.unit.as_str()), m))
            .collect();
        let metrics: Vec<Value> = metrics
            .into_values()
            .map(|m| {
                let mut v = json!({"name": m.name, "unit": m.unit, "min": m.min, "max": m.max,
                                   "mean_of_ranks": m.mean.sum / m.mean.ranks.max(1) as f64});
                if br {
                    v["by_rank"] = json!({"mean": dense_f(&m.mean, &o)});
                }
                v
            })
            .collect();
        out.insert("system".into(), json!({ "metrics": metrics }));
    }
    if f.concurrency {
        let mut cats: Vec<_> = f.categories.iter().collect();
        let key = |c: &Ordered| {
            (
                o.key.get(&c.who).copied().unwrap_or((u64::MAX, c.who)),
                c.pos,
            )
        };
        cats.sort_by_key(|c| key(&c.category));
        let list: Vec<Value> = cats
            .iter()
            .map(|c| {
                let pct = if f.thread_ns > 0 {
                    100.0 * c.ns as f64 / f.thread_ns as f64
                } else {
                    0.0
                };
                let mut v = json!({"category": c.category.name, "ns": c.ns, "pct": pct});
                if br {
                    v["by_rank"] = json!({"pct": dense_f(&c.pct, &o)});
                }
                v
            })
            .collect();
        out.insert(
            "concurrency".into(),
            json!({"thread_ns": f.thread_ns, "categories": list}),
        );
    }
    if !f.counter_setups.is_empty() {
        let setups: Vec<Value> = ordered(&f.counter_setups, &o)
            .iter()
            .filter_map(|s| serde_json::from_str(&s.name).ok())
            .collect();
        out.insert("hardware_counters".into(), json!(setups));
    }
    let anomalies: BTreeMap<&str, u64> = f
        .anomalies
        .iter()
        .map(|a| (a.key.as_str(), a.value))
        .collect();
    out.insert("anomalies".into(), json!(anomalies));
    out.insert("dropped_records".into(), json!(f.dropped_records));
    let cost: Map<String, Value> = f
        .cost
        .iter()
        .map(|c| (c.key.clone(), json!(c.value)))
        .collect();
    out.insert("kprof".into(), Value::Object(cost));
    if let Some(s) = &f.stack_sampling {
        // One rate where the processes agree; else null, and their range.
        let hz = if s.hz.min == s.hz.max {
            json!(s.hz.max)
        } else {
            Value::Null
        };
        out.insert(
            "stack_samples".into(),
            json!({"hz": hz, "hz_min": s.hz.min, "hz_max": s.hz.max, "ranks": s.hz.ranks,
                   "threads": s.threads, "samples": s.samples, "signals": s.signals,
                   "lost": s.lost, "truncated": s.truncated,
                   "outside": samples(&s.outside, &f.strings, &o)}),
        );
    }
    Value::Object(out)
}
