//! RAJA's `Platform` (flags shared with camp: undefined 0, host 1, cuda 2,
//! omp_target 4, hip 8, sycl 16) as the device kernels are recorded on.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU16, Ordering};

use kprof_abi::{CoreApi, DeviceDesc};

/// A RAJA platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// `Platform::undefined` (0).
    Undefined,
    /// `Platform::host` (1): sequential, SIMD, OpenMP, TBB policies.
    Host,
    /// `Platform::cuda` (2).
    Cuda,
    /// `Platform::omp_target` (4).
    OmpTarget,
    /// `Platform::hip` (8).
    Hip,
    /// `Platform::sycl` (16).
    Sycl,
    /// Any other value: not a RAJA platform (a context read with the wrong layout).
    Unknown,
}

impl Platform {
    /// Every platform, in slot order.
    pub const ALL: [Platform; 7] = [
        Platform::Undefined,
        Platform::Host,
        Platform::Cuda,
        Platform::OmpTarget,
        Platform::Hip,
        Platform::Sycl,
        Platform::Unknown,
    ];

    /// The platform with RAJA's value `v`.
    pub fn from_raw(v: i32) -> Platform {
        match v {
            0 => Platform::Undefined,
            1 => Platform::Host,
            2 => Platform::Cuda,
            4 => Platform::OmpTarget,
            8 => Platform::Hip,
            16 => Platform::Sycl,
            _ => Platform::Unknown,
        }
    }

    /// Its slot in the device table: RAJA's value (0 to 16), [`UNKNOWN_SLOT`] for
    /// any other value.
    fn slot(self) -> usize {
        match self {
            Platform::Undefined => 0,
            Platform::Host => 1,
            Platform::Cuda => 2,
            Platform::OmpTarget => 4,
            Platform::Hip => 8,
            Platform::Sycl => 16,
            Platform::Unknown => UNKNOWN_SLOT,
        }
    }

    /// The device (back end) name in profiles and traces: RAJA's enumerator.
    pub fn device_name(self) -> &'static CStr {
        match self {
            Platform::Undefined => c"undefined",
            Platform::Host => c"host",
            Platform::Cuda => c"cuda",
            Platform::OmpTarget => c"omp_target",
            Platform::Hip => c"hip",
            Platform::Sycl => c"sycl",
            Platform::Unknown => c"unknown",
        }
    }

    /// The name of a kernel without `RAJA::Name` and without a known launch site.
    pub fn fallback_name(self) -> &'static CStr {
        match self {
            Platform::Undefined => c"RAJA kernel (undefined)",
            Platform::Host => c"RAJA kernel (host)",
            Platform::Cuda => c"RAJA kernel (cuda)",
            Platform::OmpTarget => c"RAJA kernel (omp_target)",
            Platform::Hip => c"RAJA kernel (hip)",
            Platform::Sycl => c"RAJA kernel (sycl)",
            Platform::Unknown => c"RAJA kernel (unknown platform)",
        }
    }
}

/// The device table's slot of [`Platform::Unknown`]: past RAJA's values, so that
/// [`known_device`] never answers it.
const UNKNOWN_SLOT: usize = 17;

/// The core's device index per platform, at the platform's RAJA value (0: not
/// registered yet; always 0 at values that are no platform).
static DEVICES: [AtomicU16; UNKNOWN_SLOT + 1] = [const { AtomicU16::new(0) }; UNKNOWN_SLOT + 1];

/// The core's device index for RAJA's platform value `raw` once [`device`]
/// registered it; 0 otherwise (not registered yet, or not a platform). One load:
/// the launch's fast path.
#[inline(always)]
pub fn known_device(raw: i32) -> u16 {
    let i = raw as u32 as usize;
    if i < UNKNOWN_SLOT {
        DEVICES[i].load(Ordering::Relaxed)
    } else {
        0
    }
}

/// The core's device index for `p`, registered on first sight.
#[inline]
pub fn device(api: &CoreApi, p: Platform) -> u16 {
    let slot = &DEVICES[p.slot()];
    match slot.load(Ordering::Relaxed) {
        0 => register(api, p, slot),
        idx => idx,
    }
}

#[cold]
fn register(api: &CoreApi, p: Platform, slot: &AtomicU16) -> u16 {
    let desc = DeviceDesc {
        backend: p.device_name().as_ptr(),
        index: 0,
        instance: 0,
    };
    // SAFETY: the descriptor and its static string live across the call.
    let idx = unsafe { (api.device)(&desc) };
    slot.store(idx, Ordering::Relaxed);
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_round_trip() {
        for (v, p) in [
            (0, Platform::Undefined),
            (1, Platform::Host),
            (2, Platform::Cuda),
            (4, Platform::OmpTarget),
            (8, Platform::Hip),
            (16, Platform::Sycl),
        ] {
            assert_eq!(Platform::from_raw(v), p);
        }
        assert_eq!(Platform::from_raw(3), Platform::Unknown);
        assert_eq!(Platform::from_raw(-1), Platform::Unknown);
        for p in Platform::ALL {
            let slot = p.slot();
            if p == Platform::Unknown {
                assert_eq!(slot, UNKNOWN_SLOT);
            } else {
                assert_eq!(Platform::from_raw(slot as i32), p, "{p:?}");
            }
        }
        assert_eq!(Platform::OmpTarget.device_name(), c"omp_target");
        // Values that are no platform never have a device on the fast path.
        for raw in [3, 17, 18, -1, i32::MIN, i32::MAX] {
            assert_eq!(known_device(raw), 0, "{raw}");
        }
    }
}
