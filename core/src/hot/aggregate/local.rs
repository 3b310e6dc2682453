//! One thread's share of the profile: its own call-path tree and statistics,
//! built from that thread's nested events alone, so the thread that records
//! them can build it in place (no lock: nothing here is shared while it runs).
//! The writer builds the same per-thread profiles from records when a trace is
//! on; either way [`crate::consume::profile::merge`] folds them into one tree at the end.
//!
//! An instance whose explicit parent runs on another thread (an OpenMP implicit
//! task under the region its primary thread opened) is placed under an *anchor*:
//! a stand-in for that thread's node, found through the node the other thread
//! published for the parent ([`crate::hot::open::OpenFrames`]). The merge puts the
//! anchor's subtree under the real node.

use kprof_abi::{Anomaly, Kind};
use rustc_hash::FxHashMap;

use crate::base::anomaly::Anomalies;
use crate::base::category::Category;
use crate::base::devices::Devices;
use crate::hot::clock::Clock;
use crate::hot::counters::{Values, MAX_COUNTERS};
use crate::hot::intern::Interner;
use crate::hot::nesting::{
    count_unclosed, ended_at, ends_at_exit, DeviceActivity, Event, Extras, OpenInstance, Opening,
    Slice, MAX_ARGS,
};
use crate::hot::open::{ByIndex, OpenFrames, GUID_SEQ_BITS};

use super::busy::DeviceBusy;
use super::series::{Grid, ThreadSeries};
use super::task_graph::TaskGraph;
use super::tree::{Tree, ROOT};

/// Bit of a name id that marks a code address not named yet: the rest indexes
/// [`ThreadProfile::addresses`]. Interned name ids stay far below it.
pub const ADDRESS_NAME: u32 = 1 << 31;

/// Code addresses cached per thread, direct-mapped by hash of the address.
const ADDRESS_CACHE: usize = 256;

/// Open instances a thread's stack has room for from its first event: deeper
/// stacks grow it (rarely: each growth doubles it).
const FRAMES_RESERVED: usize = 64;

/// Children looked up lately, per thread, direct-mapped by (parent, key) (a
/// power of two). A real application's thread takes many call paths in turn
/// (LULESH: each region's implicit task, loops and barriers, by code
/// address): with 256 slots they shared slots often enough that more than one
/// lookup per parallel region missed and searched the tree; 1024 slots (16
/// KiB per thread, freed when it ends) make that rare.
const CHILD_CACHE: usize = 1024;

/// A child found in the tree: its parent node, its key, and itself.
#[derive(Clone, Copy, Default)]
struct CachedChild {
    key: u64,
    parent: u32,
    child: u32,
}

/// An open instance as the profile tracks it.
struct Frame {
    guid: u64,
    kind: Kind,
    /// Arguments added to the node (at most [`MAX_ARGS`] per instance).
    nargs: u8,
    node: u32,
    begin: u64,
    /// The thread's [`ThreadProfile::own`] when it began: what kprof's own
    /// work adds to it until the end is taken out of the instance's time.
    own_at: u64,
    child_ns: u64,
    copy: Option<CopyKey>,
    /// Deeper than the depth cap: its time is inside the frame at the cap and is
    /// counted there only.
    capped: bool,
    /// Its counters were read at its begin: it has an entry on the counter stack.
    counted: bool,
    /// What the thread does while this is its innermost instance.
    category: Category,
}

/// A counted open instance: its counters at begin, and what the counted
/// instances inside it counted (taken out of its exclusive values).
struct CounterFrame {
    begin: Values,
    children: Values,
}

/// How a closing instance's counters are known.
#[derive(Clone, Copy)]
enum CountersAtEnd<'a> {
    /// Not read at its end.
    None,
    /// The thread's counters at its end (in place).
    At(&'a Values),
    /// What it counted (from records, where the writer subtracted).
    Counted(&'a Values),
}

impl OpenInstance for Frame {
    fn guid(&self) -> u64 {
        self.guid
    }
    fn kind(&self) -> Kind {
        self.kind
    }
}

fn child_key(name: u32, kind: Kind, dev: u16) -> u64 {
    1 << 63 | u64::from(dev) << 40 | (kind as u64) << 32 | u64::from(name)
}

/// (dst space, dst label, src space, src label) name ids.
pub type CopyKey = (u32, u32, u32, u32);

/// Memory copies of one kind.
#[derive(Debug, Default, Clone, Copy)]
pub struct CopyStats {
    /// Copies.
    pub count: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Time copying.
    pub total_ns: u64,
}

/// A user counter's values: count, min, max, sum, and the last value with its
/// raw time.
#[derive(Debug, Clone, Copy)]
pub struct CounterStats {
    /// Values.
    pub count: u64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Sum.
    pub sum: f64,
    /// Latest value.
    pub last: f64,
    /// Raw time of the latest value.
    pub last_ts: u64,
}

/// A row of a message matrix: (channel name id, direction
/// (`kprof_abi::message::SEND` or `RECEIVE`), peer).
pub type MessageKey = (u32, u8, u32);

/// Messages between this process and one peer on one channel, one way.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MessageStats {
    /// Messages.
    pub count: u64,
    /// Bytes they carried.
    pub bytes: u64,
}

