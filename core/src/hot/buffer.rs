//! Fixed-size chunks of records and the bounded pool they circulate in.
//!
//! A chunk is filled by exactly one thread, then handed to the writer through the
//! `full` queue, processed, and returned to the `free` queue. Both queues are
//! lock-free (crossbeam `ArrayQueue`). The total number of chunks is capped by the
//! buffer budget; chunks are allocated (and their pages touched) by the writer thread
//! ahead of need, and by an application thread only when the writer fell behind and
//! the budget still allows — never in the middle of an event, at most once per chunk.
//!
//! While a thread fills a chunk, it publishes the count of complete records with a
//! release store after each append, so the writer can read ("peek") a chunk that is
//! still being filled — for periodic flushes and for the final flush at exit.

use crate::base::sync::order::{self, Site};
use crate::base::sync::{ArrayQueue, AtomicU32, AtomicU64, AtomicUsize, Ordering, UnsafeCell};
use crate::hot::arena::{Arena, ArenaStats};

/// Record words per chunk (64 KiB).
#[cfg(not(loom))]
pub const CHUNK_WORDS: usize = 8192;
/// Record words per chunk: a few, so the hand-off model fills and recycles
/// chunks in a handful of events.
#[cfg(loom)]
pub const CHUNK_WORDS: usize = 4;
/// Bytes per chunk.
pub const CHUNK_BYTES: usize = CHUNK_WORDS * std::mem::size_of::<u64>();
/// Chunks per block of the arena (one fault of a huge page, or 512 small ones).
pub const BLOCK_CHUNKS: usize = crate::hot::arena::BLOCK_BYTES / CHUNK_BYTES;

/// Where every chunk's records live (pre-faulted memory, so no application thread
/// page-faults on its records).
static ARENA: Arena = Arena::new();

/// Holds the buffer memory's lock across a `fork` (see [`Arena::hold`]).
pub fn hold_for_fork() -> crate::hot::arena::ArenaHold<'static> {
    ARENA.hold()
}

/// What the process's buffer memory has cost so far.
pub fn memory_stats() -> ArenaStats {
    ARENA.stats()
}

/// A chunk of records, owned by one thread at a time.
pub struct Chunk {
    words: &'static [UnsafeCell<u64>; CHUNK_WORDS],
    /// Words of complete events, visible to the writer.
    published: AtomicU32,
    /// Words the writer has processed (written by the writer only).
    consumed: AtomicU32,
    /// Index of the thread filling it.
    owner: AtomicU32,
    /// The owner's chunk sequence number, so the writer keeps each thread's order.
    seq: AtomicU64,
}

// SAFETY: words are written only by the owning thread at indices >= published, and
// read by the writer only below an acquired `published`; the two never overlap.
unsafe impl Sync for Chunk {}

