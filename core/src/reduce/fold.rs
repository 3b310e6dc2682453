//! Folding profiles: one process's report into the reducible form
//! ([`from_report`]), and two forms into one ([`Fold::fold`]). Call paths are
//! unified by their name path from the root (name, kind, device and instance at
//! each level), as `kprof merge` always did.

use std::hash::Hash;

use prost::Message;
use rustc_hash::FxHashMap;

use crate::output::calltree::CallTree;
use crate::output::report::{Concurrency, Gpu, Report};
use crate::output::stack_samples::{NodeStackSamples, SamplePath, StackSamplesInfo};
use crate::reduce::form::{
    CategoryRow, CopyRow, DeviceRow, FloatStat, GpuCopyRow, JobProfile, KernelRow, MemoryRow,
    MessageRow, Node, NodeCounter, NodeSamples, Ordered, RankInfo, SampledFunction, SampledLine,
    SampledPath, Sampling, Stat, Sum, SystemRow,
};

/// Why bytes are not a reducible profile.
#[derive(Debug, thiserror::Error)]
pub enum FormError {
    /// Not a protobuf encoding of [`JobProfile`].
    #[error("not a kprof job profile: {0}")]
    Decode(#[from] prost::DecodeError),
    /// Decoded, but its indices point nowhere.
    #[error("not a kprof job profile: {0}")]
    Invalid(&'static str),
}

/// What identifies a node among its siblings, strings as indices.
type NodeKey = (u32, u32, u32, Option<u32>, Option<u32>, Option<u32>);

/// A [`JobProfile`] being folded into, with the indices that find its strings and
/// nodes.
pub struct Fold {
    form: JobProfile,
    strings: FxHashMap<String, u32>,
    nodes: FxHashMap<NodeKey, u32>,
}

fn key_of(n: &Node) -> NodeKey {
    (
        n.parent,
        n.name,
        n.kind,
        n.device,
        n.device_index,
        n.instance,
    )
}

impl Fold {
    /// Nothing folded yet; per-process values are kept when `by_rank`.
    pub fn new(by_rank: bool) -> Fold {
        Fold::from_form(JobProfile {
            by_rank,
            ..JobProfile::default()
        })
        .unwrap_or_else(|_| unreachable!("an empty form is valid"))
    }

    /// Starts from `form` (checked: every index points to an earlier node or a
    /// string).
    pub fn from_form(form: JobProfile) -> Result<Fold, FormError> {
        let strings: FxHashMap<String, u32> = form
            .strings
            .iter()
            .enumerate()
            .map(|(i, s)| (s.clone(), i as u32))
            .collect();
        let ns = form.strings.len() as u32;
        let mut nodes = FxHashMap::default();
        for (i, n) in form.nodes.iter().enumerate() {
            let bad_string = [Some(n.name), Some(n.kind), n.device]
                .into_iter()
                .flatten()
                .chain(n.counters.iter().map(|c| c.event))
                .chain(n.stack_samples.iter().flat_map(sample_strings))
                .any(|s| s >= ns);
            if bad_string {
                return Err(FormError::Invalid("a string index out of range"));
            }
            if n.parent as usize > i {
                return Err(FormError::Invalid("a node before its parent"));
            }
            if n.stack_samples.as_ref().is_some_and(paths_out_of_order) {
                return Err(FormError::Invalid("a sampled function before its caller"));
            }
            nodes.insert(key_of(n), i as u32);
        }
        let outside = form.stack_sampling.as_ref().map(|s| &s.outside);
        if outside
            .iter()
            .flat_map(|s| sample_strings(s))
            .any(|s| s >= ns)
        {
            return Err(FormError::Invalid("a string index out of range"));
        }
        if outside.is_some_and(paths_out_of_order) {
            return Err(FormError::Invalid("a sampled function before its caller"));
        }
        Ok(Fold {
            form,
            strings,
            nodes,
        })
    }

    /// Decodes an encoded form.
    pub fn decode(bytes: &[u8]) -> Result<Fold, FormError> {
        Fold::from_form(JobProfile::decode(bytes)?)
    }

    /// The form folded so far.
    pub fn form(&self) -> &JobProfile {
        &self.form
    }

    /// The form folded so far, given up.
    pub fn into_form(self) -> JobProfile {
        self.form
    }

    /// The form, encoded.
    pub fn encode(&self) -> Vec<u8> {
        self.form.encode_to_vec()
    }

    /// Processes folded so far.
    pub fn processes(&self) -> usize {
        self.form.ranks.len()
    }

    fn string(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.form.strings.len() as u32;
        self.form.strings.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    /// Folds one process's report (as read from its `profile.json`, its tree
    /// in it) in: `who` identifies it (distinct per process), `dir` is where its
    /// files are.
    pub fn add_report(&mut self, r: &Report, who: u32, dir: Option<String>) {
        let one = from_report(r, &r.tree, who, dir, self.form.by_rank);
        self.fold(one);
    }

    /// Folds `o` (other processes) into this.
    pub fn fold(&mut self, o: JobProfile) {
        let JobProfile {
            by_rank: _,
            ranks,
            strings,
            nodes,
            plugins,
            duration,
            deep_copies,
            memory,
            gpu,
            kernels,
            gpu_copies,
            devices,
            messages,
            system,
            concurrency,
            thread_ns,
            categories,
            counter_setups,
            anomalies,
            dropped_records,
            cost,
            stack_sampling,
        } = o;
        let f = &mut self.form;
        f.ranks.extend(ranks);
        let ids: Vec<u32> = strings.iter().map(|s| self.string(s)).collect();
        let id = |i: u32| ids.get(i as usize).copied().unwrap_or(0);
        // o's node index -> ours.
        let mut map: Vec<u32> = Vec::with_capacity(nodes.len());
        for mut n in nodes {
            n.parent = match n.parent {
                0 => 0,
                p => map.get(p as usize - 1).map_or(0, |&m| m + 1),
            };
            n.name = id(n.name);
            n.kind = id(n.kind);
            n.device = n.device.map(id);
            for c in &mut n.counters {
                c.event = id(c.event);
            }
            if let Some(s) = &mut n.stack_samples {
                remap_samples(s, id);
            }
            let key = key_of(&n);
            match self.nodes.get(&key) {
                Some(&at) => {
                    fold_node(&mut self.form.nodes[at as usize], n);
                    map.push(at);
                }
                None => {
                    let at = self.form.nodes.len() as u32;
                    self.form.nodes.push(n);
                    self.nodes.insert(key, at);
                    map.push(at);
                }
            }
        }
        let f = &mut self.form;
        fold_ordered(&mut f.plugins, plugins);
        f.duration.fold(duration);
        fold_keyed(
            &mut f.deep_copies,
            deep_copies,
            |c| c.key.clone(),
            |a, b| {
                a.count += b.count;
                a.bytes += b.bytes;
                a.total.fold(b.total);
            },
        );
        fold_keyed(
            &mut f.memory,
            memory,
            |m| m.space.clone(),
            |a, b| {
                a.allocations += b.allocations;
                a.deallocations += b.deallocations;
                a.high_water.fold(b.high_water);
                a.leaks += b.leaks;
                a.leaked_bytes += b.leaked_bytes;
            },
        );
        f.gpu |= gpu;
        fold_keyed(
            &mut f.kernels,
            kernels,
            |k| (k.name.clone(), k.device.clone()),
            |a, b| {
                a.count += b.count;
                a.total.fold(b.total);
            },
        );
        fold_keyed(
            &mut f.gpu_copies,
            gpu_copies,
            |c| (c.device.clone(), c.direction.clone()),
            |a, b| {
                a.count += b.count;
                a.bytes += b.bytes;
                a.total_ns += b.total_ns;
            },
        );
        fold_keyed(
            &mut f.devices,
            devices,
            |d| d.device.clone(),
            |a, b| {
                a.activities += b.activities;
                a.busy.fold(b.busy);
            },
        );
        f.messages.extend(messages);
        fold_keyed(
            &mut f.system,
            system,
            |m| (m.name.clone(), m.unit.clone()),
            |a, b| {
                a.min = a.min.min(b.min);
                a.max = a.max.max(b.max);
                a.mean.fold(b.mean);
            },
        );
        f.concurrency |= concurrency;
        f.thread_ns += thread_ns;
        fold_keyed(
            &mut f.categories,
            categories,
            |c| c.category.name.clone(),
            |a, b| {
                keep_first(&mut a.category, b.category);
                a.ns += b.ns;
                a.pct.fold(b.pct);
            },
        );
        fold_ordered(&mut f.counter_setups, counter_setups);
        fold_sums(&mut f.anomalies, anomalies);
        f.dropped_records += dropped_records;
        fold_sums(&mut f.cost, cost);
        if let Some(mut b) = stack_sampling {
            remap_samples(&mut b.outside, id);
            match &mut f.stack_sampling {
                Some(a) => {
                    a.hz.fold(b.hz);
                    a.threads += b.threads;
                    a.samples += b.samples;
                    a.signals += b.signals;
                    a.lost += b.lost;
                    a.truncated += b.truncated;
                    fold_samples(&mut a.outside, b.outside);
                }
                None => f.stack_sampling = Some(b),
            }
        }
    }
}

/// The string indices of a node's samples.
fn sample_strings(s: &NodeSamples) -> impl Iterator<Item = u32> + '_ {
    s.functions
        .iter()
        .map(|f| f.name)
        .chain(s.lines.iter().flat_map(|l| [l.function, l.file]))
        .chain(s.paths.iter().map(|p| p.name))
}

/// Whether a sampled function of `s`'s call paths comes before its caller.
fn paths_out_of_order(s: &NodeSamples) -> bool {
    s.paths
        .iter()
        .enumerate()
        .any(|(i, p)| p.parent as usize > i)
}

/// A node's samples with their strings renumbered by `id`.
fn remap_samples(s: &mut NodeSamples, id: impl Fn(u32) -> u32) {
    for f in &mut s.functions {
        f.name = id(f.name);
    }
    for l in &mut s.lines {
        (l.function, l.file) = (id(l.function), id(l.file));
    }
    for p in &mut s.paths {
        p.name = id(p.name);
    }
}

/// Folds `b`'s samples into `a`'s: per function, per line and per call path,
/// summed.
fn fold_samples(a: &mut NodeSamples, b: NodeSamples) {
    a.samples.fold(b.samples);
    fold_keyed(
        &mut a.functions,
        b.functions,
        |f| f.name,
        |x, y| x.samples.fold(y.samples),
    );
    fold_keyed(
        &mut a.lines,
        b.lines,
        |l| (l.function, l.file, l.line),
        |x, y| x.samples.fold(y.samples),
    );
    fold_paths(&mut a.paths, b.paths);
}

/// Folds the call paths `b` into `a` (both parents before children): a
/// function of the same caller and name in both is one, its samples summed;
/// the others are appended in `b`'s order.
fn fold_paths(a: &mut Vec<SampledPath>, b: Vec<SampledPath>) {
    if b.is_empty() {
        return;
    }
    let mut at: FxHashMap<(u32, u32), u32> = a
        .iter()
        .enumerate()
        .map(|(i, p)| ((p.parent, p.name), i as u32))
        .collect();
    // b's index -> ours.
    let mut map: Vec<u32> = Vec::with_capacity(b.len());
    for mut p in b {
        p.parent = match p.parent {
            0 => 0,
            q => map.get(q as usize - 1).map_or(0, |&m| m + 1),
        };
        let i = match at.get(&(p.parent, p.name)) {
            Some(&i) => {
                let x = &mut a[i as usize];
                x.samples = x.samples.saturating_add(p.samples);
                x.self_samples = x.self_samples.saturating_add(p.self_samples);
                i
            }
            None => {
                let i = a.len() as u32;
                at.insert((p.parent, p.name), i);
                a.push(p);
                i
            }
        };
        map.push(i);
    }
}

/// The call paths `list` (under the caller `parent`: 0 or 1 + its index in
/// `out`) appended to `out`, parents before children, names interned.
fn flatten_paths(
    list: &[SamplePath],
    parent: u32,
    strings: &mut Strings,
    out: &mut Vec<SampledPath>,
) {
    for p in list {
        out.push(SampledPath {
            parent,
            name: strings.get(&p.name),
            samples: p.samples,
            self_samples: p.self_samples,
        });
        let me = out.len() as u32;
        flatten_paths(&p.children, me, strings, out);
    }
}

fn fold_node(a: &mut Node, b: Node) {
    a.count.fold(b.count);
    a.total.fold(b.total);
    a.self_ns.fold(b.self_ns);
    a.min_ns = match (a.min_ns, b.min_ns) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    a.max_ns = a.max_ns.max(b.max_ns);
    fold_keyed(
        &mut a.counters,
        b.counters,
        |c| c.event,
        |x, y| {
            x.inclusive.fold(y.inclusive);
            x.exclusive.fold(y.exclusive);
        },
    );
    match (&mut a.stack_samples, b.stack_samples) {
        (Some(x), Some(y)) => fold_samples(x, y),
        (x @ None, y) => *x = y,
        (Some(_), None) => {}
    }
}

/// Folds the rows of `b` into `a`, rows of the same key combined by `f`, new ones
/// appended in `b`'s order.
fn fold_keyed<T, K: Hash + Eq>(
    a: &mut Vec<T>,
    b: Vec<T>,
    key: impl Fn(&T) -> K,
    mut f: impl FnMut(&mut T, T),
) {
    if b.is_empty() {
        return;
    }
    let mut at: FxHashMap<K, usize> = a.iter().enumerate().map(|(i, x)| (key(x), i)).collect();
    for x in b {
        let k = key(&x);
        match at.get(&k) {
            Some(&i) => f(&mut a[i], x),
            None => {
                at.insert(k, a.len());
                a.push(x);
            }
        }
    }
}

/// The process order's key of an [`Ordered`]: by MPI rank (none last), then by
/// who, then by position.
fn order_key(o: &Ordered) -> (u64, u32, u32) {
    (o.rank, o.who, o.pos)
}

fn keep_first(a: &mut Ordered, b: Ordered) {
    if order_key(&b) < order_key(a) {
        *a = b;
    }
}

fn fold_ordered(a: &mut Vec<Ordered>, b: Vec<Ordered>) {
    fold_keyed(a, b, |o| o.name.clone(), keep_first);
}

fn fold_sums(a: &mut Vec<Sum>, b: Vec<Sum>) {
    fold_keyed(
        a,
        b,
        |s| s.key.clone(),
        |x, y| x.value = x.value.saturating_add(y.value),
    );
}

/// Who a process's values belong to, as every row of its form records it.
#[derive(Clone, Copy)]
struct Source {
    /// The process's identity in the job (distinct per process).
    who: u32,
    /// Its MPI rank (`u64::MAX` when none).
    rank: u64,
    /// Whether per-process values are kept.
    by_rank: bool,
}

impl Source {
    /// This process's single value of a statistic.
    fn one(self, v: u64) -> Stat {
        Stat::one(v, self.who, self.by_rank)
    }

    /// This process's single value of a floating-point statistic.
    fn float(self, v: f64) -> FloatStat {
        FloatStat::one(v, self.who, self.by_rank)
    }

    /// `name` at position `pos` of this process's list.
    fn ordered(self, name: &str, pos: usize) -> Ordered {
        Ordered {
            name: name.to_string(),
            who: self.who,
            pos: pos as u32,
            rank: self.rank,
        }
    }
}

/// One process's report, its call-path tree `tree` (the report's own, or the
/// runtime's merged tree walked node by node), as a reducible form: `who`
/// identifies it, `dir` is where its files are, per-process values kept when
/// `by_rank`. Nodes of the same name path under one parent (there should be
/// none) are summed first.
pub fn from_report(
    r: &Report,
    tree: &dyn CallTree,
    who: u32,
    dir: Option<String>,
    by_rank: bool,
) -> JobProfile {
    let src = Source {
        who,
        rank: r.program.rank.unwrap_or(u64::MAX),
        by_rank,
    };
    let mut f = JobProfile {
        by_rank,
        ..JobProfile::default()
    };
    f.ranks.push(rank_info(r, who, dir));
    let mut strings = Strings {
        list: &mut f.strings,
        known: FxHashMap::default(),
    };
    f.nodes = tree_nodes(tree, &mut strings, src);
    f.stack_sampling = r
        .stack_samples
        .as_ref()
        .map(|info| sampling(info, &mut strings, src));
    let mut plugins: Vec<Ordered> = Vec::new();
    for (i, p) in r.plugins.iter().enumerate() {
        fold_ordered(&mut plugins, vec![src.ordered(p, i)]);
    }
    f.plugins = plugins;
    f.duration = src.one(r.clock.duration_ns);
    // Within the process: sums first, then one value per process.
    f.deep_copies = deep_copies(r, src);
    f.memory = memory(r, src);
    if let Some(g) = &r.gpu {
        f.gpu = true;
        add_gpu(&mut f, g, src);
    }
    f.messages = messages(r, who);
    f.system = system(r, src);
    if let Some(c) = &r.concurrency {
        f.concurrency = true;
        f.thread_ns = c.thread_ns;
        f.categories = categories(c, src);
    }
    if let Some(hc) = &r.hardware_counters {
        let text = serde_json::to_string(hc).unwrap_or_default();
        f.counter_setups.push(src.ordered(&text, 0));
    }
    f.anomalies = r
        .anomalies
        .iter()
        .map(|(k, v)| Sum {
            key: k.clone(),
            value: *v,
        })
        .collect();
    f.dropped_records = r.dropped_records;
    f.cost = cost(r);
    f
}

/// The process itself: where, what and how long, and its clock's offset from the
/// job's when the MPI reduction measured one.
fn rank_info(r: &Report, who: u32, dir: Option<String>) -> RankInfo {
    let meta = |key: &str| r.metadata.get(key);
    RankInfo {
        who,
        rank: r.program.rank,
        dir,
        executable: r.program.executable.clone(),
        pid: r.program.pid,
        host: r.program.host.clone(),
        duration_ns: r.clock.duration_ns,
        start_ns: r.clock.start_ns,
        threads: r.threads.len() as u64,
        dropped_records: r.dropped_records,
        clock_offset_ns: meta(super::schema::CLOCK_OFFSET_KEY).and_then(|v| v.parse().ok()),
        clock_error_ns: meta(super::schema::CLOCK_ERROR_KEY).and_then(|v| v.parse().ok()),
    }
}

/// A process's strings, interned.
struct Strings<'a> {
    list: &'a mut Vec<String>,
    known: FxHashMap<String, u32>,
}

impl Strings<'_> {
    fn get(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.known.get(s) {
            return i;
        }
        self.list.push(s.to_string());
        let i = self.list.len() as u32 - 1;
        self.known.insert(s.to_string(), i);
        i
    }
}