/// Where a new instance goes.
enum Parent {
    Root,
    /// A node of this thread's tree.
    Node(u32),
    /// A frame of this thread, by index.
    Frame(usize),
    /// An anchor, by (thread, node).
    Anchor((u32, u32)),
}

/// What a thread's profile reads of the process's state, handed to it as data
/// when it is made (the runtime's parts, never the runtime itself).
#[derive(Clone, Copy)]
pub struct Shared {
    /// The clock of every timestamp.
    pub clock: &'static Clock,
    /// The name table (names made here: copies, places).
    pub names: &'static Interner,
    /// Anomaly counters.
    pub anomalies: &'static Anomalies,
    /// Devices seen (their labels).
    pub devices: &'static Devices,
    /// Every thread's open instances, by thread index: where an explicit parent
    /// on another thread is.
    pub open: &'static ByIndex<OpenFrames>,
    /// Raw clock at start.
    pub start_raw: u64,
    /// Counter events read per counted instance (`KPROF_COUNTERS`).
    pub counter_events: usize,
    /// Instances sampled per node (`KPROF_SAMPLES`; 0: none).
    pub samples: u32,
}

/// One thread's profile.
pub struct ThreadProfile {
    shared: Shared,
    /// The thread's index (the high bits of its GUIDs).
    index: u32,
    /// Where this thread publishes its open instances.
    open: &'static OpenFrames,
    max_depth: usize,
    /// The thread's call paths; anchors are nodes outside the root's children.
    pub tree: Tree,
    frames: Vec<Frame>,
    /// The counted ones among the frames, innermost last.
    counter_frames: Vec<CounterFrame>,
    /// Events counted (`KPROF_COUNTERS`): the first this many of each reading.
    counter_events: usize,
    /// Another thread's node (thread index, node) -> the local anchor standing in
    /// for it.
    anchors: FxHashMap<(u32, u32), u32>,
    /// The anchor looked up last (a team's worker finds the same one every
    /// region).
    last_anchor: ((u32, u32), u32),
    /// Local anchor node -> (thread index, that thread's node).
    pub anchored: Vec<(u32, (u32, u32))>,
    copy_names: FxHashMap<(u32, u32), u32>,
    /// Name ids of "Host" and of each device's label, for transfers.
    place_names: FxHashMap<u32, u32>,
    /// Memory copies by spaces and labels.
    pub copies: FxHashMap<CopyKey, CopyStats>,
    /// Instants by name id.
    pub markers: FxHashMap<u32, u64>,
    /// Dual-view syncs and modifies by label id.
    pub dual_views: FxHashMap<u32, [u64; 4]>,
    /// User counters by name id.
    pub counters: FxHashMap<u32, CounterStats>,
    /// Messages by (channel name id, direction, peer): count and bytes.
    pub messages: FxHashMap<MessageKey, MessageStats>,
    /// Device activity per device, by the name id of the device's label.
    pub devices: FxHashMap<u32, DeviceBusy>,
    /// Device copies by device label id and direction (`kprof_abi::direction`).
    pub device_copies: FxHashMap<(u32, u8), CopyStats>,
    /// Tasks created here and dependence edges recorded here.
    pub task_graph: TaskGraph,
    /// Children looked up lately ([`CHILD_CACHE`] slots; none once the thread
    /// is gone): a frame whose children come in turn (a region's loop, then its
    /// barrier, then the loop again next region) finds each here, where a
    /// parent's cache of its last child would miss every time.
    child_cache: Vec<CachedChild>,
    /// Code addresses named by [`ADDRESS_NAME`] ids, in first-seen order.
    pub addresses: Vec<u64>,
    address_ids: FxHashMap<u64, u32>,
    /// Made on the first code address (threads of other models never need it).
    address_cache: Option<Box<[(u64, u32); ADDRESS_CACHE]>>,
    /// Events taken (begins, ends, instants, edges).
    pub events: u64,
    /// Raw clock ticks kprof's own work took on this thread while recording
    /// in place: adding a call path or a name, growing its tables. Every open
    /// instance's time leaves out what this grew by while it was open, so that
    /// kprof's work is never counted as the program's.
    pub own: u64,
    /// Raw time of the first begin (0: none yet) and of the latest end: the
    /// thread's observed span, for the concurrency view
    /// ([`crate::consume::concurrency`]). The times the events carry anyway.
    pub first_ts: u64,
    /// See [`ThreadProfile::first_ts`].
    pub last_ts: u64,
    /// Its time per category over the run, in buckets.
    pub series: ThreadSeries,
    /// Instances sampled per node (`KPROF_SAMPLES`; 0: none).
    samples_k: usize,
    /// The thread's random numbers, for sampling.
    rng: super::samples::Rng,
}

