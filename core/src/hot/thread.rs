//! Per-thread recording state: the chunk being filled, the GUID counter and the name
//! cache. Reached through one thread-local pointer ([`crate::hot::current`]), so the
//! hot path takes no lock. What a thread hands its chunks to is given to it as data
//! when it registers ([`Sink`]): nothing here reaches back to the runtime.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Mutex, OnceLock};

// What the modelled protocols touch (the chunk hand-off, the busy flag, the
// registry's seal) switches to loom's under `cfg(loom)`.
use crate::base::sync::{self, AtomicPtr, Ordering};

use crate::hot::aggregate::local::ThreadProfile;
use crate::hot::buffer::{Chunk, Pool, CHUNK_WORDS};
use crate::hot::clock::Clock;
use crate::hot::counters::{ThreadCounters, Values};
use crate::hot::intern::NameCache;
use crate::hot::open::{ByIndex, OpenFrames, GUID_SEQ_BITS};
use crate::hot::quiesce::Busy;
use crate::hot::record::{self, Op, CODE_SLOTS};

/// Free chunks (plus one per thread) below which a thread handing over a chunk
/// wakes the writer to allocate more.
const LOW_FREE_CHUNKS: usize = 4;

/// What the writer and the reports know of a thread.
pub struct ThreadSlot {
    /// 1-based registration order; also the high bits of the thread's GUIDs.
    pub index: u32,
    /// OS thread id.
    pub tid: i32,
    /// Display name: the OS name at registration, or what a plugin set.
    name: Mutex<String>,
    /// The chunk being filled, for the writer to peek (null when none).
    pub current: AtomicPtr<Chunk>,
    /// Events dropped because no free chunk was available.
    pub dropped: AtomicU64,
    /// The thread has exited (its last chunk was handed over).
    pub exited: AtomicBool,
    /// The thread is inside an event: set before it looks whether the runtime
    /// records, cleared when the event is complete. The shutdown waits for it to
    /// clear (after a process-wide barrier) before it reads what the thread
    /// recorded, so an event that passed the check is never cut in half.
    pub busy: Busy,
    /// The thread's open instances as the profile placed them, for other threads'
    /// instances whose explicit parent is one of them.
    pub open: OpenFrames,
    /// The thread's in-place profile (null when events go to records): written
    /// by the thread, read by the writer only once the thread is not busy and the
    /// runtime no longer records.
    pub in_place: std::sync::atomic::AtomicPtr<ThreadProfile>,
}