/// A process's call-stack sampling: its counts, and its samples outside every
/// node.
fn sampling(info: &StackSamplesInfo, strings: &mut Strings, src: Source) -> Sampling {
    let mut outside = RawSamples::default();
    outside.add(&info.outside, strings);
    Sampling {
        // The rate is one value per process, never one per rank kept.
        hz: Stat::one(info.hz, src.who, false),
        threads: info.threads,
        samples: info.samples,
        signals: info.signals,
        lost: info.lost,
        truncated: info.truncated,
        outside: outside.finish(src),
    }
}

/// A node's call-stack samples in one process, summed over its nodes of one
/// name path.
#[derive(Default)]
struct RawSamples {
    samples: u64,
    /// (function string, samples).
    functions: Vec<(u32, u64)>,
    /// ((function, file) strings, line, samples).
    lines: Vec<((u32, u32, u32), u64)>,
    /// The call paths below the node, parents before children.
    paths: Vec<SampledPath>,
}

impl RawSamples {
    fn add(&mut self, s: &NodeStackSamples, strings: &mut Strings) {
        self.samples += s.samples;
        let functions = s
            .functions
            .iter()
            .map(|f| (strings.get(&f.name), f.samples))
            .collect();
        fold_keyed(&mut self.functions, functions, |f| f.0, |a, b| a.1 += b.1);
        let lines = s
            .lines
            .iter()
            .map(|l| {
                (
                    (strings.get(&l.function), strings.get(&l.file), l.line),
                    l.samples,
                )
            })
            .collect();
        fold_keyed(&mut self.lines, lines, |l| l.0, |a, b| a.1 += b.1);
        self.add_paths(s, strings);
    }