impl ThreadProfile {
    /// An empty profile of the thread `(index, where it publishes its open
    /// instances)`.
    pub fn new(
        shared: Shared,
        (index, open): (u32, &'static OpenFrames),
        max_depth: usize,
    ) -> ThreadProfile {
        ThreadProfile {
            shared,
            index,
            open,
            max_depth: max_depth.max(1),
            tree: Tree::default(),
            // Room for the open instances of nearly every program, so that the
            // stack does not grow (untimed, inside the instances) while it runs.
            frames: Vec::with_capacity(FRAMES_RESERVED),
            counter_frames: Vec::new(),
            counter_events: shared.counter_events,
            anchors: FxHashMap::default(),
            last_anchor: ((0, 0), 0),
            anchored: Vec::new(),
            copy_names: FxHashMap::default(),
            place_names: FxHashMap::default(),
            copies: FxHashMap::default(),
            markers: FxHashMap::default(),
            dual_views: FxHashMap::default(),
            counters: FxHashMap::default(),
            messages: FxHashMap::default(),
            devices: FxHashMap::default(),
            device_copies: FxHashMap::default(),
            task_graph: TaskGraph::default(),
            child_cache: vec![CachedChild::default(); CHILD_CACHE],
            addresses: Vec::new(),
            address_ids: FxHashMap::default(),
            address_cache: None,
            events: 0,
            own: 0,
            first_ts: 0,
            last_ts: 0,
            series: ThreadSeries::new(Grid::new(shared.clock, shared.start_raw)),
            samples_k: shared.samples as usize,
            rng: super::samples::Rng::new(
                u64::from(index).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ shared.start_raw,
            ),
        }
    }

    /// The clock of the runtime it belongs to.
    pub fn clock(&self) -> &'static Clock {
        self.shared.clock
    }

    /// The thread's index.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// A name id for code address `addr`, named when the profile is merged (the
    /// thread that records never symbolizes).
    #[inline]
    pub fn code_name(&mut self, addr: u64) -> u32 {
        let i = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize % ADDRESS_CACHE;
        let cache = self
            .address_cache
            .get_or_insert_with(|| Box::new([(0, 0); ADDRESS_CACHE]));
        if cache[i].0 == addr && cache[i].1 != 0 {
            return cache[i].1;
        }
        let next = self.addresses.len() as u32;
        let id = *self.address_ids.entry(addr).or_insert(ADDRESS_NAME | next);
        if id == ADDRESS_NAME | next {
            self.addresses.push(addr);
        }
        cache[i] = (addr, id);
        id
    }

    /// Takes one event of this thread: from records (the writer), or an instant
    /// or an edge recorded in place.
    #[inline]
    pub fn event(&mut self, ev: &Event<'_>) {
        match *ev {
            Event::Begin(s) => self.begin(s),
            Event::End(s, end) => self.end(s, end),
            Event::Edge { from, to, .. } => {
                self.events += 1;
                self.task_graph.edge(from, to)
            }
            Event::Instant {
                kind,
                name,
                a,
                b,
                ts,
                ..
            } => {
                self.events += 1;
                self.instant(kind, name, a, b, ts)
            }
            // Placed by the profile, which resolves sites across threads.
            Event::Activity(_) | Event::Site { .. } => {}
        }
    }

    /// Takes the begin of instance `s` (from records).
    #[inline]
    pub fn begin(&mut self, s: &Slice) {
        self.events += 1;
        self.seen_begin(s.begin);
        let o = Opening {
            guid: s.guid,
            parent: s.parent,
            kind: s.kind as u8,
            name: s.name,
            dev: s.dev,
            begin: s.begin,
            extras: Extras {
                copy: s.copy,
                transfer: s.transfer,
                arg: None,
                counters: s.counters,
            },
        };
        self.open_frame(&o, s.kind);
    }

    /// Opens an instance in place (the recording thread itself): the frames are
    /// then the thread's stack of open instances.
    #[inline(always)]
    pub fn open(&mut self, o: &Opening) {
        self.events += 1;
        self.seen_begin(o.begin);
        let Some(kind) = Kind::from_u8(o.kind) else {
            return;
        };
        self.open_frame(o, kind);
        if let Some((key, value)) = o.extras.arg {
            self.arg(key, value);
        }
    }

