//! The core's C table once attached: the one pointer every callback reads.
//!
//! A leaf: the crate root stores the table here at `initialize` and the
//! callbacks read it back, so neither has to import the other for it (this
//! module imports nothing of the crate).

use std::sync::atomic::{AtomicPtr, Ordering};

use kprof_abi::CoreApi;

/// The core's table once attached; null before, or when kprof is disabled.
static CORE: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());

/// The core table, once attached.
#[inline(always)]
pub fn api() -> Option<&'static CoreApi> {
    // SAFETY: CORE holds null or a pointer to the core's static table.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

/// Publishes the core's table to every thread (before any callback is
/// registered: callbacks may fire on other threads as soon as they are set).
pub fn publish(api: &'static CoreApi) {
    CORE.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
}
