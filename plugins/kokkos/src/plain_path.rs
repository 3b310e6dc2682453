//! The kernel callbacks' plain path: the core's table while a host kernel needs
//! nothing but the core's begin and end, null once anything more is needed.
//!
//! A leaf: the crate root opens the path at the end of `kokkosp_init_library`
//! and reads it in the kernel callbacks, [`timing`](crate::timing) closes it
//! before device kernels are fenced; this module imports nothing of the crate,
//! so neither of them imports the other for it.

use std::sync::atomic::{AtomicPtr, Ordering};

use kprof_abi::CoreApi;

/// The core's table while a kernel callback needs nothing but the core (see
/// [`plain`]); null otherwise.
static PLAIN: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());

/// The core's table when a host kernel's callbacks need nothing but the core's
/// begin and end: attached, not RAJA's bridge, no next tool, device kernels not
/// fenced. One load and a branch in front of the full path, whose checks
/// (bridge, chain, device timing) each cost a load and a branch per callback.
#[inline(always)]
pub fn plain() -> Option<&'static CoreApi> {
    // SAFETY: PLAIN holds null or the attached core's pointer to its static
    // table (see `open`).
    unsafe { PLAIN.load(Ordering::Acquire).as_ref() }
}

/// Opens the plain path with the attached core's table `api` (the crate root
/// calls it once it has checked that nothing else is needed).
pub fn open(api: &'static CoreApi) {
    PLAIN.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
}

/// Closes the plain path for good: device kernels are fenced from now on
/// ([`timing`](crate::timing) calls it before it says so).
pub fn close() {
    PLAIN.store(std::ptr::null_mut(), Ordering::Release);
}