impl ThreadSlot {
    /// The thread's display name.
    pub fn name(&self) -> String {
        self.name.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The chunk the thread is filling, if any (the writer reads its published
    /// part; see [`Chunk::follows`]).
    pub fn filling(&self) -> Option<&'static Chunk> {
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: chunks are leaked and never freed, so a published pointer stays
        // valid.
        unsafe { current.as_ref() }
    }

    /// Renames the thread (plugins know what a thread is: "OpenMP worker 3").
    pub fn set_name(&self, name: String) {
        *self.name.lock().unwrap_or_else(|p| p.into_inner()) = name;
    }
}

/// Every thread that ever recorded, in registration order.
pub struct Registry {
    slots: sync::Mutex<Sealable>,
    count: AtomicUsize,
    by_index: ByIndex<ThreadSlot>,
    /// Each thread's open instances, by index: what an instance whose explicit
    /// parent runs on another thread looks up.
    open: ByIndex<OpenFrames>,
    /// Deepest instance each thread publishes (`KPROF_MAX_DEPTH`).
    depth: usize,
    /// States of threads that exited, oldest first: a new thread takes one over
    /// once its OS thread is gone (a program that starts a thread per task keeps
    /// a small slot per thread, not a whole state).
    retired: Mutex<std::collections::VecDeque<Retired>>,
}

/// The state of a thread that exited.
struct Retired {
    tid: i32,
    state: *mut ThreadState,
}

// SAFETY: the pointer is a leaked state that only the registry hands on, to one
// new thread, once the thread that owned it is gone.
unsafe impl Send for Retired {}

/// Retired states looked at per registration (the oldest are gone first).
const RETIRED_LOOKS: usize = 4;

/// Whether OS thread `tid` of this process is gone (a reused tid reads as alive,
/// which only delays a reuse).
fn thread_gone(tid: i32) -> bool {
    // SAFETY: signal 0 only checks that the thread exists; nothing is delivered.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) };
    r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// The slots, and whether the shutdown closed the registry.
#[derive(Default)]
struct Sealable {
    slots: Vec<&'static ThreadSlot>,
    sealed: bool,
}

impl Registry {
    /// An empty registry whose threads publish `depth` open instances.
    pub fn new(depth: usize) -> Registry {
        Registry {
            slots: sync::Mutex::new(Sealable::default()),
            count: AtomicUsize::new(0),
            by_index: ByIndex::default(),
            open: ByIndex::default(),
            depth,
            retired: Mutex::default(),
        }
    }

    /// Keeps the state of a thread that is exiting, for reuse once it is gone.
    pub(crate) fn retire(&self, tid: i32, state: *mut ThreadState) {
        let mut r = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        r.push_back(Retired { tid, state });
    }

    /// A retired state whose thread is gone, if one of the oldest is.
    pub(crate) fn reusable(&self) -> Option<*mut ThreadState> {
        let mut r = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        let at = r
            .iter()
            .take(RETIRED_LOOKS)
            .position(|x| thread_gone(x.tid))?;
        r.remove(at).map(|x| x.state)
    }

    /// Registers a thread; `None` once the shutdown sealed the registry.
    pub fn add(&self, tid: i32, name: String) -> Option<&'static ThreadSlot> {
        let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if s.sealed {
            return None;
        }
        let slot: &'static ThreadSlot = Box::leak(Box::new(ThreadSlot {
            index: s.slots.len() as u32 + 1,
            tid,
            name: Mutex::new(name),
            current: AtomicPtr::new(std::ptr::null_mut()),
            dropped: AtomicU64::new(0),
            exited: AtomicBool::new(false),
            busy: Busy::default(),
            open: OpenFrames::new(self.depth),
            in_place: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
        }));
        s.slots.push(slot);
        self.count.store(s.slots.len(), Ordering::Relaxed);
        self.by_index.set(slot.index, slot);
        self.open.set(slot.index, &slot.open);
        Some(slot)
    }

    /// The thread of index `index`, without a lock.
    #[inline]
    pub fn by_index(&self, index: u32) -> Option<&'static ThreadSlot> {
        self.by_index.get(index)
    }

    /// Each thread's open instances, by index.
    pub fn open_frames(&self) -> &ByIndex<OpenFrames> {
        &self.open
    }

    /// Closes the registry (shutdown): a thread's first event after this is not
    /// recorded, and the threads returned are all there are.
    pub fn seal(&self) -> Vec<&'static ThreadSlot> {
        let mut s = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        s.sealed = true;
        s.slots.clone()
    }

    /// Number of threads so far (lock-free).
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether no thread has recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Deepest instance each thread publishes.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// All threads so far.
    pub fn snapshot(&self) -> Vec<&'static ThreadSlot> {
        self.slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .slots
            .clone()
    }
}

/// What a thread's full chunks go to: the parts of the runtime it records for,
/// handed to the thread when it registers.
#[derive(Clone, Copy)]
pub struct Sink {
    /// The chunks, free and full.
    pub pool: &'static Pool,
    /// The clock of the gaps' times.
    pub clock: &'static Clock,
    /// The threads recording (how many: the free chunks to keep).
    pub threads: &'static Registry,
    /// The writer thread, to wake it.
    pub writer: &'static OnceLock<std::thread::Thread>,
}

/// Wakes the writer if it sleeps (it also polls every few milliseconds).
pub fn wake(writer: &OnceLock<std::thread::Thread>) {
    if let Some(t) = writer.get() {
        t.unpark();
    }
}

/// The owner-only half of a thread's state.
pub struct ThreadState {
    slot: &'static ThreadSlot,
    sink: Sink,
    chunk: Option<&'static Chunk>,
    pos: usize,
    chunks_taken: u64,
    next_guid: u64,
    /// Instances open on this thread, as counted from begins and ends; lets the
    /// writer repair its stack after dropped records.
    depth: u32,
    /// Events dropped since the last one stored (reported by a Gap record).
    gap: u64,
    /// Lowest `depth` while dropping.
    gap_depth: u32,
    /// Time of the last timed event stored: the base of short events' deltas.
    last_ts: u64,
    /// The code address in each code slot, as the writer knows it (see
    /// [`crate::hot::record`]).
    codes: [u64; CODE_SLOTS],
    /// Pointer -> name id cache.
    pub names: NameCache,
    /// Name ids of the annotation regions open on this thread, innermost last
    /// (`kprof_region_begin`), so that an end by another name is caught.
    pub regions: Vec<u32>,
    /// The in-place profile (null when events go to records).
    in_place: *mut ThreadProfile,
    /// The thread's counters (`KPROF_COUNTERS`), when any are read.
    counters: Option<ThreadCounters>,
}

