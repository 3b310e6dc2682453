//! Per-thread recording state: the chunk being filled, the GUID counter and the name
//! cache. Reached through one thread-local pointer, so the hot path takes no lock.

use std::ffi::c_int;
use std::sync::atomic::{
    compiler_fence, AtomicBool, AtomicI32, AtomicPtr, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::Mutex;

use crate::hot::aggregate::local::ThreadProfile;
use crate::hot::buffer::{Chunk, CHUNK_WORDS};
use crate::hot::counters::{ThreadCounters, Values};
use crate::hot::intern::NameCache;
use crate::hot::record::{self, Op, CODE_SLOTS};
use crate::hot::runtime::Runtime;
use crate::hot::tls;

/// Free chunks (plus one per thread) below which a thread handing over a chunk
/// wakes the writer to allocate more.
const LOW_FREE_CHUNKS: usize = 4;
/// Chunks added to the pool when a thread registers, so a burst of new threads
/// does not drop records before the writer tops the pool up.
const CHUNKS_PER_NEW_THREAD: usize = 2;

/// Bits of a GUID below the thread index.
pub const GUID_SEQ_BITS: u32 = 40;
/// Mask of a GUID's per-thread counter.
pub const GUID_SEQ_MASK: u64 = (1 << GUID_SEQ_BITS) - 1;

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
    pub busy: AtomicBool,
    /// The thread's open instances as the profile placed them, for other threads'
    /// instances whose explicit parent is one of them.
    pub open: OpenFrames,
    /// The thread's in-place profile (null when events go to records): written
    /// by the thread, read by the writer only once the thread is not busy and the
    /// runtime no longer records.
    pub in_place: AtomicPtr<ThreadProfile>,
}

/// Open instances published by depth: one word each, the GUID's counter bits
/// above the profile node below, so a reader never sees half of an entry; 0
/// above the innermost (each end clears its entry).
pub struct OpenFrames {
    words: Box<[AtomicU64]>,
}

/// Bits of a published entry below the GUID counter: the node.
const OPEN_NODE_BITS: u32 = 64 - GUID_SEQ_BITS;
/// Deepest instance published: an instance whose explicit parent on another
/// thread is deeper nests where it runs. Parents across threads (parallel
/// regions, target regions) sit near the root; the entries cost 8 bytes per
/// thread each, threads that exited included.
const MAX_PUBLISHED: usize = 64;

