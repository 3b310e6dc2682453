//! RAJA's Kokkos-tools bridge (`KOKKOS_PLUGINS=libkprof.so`): RAJA calls the
//! kernel callbacks with interface version [`RAJA_BRIDGE_VERSION`] and empty names.
//! When kprof's own RAJA plugin (`libkprof_raja.so`, from `RAJA_PLUGINS`) is loaded
//! too, it records the same kernels with their names and platforms: the bridge's
//! records are then left out, so nothing is counted twice.

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// The interface version RAJA's Kokkos-tools bridge (`KOKKOS_PLUGINS`) passes.
pub const RAJA_BRIDGE_VERSION: u64 = 20171029;

/// Loaded by RAJA's Kokkos bridge: its kernels have no names.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// 0: not decided yet; 1: record bridge kernels; 2: leave them to libkprof_raja.
static DEFER: AtomicU8 = AtomicU8::new(0);

/// Notes the interface version Kokkos (or RAJA) passed at init.
pub fn init(interface_ver: u64) {
    if interface_ver == RAJA_BRIDGE_VERSION {
        ACTIVE.store(true, Ordering::Relaxed);
    }
}

/// Whether this is RAJA's bridge.
#[inline(always)]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Whether bridge kernels are left to kprof's RAJA plugin (decided on the first
/// kernel, when RAJA has loaded all its plugins).
#[inline]
pub fn deferred() -> bool {
    if !active() {
        return false;
    }
    match DEFER.load(Ordering::Relaxed) {
        0 => {
            let raja = raja_plugin_loaded();
            DEFER.store(if raja { 2 } else { 1 }, Ordering::Relaxed);
            raja
        }
        d => d == 2,
    }
}

fn raja_plugin_loaded() -> bool {
    unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info and our flag as data.
        let (info, found) = unsafe { (&*info, &mut *(data as *mut bool)) };
        if !info.dlpi_name.is_null() {
            // SAFETY: a NUL-terminated path owned by the loader.
            let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes();
            if name.ends_with(b"libkprof_raja.so") {
                *found = true;
                return 1;
            }
        }
        0
    }
    let mut found = false;
    // SAFETY: the callback only reads the loader's tables and writes our flag.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut found as *mut bool as *mut c_void) };
    found
}
