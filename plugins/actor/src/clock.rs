//! The clock the link-time wrappers and the plugin share (`kprof_actor_ticks` in
//! `ffi-headers/kprof_actor.h`): the time-stamp counter on x86-64, read without
//! a syscall in a few nanoseconds, converted to nanoseconds by a calibration
//! against CLOCK_MONOTONIC over the whole run; CLOCK_MONOTONIC nanoseconds on
//! other architectures.

use std::sync::atomic::{AtomicU64, Ordering};

/// Ticks now.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        mono_ns()
    }
}

/// CLOCK_MONOTONIC now, nanoseconds.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

static BASE_TICKS: AtomicU64 = AtomicU64::new(0);
static BASE_NS: AtomicU64 = AtomicU64::new(0);

/// Takes the calibration's first point (once; later calls do nothing).
pub fn start() {
    if BASE_NS.load(Ordering::Relaxed) == 0 {
        BASE_TICKS.store(ticks(), Ordering::Relaxed);
        BASE_NS.store(mono_ns().max(1), Ordering::Relaxed);
    }
}

/// Nanoseconds per tick, from the first point to now (1 where the ticks are
/// nanoseconds). Waits until 1 ms passed since the first point, so that the two
/// clocks' reading offsets stay under 1e-4 of the span.
pub fn ns_per_tick() -> f64 {
    if cfg!(not(target_arch = "x86_64")) {
        return 1.0;
    }
    start();
    let (t0, n0) = (
        BASE_TICKS.load(Ordering::Relaxed),
        BASE_NS.load(Ordering::Relaxed),
    );
    let (mut t1, mut n1) = (ticks(), mono_ns());
    while n1 < n0 + 1_000_000 {
        std::hint::spin_loop();
        (t1, n1) = (ticks(), mono_ns());
    }
    if t1 <= t0 {
        return 1.0;
    }
    (n1 - n0) as f64 / (t1 - t0) as f64
}

/// Nanoseconds per tick from the calibration's first point to now, without
/// waiting (for rates that need not be exact: the per-peer tracks' sampling
/// interval); 1 (a 1 GHz counter) while less than 10 us passed.
pub fn ns_per_tick_so_far() -> f64 {
    if cfg!(not(target_arch = "x86_64")) {
        return 1.0;
    }
    start();
    let (t0, n0) = (
        BASE_TICKS.load(Ordering::Relaxed),
        BASE_NS.load(Ordering::Relaxed),
    );
    let (t1, n1) = (ticks(), mono_ns());
    if n1 < n0 + 10_000 || t1 <= t0 {
        return 1.0;
    }
    (n1 - n0) as f64 / (t1 - t0) as f64
}