impl OpenFrames {
    fn new(depth: usize) -> OpenFrames {
        OpenFrames {
            words: (0..depth.min(MAX_PUBLISHED))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Publishes the instance `guid` at `depth` (0-based), placed at `node`. Nodes
    /// beyond what an entry holds are not published (their children then nest
    /// where they run).
    #[inline(always)]
    pub fn publish(&self, depth: usize, guid: u64, node: u32) {
        if let Some(w) = self.words.get(depth) {
            if u64::from(node) >> OPEN_NODE_BITS == 0 {
                let entry = (guid & GUID_SEQ_MASK) << OPEN_NODE_BITS | u64::from(node);
                w.store(entry, Ordering::Release);
            }
        }
    }

    /// Clears the entry at `depth` (its instance ended).
    #[inline(always)]
    pub fn close(&self, depth: usize) {
        if let Some(w) = self.words.get(depth) {
            w.store(0, Ordering::Release);
        }
    }

    /// The node of this thread's open instance `guid`, if it is published.
    pub fn find(&self, guid: u64) -> Option<u32> {
        let seq = guid & GUID_SEQ_MASK;
        for w in self.words.iter() {
            let e = w.load(Ordering::Acquire);
            if e == 0 {
                return None;
            }
            if e >> OPEN_NODE_BITS == seq {
                return Some((e & ((1 << OPEN_NODE_BITS) - 1)) as u32);
            }
        }
        None
    }
}

impl ThreadSlot {
    /// The thread's display name.
    pub fn name(&self) -> String {
        self.name.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Renames the thread (plugins know what a thread is: "OpenMP worker 3").
    pub fn set_name(&self, name: String) {
        *self.name.lock().unwrap_or_else(|p| p.into_inner()) = name;
    }
}

/// Threads found by index without a lock: pages of slots.
const PAGE_SLOTS: usize = 1024;
/// Pages of [`PAGE_SLOTS`]: a million threads (later ones are registered but not
/// found by index: their instances are no explicit parents).
const PAGES: usize = 1024;

/// Every thread that ever recorded, in registration order.
pub struct Registry {
    slots: Mutex<Sealable>,
    count: AtomicUsize,
    by_index: Box<[AtomicPtr<[AtomicPtr<ThreadSlot>; PAGE_SLOTS]>]>,
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
            slots: Mutex::default(),
            count: AtomicUsize::new(0),
            by_index: (0..PAGES)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            depth,
            retired: Mutex::default(),
        }
    }

    /// Keeps the state of a thread that is exiting, for reuse once it is gone.
    fn retire(&self, tid: i32, state: *mut ThreadState) {
        let mut r = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        r.push_back(Retired { tid, state });
    }

    /// Whether `slot` is one of this registry's threads.
    fn owns(&self, slot: &ThreadSlot) -> bool {
        self.by_index(slot.index)
            .is_some_and(|s| std::ptr::eq(s, slot))
    }

    /// A retired state whose thread is gone, if one of the oldest is.
    fn reusable(&self) -> Option<*mut ThreadState> {
        let mut r = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        let at = r
            .iter()
            .take(RETIRED_LOOKS)
            .position(|x| thread_gone(x.tid))?;
        r.remove(at).map(|x| x.state)
    }

    /// Registers a thread; `None` once the shutdown sealed the registry.
    fn add(&self, tid: i32, name: String) -> Option<&'static ThreadSlot> {
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
            busy: AtomicBool::new(false),
            open: OpenFrames::new(self.depth),
            in_place: AtomicPtr::new(std::ptr::null_mut()),
        }));
        s.slots.push(slot);
        self.count.store(s.slots.len(), Ordering::Relaxed);
        let i = slot.index as usize;
        if let Some(page) = self.by_index.get(i / PAGE_SLOTS) {
            if page.load(Ordering::Acquire).is_null() {
                let fresh: Box<[AtomicPtr<ThreadSlot>; PAGE_SLOTS]> = Box::new(
                    std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
                );
                // Only registrations (under the lock) set pages.
                page.store(Box::into_raw(fresh), Ordering::Release);
            }
            // SAFETY: pages are leaked once set and never freed.
            let p = unsafe { &*page.load(Ordering::Acquire) };
            p[i % PAGE_SLOTS].store(
                slot as *const ThreadSlot as *mut ThreadSlot,
                Ordering::Release,
            );
        }
        Some(slot)
    }

    /// The thread of index `index`, without a lock.
    #[inline]
    pub fn by_index(&self, index: u32) -> Option<&'static ThreadSlot> {
        let i = index as usize;
        let page = self.by_index.get(i / PAGE_SLOTS)?.load(Ordering::Acquire);
        // SAFETY: pages and slots are leaked once published and never freed.
        unsafe {
            page.as_ref()?[i % PAGE_SLOTS]
                .load(Ordering::Acquire)
                .as_ref()
        }
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

/// The owner-only half of a thread's state.
pub struct ThreadState {
    slot: &'static ThreadSlot,
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
    pub fn push<const N: usize>(&mut self, rt: &Runtime, words: [u64; N], ts: u64) {
        if let Some(c) = self.chunk {
            if self.pos + N <= CHUNK_WORDS {
                c.write_event(self.pos, words);
                self.pos += N;
                c.publish(self.pos);
                self.last_ts = ts;
                return;
            }
        }
        self.push_slow(rt, &words, ts);
    }

    /// Appends an event that has no time of its own (an argument of the innermost
    /// open instance).
    #[inline(always)]
    pub fn push_untimed<const N: usize>(&mut self, rt: &Runtime, words: [u64; N]) {
        let base = self.last_ts;
        self.push(rt, words, base);
    }

    #[cold]
    #[inline(never)]
    fn push_slow(&mut self, rt: &Runtime, words: &[u64], ts: u64) {
        if let Some(full) = self.chunk.take() {
            // Unpublish before handing over, so the writer never peeks a chunk it
            // may already have recycled to another thread.
            self.slot
                .current
                .store(std::ptr::null_mut(), Ordering::Release);
            rt.pool.submit(full);
            // Once per chunk, not per record: have the writer refill the free pool
            // before threads run dry (the wake is a system call only if it sleeps).
            if rt.pool.free_len() < LOW_FREE_CHUNKS + rt.threads.len() {
                rt.wake_writer();
            }
        }
        let Some(c) = rt.pool.take() else {
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
            let [head, now] = record::long(rt.clock.now(), Op::Gap, 0, self.gap_depth, 0);
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

    /// Hands the current chunk to the writer (thread exit).
    fn retire(&mut self, rt: &Runtime) {
        if let Some(c) = self.chunk.take() {
            self.slot
                .current
                .store(std::ptr::null_mut(), Ordering::Release);
            rt.pool.submit(c);
        }
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

thread_local! {
    static EXIT: ExitGuard = const { ExitGuard };
}

/// Hands the thread's last chunk to the writer when the thread exits.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let p = tls::get();
        if p.is_null() {
            return;
        }
        // SAFETY: the state belongs to this exiting thread and is never freed.
        let state = unsafe { &mut *p };
        state.slot.exited.store(true, Ordering::Release);
        // PAPI binds an event set to its thread, which ends here: freed (a
        // program that starts a thread per task must not keep a set per thread),
        // unless an instance is still open, which a runtime's own thread-exit
        // hook may end after this (libomp ends a worker's implicit task so): a
        // set kept for the few threads that exit so.
        if state.depth == 0 {
            if let Some(c) = state.counters.take() {
                c.release();
            }
        }
        if let Some(rt) = crate::hot::runtime::get() {
            state.retire(rt);
            // Only a state of the runtime now running is ever reused (a forked
            // child's runtime has a registry of its own).
            if rt.threads.owns(state.slot) {
                rt.threads.retire(state.slot.tid, p);
            }
        }
    }
}

/// `membarrier` commands (linux/membarrier.h).
const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_long = 8;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 16;

/// Registers the process for the fast process-wide barrier [`quiesce`] uses
/// (once, at start; harmless where the kernel lacks it).
pub fn prepare_barrier() {
    // SAFETY: membarrier takes two integers and touches no memory of ours.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
            0,
        )
    };
}

