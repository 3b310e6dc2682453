//! When parallel regions joined, for the ends a worker reports late.
//!
//! libomp reports a worker's implicit barrier and implicit task as ending only
//! when the worker is next woken (its team's next region, or the runtime's
//! shutdown), long after its region joined; it reports the barrier's begin on
//! time. Ended when reported, the worker would be waiting, and working, through
//! time it spent idle: its implicit task would outlast its region. So the
//! primary thread publishes each region's join here (a stamp taken at
//! `parallel_end`), and a worker ends what it still has open of its region no
//! later than the join, when the join is known.
//!
//! The joins are a table of slots chosen by a hash of the region's GUID, each a
//! sequence lock whose writer never waits: a writer that finds its slot being
//! written skips publishing, and a reader that finds its slot being written, or
//! holding another region, does not know the join (the worker's ends then stay
//! where they were reported, as without this table). A slot is overwritten only
//! by a region that hashes to it and joins before the worker wakes.
//!
//! A worker parked at its last region's join when the run ends reports nothing
//! before kprof writes its output (kprof's exit handler runs before libomp's,
//! which wakes the workers). So each worker also shows its open implicit task
//! in a slot of [`WORKERS`], and the plugin's flush ([`parked`]) reports the
//! ends of those whose region joined, for the core to apply at the end. A
//! forked child forgets both tables ([`forget_at_fork`]).

use std::cell::Cell;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};

/// Slots of the table (a power of two).
const SLOTS: usize = 256;

/// One region's join: `seq` is odd while it is written.
struct Slot {
    seq: AtomicU64,
    region: AtomicU64,
    at: AtomicU64,
}

static JOINS: [Slot; SLOTS] = [const {
    Slot {
        seq: AtomicU64::new(0),
        region: AtomicU64::new(0),
        at: AtomicU64::new(0),
    }
}; SLOTS];

/// The slot of a region: the GUID hashed (Fibonacci), so that the regions one
/// thread opens in turn take different slots.
#[inline(always)]
fn slot(region: u64) -> &'static Slot {
    let h = region.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros());
    &JOINS[h as usize % SLOTS]
}

/// Records that `region` joined at `at` (the core's stamp). Never waits.
pub fn publish(region: u64, at: u64) {
    if region == 0 || at == 0 {
        return;
    }
    let s = slot(region);
    let seq = s.seq.load(Ordering::Relaxed);
    if seq & 1 != 0
        || s.seq
            .compare_exchange(seq, seq + 1, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
    {
        // Another region is being written there: this one goes unknown.
        return;
    }
    // Whoever reads the new values below sees the odd sequence (or later).
    fence(Ordering::Release);
    s.region.store(region, Ordering::Relaxed);
    s.at.store(at, Ordering::Relaxed);
    s.seq.store(seq + 2, Ordering::Release);
}

/// When `region` joined, if known.
pub fn lookup(region: u64) -> Option<u64> {
    if region == 0 {
        return None;
    }
    let s = slot(region);
    let seq = s.seq.load(Ordering::Acquire);
    if seq & 1 != 0 {
        return None;
    }
    let r = s.region.load(Ordering::Relaxed);
    let at = s.at.load(Ordering::Relaxed);
    // The values read above were all written before the sequence read below.
    fence(Ordering::Acquire);
    (s.seq.load(Ordering::Relaxed) == seq && r == region).then_some(at)
}

thread_local! {
    /// The implicit task this thread runs as a worker (not the primary) of a
    /// region, and that region: (task GUID, region GUID), zeros when none.
    static WORKER: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// This thread's slot of [`WORKERS`] (`usize::MAX`: none taken yet; past
    /// the table: none).
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Threads whose open worker task the flush can see (later ones: not seen).
const WORKER_SLOTS: usize = 1024;

/// A worker thread's open implicit task, written by that thread only; `seq` is
/// odd while it is written.
struct Open {
    seq: AtomicU64,
    task: AtomicU64,
    region: AtomicU64,
}

/// Each worker thread's open implicit task, in the order threads first worked.
static WORKERS: [Open; WORKER_SLOTS] = [const {
    Open {
        seq: AtomicU64::new(0),
        task: AtomicU64::new(0),
        region: AtomicU64::new(0),
    }
}; WORKER_SLOTS];
/// Slots of [`WORKERS`] taken.
static TAKEN: AtomicUsize = AtomicUsize::new(0);

/// Shows this thread's open worker task (0s: none) in its slot of [`WORKERS`].
fn show(task: u64, region: u64) {
    let Ok(mut i) = SLOT.try_with(Cell::get) else {
        return;
    };
    if i == usize::MAX {
        if task == 0 {
            return;
        }
        i = TAKEN.fetch_add(1, Ordering::Relaxed);
        let _ = SLOT.try_with(|s| s.set(i));
    }
    let Some(o) = WORKERS.get(i) else { return };
    // One writer per slot: a plain sequence lock.
    let seq = o.seq.load(Ordering::Relaxed);
    o.seq.store(seq + 1, Ordering::Relaxed);
    fence(Ordering::Release);
    o.task.store(task, Ordering::Relaxed);
    o.region.store(region, Ordering::Relaxed);
    o.seq.store(seq + 2, Ordering::Release);
}

/// Every worker task still open whose region joined: (task GUID, join).
pub fn parked() -> impl Iterator<Item = (u64, u64)> {
    let n = TAKEN.load(Ordering::Relaxed).min(WORKER_SLOTS);
    WORKERS[..n].iter().filter_map(|o| {
        let seq = o.seq.load(Ordering::Acquire);
        let task = o.task.load(Ordering::Relaxed);
        let region = o.region.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if seq & 1 != 0 || o.seq.load(Ordering::Relaxed) != seq || task == 0 {
            return None;
        }
        Some((task, lookup(region)?))
    })
}

/// Forgets every join and worker task in a forked child (its only thread runs
/// this): the child's runtime and threads are new, and the parent's GUIDs may
/// name other instances there.
unsafe extern "C" fn forget_in_child() {
    for s in &JOINS {
        s.seq.store(0, Ordering::Relaxed);
        s.region.store(0, Ordering::Relaxed);
        s.at.store(0, Ordering::Relaxed);
    }
    for o in &WORKERS {
        o.seq.store(0, Ordering::Relaxed);
        o.task.store(0, Ordering::Relaxed);
        o.region.store(0, Ordering::Relaxed);
    }
    TAKEN.store(0, Ordering::Relaxed);
    let _ = WORKER.try_with(|w| w.set((0, 0)));
    let _ = SLOT.try_with(|s| s.set(usize::MAX));
}

/// Has a forked child forget the parent's joins and worker tasks (once).
pub fn forget_at_fork() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a handler that only stores to this module's atomics
        // and thread-locals.
        unsafe { libc::pthread_atfork(None, None, Some(forget_in_child)) };
    });
}

