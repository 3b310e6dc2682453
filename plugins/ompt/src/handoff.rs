//! The orderings the OpenMP runtime makes between callbacks on different threads,
//! told to ThreadSanitizer.
//!
//! An explicit task's word and block ([`crate::task`]) are written by the thread
//! that creates the task and read by the thread that runs it, and by the threads
//! that report a dependence on it. The runtime orders these callbacks (it queues the
//! task only after `task_create` returns, and hands it over through its own
//! queues and locks), but libomp is not instrumented, so ThreadSanitizer cannot see
//! that ordering and reports each hand-over as a race. In a build for it
//! (`RUSTFLAGS="-Zsanitizer=thread --cfg kprof_tsan"`, `scripts/tsan.sh`) these
//! functions tell it: [`release`] where the runtime may hand a task on, [`acquire`]
//! where a callback receives one, keyed by the task's `ompt_data_t`. In every other
//! build they are empty and inline to nothing.

use crate::ompt::Data;

#[cfg(kprof_tsan)]
extern "C" {
    /// ThreadSanitizer's runtime: a release on `addr` (`tsan_interface.h`).
    fn __tsan_release(addr: *mut std::ffi::c_void);
    /// ThreadSanitizer's runtime: an acquire on `addr`, after every earlier
    /// release on it.
    fn __tsan_acquire(addr: *mut std::ffi::c_void);
}

/// What this thread wrote for the task of `d` happens before the next
/// [`acquire`] of `d` on any thread.
#[cfg(kprof_tsan)]
#[inline(always)]
pub fn release(d: *mut Data) {
    if !d.is_null() {
        // SAFETY: the runtime only records the address; nothing is dereferenced.
        unsafe { __tsan_release(d.cast()) };
    }
}

/// Everything written for the task of `d` before its latest [`release`] happens
/// before what this thread does next.
#[cfg(kprof_tsan)]
#[inline(always)]
pub fn acquire(d: *mut Data) {
    if !d.is_null() {
        // SAFETY: the runtime only records the address; nothing is dereferenced.
        unsafe { __tsan_acquire(d.cast()) };
    }
}

/// What this thread wrote for the task of `d` happens before the next
/// [`acquire`] of `d` on any thread (nothing to do outside a ThreadSanitizer build).
#[cfg(not(kprof_tsan))]
#[inline(always)]
pub fn release(_d: *mut Data) {}

/// Everything written for the task of `d` before its latest [`release`] happens
/// before what this thread does next (nothing to do outside a ThreadSanitizer
/// build).
#[cfg(not(kprof_tsan))]
#[inline(always)]
pub fn acquire(_d: *mut Data) {}