    /// Opens in place an instance with no explicit parent that carries nothing
    /// besides its name: nearly every begin. [`ThreadProfile::open`] less the
    /// steps that cannot apply, so that the path a kernel or a region takes
    /// stays short.
    #[inline(always)]
    pub fn open_plain(&mut self, o: (u64, u8, u32, u16, u64)) {
        self.open_simple(o, 0, None, None);
    }

    /// As [`ThreadProfile::open_plain`], with an explicit parent (0: none) and
    /// a first argument (an OpenMP region and its implicit tasks).
    #[inline(never)]
    pub fn open_with(&mut self, o: (u64, u8, u32, u16, u64), parent: u64, arg: Option<(u32, u64)>) {
        let explicit = if parent != 0 {
            self.explicit_parent(parent)
        } else {
            None
        };
        self.open_simple(o, parent, explicit, arg);
    }

    /// The openings of [`ThreadProfile::open_plain`] and
    /// [`ThreadProfile::open_with`]: `explicit` is where `parent` is. The other
    /// cases (a task's creation, beyond the depth cap, an unknown kind) take the
    /// whole opening.
    #[inline(always)]
    fn open_simple(
        &mut self,
        o: (u64, u8, u32, u16, u64),
        parent: u64,
        explicit: Option<Parent>,
        arg: Option<(u32, u64)>,
    ) {
        let (guid, kind, name, dev, begin) = o;
        let kind = match Kind::from_u8(kind) {
            Some(k)
                if k != Kind::OmpTaskCreate
                    && (explicit.is_some() || self.frames.len() < self.max_depth) =>
            {
                k
            }
            _ => return self.open_rare(o, parent, arg),
        };
        self.events += 1;
        self.seen_begin(begin);
        let own_at = self.own;
        let key = child_key(name, kind, dev);
        let (node, outer) = match (explicit, self.frames.last()) {
            (None, Some(f)) => {
                let outer = f.category;
                (self.child_of(f.node, key, name, kind, dev), outer)
            }
            (None, None) => (self.child_of(ROOT, key, name, kind, dev), Category::Idle),
            (Some(p), last) => {
                let outer = last.map_or(Category::Idle, |f| f.category);
                (self.child(p, key, name, kind, dev), outer)
            }
        };
        let frame = Frame {
            guid,
            kind,
            nargs: 0,
            node,
            begin,
            own_at,
            child_ns: 0,
            copy: None,
            capped: false,
            counted: false,
            category: Category::of(kind).unwrap_or(outer),
        };
        self.push_frame(frame, outer);
        if let Some((key, value)) = arg {
            self.arg(key, value);
        }
    }

    /// [`ThreadProfile::open_plain`]'s other cases.
    #[cold]
    #[inline(never)]
    fn open_rare(&mut self, o: (u64, u8, u32, u16, u64), parent: u64, arg: Option<(u32, u64)>) {
        let extras = Extras {
            arg,
            ..Extras::NONE
        };
        self.open_extras(o, parent, extras);
    }

    /// [`ThreadProfile::open`] of `o` (GUID, kind, name, device, raw begin)
    /// under `parent` with `extras`, out of the callers' line: the begins that
    /// carry more than a name (counters, a transfer) or are rare.
    #[inline(never)]
    pub fn open_extras(&mut self, o: (u64, u8, u32, u16, u64), parent: u64, extras: Extras) {
        let (guid, kind, name, dev, begin) = o;
        self.open(&Opening {
            guid,
            parent,
            kind,
            name,
            dev,
            begin,
            extras,
        });
    }

    /// Closes in place instance `guid` (0: the innermost of `kind`) at raw time
    /// `ts`, with the instances opened inside it, by the nesting rules;
    /// `counters`: the thread's counters read at this end.
    #[inline(always)]
    pub fn close(&mut self, ts: u64, kind: u8, guid: u64, counters: Option<&Values>) {
        self.events += 1;
        // One thread's clock readings only grow: a plain store.
        self.last_ts = ts;
        // Nearly every end closes the innermost instance: what the nesting rules
        // give then without a search.
        let innermost = self.frames.last().is_some_and(|f| {
            if guid != 0 {
                f.guid == guid
            } else {
                f.kind as u8 == kind
            }
        });
        if innermost {
            if let Some(f) = self.frames.pop() {
                let at_end = counters.map_or(CountersAtEnd::None, CountersAtEnd::At);
                let end = ts.max(f.begin);
                self.close_frame(f, end, &[], false, at_end);
            }
            return;
        }
        self.close_nested(ts, kind, guid, counters);
    }

    /// [`ThreadProfile::close`] of an instance that is not the innermost (or of
    /// none): the nesting rules find it and close what is open inside it.
    #[cold]
    #[inline(never)]
    fn close_nested(&mut self, ts: u64, kind: u8, guid: u64, counters: Option<&Values>) {
        let Some(pos) = ended_at(&self.frames, kind, guid, false, self.shared.anomalies) else {
            return;
        };
        let at_end = counters.map_or(CountersAtEnd::None, CountersAtEnd::At);
        while self.frames.len() > pos {
            if let Some(f) = self.frames.pop() {
                let end = ts.max(f.begin);
                self.close_frame(f, end, &[], false, at_end);
            }
        }
    }