/// This thread begins implicit task `task` as a worker of `region`.
#[inline]
pub fn worker_begin(task: u64, region: u64) {
    let _ = WORKER.try_with(|w| w.set((task, region)));
    show(task, region);
}

/// When the region this thread works in as a worker joined, if it did (0
/// otherwise): what the thread still has open of it ends no later.
#[inline]
pub fn worker_join() -> u64 {
    let (_, region) = WORKER.try_with(Cell::get).unwrap_or((0, 0));
    if region == 0 {
        return 0;
    }
    lookup(region).unwrap_or(0)
}

/// Implicit task `task` ends on this thread: when its region joined if it is
/// this thread's worker task and the join is known (0 otherwise).
#[inline]
pub fn worker_end(task: u64) -> u64 {
    let (mine, region) = WORKER.try_with(Cell::get).unwrap_or((0, 0));
    if mine == 0 || mine != task {
        return 0;
    }
    let _ = WORKER.try_with(|w| w.set((0, 0)));
    show(0, 0);
    lookup(region).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_are_found_by_region_until_overwritten() {
        let a = 3 << 40 | 17;
        assert_eq!(lookup(a), None);
        publish(a, 1234);
        assert_eq!(lookup(a), Some(1234));
        assert_eq!(lookup(a + 1), None);
        publish(0, 5);
        publish(a + 1, 0);
        assert_eq!(lookup(0), None);
        // Another region hashing to the same slot replaces it.
        let b = (1u64..)
            .map(|i| a + i)
            .find(|&b| std::ptr::eq(slot(b), slot(a)))
            .unwrap();
        publish(b, 99);
        assert_eq!((lookup(a), lookup(b)), (None, Some(99)));
        // Regions one thread opens in turn take different slots.
        let distinct: std::collections::BTreeSet<_> = (0..64u64)
            .map(|i| slot(5 << 40 | i) as *const Slot)
            .collect();
        assert!(distinct.len() > 48, "{}", distinct.len());
    }

    #[test]
    fn a_worker_ends_at_its_regions_join() {
        let (task, region) = (7 << 40 | 3, 2 << 40 | 9);
        assert_eq!((worker_join(), worker_end(task)), (0, 0));
        worker_begin(task, region);
        assert_eq!(worker_join(), 0, "not joined yet");
        publish(region, 777);
        assert_eq!(worker_join(), 777);
        assert_eq!(worker_end(task + 1), 0, "not this thread's worker task");
        assert!(parked().any(|p| p == (task, 777)));
        assert_eq!(worker_end(task), 777);
        assert_eq!(worker_join(), 0, "ended");
        assert!(!parked().any(|(t, _)| t == task));
    }
}