impl Chunk {
    fn new() -> Option<&'static Chunk> {
        #[cfg(not(loom))]
        let words = UnsafeCell::from_std(ARENA.take(CHUNK_WORDS)?)
            .try_into()
            .ok()?;
        // The model's chunks are cells loom checks, made per explored execution.
        #[cfg(loom)]
        let words = Box::leak(Box::new(std::array::from_fn(|_| UnsafeCell::new(0))));
        Some(Box::leak(Box::new(Chunk {
            words,
            published: AtomicU32::new(0),
            consumed: AtomicU32::new(0),
            owner: AtomicU32::new(0),
            seq: AtomicU64::new(0),
        })))
    }

    /// Prepares the chunk for `owner`'s `seq`-th chunk.
    pub fn claim(&self, owner: u32, seq: u64) {
        self.published.store(0, Ordering::Relaxed);
        self.consumed.store(0, Ordering::Relaxed);
        self.owner.store(owner, Ordering::Relaxed);
        self.seq.store(seq, Ordering::Release);
    }

    /// Writes `w` at `index`, not yet visible to the writer (see [`Chunk::publish`]).
    ///
    /// Only the owning thread calls this, with `index` at or past the count it
    /// published last and below [`CHUNK_WORDS`].
    #[inline(always)]
    pub fn write(&self, index: usize, w: u64) {
        // SAFETY: the slot is past `published`, so the writer does not read it, and
        // only the owner writes; bounds are checked by the slice index.
        self.words[index].with_mut(|p| unsafe { *p = w });
    }

    /// Writes the `N` words of one event at `index` (as [`Chunk::write`]; the
    /// caller checked that `index + N <= CHUNK_WORDS`).
    #[inline(always)]
    pub fn write_event<const N: usize>(&self, index: usize, words: [u64; N]) {
        let Some(slots) = self.words.get(index..index + N) else {
            return;
        };
        for (slot, w) in slots.iter().zip(words) {
            // SAFETY: as in `write`: past `published`, owner only.
            slot.with_mut(|p| unsafe { *p = w });
        }
    }

    /// Makes the first `n` words visible to the writer (whole events only).
    #[inline(always)]
    pub fn publish(&self, n: usize) {
        self.published
            .store(n as u32, order::at(Site::ChunkPublish, Ordering::Release));
    }

    /// The words published but not yet consumed; marks them consumed.
    /// Writer thread only.
    pub fn take_new(&self) -> &[u64] {
        let end = self.published.load(Ordering::Acquire) as usize;
        let start = self.consumed.load(Ordering::Relaxed) as usize;
        if start >= end {
            return &[];
        }
        self.consumed.store(end as u32, Ordering::Relaxed);
        self.complete(start, end)
    }

    /// Words `start..end`, below the acquired `published`.
    #[cfg(not(loom))]
    fn complete(&self, start: usize, end: usize) -> &[u64] {
        // SAFETY: indices below the acquired `published` are complete and no longer
        // written; UnsafeCell<u64> has the layout of u64.
        unsafe {
            std::slice::from_raw_parts(self.words[start..end].as_ptr().cast::<u64>(), end - start)
        }
    }

    /// Words `start..end`, below the acquired `published`: the model reads each
    /// through loom, which checks that its write happens before (a copy, kept as
    /// the writer keeps the words until it recycles the chunk).
    #[cfg(loom)]
    fn complete(&self, start: usize, end: usize) -> &[u64] {
        Box::leak(
            self.words[start..end]
                .iter()
                // SAFETY: as in the normal build: complete, no longer written.
                .map(|w| w.with(|p| unsafe { *p }))
                .collect(),
        )
    }

    /// Index of the owning thread.
    pub fn owner(&self) -> u32 {
        self.owner.load(Ordering::Relaxed)
    }

    /// The owner's sequence number of this chunk.
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Whether this chunk, found as thread `owner`'s current one, is the one the
    /// writer reads next (`expected`-th of that thread): not one the thread handed
    /// over after the writer read the queue, nor one recycled to another thread.
    pub fn follows(&self, owner: u32, expected: u64) -> bool {
        self.owner() == owner && self.seq() == expected
    }
}

/// The chunks of the process: free ones ready for threads, full ones for the writer.
pub struct Pool {
    free: ArrayQueue<&'static Chunk>,
    full: ArrayQueue<&'static Chunk>,
    allocated: AtomicUsize,
    /// Chunks handed to threads so far (the writer's measure of demand).
    taken: AtomicU64,
    max: usize,
}

impl Pool {
    /// A pool of at most `budget_mb` MiB of chunks, with `initial` allocated now.
    pub fn new(budget_mb: u64, initial: usize) -> Pool {
        let max = ((budget_mb as usize).saturating_mul(1 << 20) / CHUNK_BYTES).max(4);
        let pool = Pool {
            free: ArrayQueue::new(max),
            full: ArrayQueue::new(max),
            allocated: AtomicUsize::new(0),
            taken: AtomicU64::new(0),
            max,
        };
        pool.top_up(initial);
        pool
    }

