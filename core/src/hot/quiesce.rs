//! How the end of the run reads what threads recorded in place without ever
//! making a thread wait: each thread raises its busy flag before it looks whether
//! the runtime records and lowers it when its event is complete; the shutdown
//! stops the recording, then waits for every raised flag to fall before it reads.
//!
//! The two halves form a store-then-load pattern on each side (flag then
//! runtime pointer, runtime pointer then flag), which needs a full barrier on both
//! sides. The thread's half is free (a compiler barrier); the shutdown pays for
//! both with one process-wide barrier (`membarrier`), which runs a full barrier on
//! every thread of the process. Under `cfg(loom)` both halves are sequentially
//! consistent fences, the usual model of such an asymmetric pair
//! (docs/concurrency-models.md).

use crate::base::sync::order::{self, Site};
use crate::base::sync::{AtomicBool, Ordering};

/// A thread's flag: up while the thread is inside an event that saw the runtime
/// recording (or is about to look).
pub struct Busy(AtomicBool);

impl Default for Busy {
    fn default() -> Self {
        Busy(AtomicBool::new(false))
    }
}

impl Busy {
    /// Enters an event: raises the flag, then asks `recording` whether the runtime
    /// records. Returns what it said; `None` leaves the flag down again.
    #[inline(always)]
    pub fn enter<R>(&self, recording: impl FnOnce() -> Option<R>) -> Option<R> {
        self.0.store(true, Ordering::Relaxed);
        light_barrier();
        let r = recording();
        if r.is_none() {
            self.leave();
        }
        r
    }

    /// Leaves the event: everything it wrote happens before the shutdown's read.
    #[inline(always)]
    pub fn leave(&self) {
        self.0
            .store(false, order::at(Site::BusyLeave, Ordering::Release));
    }

    /// Whether the calling thread is inside an event (its own signal handler
    /// asks; async-signal-safe).
    #[inline]
    pub fn is_raised_here(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The thread's half of the barrier: keeps the compiler from moving the look at
/// the runtime above the flag's store; the CPU's reordering is undone by the
/// shutdown's [`heavy_barrier`].
#[inline(always)]
fn light_barrier() {
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    #[cfg(loom)]
    if order::kept(Site::BusyEnter) {
        crate::base::sync::fence(Ordering::SeqCst);
    }
}

/// `membarrier` commands (linux/membarrier.h).
#[cfg(not(loom))]
const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;
#[cfg(not(loom))]
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
#[cfg(not(loom))]
fn heavy_barrier() {
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

/// The model's heavy half: a sequentially consistent fence, which orders this
/// thread against every thread's [`light_barrier`].
#[cfg(loom)]
fn heavy_barrier() {
    crate::base::sync::fence(Ordering::SeqCst);
}

/// After recording stopped: makes every thread's busy flag visible, then waits
/// (up to `wait` in all) for the threads inside an event to leave it. Returns,
/// per flag, whether that thread was still busy (it was stopped inside an event,
/// by a signal that ends the run on it, or descheduled for longer than `wait`).
pub fn quiesce<'a>(
    flags: impl IntoIterator<Item = &'a Busy>,
    wait: std::time::Duration,
) -> Vec<bool> {
    let deadline = std::time::Instant::now() + wait;
    quiesce_with(flags, || {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
        true
    })
}

/// [`quiesce`], waiting by `pause` (which returns false to give up on the rest).
pub fn quiesce_with<'a>(
    flags: impl IntoIterator<Item = &'a Busy>,
    mut pause: impl FnMut() -> bool,
) -> Vec<bool> {
    heavy_barrier();
    flags
        .into_iter()
        .map(|b| {
            while b.0.load(Ordering::Acquire) {
                if !pause() {
                    return true;
                }
            }
            false
        })
        .collect()
}
