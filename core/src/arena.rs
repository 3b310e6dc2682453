//! Memory for record chunks, in 2 MiB blocks backed by transparent huge pages where
//! the kernel offers them.
//!
//! Application threads write every record into chunk memory once; with 4 KiB pages
//! each new page costs them a TLB miss (a two-dimensional page walk under a
//! hypervisor) and costs the thread that first touches it a page fault. A 2 MiB
//! huge page is one fault and one TLB entry for 32 chunks. Blocks are touched by the
//! allocating thread (the writer, ahead of need) and never returned: chunks live for
//! the rest of the process, recycled through the pool.

use std::cell::UnsafeCell;
use std::sync::Mutex;

use crate::record::Record;

/// Bytes per block: one huge page on x86-64.
const BLOCK_BYTES: usize = 2 << 20;
/// Distance between touches when pre-faulting: the base page size.
const PAGE_BYTES: usize = 4096;

/// Hands out zeroed, pre-faulted slices of records carved from huge-page blocks.
pub struct Arena {
    /// The unused rest of the current block: start and length in records.
    rest: Mutex<(usize, usize)>,
}

impl Arena {
    /// An arena with no block yet.
    pub const fn new() -> Arena {
        Arena {
            rest: Mutex::new((0, 0)),
        }
    }

    /// `n` records of fresh memory (`n * 16` must divide the block size), or `None`
    /// when the system has no memory left.
    pub fn take(&self, n: usize) -> Option<&'static [UnsafeCell<Record>]> {
        let unit = std::mem::size_of::<Record>();
        debug_assert_eq!(BLOCK_BYTES % (n * unit), 0);
        let mut rest = self.rest.lock().unwrap_or_else(|p| p.into_inner());
        if rest.1 < n {
            *rest = (map_block()?, BLOCK_BYTES / unit);
        }
        let start = rest.0 as *mut UnsafeCell<Record>;
        rest.0 += n * unit;
        rest.1 -= n;
        // SAFETY: [start, start + n) lies in a mapped block that is never unmapped,
        // and the arena hands each range out exactly once; all-zero bytes are a valid
        // Record and UnsafeCell<Record> has Record's layout.
        Some(unsafe { std::slice::from_raw_parts(start, n) })
    }
}

impl Default for Arena {
    fn default() -> Self {
        Arena::new()
    }
}

/// Maps one 2 MiB-aligned block, asks for huge pages and touches every page.
/// Returns its address.
fn map_block() -> Option<usize> {
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
    // SAFETY: both ranges lie inside the mapping made above and hold nothing.
    unsafe {
        if start > base {
            libc::munmap(p, start - base);
        }
        if base + len > end {
            libc::munmap(end as *mut libc::c_void, base + len - end);
        }
        // Advice only: without transparent huge pages this fails harmlessly.
        libc::madvise(start as *mut libc::c_void, BLOCK_BYTES, libc::MADV_HUGEPAGE);
    }
    for off in (0..BLOCK_BYTES).step_by(PAGE_BYTES) {
        // SAFETY: inside the block just mapped read-write; a volatile write so the
        // fault happens here, not on the first record an application thread stores.
        unsafe { std::ptr::write_volatile((start + off) as *mut u8, 0) };
    }
    Some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_distinct_zeroed_and_span_blocks() {
        let arena = Arena::new();
        let per_block = BLOCK_BYTES / (4096 * 16);
        let slices: Vec<_> = (0..per_block + 1)
            .map(|_| arena.take(4096).expect("memory"))
            .collect();
        let starts: Vec<usize> = slices.iter().map(|s| s.as_ptr() as usize).collect();
        // The first block is 2 MiB-aligned and filled in order; the next slice
        // starts a new block.
        assert_eq!(starts[0] % BLOCK_BYTES, 0);
        for w in starts[..per_block].windows(2) {
            assert_eq!(w[1] - w[0], 4096 * 16);
        }
        assert_eq!(starts[per_block] % BLOCK_BYTES, 0);
        assert!(!starts[..per_block].contains(&starts[per_block]));
        for s in &slices {
            assert_eq!(s.len(), 4096);
            // SAFETY: nothing else uses these slices.
            assert!(s.iter().all(|r| unsafe { *r.get() } == Record::default()));
        }
    }
}