    /// A free chunk; when none is free but the budget allows, a new one. Allocating
    /// here, on an application thread, is the rare case of a writer that fell behind
    /// (it keeps the free queue stocked otherwise): better than dropping records.
    #[inline]
    pub fn take(&self) -> Option<&'static Chunk> {
        let c = self.free.pop().or_else(|| self.allocate())?;
        // Once per chunk, not per record: a locked add is cheap at that rate.
        self.taken.fetch_add(1, Ordering::Relaxed);
        Some(c)
    }

    /// Reserves room in the budget for one chunk and allocates it.
    fn allocate(&self) -> Option<&'static Chunk> {
        self.allocated
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()?;
        let c = Chunk::new();
        if c.is_none() {
            self.allocated.fetch_sub(1, Ordering::Relaxed);
        }
        c
    }

    /// Hands a chunk to the writer.
    pub fn submit(&self, c: &'static Chunk) {
        // Cannot fail: the queue holds every chunk that exists.
        let _ = self.full.push(c);
    }

    /// The next chunk for the writer, in submission order.
    pub fn next_full(&self) -> Option<&'static Chunk> {
        self.full.pop()
    }

    /// Returns a processed chunk to the free queue.
    pub fn recycle(&self, c: &'static Chunk) {
        let _ = self.free.push(c);
    }

    /// Allocates chunks until `want` are free or the budget is spent.
    pub fn top_up(&self, want: usize) {
        while self.free.len() < want {
            match self.allocate() {
                Some(c) => {
                    let _ = self.free.push(c);
                }
                None => return,
            }
        }
    }

    /// Allocates up to one more block's worth of chunks toward `reserve` chunks
    /// allocated in all (at most the budget). Returns whether more remain: false
    /// once the reserve is reached, or when the system has no memory left.
    pub fn stock(&self, reserve: usize) -> bool {
        let reserve = reserve.min(self.max);
        let before = self.allocated();
        if before >= reserve {
            return false;
        }
        self.top_up(self.free_len() + BLOCK_CHUNKS.min(reserve - before));
        let after = self.allocated();
        after > before && after < reserve
    }

    /// Chunks handed to threads so far.
    pub fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    /// Full chunks waiting for the writer.
    pub fn full_len(&self) -> usize {
        self.full.len()
    }

    /// Free chunks now.
    pub fn free_len(&self) -> usize {
        self.free.len()
    }

    /// Chunks the budget allows.
    pub fn max_chunks(&self) -> usize {
        self.max
    }

    /// Chunks allocated so far.
    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publish_take_and_recycle() {
        let pool = Pool::new(1, 2);
        assert_eq!(pool.max_chunks(), 16);
        let c = pool.take().unwrap();
        c.claim(7, 0);
        for i in 0..3 {
            c.write(i, i as u64);
        }
        assert!(c.take_new().is_empty(), "nothing published yet");
        c.publish(3);
        assert_eq!(c.take_new().len(), 3);
        assert!(c.take_new().is_empty());
        c.write(3, 3);
        c.publish(4);
        assert_eq!(c.take_new(), [3]);
        pool.submit(c);
        let back = pool.next_full().unwrap();
        assert_eq!(back.owner(), 7);
        pool.recycle(back);
        pool.top_up(100);
        assert_eq!(pool.allocated(), 16);
    }

    #[test]
    fn stocks_a_block_at_a_time_up_to_the_reserve_and_the_budget() {
        let pool = Pool::new(4, 0);
        assert_eq!(pool.max_chunks(), 2 * BLOCK_CHUNKS);
        let held = pool.take().unwrap();
        assert!(pool.stock(BLOCK_CHUNKS + 8), "one block, 8 chunks to go");
        assert_eq!(pool.allocated(), 1 + BLOCK_CHUNKS);
        assert_eq!(
            pool.free_len(),
            BLOCK_CHUNKS,
            "stocked beside what is taken"
        );
        assert!(!pool.stock(BLOCK_CHUNKS + 8), "reached");
        assert_eq!(pool.allocated(), BLOCK_CHUNKS + 8);
        assert!(!pool.stock(BLOCK_CHUNKS + 8), "nothing more");
        assert_eq!(pool.allocated(), BLOCK_CHUNKS + 8);
        // A reserve beyond the budget stops at the budget.
        while pool.stock(usize::MAX) {}
        assert_eq!(pool.allocated(), pool.max_chunks());
        pool.recycle(held);
    }

    #[test]
    fn take_allocates_within_the_budget_then_runs_dry() {
        let pool = Pool::new(1, 0);
        let taken: Vec<_> = std::iter::from_fn(|| pool.take()).take(100).collect();
        assert_eq!(taken.len(), 16, "1 MiB holds 16 chunks of 64 KiB");
        assert!(pool.take().is_none());
        pool.recycle(taken[3]);
        assert!(pool.take().is_some_and(|c| std::ptr::eq(c, taken[3])));
    }
}