    /// `s`'s call paths below their `context` (the frames above them, as a
    /// chain every one of its samples passes through), so that processes whose
    /// paths start at different depths of one stack unify: the merged profile
    /// starts them again at the deepest function every sample passes through
    /// (as one process's are), the chain above being its `context`.
    fn add_paths(&mut self, s: &NodeStackSamples, strings: &mut Strings) {
        if s.paths.is_empty() {
            return;
        }
        let below: u64 = s.paths.iter().map(|p| p.samples).sum();
        let mut paths = Vec::new();
        let mut parent = 0;
        for f in &s.context {
            paths.push(SampledPath {
                parent,
                name: strings.get(f),
                samples: below,
                self_samples: 0,
            });
            parent = paths.len() as u32;
        }
        flatten_paths(&s.paths, parent, strings, &mut paths);
        fold_paths(&mut self.paths, paths);
    }

    /// As statistics of this process. Per-rank arrays are not kept for
    /// samples: a function's samples by rank would grow with the ranks times
    /// the functions.
    fn finish(self, src: Source) -> NodeSamples {
        let one = |v| Stat::one(v, src.who, false);
        NodeSamples {
            samples: one(self.samples),
            functions: self
                .functions
                .into_iter()
                .map(|(name, v)| SampledFunction {
                    name,
                    samples: one(v),
                })
                .collect(),
            lines: self
                .lines
                .into_iter()
                .map(|((function, file, line), v)| SampledLine {
                    function,
                    file,
                    line,
                    samples: one(v),
                })
                .collect(),
            paths: self.paths,
        }
    }
}

