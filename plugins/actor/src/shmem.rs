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

use std::ffi::{c_int, c_longlong, c_void, CStr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use kprof_abi::guard::guard;
use kprof_abi::CoreApi;

use crate::clock::ticks;
use crate::state::{self, bump};

/// The wrapped functions, in [`NAMES`] order.
#[derive(Clone, Copy)]
#[repr(usize)]
enum F {
    PutmemNbi,
    Putmem,
    Quiet,
    BarrierAll,
    Ptr,
    LonglongP,
    Put64,
}

/// Their names, as in profile.json's metadata (`actor.openshmem.<name>.calls`).
const NAMES: [&str; 7] = [
    "shmem_putmem_nbi",
    "shmem_putmem",
    "shmem_quiet",
    "shmem_barrier_all",
    "shmem_ptr",
    "shmem_longlong_p",
    "shmem_put64",
];

/// The profiling-interface names looked up.
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
static CALLS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
static TICKS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

/// Address of `name` in the libraries after this one (0: none).
fn next(name: &CStr) -> usize {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT searches the
    // libraries loaded after this one.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize }
}

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

/// This PE and the job's PEs, from OpenSHMEM (-1, -1 when it is absent, or
/// when Open MPI's OSHMEM says it is not initialized: its `shmem_my_pe` aborts
/// the program then).
pub fn my_pe_n_pes() -> (i64, i64) {
    let (me, n) = (next(c"pshmem_my_pe"), next(c"pshmem_n_pes"));
    if me == 0 || n == 0 {
        return (-1, -1);
    }
    let init = next(c"oshmem_shmem_initialized");
    // SAFETY: OSHMEM's exported `bool oshmem_shmem_initialized` (one byte, read only).
    if init != 0 && unsafe { std::ptr::read_volatile(init as *const u8) } == 0 {
        return (-1, -1);
    }
    // SAFETY: both are `int (void)` functions of liboshmem.
    unsafe {
        let me: unsafe extern "C" fn() -> c_int = std::mem::transmute(me);
        let n: unsafe extern "C" fn() -> c_int = std::mem::transmute(n);
        (i64::from(me()), i64::from(n()))
    }
}

/// The clock before an OpenSHMEM call; with segments, COMM opens when the
/// program (not Conveyors) makes the call during the phase.
#[inline(always)]
fn start() -> u64 {
    let t0 = ticks();
    if crate::segments::on() && state::current() == 0 {
        if let Some(api) = crate::api() {
            guard((), || crate::segments::enter(api, false));
        }
    }
    t0
}

/// Books a call of `f` that started at `t0`.
#[inline(always)]
fn done(f: F, t0: u64, put: Option<(i64, u64)>) {
    guard((), || {
        let Some(api) = crate::api_or_connect() else {
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

/// CLOCK_MONOTONIC when the PE left its first `shmem_barrier_all` (0: none
/// yet): every PE leaves a barrier at about the same moment, so the
/// differences between PEs' values are their clocks' offsets (metadata
/// `actor.barrier_ns`, the time base of a merged trace).
static FIRST_BARRIER_NS: AtomicU64 = AtomicU64::new(0);

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

/// Writes the calls and time per function (`ns_per_tick`: the clock's scale).
pub fn report(api: &CoreApi, ns_per_tick: f64) {
    let barrier = FIRST_BARRIER_NS.load(Ordering::Relaxed);
    if barrier != 0 {
        state::meta(api, "actor.barrier_ns", &barrier.to_string());
    }
    for (i, name) in NAMES.iter().enumerate() {
        let calls = CALLS[i].load(Ordering::Relaxed);
        if calls == 0 {
            continue;
        }
        let ns = (TICKS[i].load(Ordering::Relaxed) as f64 * ns_per_tick).round() as u64;
        state::meta(
            api,
            &format!("actor.openshmem.{name}.calls"),
            &calls.to_string(),
        );
        state::meta(api, &format!("actor.openshmem.{name}.ns"), &ns.to_string());
    }
}

/// Asks OpenSHMEM for this PE and the job's PEs, once. Call only while
/// OpenSHMEM is surely initialized (from a wrapped OpenSHMEM call or a
/// Conveyors entry): `shmem_my_pe` aborts the program before `shmem_init` and
/// after `shmem_finalize`.
pub fn learn_pes() {
    if !state::pes_known() {
        let (me, n) = my_pe_n_pes();
        // Not known yet (not initialized): asked again next time.
        if n > 0 {
            state::set_pes(me, n);
        }
    }
}
