//! The OpenSHMEM layer, through its profiling interface: liboshmem defines every
//! `shmem_*` as a weak alias of `pshmem_*`, so the `shmem_*` below (this library
//! is preloaded) are the ones the program and Conveyors call; each forwards to
//! `pshmem_*` (found with `dlsym(RTLD_NEXT)`), counts the call and its time,
//! and tells [`state::shmem_call`] about it: inside a Conveyors entry a
//! non-blocking put is a physical buffer of that conveyor, and a signal put
//! (`shmem_put64`, `shmem_longlong_p`) made by the remote porter's progress a
//! signal of its progress row; outside, the time is COMM. `shmem_quiet` runs
//! about once per message inside Conveyors (the remote porter's progress): there
//! it is counted without reading the clock (its time is the entry's COMM).
//!
//! The counts and the PE numbers live in [`crate::shmem_counts`], which the
//! end of the run reads without importing the wrappers.

use std::ffi::{c_int, c_longlong, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use kprof_abi::guard::guard;

use crate::clock::ticks;
use crate::connect::api_or_connect;
use crate::core_table::api;
use crate::shmem_counts::{learn_pes, next, CALLS, F, FIRST_BARRIER_NS, TICKS};
use crate::state::{self, bump};

/// The profiling-interface names looked up, in [`F`] order.
const REAL: [&CStr; 7] = [
    c"pshmem_putmem_nbi",
    c"pshmem_putmem",
    c"pshmem_quiet",
    c"pshmem_barrier_all",
    c"pshmem_ptr",
    c"pshmem_longlong_p",
    c"pshmem_put64",
];

static ADDR: [AtomicUsize; 7] = [const { AtomicUsize::new(0) }; 7];

/// The real function `f` (0 when OpenSHMEM is not in the process).
#[inline(always)]
fn real(f: F) -> usize {
    let a = ADDR[f as usize].load(Ordering::Relaxed);
    if a != 0 {
        return a;
    }
    let a = next(REAL[f as usize]);
    ADDR[f as usize].store(a, Ordering::Relaxed);
    a
}

/// The clock before an OpenSHMEM call; with segments, COMM opens when the
/// program (not Conveyors) makes the call during the phase.
#[inline(always)]
fn start() -> u64 {
    let t0 = ticks();
    if crate::segments::on() && state::current() == 0 {
        if let Some(api) = api() {
            guard((), || crate::segments::enter(api, false));
        }
    }
    t0
}

/// Books a call of `f` that started at `t0`.
#[inline(always)]
fn done(f: F, t0: u64, put: Option<(i64, u64)>) {
    guard((), || {
        let Some(api) = api_or_connect() else {
            return;
        };
        // Inside an OpenSHMEM call: initialized, so its PE numbers can be asked.
        learn_pes();
        let now = state::shmem_call(t0, put);
        bump(&CALLS[f as usize], 1);
        bump(&TICKS[f as usize], now.saturating_sub(t0));
        if crate::segments::on() && state::current() == 0 {
            crate::segments::after(api);
        }
    })
}

/// `shmem_putmem_nbi`.
///
/// # Safety
/// As OpenSHMEM's.
#[no_mangle]
pub unsafe extern "C" fn shmem_putmem_nbi(
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
    pe: c_int,
) {
    // SAFETY: forwarded from the caller.
    unsafe { put(F::PutmemNbi, dest, src, n, pe) }
}

/// `shmem_putmem`.
///
/// # Safety
/// As OpenSHMEM's.
#[no_mangle]
pub unsafe extern "C" fn shmem_putmem(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
    // SAFETY: forwarded from the caller.
    unsafe { put(F::Putmem, dest, src, n, pe) }
}

/// A put of `n` bytes to `pe` through liboshmem's `pshmem_*` function `which`
/// (one of the two with `putmem`'s signature), timed and counted.
///
/// # Safety
/// As OpenSHMEM's `shmem_putmem`.
unsafe fn put(which: F, dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
    let f = real(which);
    if f == 0 {
        return;
    }
    let t0 = start();
    // SAFETY: `which` is pshmem_putmem or pshmem_putmem_nbi, both of this
    // signature, called with the caller's arguments.
    unsafe {
        let f: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) =
            std::mem::transmute(f);
        f(dest, src, n, pe);
    }
    done(which, t0, Some((i64::from(pe), n as u64)));
}