    /// Adds in place an instance recorded whole (it began at raw time `begin`,
    /// ends at `end`, nothing was recorded inside it): the node under the
    /// innermost open instance, its time and `args`.
    #[inline(always)]
    pub fn call(&mut self, kind: Kind, name: u32, begin: u64, end: u64, args: &[(u32, u64)]) {
        self.events += 2;
        self.seen_begin(begin);
        self.last_ts = end;
        if self.frames.len() >= self.max_depth {
            // Beyond the depth cap: counted, its time stays in the frame at the cap.
            self.shared.anomalies.count(Anomaly::BeyondMaxDepth);
            return;
        }
        let parent = match self.frames.len() {
            0 => Parent::Root,
            n => Parent::Frame(n - 1),
        };
        let node = self.child(parent, child_key(name, kind, 0), name, kind, 0);
        // The thread is in the call's category from its begin to its end, as a
        // begin and an end of it would have moved the series.
        let outer = self.frames.last().map_or(Category::Idle, |f| f.category);
        self.series.moved(begin, outer);
        self.series.moved(end, Category::of(kind).unwrap_or(outer));
        let dur = self.shared.clock.delta_ns(begin, end);
        let n = &mut self.tree.nodes[node as usize];
        n.stats.add(dur, dur);
        if self.samples_k > 0 {
            n.sample(begin, dur, self.samples_k, &mut self.rng);
        }
        for &(key, value) in args.iter().take(MAX_ARGS) {
            n.add_arg(key, value);
        }
        if let Some(parent) = self.frames.last_mut() {
            parent.child_ns += dur;
        }
    }

    /// Adds an argument of the innermost open instance (in place) to its node.
    #[inline]
    pub fn arg(&mut self, key: u32, value: u64) {
        let Some(f) = self.frames.last_mut() else {
            return;
        };
        if f.capped || usize::from(f.nargs) >= MAX_ARGS {
            return;
        }
        f.nargs += 1;
        self.tree.nodes[f.node as usize].add_arg(key, value);
    }

    /// The innermost open instance (GUID, node): where device work launched now
    /// belongs.
    pub fn top(&self) -> Option<(u64, u32)> {
        self.frames.last().map(|f| (f.guid, f.node))
    }

    /// Adds a device activity under node `at.1` of thread `at.0` (`None`: the
    /// root). It never opens: it arrives whole, after the fact.
    pub fn activity(&mut self, a: &DeviceActivity, at: Option<(u32, u32)>) {
        self.events += 1;
        let parent = match at {
            Some((thread, node)) if thread == self.index => {
                if (node as usize) < self.tree.nodes.len() {
                    Parent::Node(node)
                } else {
                    Parent::Root
                }
            }
            Some(at) => Parent::Anchor(at),
            None => Parent::Root,
        };
        let key = child_key(a.name, a.kind, a.dev);
        let node = self.child(parent, key, a.name, a.kind, a.dev);
        let dur = a.dur_ns;
        let n = &mut self.tree.nodes[node as usize];
        n.stats.add(dur, dur);
        for &(k, v) in a.args() {
            n.add_arg(k, v);
        }
        let device = self.device_name(a.dev);
        if a.kind == Kind::GpuMemcpy {
            let c = self.device_copies.entry((device, a.direction)).or_default();
            c.count += 1;
            c.bytes += a.bytes;
            c.total_ns += dur;
        }
        // A synchronization waits for the device's work; it is not work.
        if a.kind != Kind::GpuSync {
            let clock = self.shared.clock;
            self.devices
                .entry(device)
                .or_default()
                .add(clock, a.begin, a.end, a.dur_ns);
        }
    }

    /// The name id of device `dev`'s full label (`"CUDA:0"`: back end and number,
    /// whatever the stream).
    fn device_name(&mut self, dev: u16) -> u32 {
        let rt = self.shared;
        *self
            .place_names
            .entry(1 << 16 | u32::from(dev))
            .or_insert_with(|| {
                let text = rt
                    .devices
                    .get(dev)
                    .map_or_else(|| "Device".to_string(), |d| d.full_label());
                rt.names.intern(text.as_bytes(), rt.anomalies).0
            })
    }

    /// Closes in place every instance still open at raw time `end` (the run
    /// ended), or when another thread reported it ended (`late`, see
    /// [`ends_at_exit`]).
    pub fn close_all(&mut self, end: u64, late: &[(u64, u64)]) {
        let mut ends = ends_at_exit(self.frames.iter().map(|f| f.guid), end, late);
        while let Some(f) = self.frames.pop() {
            count_unclosed(f.kind, self.shared.anomalies);
            let end = ends.pop().unwrap_or(end).max(f.begin);
            self.last_ts = self.last_ts.max(end);
            self.close_frame(f, end, &[], false, CountersAtEnd::None);
        }
    }

