//! Keeping panics on our side of an `extern "C"` boundary.
//!
//! A Rust panic that reaches a C caller aborts the process; a tool must never do that
//! to its host. Every exported function runs its body through [`guard`].

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

/// Panics caught by [`guard`] in this library, for reporting.
static CAUGHT: AtomicU64 = AtomicU64::new(0);

/// Runs `f`; if it panics, counts the panic and returns `fallback` instead of
/// unwinding into the caller.
#[inline(always)]
pub fn guard<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            CAUGHT.fetch_add(1, Ordering::Relaxed);
            fallback
        }
    }
}

/// Panics caught so far by [`guard`] in this library, resetting the count.
pub fn take_caught() -> u64 {
    CAUGHT.swap(0, Ordering::Relaxed)
}
