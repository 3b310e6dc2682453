//! Memory for record chunks, in 2 MiB blocks, pre-faulted by the thread that maps
//! them (the writer, ahead of need) so no application thread takes a page fault on
//! its records. Blocks are never returned: chunks live for the rest of the process,
//! recycled through the pool.
//!
//! A block is backed either by one transparent huge page (one fault, one TLB entry
//! for 32 chunks) or by 4 KiB pages. Which is cheaper depends on the machine: on bare
//! metal a huge page costs a fraction of 512 small ones, but in a virtual machine
//! whose balloon takes back free memory (free page reporting), the host must back a
//! fresh huge page first, and that was measured here at ~4.5 ms per block against
//! ~0.8 ms for small pages — while memory the guest freed moments ago costs ~0.1 ms
//! as a huge page. Each block's faulting is timed and the arena keeps to the cheaper
//! kind, trying the other one now and then, since the cost changes with the state of
//! the host.

use std::cell::UnsafeCell;
use std::sync::Mutex;
use std::time::Instant;

/// Bytes per block: one huge page on x86-64.
pub const BLOCK_BYTES: usize = 2 << 20;
/// Distance between touches when pre-faulting: the base page size.
const PAGE_BYTES: usize = 4096;
/// Every this many blocks the arena backs one with the kind it has not been using,
/// to notice when that one became the cheaper.
const PROBE_EVERY: u64 = 16;

/// Hands out zeroed, pre-faulted slices of records carved from 2 MiB blocks.
pub struct Arena {
    state: Mutex<State>,
}

/// The arena's lock, held (see [`Arena::hold`]).
pub struct ArenaHold<'a>(#[allow(dead_code)] std::sync::MutexGuard<'a, State>);

/// The unused rest of the current block, and what blocks have cost.
struct State {
    /// Start of the rest (an address).
    start: usize,
    /// Records left in the block.
    left: usize,
    /// Recent cost of faulting a block with a huge page, in ns (0: never tried).
    huge_ns: u64,
    /// The same for a block of 4 KiB pages.
    small_ns: u64,
    /// What all blocks cost so far.
    stats: ArenaStats,
}

/// What the arena has mapped so far, for kprof's account of its own cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArenaStats {
    /// Blocks backed by a huge page (as asked; the kernel may have declined).
    pub huge_blocks: u64,
    /// Blocks of 4 KiB pages.
    pub small_blocks: u64,
    /// Time spent mapping and faulting blocks in, in ns.
    pub fault_ns: u64,
}

impl ArenaStats {
    /// Blocks mapped.
    pub fn blocks(&self) -> u64 {
        self.huge_blocks + self.small_blocks
    }

    /// Bytes mapped.
    pub fn bytes(&self) -> u64 {
        self.blocks() * BLOCK_BYTES as u64
    }
}

impl State {
    /// Whether the next block should be a huge page: the cheaper kind so far, the
    /// other one every [`PROBE_EVERY`] blocks, and a huge page first.
    fn next_is_huge(&self) -> bool {
        let huge_cheaper = match (self.huge_ns, self.small_ns) {
            (0, _) => true,
            // A fast huge page needs no comparison; a slow one is tried against
            // small pages once.
            (h, 0) => h < SMALL_BLOCK_GUESS_NS,
            (h, s) => h <= s,
        };
        huge_cheaper != (self.stats.blocks() % PROBE_EVERY == PROBE_EVERY - 1)
    }

    /// Notes what faulting one block of the given kind took.
    fn observe(&mut self, huge: bool, ns: u64) {
        let cost = if huge {
            &mut self.huge_ns
        } else {
            &mut self.small_ns
        };
        // A cheaper block is believed at once (the probe that finds the other kind
        // cheap again switches); a dearer one counts half, so one outlier among
        // fast blocks does not by itself flip the choice.
        *cost = if *cost == 0 || ns < *cost {
            ns
        } else {
            (*cost + ns) / 2
        }
        .max(1);
        if huge {
            self.stats.huge_blocks += 1;
        } else {
            self.stats.small_blocks += 1;
        }
        self.stats.fault_ns += ns;
    }
}

/// Above this many ns per huge-page block, small pages are worth a try (a block of
/// small pages measured ~0.8 ms on a virtual machine, ~0.3 ms on bare metal).
const SMALL_BLOCK_GUESS_NS: u64 = 1_000_000;

impl Arena {
    /// An arena with no block yet.
    pub const fn new() -> Arena {
        Arena {
            state: Mutex::new(State {
                start: 0,
                left: 0,
                huge_ns: 0,
                small_ns: 0,
                stats: ArenaStats {
                    huge_blocks: 0,
                    small_blocks: 0,
                    fault_ns: 0,
                },
            }),
        }
    }

    /// Holds the arena's lock across a `fork`, so the child never inherits it
    /// locked by a thread that does not exist there (dropping the guard unlocks it,
    /// in the parent and in the child).
    pub fn hold(&self) -> ArenaHold<'_> {
        ArenaHold(self.state.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// What the arena has mapped so far.
    pub fn stats(&self) -> ArenaStats {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).stats
    }