    #[inline(always)]
    fn open_frame(&mut self, o: &Opening, kind: Kind) {
        let own_at = self.own;
        if kind == Kind::OmpTaskCreate {
            self.task_graph.task(o.guid, o.name);
        }
        let x = o.extras;
        let (name, copy) = match (x.copy, x.transfer) {
            (Some(c), _) => (
                self.copy_name(o.name, c.src_label),
                Some((c.dst_space, o.name, c.src_space, c.src_label)),
            ),
            (None, Some(t)) => (o.name, self.transfer_key(o.name, o.dev, t.direction)),
            (None, None) => (o.name, None),
        };
        let key = child_key(name, kind, o.dev);
        // An explicit parent places the node under the parent's while it is open;
        // the time still counts here.
        let parent = if o.parent != 0 {
            self.explicit_parent(o.parent)
        } else {
            None
        };
        // Deepest call path kept (runaway recursion, or a runtime that never
        // ends what it begins): deeper instances are counted, and their time
        // stays in the node at the cap, so the tree stays bounded and no total
        // exceeds the time spent.
        let capped = parent.is_none() && self.frames.len() >= self.max_depth;
        let node = if capped {
            self.shared.anomalies.count(Anomaly::BeyondMaxDepth);
            self.frames[self.max_depth - 1].node
        } else {
            let parent = parent.unwrap_or(match self.frames.len() {
                0 => Parent::Root,
                n => Parent::Frame(n - 1),
            });
            self.child(parent, key, name, kind, o.dev)
        };
        // The thread's category changes to the new instance's (an instance
        // beyond the cap stays in the capped frame's, as its time does).
        let outer = self.frames.last().map_or(Category::Idle, |f| f.category);
        let category = if capped {
            outer
        } else {
            Category::of(kind).unwrap_or(outer)
        };
        let copy = copy.filter(|_| !capped);
        if let Some(key) = copy {
            let c = self.copies.entry(key).or_default();
            c.count += 1;
            c.bytes += x
                .copy
                .map(|c| c.bytes)
                .or(x.transfer.map(|t| t.bytes))
                .unwrap_or(0);
        }
        let counted = x.counters.is_some();
        if let Some(begin) = x.counters {
            self.counter_frames.push(CounterFrame {
                begin,
                children: [0; MAX_COUNTERS],
            });
        }
        let frame = Frame {
            guid: o.guid,
            kind,
            nargs: 0,
            node,
            begin: o.begin,
            own_at,
            child_ns: 0,
            copy,
            capped,
            counted,
            category,
        };
        self.push_frame(frame, outer);
    }

    /// What every opening ends with: the thread leaves category `outer`, and
    /// the frame becomes the innermost, published for other threads' children
    /// unless it is beyond the depth cap.
    #[inline(always)]
    fn push_frame(&mut self, f: Frame, outer: Category) {
        self.series.moved(f.begin, outer);
        if !f.capped {
            self.open.publish(self.frames.len(), f.guid, f.node);
        }
        self.frames.push(f);
    }

    /// Adds `ticks` of kprof's own work on this thread (a name seen for the
    /// first time) to [`ThreadProfile::own`].
    #[inline(always)]
    pub fn add_own(&mut self, ticks: u64) {
        self.own += ticks;
    }

    /// [`ThreadProfile::own`] in nanoseconds.
    pub fn own_ns(&self) -> u64 {
        self.shared.clock.delta_ns(0, self.own)
    }

    /// The child of `parent` with this key, through the thread's cache of
    /// children: runtimes launch the same kernels in the same places again and
    /// again (and the implicit tasks of one region share their anchor).
    #[inline(always)]
    fn child(&mut self, parent: Parent, key: u64, name: u32, kind: Kind, dev: u16) -> u32 {
        let node = match parent {
            Parent::Root => ROOT,
            Parent::Node(n) => n,
            Parent::Frame(i) => self.frames[i].node,
            Parent::Anchor(at) if self.last_anchor.1 != 0 && self.last_anchor.0 == at => {
                self.last_anchor.1
            }
            Parent::Anchor(at) => {
                let local = match self.anchors.get(&at) {
                    Some(&local) => local,
                    None => {
                        let local = self.tree.anchor();
                        self.anchored.push((local, at));
                        self.anchors.insert(at, local);
                        local
                    }
                };
                self.last_anchor = (at, local);
                local
            }
        };
        self.child_of(node, key, name, kind, dev)
    }