/// A node's sums in one process, before they become its statistics.
struct Raw {
    /// Count, total ns, self ns.
    sums: [u64; 3],
    min: u64,
    max: u64,
    /// (event string, inclusive, exclusive) per counter event.
    counters: Vec<(u32, u64, u64)>,
    /// Call-stack samples, where it has some.
    stack: Option<RawSamples>,
}

/// The tree, parents before children, with this process's raw sums; its names,
/// kinds, devices and counter events interned into `strings`.
fn tree_nodes(tree: &dyn CallTree, strings: &mut Strings, src: Source) -> Vec<Node> {
    let mut index: FxHashMap<NodeKey, u32> = FxHashMap::default();
    let mut raw: Vec<Raw> = Vec::new();
    let mut keys: Vec<NodeKey> = Vec::new();
    // The local index of the node open at each depth of the walk.
    let mut path: Vec<u32> = Vec::new();
    tree.walk_without_samples(&mut |depth, n| {
        path.truncate(depth);
        let parent = match depth {
            0 => 0,
            d => path.get(d - 1).map_or(0, |&p| p + 1),
        };
        let key: NodeKey = (
            parent,
            strings.get(&n.name),
            strings.get(&n.kind),
            n.device.as_deref().map(|d| strings.get(d)),
            n.device_index,
            n.instance,
        );
        let at = *index.entry(key).or_insert_with(|| {
            keys.push(key);
            raw.push(Raw {
                sums: [0; 3],
                min: u64::MAX,
                max: 0,
                counters: Vec::new(),
                stack: None,
            });
            raw.len() as u32 - 1
        });
        let x = &mut raw[at as usize];
        x.sums[0] += n.count;
        x.sums[1] += n.total_ns;
        x.sums[2] += n.self_ns;
        x.min = x.min.min(n.min_ns);
        x.max = x.max.max(n.max_ns);
        for (e, t) in n.counters.iter().flat_map(|c| &c.events) {
            let e = strings.get(e);
            match x.counters.iter_mut().find(|c| c.0 == e) {
                Some(c) => (c.1, c.2) = (c.1 + t.inclusive, c.2 + t.exclusive),
                None => x.counters.push((e, t.inclusive, t.exclusive)),
            }
        }
        if let Some(s) = &n.stack_samples {
            x.stack.get_or_insert_with(Default::default).add(s, strings);
        }
        path.push(at);
    });
    keys.into_iter()
        .zip(raw)
        .map(
            |((parent, name, kind, device, device_index, instance), x)| Node {
                parent,
                name,
                kind,
                device,
                device_index,
                instance,
                count: src.one(x.sums[0]),
                total: src.one(x.sums[1]),
                self_ns: src.one(x.sums[2]),
                min_ns: Some(x.min),
                max_ns: x.max,
                counters: x
                    .counters
                    .into_iter()
                    .map(|(event, i, e)| NodeCounter {
                        event,
                        inclusive: src.one(i),
                        exclusive: src.one(e),
                    })
                    .collect(),
                stack_samples: x.stack.map(|s| s.finish(src)),
            },
        )
        .collect()
}