impl ThreadState {
    /// A new thread's state (or a gone thread's, renewed), with the name cache
    /// it keeps.
    pub fn new(
        slot: &'static ThreadSlot,
        sink: Sink,
        names: NameCache,
        in_place: *mut ThreadProfile,
        counters: Option<ThreadCounters>,
    ) -> ThreadState {
        ThreadState {
            slot,
            sink,
            chunk: None,
            pos: CHUNK_WORDS,
            chunks_taken: 0,
            next_guid: u64::from(slot.index) << GUID_SEQ_BITS,
            depth: 0,
            gap: 0,
            gap_depth: 0,
            last_ts: 0,
            codes: [0; CODE_SLOTS],
            names,
            regions: Vec::new(),
            in_place,
            counters,
        }
    }

    /// The name cache, out of a state given up (its ids stay valid process-wide).
    pub(crate) fn into_names(self) -> NameCache {
        self.names
    }

    /// The thread's in-place profile, when events do not go to records.
    #[inline(always)]
    pub fn in_place(&mut self) -> Option<&mut ThreadProfile> {
        // SAFETY: the box is leaked at registration; the writer reads it only
        // once this thread is not inside an event and the runtime stopped
        // recording (see ThreadSlot::busy), so this is the only reference now.
        unsafe { self.in_place.as_mut() }
    }

    /// The thread's counters now, when instances of `kind` are counted.
    #[inline(always)]
    pub fn read_counters(&self, kind: u8) -> Option<Values> {
        match &self.counters {
            Some(c) => c.read_if(kind),
            None => None,
        }
    }