    /// The child of node `parent` with this key (the thread's cache of children
    /// first).
    #[inline(always)]
    fn child_of(&mut self, parent: u32, key: u64, name: u32, kind: Kind, dev: u16) -> u32 {
        let i = ((key ^ u64::from(parent) << 24).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> (64 - CHILD_CACHE.trailing_zeros())) as usize
            % CHILD_CACHE;
        match self.child_cache.get(i) {
            // A key has its top bit set: an empty slot (0) never matches.
            Some(c) if c.key == key && c.parent == parent => c.child,
            _ => self.child_miss(parent, key, name, kind, dev, i),
        }
    }

    /// [`ThreadProfile::child_of`] past the cache: found or added in the tree,
    /// and cached in slot `i`.
    #[cold]
    #[inline(never)]
    fn child_miss(
        &mut self,
        parent: u32,
        key: u64,
        name: u32,
        kind: Kind,
        dev: u16,
        i: usize,
    ) -> u32 {
        let child = match self.tree.find(parent, name, kind, dev) {
            Some(child) => child,
            None => {
                // A new call path: the node and any table growth are kprof's time.
                let clock = self.shared.clock;
                let t0 = clock.now();
                let child = self.tree.add(parent, name, kind, dev);
                self.own += clock.now().saturating_sub(t0);
                child
            }
        };
        if let Some(c) = self.child_cache.get_mut(i) {
            *c = CachedChild { key, parent, child };
        }
        child
    }

    /// Where the open instance `guid` (an explicit parent) is: one of this
    /// thread's frames, or a node another thread published. A closed one (a
    /// task's creation) is no parent: the instance nests where it runs.
    fn explicit_parent(&self, guid: u64) -> Option<Parent> {
        let thread = (guid >> GUID_SEQ_BITS) as u32;
        if thread == self.index {
            return self
                .frames
                .iter()
                .rposition(|f| f.guid == guid)
                .map(Parent::Frame);
        }
        let node = self.shared.open.get(thread)?.find(guid)?;
        Some(Parent::Anchor((thread, node)))
    }

    /// Notes a begin at raw time `ts`: the first one starts the thread's span
    /// (the span ends at an end: every instance ends, at the latest in
    /// [`ThreadProfile::close_all`]).
    #[inline(always)]
    fn seen_begin(&mut self, ts: u64) {
        if self.first_ts == 0 {
            self.first_ts = ts;
        }
    }

    /// Takes the end of instance `s` at raw time `end` (from records: the
    /// innermost frame).
    #[inline]
    pub fn end(&mut self, s: &Slice, end: u64) {
        self.events += 1;
        self.last_ts = self.last_ts.max(end);
        if let Some(f) = self.frames.pop() {
            let counted = s
                .counted()
                .map_or(CountersAtEnd::None, CountersAtEnd::Counted);
            self.close_frame(f, end, s.args(), s.end_lost, counted);
        }
    }

    /// Adds a closed instance to its node: `args` are those recorded with it
    /// (in place they were added as they came), `end_lost` that its end was
    /// among dropped records.
    #[inline(always)]
    fn close_frame(
        &mut self,
        f: Frame,
        end: u64,
        args: &[(u32, u64)],
        end_lost: bool,
        counters: CountersAtEnd<'_>,
    ) {
        self.series.moved(end, f.category);
        let counted = if f.counted {
            self.close_counters(counters)
        } else {
            None
        };
        if f.capped {
            return;
        }
        self.open.close(self.frames.len());
        if end_lost {
            // Closed where recording resumed, not where it ended: a duration that
            // would be wrong by up to the whole gap. Counted, not timed.
            self.shared.anomalies.count(Anomaly::EndLost);
            return;
        }
        // kprof's own work while it was open is not the instance's time.
        let own = self.own - f.own_at;
        let dur = self.shared.clock.delta_ns(f.begin.saturating_add(own), end);
        let node = &mut self.tree.nodes[f.node as usize];
        node.stats.add(dur, dur.saturating_sub(f.child_ns));
        if self.samples_k > 0 {
            node.sample(f.begin, dur, self.samples_k, &mut self.rng);
        }
        for &(key, value) in args {
            node.add_arg(key, value);
        }
        if let Some((delta, children)) = counted {
            node.add_counters(&delta, &children, self.counter_events);
        }
        if let Some(parent) = self.frames.last_mut() {
            parent.child_ns += dur;
        }
        if let Some(key) = f.copy {
            self.copies.entry(key).or_default().total_ns += dur;
        }
    }

