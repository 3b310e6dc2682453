//! Per-thread recording state: the chunk being filled, the GUID counter and the name
//! cache. Reached through one thread-local pointer, so the hot path takes no lock.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::buffer::{Chunk, CHUNK_WORDS};
use crate::intern::NameCache;
use crate::record::{self, Op, CODE_SLOTS};
use crate::runtime::Runtime;
use crate::tls;

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

/// Every thread that ever recorded, in registration order.
#[derive(Default)]
pub struct Registry {
    slots: Mutex<Vec<&'static ThreadSlot>>,
    count: AtomicUsize,
}

impl Registry {
    fn add(&self, tid: i32, name: String) -> &'static ThreadSlot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = Box::leak(Box::new(ThreadSlot {
            index: slots.len() as u32 + 1,
            tid,
            name: Mutex::new(name),
            current: AtomicPtr::new(std::ptr::null_mut()),
            dropped: AtomicU64::new(0),
            exited: AtomicBool::new(false),
        }));
        slots.push(slot);
        self.count.store(slots.len(), Ordering::Relaxed);
        slot
    }

    /// Number of threads so far (lock-free).
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether no thread has recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All threads so far.
    pub fn snapshot(&self) -> Vec<&'static ThreadSlot> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).clone()
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
    /// [`crate::record`]).
    codes: [u64; CODE_SLOTS],
    /// Pointer -> name id cache.
    pub names: NameCache,
}

impl ThreadState {
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
    /// counter below (the writer recounts it, see [`crate::record`]).
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
        if let Some(rt) = crate::runtime::get() {
            state.retire(rt);
        }
        state.slot.exited.store(true, Ordering::Release);
    }
}

/// Runs `f` with the calling thread's state, registering the thread on first use.
#[inline(always)]
pub fn with_thread<R>(rt: &Runtime, f: impl FnOnce(&mut ThreadState) -> R) -> R {
    f(current(rt))
}

/// The calling thread's state, registering the thread on first use: the form of
/// [`with_thread`] for the hottest paths, where the compiler would not inline a
/// closure called from several functions. The caller uses the reference for the
/// event it records and drops it before returning.
#[inline(always)]
pub fn current(rt: &Runtime) -> &'static mut ThreadState {
    let p = tls::get();
    let p = if p.is_null() { register(rt) } else { p };
    // SAFETY: the pointer is this thread's own leaked state; no other reference to
    // it is live: each event takes one and drops it, and callbacks do not re-enter
    // kprof on the same thread.
    unsafe { &mut *p }
}

#[cold]
#[inline(never)]
fn register(rt: &Runtime) -> *mut ThreadState {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
    let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_default();
    let slot = rt.threads.add(tid, name);
    rt.pool.top_up(rt.pool.free_len() + CHUNKS_PER_NEW_THREAD);
    let state = Box::leak(Box::new(ThreadState {
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
        names: NameCache::new(),
    }));
    tls::set(state);
    // Registers the exit destructor; fails harmlessly if the thread is already
    // tearing down its thread-locals.
    let _ = EXIT.try_with(|_| ());
    state
}
