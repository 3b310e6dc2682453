//! The program's own actions for the signals `kprof run` forwards, as the program
//! set them (what `sigaction` returns to it as the old action), while the kernel
//! holds our handler in front of each of them.
//!
//! One lock guards the table. Whoever holds it blocks every signal in its thread
//! first, so a handler can never wait on a lock its own thread holds; the lock is
//! held for one system call at most.

use std::cell::UnsafeCell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::sys;

/// The signals `kprof run` forwards.
pub const MANAGED: [c_int; 6] = kprof_abi::forward::FORWARDED;

/// Position of `sig` in [`MANAGED`].
pub fn index(sig: c_int) -> Option<usize> {
    MANAGED.iter().position(|&s| s == sig)
}

struct Table(UnsafeCell<[libc::sigaction; MANAGED.len()]>);

// SAFETY: every access goes through `Held`, which holds LOCK.
unsafe impl Sync for Table {}

// SAFETY: an all-zero sigaction is SIG_DFL with no flags and an empty mask.
static TABLE: Table = Table(UnsafeCell::new(unsafe { std::mem::zeroed() }));
static LOCK: AtomicBool = AtomicBool::new(false);

/// The table, held; every signal of this thread is blocked until it is dropped.
pub struct Held {
    mask: libc::sigset_t,
}

/// Takes the table.
pub fn lock() -> Held {
    let mask = sys::block_all();
    let mut spins = 0u32;
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        // The holder runs on another thread (this one has none: its signals were
        // blocked while it held), one system call long.
        spins += 1;
        if spins & 63 == 0 {
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
    Held { mask }
}

impl Held {
    /// The program's action for `MANAGED[i]`.
    pub fn get(&self, i: usize) -> libc::sigaction {
        // SAFETY: LOCK is held; `get` returns a copy.
        unsafe { (*TABLE.0.get()).get(i).copied() }
            // SAFETY: as for the table's start: SIG_DFL.
            .unwrap_or_else(|| unsafe { std::mem::zeroed() })
    }

    /// Records the program's action for `MANAGED[i]`.
    pub fn set(&self, i: usize, act: libc::sigaction) {
        // SAFETY: LOCK is held.
        if let Some(slot) = unsafe { (*TABLE.0.get()).get_mut(i) } {
            *slot = act;
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        LOCK.store(false, Ordering::Release);
        sys::restore(&self.mask);
    }
}