/// Deep copies by (destination space and label, source space and label).
fn deep_copies(r: &Report, src: Source) -> Vec<CopyRow> {
    let mut copies: Vec<(Vec<String>, u64, u64, u64)> = Vec::new();
    fold_keyed(
        &mut copies,
        r.deep_copies
            .iter()
            .map(|c| {
                let key = vec![
                    c.dst_space.clone(),
                    c.dst_label.clone(),
                    c.src_space.clone(),
                    c.src_label.clone(),
                ];
                (key, c.count, c.bytes, c.total_ns)
            })
            .collect(),
        |c| c.0.clone(),
        |a, b| (a.1, a.2, a.3) = (a.1 + b.1, a.2 + b.2, a.3 + b.3),
    );
    copies
        .into_iter()
        .map(|(key, count, bytes, ns)| CopyRow {
            key,
            count,
            bytes,
            total: src.one(ns),
        })
        .collect()
}

/// Memory by space: counts summed, the high-water mark the larger.
fn memory(r: &Report, src: Source) -> Vec<MemoryRow> {
    let mut spaces: Vec<(String, u64, u64, u64, u64, u64)> = Vec::new();
    fold_keyed(
        &mut spaces,
        r.memory
            .iter()
            .map(|m| {
                (
                    m.space.clone(),
                    m.allocations,
                    m.deallocations,
                    m.high_water_bytes,
                    m.leaks.len() as u64,
                    m.leaks.iter().map(|l| l.bytes).sum(),
                )
            })
            .collect(),
        |m| m.0.clone(),
        |a, b| {
            (a.1, a.2, a.3, a.4, a.5) = (a.1 + b.1, a.2 + b.2, a.3.max(b.3), a.4 + b.4, a.5 + b.5)
        },
    );
    spaces
        .into_iter()
        .map(|(space, a, d, hw, leaks, leaked)| MemoryRow {
            space,
            allocations: a,
            deallocations: d,
            high_water: src.one(hw),
            leaks,
            leaked_bytes: leaked,
        })
        .collect()
}

