//! The core's C table once attached, and what is measured ([`MODE`]'s bits):
//! the two loads every hook, wrapper and OpenSHMEM call starts with.
//!
//! A leaf: [`crate::connect`] stores here when it attaches and when the run
//! ends, and every part that measures reads here; this module imports nothing
//! of the crate, so that none of them imports the crate's root (which uses
//! them) for the table.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};

use kprof_abi::CoreApi;

/// The core's table once attached; null before, or when kprof is disabled.
static CORE: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
/// The run ended (the core's final flush ran): the table is not used again.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// What is measured, as [`MODE`] holds it: one load tells a hook whether kprof
/// is attached and what to do.
pub mod mode {
    /// Attached (the core table is there): count.
    pub const ON: u8 = 1;
    /// The MAIN/PROC/COMM breakdown ([`crate::state::timing`]).
    pub const TIMING: u8 = 2;
    /// Segments are core instances ([`crate::segments::on`]).
    pub const SEGMENTS: u8 = 4;
}

/// [`mod@mode`] bits, set once attached; 0 before and after the run.
static MODE: AtomicU8 = AtomicU8::new(0);

/// The core table, once attached (None when kprof is disabled or after the end).
#[inline(always)]
pub fn api() -> Option<&'static CoreApi> {
    if FINALIZED.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: CORE holds null or a pointer to the core's static table.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

/// What to measure ([`mod@mode`] bits; 0: nothing, kprof is not attached).
#[inline(always)]
pub fn mode() -> u8 {
    MODE.load(Ordering::Relaxed)
}

/// Publishes the attached core's table `api` (before [`set_mode`]).
pub fn publish(api: &'static CoreApi) {
    CORE.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
}

/// Sets what is measured ([`mod@mode`] bits), once the table is published.
pub fn set_mode(m: u8) {
    MODE.store(m, Ordering::Release);
}

/// The run ended: nothing is measured any more and the table reads as gone.
pub fn finalize() {
    MODE.store(0, Ordering::Relaxed);
    FINALIZED.store(true, Ordering::Relaxed);
}