    /// `n` record words of fresh memory (`n * 8` must divide the block size), or
    /// `None` when the system has no memory left.
    pub fn take(&self, n: usize) -> Option<&'static [UnsafeCell<u64>]> {
        let unit = std::mem::size_of::<u64>();
        debug_assert_eq!(BLOCK_BYTES % (n * unit), 0);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if st.left < n {
            let huge = st.next_is_huge();
            let t0 = Instant::now();
            st.start = map_block(huge)?;
            st.left = BLOCK_BYTES / unit;
            st.observe(huge, t0.elapsed().as_nanos() as u64);
        }
        let start = st.start as *mut UnsafeCell<u64>;
        st.start += n * unit;
        st.left -= n;
        // SAFETY: [start, start + n) lies in a mapped block that is never unmapped,
        // and the arena hands each range out exactly once; all-zero bytes are a valid
        // u64 and UnsafeCell<u64> has u64's layout.
        Some(unsafe { std::slice::from_raw_parts(start, n) })
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

/// Maps one 2 MiB-aligned block, backed by a huge page if `huge` (where the kernel
/// offers them), and faults every page in. Returns its address.
fn map_block(huge: bool) -> Option<usize> {
    // Twice the size, so an aligned block fits; the unaligned ends are unmapped.
    let len = 2 * BLOCK_BYTES;
    // SAFETY: an anonymous private mapping at an address the kernel chooses touches
    // no existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return None;
    }
    let base = p as usize;
    let start = (base + BLOCK_BYTES - 1) & !(BLOCK_BYTES - 1);
    let end = start + BLOCK_BYTES;
    let block = start as *mut libc::c_void;
    // SAFETY: both ranges lie inside the mapping made above and hold nothing; the
    // advice concerns only the block. Advice only: where it is not supported it
    // fails harmlessly.
    let populated = unsafe {
        if start > base {
            libc::munmap(p, start - base);
        }
        if base + len > end {
            libc::munmap(end as *mut libc::c_void, base + len - end);
        }
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        libc::madvise(block, BLOCK_BYTES, advice);
        // One system call for the whole block instead of a fault per page (Linux
        // 5.14 and later; older kernels say EINVAL and the loop below does it).
        libc::madvise(block, BLOCK_BYTES, MADV_POPULATE_WRITE) == 0
    };
    if !populated {
        for off in (0..BLOCK_BYTES).step_by(PAGE_BYTES) {
            // SAFETY: inside the block just mapped read-write; a volatile write so
            // the fault happens here, not on the first record a thread stores.
            unsafe { std::ptr::write_volatile((start + off) as *mut u8, 0) };
        }
    }
    Some(start)
}

/// `madvise` advice: fault pages in writable (Linux 5.14, not in every libc crate).
const MADV_POPULATE_WRITE: libc::c_int = 23;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_to_the_cheaper_kind_of_page_and_probes_the_other() {
        let mut st = State {
            start: 0,
            left: 0,
            huge_ns: 0,
            small_ns: 0,
            stats: ArenaStats::default(),
        };
        assert!(st.next_is_huge(), "huge pages first");
        st.observe(true, 100_000);
        assert!(st.next_is_huge(), "a fast huge page needs no comparison");
        st.observe(true, 4_000_000);
        st.observe(true, 5_000_000);
        assert!(!st.next_is_huge(), "slow huge pages: try small ones");
        st.observe(false, 800_000);
        let picks: Vec<bool> = (0..PROBE_EVERY)
            .map(|_| {
                let huge = st.next_is_huge();
                st.observe(huge, if huge { 4_000_000 } else { 800_000 });
                huge
            })
            .collect();
        assert_eq!(
            picks.iter().filter(|&&h| h).count(),
            1,
            "small pages, but one huge probe per {PROBE_EVERY} blocks: {picks:?}"
        );
        // The host got fast again: the probe finds out and huge pages come back.
        while !st.next_is_huge() {
            st.observe(false, 800_000);
        }
        st.observe(true, 50_000);
        assert!(st.next_is_huge());
        let n = PROBE_EVERY + 5;
        assert!(st.stats.blocks() >= n, "{} blocks", st.stats.blocks());
        assert!(st.stats.fault_ns >= 4_000_000 + 5_000_000 + 800_000 * PROBE_EVERY);
    }

    #[test]
    fn slices_are_distinct_zeroed_and_span_blocks() {
        let arena = Arena::new();
        // Slices of 64 KiB: 8192 words.
        let per_block = BLOCK_BYTES / (8192 * 8);
        let slices: Vec<_> = (0..per_block + 1)
            .map(|_| arena.take(8192).expect("memory"))
            .collect();
        let starts: Vec<usize> = slices.iter().map(|s| s.as_ptr() as usize).collect();
        // The first block is 2 MiB-aligned and filled in order; the next slice
        // starts a new block.
        assert_eq!(starts[0] % BLOCK_BYTES, 0);
        for w in starts[..per_block].windows(2) {
            assert_eq!(w[1] - w[0], 8192 * 8);
        }
        assert_eq!(starts[per_block] % BLOCK_BYTES, 0);
        let stats = arena.stats();
        assert_eq!(stats.bytes(), 2 * BLOCK_BYTES as u64);
        assert!(stats.fault_ns > 0);
        assert!(!starts[..per_block].contains(&starts[per_block]));
        for s in &slices {
            assert_eq!(s.len(), 8192);
            // SAFETY: nothing else uses these slices.
            assert!(s.iter().all(|r| unsafe { *r.get() } == 0));
        }
    }
}