    /// Pops the closing instance's counter frame: what it counted and what the
    /// counted instances inside it counted, when its end was read; adds what it
    /// counted to the enclosing counted instance's children.
    #[inline(never)]
    fn close_counters(&mut self, at_end: CountersAtEnd<'_>) -> Option<(Values, Values)> {
        let frame = self.counter_frames.pop()?;
        // Only the events counted: most runs read 2 to 4 of the 8 slots.
        let n = self.counter_events;
        let delta = match at_end {
            CountersAtEnd::None => return None,
            CountersAtEnd::Counted(d) => *d,
            CountersAtEnd::At(end) => {
                let mut d = [0; MAX_COUNTERS];
                for (k, x) in d.iter_mut().enumerate().take(n) {
                    *x = end[k].saturating_sub(frame.begin[k]);
                }
                d
            }
        };
        if let Some(outer) = self.counter_frames.last_mut() {
            for (c, d) in outer.children.iter_mut().zip(delta).take(n) {
                *c = c.wrapping_add(d);
            }
        }
        Some((delta, frame.children))
    }

    #[inline(never)]
    fn instant(&mut self, kind: Kind, name: u32, a: u64, b: u64, ts: u64) {
        match kind {
            Kind::UserCounter => {
                let v = f64::from_bits(a);
                if v.is_finite() {
                    let c = self.counters.entry(name).or_insert(CounterStats {
                        count: 0,
                        min: f64::INFINITY,
                        max: f64::NEG_INFINITY,
                        sum: 0.0,
                        last: 0.0,
                        last_ts: 0,
                    });
                    c.count += 1;
                    c.min = c.min.min(v);
                    c.max = c.max.max(v);
                    c.sum += v;
                    if ts >= c.last_ts {
                        (c.last, c.last_ts) = (v, ts);
                    }
                }
            }
            Kind::Message => {
                let (peer, direction, count) = kprof_abi::message::unpack(a);
                let m = self.messages.entry((name, direction, peer)).or_default();
                m.count += count;
                m.bytes += b;
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
        }
    }

    /// The name id of a copy's node, `"<dst_label> <- <src_label>"`.
    fn copy_name(&mut self, dst_label: u32, src_label: u32) -> u32 {
        let rt = self.shared;
        *self
            .copy_names
            .entry((dst_label, src_label))
            .or_insert_with(|| {
                let text = format!(
                    "{} <- {}",
                    rt.names.text(dst_label),
                    rt.names.text(src_label)
                );
                rt.names.intern(text.as_bytes(), rt.anomalies).0
            })
    }

    /// The name id of "Host" (`None`) or of device `dev`'s label.
    fn place_name(&mut self, dev: Option<u16>) -> u32 {
        let rt = self.shared;
        let key = dev.map_or(u32::MAX, u32::from);
        *self.place_names.entry(key).or_insert_with(|| {
            let text = match dev {
                None => "Host".to_string(),
                Some(d) => rt
                    .devices
                    .get(d)
                    .map_or_else(|| "Device".to_string(), |d| d.label()),
            };
            rt.names.intern(text.as_bytes(), rt.anomalies).0
        })
    }

    /// The copy-table key of a device transfer: to the device (direction 1) or from
    /// it (2), between "Host" and the device, labelled with the transfer's name.
    fn transfer_key(&mut self, name: u32, dev: u16, direction: u32) -> Option<CopyKey> {
        if !matches!(direction, 1 | 2) {
            return None;
        }
        let (host, device) = (self.place_name(None), self.place_name(Some(dev)));
        Some(if direction == 1 {
            (device, name, host, name)
        } else {
            (host, name, device, name)
        })
    }

    /// Frees what only a running thread needs (its thread is gone; the
    /// statistics, and instances it left open, stay for the merge).
    pub fn release_scratch(&mut self) {
        self.address_cache = None;
        self.child_cache = Vec::new();
        if self.frames.is_empty() {
            self.frames = Vec::new();
        }
        self.copy_names = FxHashMap::default();
        self.place_names = FxHashMap::default();
        self.anchors = FxHashMap::default();
        self.tree.nodes.shrink_to_fit();
        self.series.compact();
    }

    /// Memory this profile holds, in bytes (approximately: the tree and the
    /// tables that grow with distinct call paths and names).
    pub fn bytes(&self) -> u64 {
        use std::mem::size_of;
        let tables = self.addresses.capacity() * size_of::<u64>()
            + self.address_ids.capacity() * (size_of::<(u64, u32)>() + 1)
            + self.frames.capacity() * size_of::<Frame>()
            + self.child_cache.capacity() * size_of::<CachedChild>()
            + self.copies.capacity() * (size_of::<(CopyKey, CopyStats)>() + 1)
            + self.markers.capacity() * (size_of::<(u32, u64)>() + 1)
            + self.messages.capacity() * (size_of::<(MessageKey, MessageStats)>() + 1)
            + self
                .address_cache
                .as_ref()
                .map_or(0, |_| ADDRESS_CACHE * size_of::<(u64, u32)>())
            + self.series.bytes()
            + size_of::<ThreadProfile>();
        self.tree.bytes() + tables as u64
    }
}