    /// What the writer and reports know of this thread.
    #[inline(always)]
    pub fn slot(&self) -> &'static ThreadSlot {
        self.slot
    }

    /// This thread's index (the high bits of its GUIDs).
    #[inline(always)]
    pub fn index(&self) -> u32 {
        self.slot.index
    }

    /// Takes the next GUID for a begin: thread index in the high bits, a per-thread
    /// counter below (the writer recounts it, see [`crate::hot::record`]).
    #[inline(always)]
    pub fn open(&mut self) -> u64 {
        self.depth += 1;
        self.next_guid += 1;
        self.next_guid
    }

    /// Notes that an instance closed.
    #[inline(always)]
    pub fn close(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The delta of `ts` from the last timed event stored, if a short event can
    /// carry it (32 bits; time never runs backwards on one thread, but a clock
    /// that did would take the long form).
    #[inline(always)]
    pub fn delta(&self, ts: u64) -> Option<u32> {
        u32::try_from(ts.wrapping_sub(self.last_ts)).ok()
    }

    /// Time of the last timed event stored (raw clock).
    #[inline(always)]
    pub fn last_time(&self) -> u64 {
        self.last_ts
    }

    /// How a short end names this thread's `guid`: 1 + how many GUIDs it took
    /// since, if below 2^16 (a GUID of another thread or an old one: `None`).
    #[inline(always)]
    pub fn back_ref(&self, guid: u64) -> Option<u16> {
        let back = self.next_guid.wrapping_sub(guid);
        (guid >> GUID_SEQ_BITS == self.next_guid >> GUID_SEQ_BITS && back < u64::from(u16::MAX))
            .then_some(back as u16 + 1)
    }

    /// The code slot of `codeptr`, and whether it must be defined first (it held
    /// another address). Call only when a short begin of the slot follows.
    #[inline(always)]
    pub fn code_slot(&mut self, codeptr: u64) -> (u16, bool) {
        let slot = record::code_slot(codeptr);
        let entry = &mut self.codes[usize::from(slot) % CODE_SLOTS];
        let define = *entry != codeptr;
        *entry = codeptr;
        (slot, define)
    }

    /// Appends one event of `N` words, contiguously (all or nothing); `ts` is its
    /// time, the base of the next short event's delta.
    #[inline(always)]
    pub fn push<const N: usize>(&mut self, words: [u64; N], ts: u64) {
        if let Some(c) = self.chunk {
            if self.pos + N <= CHUNK_WORDS {
                c.write_event(self.pos, words);
                self.pos += N;
                c.publish(self.pos);
                self.last_ts = ts;
                return;
            }
        }
        self.push_slow(&words, ts);
    }

    /// Appends an event that has no time of its own (an argument of the innermost
    /// open instance).
    #[inline(always)]
    pub fn push_untimed<const N: usize>(&mut self, words: [u64; N]) {
        let base = self.last_ts;
        self.push(words, base);
    }

    #[cold]
    #[inline(never)]
    fn push_slow(&mut self, words: &[u64], ts: u64) {
        let sink = self.sink;
        if let Some(full) = self.chunk.take() {
            // Unpublish before handing over, so the writer never peeks a chunk it
            // may already have recycled to another thread.
            self.slot
                .current
                .store(std::ptr::null_mut(), Ordering::Release);
            sink.pool.submit(full);
            // Once per chunk, not per record: have the writer refill the free pool
            // before threads run dry (the wake is a system call only if it sleeps).
            if sink.pool.free_len() < LOW_FREE_CHUNKS + sink.threads.len() {
                wake(sink.writer);
            }
        }
        let Some(c) = sink.pool.take() else {
            self.drop_event(words);
            return;
        };
        self.chunks_taken += 1;
        c.claim(self.slot.index, self.chunks_taken);
        self.slot
            .current
            .store(c as *const Chunk as *mut Chunk, Ordering::Release);
        self.chunk = Some(c);
        self.pos = 0;
        if self.gap > 0 {
            // The GUID counter before the event being stored now (whose own begin,
            // if it is one, the writer counts itself). The gap's time is not a base
            // for deltas: the event was stamped against the last one stored.
            let counter = self.next_guid - u64::from(opens(words));
            let [head, now] = record::long(sink.clock.now(), Op::Gap, 0, self.gap_depth, 0);
            c.write_event(0, [head, now, self.gap, counter]);
            self.pos = 4;
            self.gap = 0;
        }
        for w in words {
            c.write(self.pos, *w);
            self.pos += 1;
        }
        c.publish(self.pos);
        self.last_ts = ts;
    }

    fn drop_event(&mut self, words: &[u64]) {
        // A dropped definition leaves the writer's slot as it was; after the gap,
        // every slot is defined anew (the writer clears its slots at the gap).
        self.codes = [0; CODE_SLOTS];
        let opens = opens(words);
        // The depth was already updated for this event; before it, it was one less
        // for a begin. The writer keeps the instances below the lowest depth seen.
        let before = if opens { self.depth - 1 } else { self.depth };
        if self.gap == 0 {
            self.gap_depth = before;
        }
        if !opens {
            self.gap_depth = self.gap_depth.min(self.depth);
        }
        self.gap += 1;
        // Owner-only counter: a plain load and store, no locked instruction.
        let d = &self.slot.dropped;
        d.store(d.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Hands the current chunk to the writer (thread exit, or a gone thread's
    /// state taken over).
    pub fn retire(&mut self) {
        if let Some(c) = self.chunk.take() {
            self.slot
                .current
                .store(std::ptr::null_mut(), Ordering::Release);
            self.sink.pool.submit(c);
        }
    }

    /// The thread exits: its last chunk goes to the writer and its state to its
    /// registry, for a new thread to take over once this one is gone.
    pub(crate) fn exit(&mut self) {
        self.slot.exited.store(true, Ordering::Release);
        // PAPI binds an event set to its thread, which ends here: freed (a
        // program that starts a thread per task must not keep a set per thread),
        // unless an instance is still open, which a runtime's own thread-exit
        // hook may end after this (libomp ends a worker's implicit task so): a
        // set kept for the few threads that exit so.
        if self.depth == 0 {
            if let Some(c) = self.counters.take() {
                c.release();
            }
        }
        self.retire();
        // Only its own registry ever hands the state on (a forked child's
        // runtime has a registry of its own).
        self.sink.threads.retire(self.slot.tid, self);
    }
}

/// Whether the event in `words` (a begin may follow a code definition) opens an
/// instance, and so took a GUID.
fn opens(words: &[u64]) -> bool {
    let mut i = 0;
    while let Some(op) = words
        .get(i)
        .and_then(|&w| Op::from_u8(record::Head(w).op()))
    {
        if op.opens() {
            return true;
        }
        i += op.words();
    }
    false
}