/// A full memory barrier on every thread of the process: after it, every store
/// a thread made before its last load is visible here. This is the costly half of
/// the busy flag's protocol, paid once at the end instead of per event.
fn process_barrier() {
    for cmd in [MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_GLOBAL] {
        // SAFETY: as in prepare_barrier.
        if unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0) } == 0 {
            return;
        }
    }
    // No membarrier (an old kernel, a seccomp filter): store buffers drain in
    // well under a microsecond, so a millisecond's wait gives the same order in
    // practice.
    std::thread::sleep(std::time::Duration::from_millis(1));
}

/// After recording stopped: makes every thread's busy flag visible, then waits
/// (up to `wait` in all) for the threads inside an event to leave it. Returns,
/// per slot, whether that thread was still busy (it was stopped inside an event,
/// by a signal that ends the run on it, or descheduled for longer than `wait`).
pub fn quiesce(slots: &[&'static ThreadSlot], wait: std::time::Duration) -> Vec<bool> {
    process_barrier();
    let deadline = std::time::Instant::now() + wait;
    slots
        .iter()
        .map(|s| {
            while s.busy.load(Ordering::Acquire) {
                if std::time::Instant::now() >= deadline {
                    return true;
                }
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            false
        })
        .collect()
}

/// An event in progress on the calling thread: the runtime and the thread's
/// state. Dropping it marks the event complete (see [`ThreadSlot::busy`]).
pub struct Entered {
    /// The runtime that records the event.
    pub rt: &'static Runtime,
    state: *mut ThreadState,
}

impl Entered {
    /// The calling thread's state.
    #[inline(always)]
    pub fn t(&mut self) -> &mut ThreadState {
        // SAFETY: the pointer is this thread's own leaked state; the only
        // reference to it is this one, borrowed from the guard of the event.
        unsafe { &mut *self.state }
    }
}

impl Drop for Entered {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: as in t(); the slot is leaked and never freed.
        let slot = unsafe { (*self.state).slot };
        slot.busy.store(false, Ordering::Release);
        if DEFERRED_SIGNAL.load(Ordering::Relaxed) != 0 {
            run_deferred_signal();
        }
    }
}

/// An asynchronous signal that arrived while its thread was inside an event (0:
/// none), handled once an event completes.
static DEFERRED_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// What handles a deferred signal (a `fn(c_int)`; 0 until signal handlers are
/// installed).
static DEFERRED_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Sets what handles a deferred signal (the signal handlers' owner).
pub fn on_deferred_signal(handler: fn(c_int)) {
    DEFERRED_HANDLER.store(handler as usize, Ordering::Release);
}

/// Called by a signal handler: when the calling thread is inside an event,
/// keeps `sig` for when the event completes and returns true. Async-signal-safe
/// (a thread-local load and atomics).
pub fn defer_signal(sig: c_int) -> bool {
    let p = tls::get();
    // SAFETY: this thread's own leaked state, only read.
    let busy = unsafe { p.as_ref() }.is_some_and(|t| t.slot.busy.load(Ordering::Relaxed));
    if busy && DEFERRED_HANDLER.load(Ordering::Acquire) != 0 {
        DEFERRED_SIGNAL.store(sig, Ordering::Release);
    }
    busy && DEFERRED_HANDLER.load(Ordering::Acquire) != 0
}

#[cold]
#[inline(never)]
fn run_deferred_signal() {
    let sig = DEFERRED_SIGNAL.swap(0, Ordering::AcqRel);
    let handler = DEFERRED_HANDLER.load(Ordering::Acquire);
    if sig != 0 && handler != 0 {
        // SAFETY: only on_deferred_signal stores here, always a fn(c_int).
        let handler: fn(c_int) = unsafe { std::mem::transmute::<usize, fn(c_int)>(handler) };
        handler(sig);
    }
}

/// Starts an event on the calling thread (registering the thread on first use):
/// `None` when the runtime does not record. Marks the thread busy before it looks
/// whether the runtime records, so the shutdown, which stops recording first and
/// then waits for busy threads, never reads a thread's data while an event that
/// saw the runtime recording is still writing it. No locked instruction: the
/// shutdown makes the order visible with a process-wide barrier.
#[inline(always)]
pub fn enter() -> Option<Entered> {
    let p = tls::get();
    if p.is_null() {
        return enter_slow();
    }
    // SAFETY: this thread's own leaked state.
    let slot = unsafe { (*p).slot };
    slot.busy.store(true, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    match crate::hot::runtime::active() {
        Some(rt) => Some(Entered { rt, state: p }),
        None => {
            slot.busy.store(false, Ordering::Release);
            enter_slow()
        }
    }
}

/// A thread's first event, or one that found the runtime not recording (after
/// the end, which is counted, or a forked child's first event, which starts it).
#[cold]
#[inline(never)]
fn enter_slow() -> Option<Entered> {
    let rt = crate::hot::runtime::active().or_else(crate::hot::runtime::inactive_call)?;
    let mut p = tls::get();
    if p.is_null() {
        p = register(rt)?;
    }
    // SAFETY: this thread's own leaked state.
    let slot = unsafe { (*p).slot };
    slot.busy.store(true, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    if crate::hot::runtime::active().is_none() {
        slot.busy.store(false, Ordering::Release);
        return None;
    }
    Some(Entered { rt, state: p })
}

/// The calling thread's own counters, when the runtime reads any; a thread PAPI
/// refuses is said once and goes uncounted.
fn thread_counters(rt: &'static Runtime) -> Option<ThreadCounters> {
    let c = rt.counters.as_ref()?;
    match c.for_thread(&rt.anomalies) {
        Ok(t) => Some(t),
        Err(e) => {
            static SAID: AtomicBool = AtomicBool::new(false);
            if !SAID.swap(true, Ordering::Relaxed) {
                crate::hot::runtime::warn(&format!("counters: a thread is not counted: {e}"));
            }
            rt.anomalies.count(kprof_abi::Anomaly::CountersUnavailable);
            None
        }
    }
}

#[cold]
#[inline(never)]
fn register(rt: &'static Runtime) -> Option<*mut ThreadState> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default();
    let Some(slot) = rt.threads.add(tid, name) else {
        // The run is ending: this thread's first event comes too late.
        rt.anomalies.count(kprof_abi::Anomaly::CallAfterFinalize);
        return None;
    };
    let in_place = if rt.in_place {
        let max_depth = rt.threads.depth();
        let p = Box::into_raw(Box::new(ThreadProfile::new(rt, slot, max_depth)));
        slot.in_place.store(p, Ordering::Release);
        p
    } else {
        std::ptr::null_mut()
    };
    if !rt.in_place {
        rt.pool.top_up(rt.pool.free_len() + CHUNKS_PER_NEW_THREAD);
    }
    let fresh = |mut names: NameCache| {
        names.time_with(&rt.clock);
        ThreadState {
            slot,
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
            counters: thread_counters(rt),
        }
    };
    let state: *mut ThreadState = match rt.threads.reusable() {
        // (The gone thread's counters went with it: see ExitGuard.)
        Some(old) => {
            // SAFETY: a retired state whose thread is gone: nothing else uses it.
            let s = unsafe { &mut *old };
            // What the gone thread recorded after its exit guard stays its own.
            s.retire(rt);
            // SAFETY: its in-place profile stays for the merge; only the scratch
            // goes.
            if let Some(p) = unsafe { s.in_place.as_mut() } {
                p.release_scratch();
            }
            // The name cache maps pointers to process-wide ids: still valid. The
            // old value is moved out whole (no destructor runs on a half state).
            // SAFETY: `s` is valid and exclusively ours; it is written back below.
            let taken = unsafe { std::ptr::read(s) };
            let ThreadState { names, .. } = taken;
            // SAFETY: as above; the old value was moved out, nothing is dropped twice.
            unsafe { std::ptr::write(s, fresh(names)) };
            old
        }
        None => Box::leak(Box::new(fresh(NameCache::new()))),
    };
    tls::set(state);
    // Registers the exit destructor; fails harmlessly if the thread is already
    // tearing down its thread-locals.
    let _ = EXIT.try_with(|_| ());
    Some(state)
}
