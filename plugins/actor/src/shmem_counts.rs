//! What the OpenSHMEM wrappers ([`crate::shmem`]) count and learn: the calls
//! and time per wrapped function, the clock at the first barrier, and this
//! PE's and the job's PE numbers; reported at the end of the run
//! ([`crate::dispatch::finish`]), the PEs also asked for by a Conveyors entry.
//!
//! Apart from the wrappers because they connect to the core on first use
//! ([`crate::connect`]), whose end of the run reads these: kept here, with
//! nothing of the wrappers, the imports run one way.

use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicU64, Ordering};

use kprof_abi::CoreApi;

use crate::state;

/// The wrapped functions, in [`NAMES`] order.
#[derive(Clone, Copy)]
#[repr(usize)]
pub enum F {
    /// `shmem_putmem_nbi`.
    PutmemNbi,
    /// `shmem_putmem`.
    Putmem,
    /// `shmem_quiet`.
    Quiet,
    /// `shmem_barrier_all`.
    BarrierAll,
    /// `shmem_ptr`.
    Ptr,
    /// `shmem_longlong_p`.
    LonglongP,
    /// `shmem_put64`.
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

/// Calls per wrapped function, in [`F`] order.
pub static CALLS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];
/// Clock ticks spent in each wrapped function, in [`F`] order.
pub static TICKS: [AtomicU64; 7] = [const { AtomicU64::new(0) }; 7];

/// CLOCK_MONOTONIC when the PE left its first `shmem_barrier_all` (0: none
/// yet): every PE leaves a barrier at about the same moment, so the
/// differences between PEs' values are their clocks' offsets (metadata
/// `actor.barrier_ns`, the time base of a merged trace).
pub static FIRST_BARRIER_NS: AtomicU64 = AtomicU64::new(0);

/// Address of `name` in the libraries after this one (0: none).
pub fn next(name: &CStr) -> usize {
    // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT searches the
    // libraries loaded after this one.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) as usize }
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
