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

    fn slot(self) -> usize {
        self as usize
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

/// The core's device index per platform (0: not registered yet).
static DEVICES: [AtomicU16; 7] = [const { AtomicU16::new(0) }; 7];

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
        for (i, p) in Platform::ALL.iter().enumerate() {
            assert_eq!(p.slot(), i);
        }
        assert_eq!(Platform::OmpTarget.device_name(), c"omp_target");
    }
}