/// `shmem_quiet`. Inside a Conveyors entry (the remote porter's progress,
/// about once per message) it is only counted: no clock, no call into the
/// core, a few nanoseconds; its time is already the entry's COMM.
#[no_mangle]
pub extern "C" fn shmem_quiet() {
    let f = real(F::Quiet);
    if f == 0 {
        return;
    }
    if state::current() != 0 {
        // SAFETY: liboshmem's pshmem_quiet, `void (void)`.
        unsafe {
            let f: unsafe extern "C" fn() = std::mem::transmute(f);
            f();
        }
        bump(&CALLS[F::Quiet as usize], 1);
        return;
    }
    let t0 = start();
    // SAFETY: liboshmem's pshmem_quiet, `void (void)`.
    unsafe {
        let f: unsafe extern "C" fn() = std::mem::transmute(f);
        f();
    }
    done(F::Quiet, t0, None);
}

/// `shmem_barrier_all`.
#[no_mangle]
pub extern "C" fn shmem_barrier_all() {
    let f = real(F::BarrierAll);
    if f == 0 {
        return;
    }
    let t0 = start();
    // SAFETY: liboshmem's pshmem_barrier_all, `void (void)`.
    unsafe {
        let f: unsafe extern "C" fn() = std::mem::transmute(f);
        f();
    }
    if FIRST_BARRIER_NS.load(Ordering::Relaxed) == 0 {
        FIRST_BARRIER_NS.store(crate::clock::mono_ns(), Ordering::Relaxed);
    }
    done(F::BarrierAll, t0, None);
}

/// `shmem_ptr`.
///
/// # Safety
/// As OpenSHMEM's.
#[no_mangle]
pub unsafe extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    let f = real(F::Ptr);
    if f == 0 {
        return std::ptr::null_mut();
    }
    let t0 = start();
    // SAFETY: liboshmem's pshmem_ptr, called with the caller's arguments.
    let r = unsafe {
        let f: unsafe extern "C" fn(*const c_void, c_int) -> *mut c_void = std::mem::transmute(f);
        f(dest, pe)
    };
    done(F::Ptr, t0, None);
    r
}

/// `shmem_longlong_p`.
///
/// # Safety
/// As OpenSHMEM's.
#[no_mangle]
pub unsafe extern "C" fn shmem_longlong_p(addr: *mut c_longlong, value: c_longlong, pe: c_int) {
    let f = real(F::LonglongP);
    if f == 0 {
        return;
    }
    let t0 = start();
    // SAFETY: liboshmem's pshmem_longlong_p, called with the caller's arguments.
    unsafe {
        let f: unsafe extern "C" fn(*mut c_longlong, c_longlong, c_int) = std::mem::transmute(f);
        f(addr, value, pe);
    }
    guard((), || state::signal(i64::from(pe), 8));
    done(F::LonglongP, t0, None);
}

/// `shmem_put64` (bale's signal puts).
///
/// # Safety
/// As OpenSHMEM's.
#[no_mangle]
pub unsafe extern "C" fn shmem_put64(dest: *mut c_void, src: *const c_void, n: usize, pe: c_int) {
    let f = real(F::Put64);
    if f == 0 {
        return;
    }
    let t0 = start();
    // SAFETY: liboshmem's pshmem_put64, called with the caller's arguments.
    unsafe {
        let f: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) =
            std::mem::transmute(f);
        f(dest, src, n, pe);
    }
    guard((), || state::signal(i64::from(pe), 8 * n as u64));
    done(F::Put64, t0, None);
}