/// The device side: kernels by (name, device), copies by (device, direction),
/// devices by name.
fn add_gpu(f: &mut JobProfile, g: &Gpu, src: Source) {
    let mut kernels: Vec<(String, String, u64, u64)> = Vec::new();
    fold_keyed(
        &mut kernels,
        g.kernels
            .iter()
            .map(|k| (k.name.clone(), k.device.clone(), k.count, k.total_ns))
            .collect(),
        |k| (k.0.clone(), k.1.clone()),
        |a, b| (a.2, a.3) = (a.2 + b.2, a.3 + b.3),
    );
    f.kernels = kernels
        .into_iter()
        .map(|(name, device, count, ns)| KernelRow {
            name,
            device,
            count,
            total: src.one(ns),
        })
        .collect();
    let copies = g
        .copies
        .iter()
        .map(|c| GpuCopyRow {
            device: c.device.clone(),
            direction: c.direction.clone(),
            count: c.count,
            bytes: c.bytes,
            total_ns: c.total_ns,
        })
        .collect();
    fold_keyed(
        &mut f.gpu_copies,
        copies,
        |c| (c.device.clone(), c.direction.clone()),
        |a, b| {
            a.count += b.count;
            a.bytes += b.bytes;
            a.total_ns += b.total_ns;
        },
    );
    let mut devices: Vec<(String, u64, u64)> = Vec::new();
    fold_keyed(
        &mut devices,
        g.devices
            .iter()
            .map(|d| (d.device.clone(), d.activities, d.busy_ns))
            .collect(),
        |d| d.0.clone(),
        |a, b| (a.1, a.2) = (a.1 + b.1, a.2 + b.2),
    );
    f.devices = devices
        .into_iter()
        .map(|(device, activities, busy)| DeviceRow {
            device,
            activities,
            busy: src.one(busy),
        })
        .collect();
}

/// This process's rows of the message matrices, in the report's order.
fn messages(r: &Report, who: u32) -> Vec<MessageRow> {
    let mut rows = Vec::new();
    for m in &r.messages {
        for p in &m.peers {
            rows.push(MessageRow {
                channel: m.channel.clone(),
                direction: m.direction.clone(),
                who,
                seq: rows.len() as u32,
                peer: p.peer,
                count: p.count,
                bytes: p.bytes,
            });
        }
    }
    rows
}

/// The system metrics sampled, by (name, unit).
fn system(r: &Report, src: Source) -> Vec<SystemRow> {
    let mut system: Vec<SystemRow> = Vec::new();
    for m in r.system.iter().flat_map(|s| &s.metrics) {
        // A metric listed twice: the range of both, the later mean.
        fold_keyed(
            &mut system,
            vec![SystemRow {
                name: m.name.clone(),
                unit: m.unit.clone(),
                min: m.min,
                max: m.max,
                mean: src.float(m.mean),
            }],
            |m| (m.name.clone(), m.unit.clone()),
            |a, b| {
                a.min = a.min.min(b.min);
                a.max = a.max.max(b.max);
                a.mean = b.mean;
            },
        );
    }
    system
}

