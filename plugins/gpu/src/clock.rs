//! A GPU vendor's timestamps (CUPTI's, rocprofiler-sdk's) on the core clock.
//!
//! Method: take a few readings of the vendor's clock (`cuptiGetTimestamp`,
//! `rocprofiler_get_timestamp`), each between two readings of the core clock,
//! keep the tightest bracket, and take the vendor's reading as taken at the
//! bracket's middle: `offset = vendor - (before + after) / 2`, so a vendor time `t`
//! is `t - offset` on the core clock, off by at most half the bracket (well under
//! a microsecond). Plugins recalibrate at each delivered buffer and at the final
//! flush, which follows any drift between the two clocks.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// Bracketed readings taken per calibration.
pub const SAMPLES: usize = 8;

/// One reading: core clock before, vendor clock, core clock after.
pub type Reading = (u64, u64, u64);

/// The offset (vendor minus core) from the tightest of `readings`, with the
/// bracket's width; None without a usable reading.
pub fn offset(readings: &[Reading]) -> Option<(i64, u64)> {
    readings
        .iter()
        .filter(|(a, c, b)| b >= a && *c != 0)
        .min_by_key(|(a, _, b)| b - a)
        .map(|&(a, c, b)| {
            let mid = a + (b - a) / 2;
            ((i128::from(c) - i128::from(mid)) as i64, b - a)
        })
}

/// The current offset.
#[derive(Default)]
pub struct Clock {
    offset: AtomicI64,
    valid: AtomicBool,
}

impl Clock {
    /// Takes [`SAMPLES`] readings with `read` and keeps the best; returns the width
    /// of its bracket (None: no usable reading, the previous offset stays).
    pub fn calibrate(&self, mut read: impl FnMut() -> Reading) -> Option<u64> {
        let mut r = [(0, 0, 0); SAMPLES];
        for x in &mut r {
            *x = read();
        }
        let (off, width) = offset(&r)?;
        self.offset.store(off, Ordering::Relaxed);
        self.valid.store(true, Ordering::Release);
        Some(width)
    }

    /// Calibrates against the core's clock (`CoreApi::now_ns`) with `vendor`, one
    /// reading of the vendor's clock (None: the vendor could not give one).
    pub fn calibrate_with_core(
        &self,
        api: &kprof_abi::CoreApi,
        mut vendor: impl FnMut() -> Option<u64>,
    ) -> Option<u64> {
        self.calibrate(|| {
            // SAFETY: a function of the core's table, callable from any thread.
            let before = unsafe { (api.now_ns)() };
            let t = vendor().unwrap_or(0);
            // SAFETY: as above.
            let after = unsafe { (api.now_ns)() };
            (before, t, after)
        })
    }

    /// The vendor's time `t` on the core clock; None for 0 (the vendor could not time it), a
    /// time before the core clock's origin, or before any calibration.
    pub fn to_core(&self, t: u64) -> Option<u64> {
        if t == 0 || !self.valid.load(Ordering::Acquire) {
            return None;
        }
        let v = i128::from(t) - i128::from(self.offset.load(Ordering::Relaxed));
        u64::try_from(v).ok()
    }

    /// The offset now (vendor minus core), for the metadata.
    pub fn offset_ns(&self) -> i64 {
        self.offset.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tightest_bracket_wins() {
        // CUPTI runs 1_000_000 ahead of the core clock. Readings: a wide bracket
        // whose middle is off, and a tight one.
        let r = [(100, 1_000_150, 300), (500, 1_000_510, 520), (0, 0, 9)];
        assert_eq!(offset(&r), Some((1_000_000, 20)));
        assert_eq!(offset(&[(5, 0, 6)]), None);
        assert_eq!(offset(&[(9, 5, 6)]), None);
    }

    #[test]
    fn negative_offset_and_conversion() {
        let c = Clock::default();
        assert_eq!(c.to_core(5), None);
        let mut n = 0u64;
        // CUPTI's clock is 4_000 behind the core's; each bracket 10 wide.
        let w = c.calibrate(|| {
            n += 100;
            (n, n + 5 - 4_000, n + 10)
        });
        assert_eq!(w, Some(10));
        assert_eq!(c.offset_ns(), -4_000);
        assert_eq!(c.to_core(1_000), Some(5_000));
        assert_eq!(c.to_core(0), None);
        // Recalibration replaces the offset.
        c.calibrate(|| (50, 80, 50));
        assert_eq!(c.to_core(80), Some(50));
        assert_eq!(c.to_core(10), None);
    }
}
