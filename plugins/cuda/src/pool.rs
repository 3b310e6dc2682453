//! The bounded pool of activity buffers handed to CUPTI.
//!
//! At most `count` buffers of `size` bytes are ever allocated (lazily, the first
//! time each is needed) and they are reused: a buffer CUPTI completed goes back to
//! the pool once its records are translated. When all are in CUPTI's hands the
//! pool answers with no buffer, and CUPTI drops records (and counts them: reported
//! as `device_records_dropped`); the program never waits and memory never grows.

use std::alloc::Layout;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_queue::ArrayQueue;

/// CUPTI needs buffers aligned to 8 bytes.
pub const ALIGN: usize = 8;

/// The pool.
pub struct Pool {
    free: ArrayQueue<usize>,
    allocated: AtomicUsize,
    count: usize,
    size: usize,
    refused: AtomicU64,
}

impl Pool {
    /// A pool of at most `count` (at least 1) buffers of `size` bytes (rounded up to
    /// a multiple of [`ALIGN`], at least 4 KiB).
    pub fn new(count: usize, size: usize) -> Pool {
        let count = count.max(1);
        let size = size.max(4096).next_multiple_of(ALIGN);
        Pool {
            free: ArrayQueue::new(count),
            allocated: AtomicUsize::new(0),
            count,
            size,
            refused: AtomicU64::new(0),
        }
    }

    /// Bytes per buffer.
    pub fn buffer_size(&self) -> usize {
        self.size
    }

    /// Buffers at most.
    pub fn capacity(&self) -> usize {
        self.count
    }

    /// Buffers allocated so far.
    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Requests answered with no buffer.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn layout(&self) -> Layout {
        // Valid: size is a non-zero multiple of the power-of-two alignment.
        Layout::from_size_align(self.size, ALIGN).expect("buffer layout")
    }

    /// A buffer, or None when all `count` are in use (or memory is exhausted).
    pub fn take(&self) -> Option<*mut u8> {
        if let Some(p) = self.free.pop() {
            return Some(p as *mut u8);
        }
        let grown = self
            .allocated
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
                (n < self.count).then_some(n + 1)
            });
        if grown.is_err() {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(self.layout()) };
        if p.is_null() {
            self.allocated.fetch_sub(1, Ordering::AcqRel);
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(p)
    }

    /// Gives back a buffer [`Pool::take`] returned.
    pub fn give(&self, p: *mut u8) {
        if p.is_null() {
            return;
        }
        // The queue holds every buffer ever allocated, so a push fails only for a
        // pointer that is not ours: left alone (whoever owns it may still use it).
        let _ = self.free.push(p as usize);
    }
}

/// Count and size from `KPROF_CUDA_BUFFERS` (default 64) and
/// `KPROF_CUDA_BUFFER_KB` (default 1024); invalid values take the default.
pub fn from_env() -> Pool {
    use kprof_tables::settings::cuda::{CUDA_BUFFERS, CUDA_BUFFER_KB};
    let count = CUDA_BUFFERS.count().unwrap_or(64) as usize;
    let kb = CUDA_BUFFER_KB.count().unwrap_or(1024) as usize;
    Pool::new(count, kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_reused() {
        let pool = Pool::new(2, 5000);
        assert_eq!(pool.buffer_size(), 5000usize.next_multiple_of(8));
        let a = pool.take().unwrap();
        let b = pool.take().unwrap();
        assert_ne!(a, b);
        assert_eq!(a as usize % ALIGN, 0);
        // Empty: no buffer, no growth.
        assert!(pool.take().is_none());
        assert!(pool.take().is_none());
        assert_eq!(pool.refused(), 2);
        assert_eq!(pool.allocated(), 2);
        pool.give(a);
        assert_eq!(pool.take(), Some(a));
        assert_eq!(pool.allocated(), 2);
        pool.give(b);
        pool.give(a);
        let mut got = [pool.take().unwrap(), pool.take().unwrap()];
        got.sort();
        let mut want = [a, b];
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn minimum_size_and_count() {
        let pool = Pool::new(0, 1);
        assert_eq!(pool.capacity(), 1);
        assert_eq!(pool.buffer_size(), 4096);
    }
}