/// The threads' time by category, in the report's order.
fn categories(c: &Concurrency, src: Source) -> Vec<CategoryRow> {
    let mut rows: Vec<CategoryRow> = Vec::new();
    for (i, x) in c.categories.iter().enumerate() {
        fold_keyed(
            &mut rows,
            vec![CategoryRow {
                category: src.ordered(&x.category, i),
                ns: x.ns,
                pct: src.float(x.pct),
            }],
            |c| c.category.name.clone(),
            |a, b| {
                a.ns += b.ns;
                a.pct = b.pct;
            },
        );
    }
    rows
}

/// kprof's account of its own cost, as sums by key.
fn cost(r: &Report) -> Vec<Sum> {
    match serde_json::to_value(&r.kprof) {
        Ok(serde_json::Value::Object(cost)) => cost
            .into_iter()
            .map(|(key, v)| Sum {
                key,
                value: v.as_u64().unwrap_or(0),
            })
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::report::TreeNode;
    use crate::output::stack_samples::{FunctionSamples, LineSamples};
    use crate::reduce::render;
    use serde_json::Value;

    /// A node's samples: `functions`' self samples, `lines`, and as call
    /// paths each function called from `entry`.
    fn sampled(functions: &[(&str, u64)], lines: &[(&str, &str, u32, u64)]) -> NodeStackSamples {
        let samples = functions.iter().map(|f| f.1).sum();
        NodeStackSamples {
            samples,
            functions: functions
                .iter()
                .map(|&(name, samples)| FunctionSamples {
                    name: name.into(),
                    samples,
                })
                .collect(),
            lines: lines
                .iter()
                .map(|&(function, file, line, samples)| LineSamples {
                    function: function.into(),
                    file: file.into(),
                    line,
                    samples,
                })
                .collect(),
            context: Vec::new(),
            paths: vec![SamplePath {
                name: "entry".into(),
                samples,
                self_samples: 0,
                children: functions
                    .iter()
                    .map(|&(name, n)| SamplePath {
                        name: name.into(),
                        samples: n,
                        self_samples: n,
                        children: Vec::new(),
                    })
                    .collect(),
            }],
        }
    }

    /// A process's report: rank `rank`, its tree, its sampling (hz, lost,
    /// truncated, outside) if it sampled.
    fn report(
        rank: u64,
        tree: Vec<TreeNode>,
        info: Option<(u64, u64, u64, NodeStackSamples)>,
    ) -> Report {
        let mut r: Report = serde_json::from_value(serde_json::json!({
            "schema": crate::output::report::SCHEMA, "kprof_version": "0", "plugins": [],
            "threads": [],
            "program": {"executable": "app", "pid": 1, "host": "h", "rank": rank},
            "clock": {"source": "tsc", "domain": "CLOCK_MONOTONIC", "start_ns": 0,
                      "end_ns": 10, "duration_ns": 10},
            "sections": [], "events": [], "deep_copies": [], "memory": [],
            "dual_views": [], "metadata": {}, "anomalies": {}, "dropped_records": 0
        }))
        .unwrap();
        r.tree = tree;
        r.stack_samples = info.map(|(hz, lost, truncated, outside)| StackSamplesInfo {
            hz,
            threads: 1,
            samples: outside.samples + 10,
            lost,
            truncated,
            outside,
            ..StackSamplesInfo::default()
        });
        r
    }

    fn node(name: &str, s: Option<NodeStackSamples>, children: Vec<TreeNode>) -> TreeNode {
        let mut n = TreeNode::user_region(name, 30, 10, 1, children);
        n.stack_samples = s.map(Box::new);
        n
    }

    /// Three ranks: two sampled at different rates, one not; samples in a
    /// node some ranks lack, and outside every node.
    fn ranks() -> Vec<Report> {
        let r0 = report(
            0,
            vec![node(
                "main",
                Some(sampled(&[("f", 7), ("g", 3)], &[("f", "a.c", 5, 7)])),
                vec![node(
                    "MPI_Allreduce",
                    Some(sampled(&[("op", 4)], &[])),
                    vec![],
                )],
            )],
            Some((100, 1, 2, sampled(&[("h", 6)], &[]))),
        );
        let r1 = report(
            1,
            vec![node(
                "main",
                Some(sampled(&[("k", 4), ("f", 1)], &[("f", "a.c", 5, 1)])),
                vec![],
            )],
            Some((200, 3, 0, sampled(&[("h", 2), ("z", 1)], &[]))),
        );
        let r2 = report(2, vec![node("main", None, vec![])], None);
        vec![r0, r1, r2]
    }

    fn fold_in(order: &[usize]) -> Value {
        let rs = ranks();
        let mut f = Fold::new(false);
        for &i in order {
            // Through the encoding, as the ranks of a job send their forms.
            let one = from_report(&rs[i], &rs[i].tree, i as u32, None, false);
            let bytes = prost::Message::encode_to_vec(&one);
            f.fold(Fold::decode(&bytes).unwrap().into_form());
        }
        render(f.form())
    }

    fn sums(list: &Value, key: &str) -> Vec<(String, u64)> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x[key].as_str().unwrap().to_string(),
                    x["samples"]["sum"].as_u64().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn samples_fold_as_sums_over_the_ranks_that_have_them() {
        let merged = fold_in(&[0, 1, 2]);
        assert_eq!(merged, fold_in(&[2, 1, 0]));
        assert_eq!(merged, fold_in(&[1, 2, 0]));
        let main = &merged["tree"][0]["stack_samples"];
        let s = |k: &str| sums(&main[k], if k == "lines" { "file" } else { "name" });
        assert_eq!(
            s("functions"),
            [("f".into(), 8), ("k".into(), 4), ("g".into(), 3)]
        );
        assert_eq!(s("lines"), [("a.c".into(), 8)]);
        assert_eq!(main["samples"]["sum"], 15);
        // The call paths below: unified by name path, summed, most first.
        let entry = &main["paths"][0];
        assert_eq!(
            (&entry["name"], &entry["samples"], &entry["self_samples"]),
            (&Value::from("entry"), &Value::from(15), &Value::from(0))
        );
        let below: Vec<(String, u64)> = entry["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().into(),
                    c["self_samples"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(below, [("f".into(), 8), ("k".into(), 4), ("g".into(), 3)]);
        // Over the three ranks, the one without samples counting as 0.
        assert_eq!(main["functions"][0]["samples"]["max"], 7);
        assert_eq!(main["functions"][0]["samples"]["max_rank"], 0);
        assert_eq!(main["functions"][0]["samples"]["min"], 0);
        let mpi = &merged["tree"][0]["children"][0];
        assert_eq!(mpi["name"], "MPI_Allreduce");
        assert_eq!(
            sums(&mpi["stack_samples"]["functions"], "name"),
            [("op".into(), 4)]
        );
        let job = &merged["stack_samples"];
        assert_eq!(job["hz"], Value::Null);
        assert_eq!(
            (job["hz_min"].as_u64(), job["hz_max"].as_u64()),
            (Some(100), Some(200))
        );
        assert_eq!(job["ranks"], 2);
        assert_eq!(
            (job["lost"].as_u64(), job["truncated"].as_u64()),
            (Some(4), Some(2))
        );
        assert_eq!(job["samples"], 6 + 10 + 3 + 10);
        assert_eq!(
            sums(&job["outside"]["functions"], "name"),
            [("h".into(), 8), ("z".into(), 1)]
        );
    }

    /// Two ranks whose samples in one node start at different depths of one
    /// stack (rank 0's all in `kernel`, under `main` and `solve`; rank 1's
    /// also waiting, so its paths start at `solve`) unify: the merged paths
    /// start at the deepest function all samples pass through.
    #[test]
    fn call_paths_of_different_depths_unify_under_their_context() {
        let path = |name: &str, own: u64, children: Vec<SamplePath>| SamplePath {
            name: name.into(),
            samples: own + children.iter().map(|c| c.samples).sum::<u64>(),
            self_samples: own,
            children,
        };
        let with = |context: &[&str], paths: Vec<SamplePath>| NodeStackSamples {
            samples: paths.iter().map(|p| p.samples).sum(),
            context: context.iter().map(|c| c.to_string()).collect(),
            paths,
            ..NodeStackSamples::default()
        };
        let r0 = report(
            0,
            vec![node(
                "region",
                Some(with(
                    &["start", "main", "solve"],
                    vec![path("kernel", 5, vec![])],
                )),
                vec![],
            )],
            None,
        );
        let r1 = report(
            1,
            vec![node(
                "region",
                Some(with(
                    &["start", "main"],
                    vec![path(
                        "solve",
                        0,
                        vec![path("kernel", 3, vec![]), path("wait", 1, vec![])],
                    )],
                )),
                vec![],
            )],
            None,
        );
        let mut f = Fold::new(false);
        f.add_report(&r0, 0, None);
        f.add_report(&r1, 1, None);
        let s = &render(f.form())["tree"][0]["stack_samples"];
        assert_eq!(s["context"], serde_json::json!(["start", "main"]));
        let solve = &s["paths"][0];
        assert_eq!(
            (&solve["name"], &solve["samples"]),
            (&Value::from("solve"), &Value::from(9))
        );
        let below: Vec<(&str, u64)> = solve["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap(),
                    c["self_samples"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(below, [("kernel", 8), ("wait", 1)]);
        assert_eq!(s["paths"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_sampled_function_before_its_caller_is_refused() {
        let rs = ranks();
        let mut form = from_report(&rs[0], &rs[0].tree, 0, None, false);
        let s = form.nodes[0].stack_samples.as_mut().unwrap();
        s.paths[0].parent = 2;
        assert!(Fold::from_form(form).is_err());
    }

    #[test]
    fn an_unsampled_job_has_no_samples() {
        let rs = ranks();
        let mut f = Fold::new(false);
        f.add_report(&rs[2], 2, None);
        let merged = render(f.form());
        assert!(merged.get("stack_samples").is_none());
        assert!(merged["tree"][0].get("stack_samples").is_none());
    }
}
