//! The one clock of the process: raw TSC ticks on the hot path, converted to
//! CLOCK_MONOTONIC nanoseconds when written.

/// Where timestamps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockSource {
    /// The invariant TSC, calibrated against CLOCK_MONOTONIC.
    Tsc,
    /// CLOCK_MONOTONIC read directly (no invariant TSC on this machine).
    Monotonic,
}

impl ClockSource {
    /// Name written in profiles and traces.
    pub fn as_str(self) -> &'static str {
        match self {
            ClockSource::Tsc => "tsc",
            ClockSource::Monotonic => "clock_monotonic",
        }
    }
}

/// A calibrated clock. `now()` is what the hot path calls; everything else runs on
/// the writer thread.
pub struct Clock {
    q: quanta::Clock,
    raw0: u64,
    mono0: u64,
    /// Nanoseconds per 2^[`RATE_BITS`] raw ticks, as quanta calibrated them: one
    /// multiply converts a duration (on every end) where quanta's own
    /// conversion also dispatches on its clock and adjusts its shift.
    ns_per_span: u64,
    source: ClockSource,
}

/// The span of raw ticks [`Clock::ns_per_span`] is measured over: 2^40 ticks
/// (minutes of a GHz counter), so the rate is exact to a few parts in 10^12
/// and a duration times it stays within 128 bits.
const RATE_BITS: u32 = 40;

impl Clock {
    /// Calibrates the clock (quanta spends up to a few milliseconds on this, once).
    pub fn new() -> Clock {
        let q = quanta::Clock::new();
        // Pair a raw reading with CLOCK_MONOTONIC, taking the tightest of a few tries
        // so the offset is exact to a few tens of nanoseconds.
        let mut best = (u64::MAX, 0, 0);
        for _ in 0..16 {
            let a = q.raw();
            let m = monotonic_ns();
            let b = q.raw();
            let width = q.delta_as_nanos(a, b);
            if width < best.0 {
                best = (width, a + (b.wrapping_sub(a)) / 2, m);
            }
        }
        let ns_per_span = q.delta_as_nanos(best.1, best.1 + (1 << RATE_BITS)).max(1);
        Clock {
            q,
            raw0: best.1,
            mono0: best.2,
            ns_per_span,
            source: detect_source(),
        }
    }

    /// Current time in raw ticks.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.source == ClockSource::Tsc {
            // SAFETY: rdtsc has no preconditions. This is the exact read quanta makes
            // when it uses the TSC (same detection, see detect_source), done here so
            // that it is inlined into the hot path instead of a cross-crate call.
            return unsafe { std::arch::x86_64::_rdtsc() };
        }
        self.q.raw()
    }

    /// Converts raw ticks to CLOCK_MONOTONIC nanoseconds.
    pub fn to_ns(&self, raw: u64) -> u64 {
        if raw >= self.raw0 {
            self.mono0 + self.delta_ns(self.raw0, raw)
        } else {
            self.mono0.saturating_sub(self.delta_ns(raw, self.raw0))
        }
    }

    /// Converts CLOCK_MONOTONIC nanoseconds to raw ticks: the inverse of
    /// [`Clock::to_ns`], for times measured elsewhere (a GPU's activities,
    /// calibrated against [`Clock::to_ns`] of [`Clock::now`]).
    pub fn from_ns(&self, ns: u64) -> u64 {
        // The rate as to_ns applies it, so that a round trip through both is
        // exact to a tick.
        let ticks = |d: u64| {
            let t = (u128::from(d) << RATE_BITS) / u128::from(self.ns_per_span);
            u64::try_from(t).unwrap_or(u64::MAX)
        };
        if ns >= self.mono0 {
            self.raw0.saturating_add(ticks(ns - self.mono0))
        } else {
            self.raw0.saturating_sub(ticks(self.mono0 - ns))
        }
    }

    /// Nanoseconds between two raw readings (0 when `end` is not after `start`).
    #[inline(always)]
    pub fn delta_ns(&self, start: u64, end: u64) -> u64 {
        let Some(d) = end.checked_sub(start) else {
            return 0;
        };
        // Below 2^128 for any rate below 2^64; a result beyond 2^64 ns (584
        // years, only from a counter slower than 1 GHz) saturates.
        let ns = (u128::from(d) * u128::from(self.ns_per_span)) >> RATE_BITS;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// Where the ticks come from.
    pub fn source(&self) -> ClockSource {
        self.source
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time of the calling thread in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
fn detect_source() -> ClockSource {
    // The same test quanta makes before it reads the TSC.
    let cpuid = raw_cpuid::CpuId::new();
    let invariant = cpuid
        .get_advanced_power_mgmt_info()
        .is_some_and(|i| i.has_invariant_tsc());
    let rdtscp = cpuid
        .get_extended_processor_and_feature_identifiers()
        .is_some_and(|f| f.has_rdtscp());
    if invariant && rdtscp {
        ClockSource::Tsc
    } else {
        ClockSource::Monotonic
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect_source() -> ClockSource {
    ClockSource::Monotonic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_convert_back_to_the_same_ticks() {
        let c = Clock::new();
        let now = c.now();
        for raw in [now, now + 1_000_000_007, now.saturating_sub(123_456_789)] {
            let back = c.to_ns(c.from_ns(c.to_ns(raw)));
            assert!(back.abs_diff(c.to_ns(raw)) <= 2, "{raw}: {back}");
        }
    }

    #[test]
    fn converts_to_monotonic_nanoseconds() {
        let c = Clock::new();
        let m1 = monotonic_ns();
        let r = c.now();
        let m2 = monotonic_ns();
        let ns = c.to_ns(r);
        // Calibration error is a few tens of ns; allow 50 µs for scheduling noise.
        assert!(
            ns + 50_000 >= m1 && ns <= m2 + 50_000,
            "{m1} <= {ns} <= {m2}"
        );
        let later = c.now();
        assert!(c.to_ns(later) >= ns);
        assert_eq!(c.delta_ns(later, r), 0);
    }
}
