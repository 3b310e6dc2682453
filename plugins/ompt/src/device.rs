//! OpenMP device numbers as core device indices, registered on first sight and
//! cached lock-free (target callbacks pass a device number on every event).

use std::sync::atomic::{AtomicU32, Ordering};

use kprof_abi::{CoreApi, DeviceDesc};

/// Device numbers below this are cached; others are looked up every time.
const SLOTS: usize = 64;
/// Marks a filled slot (indices are 16-bit).
const VALID: u32 = 1 << 31;
static CACHE: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];

/// Back-end name of OpenMP offload devices, as the Kokkos plugin names them.
const BACKEND: &std::ffi::CStr = c"OpenMPTarget";

/// The core's index for OpenMP device `device_num` (0 for the host / invalid).
#[inline]
pub fn index(api: &CoreApi, device_num: i32) -> u16 {
    let Ok(n) = usize::try_from(device_num) else {
        return 0;
    };
    let slot = CACHE.get(n);
    if let Some(s) = slot {
        let e = s.load(Ordering::Relaxed);
        if e & VALID != 0 {
            return e as u16;
        }
    }
    register(api, n as u32, slot)
}

#[cold]
fn register(api: &CoreApi, n: u32, slot: Option<&AtomicU32>) -> u16 {
    let desc = DeviceDesc {
        backend: BACKEND.as_ptr(),
        index: n,
        instance: 0,
    };
    // SAFETY: the descriptor and its static string live across the call.
    let idx = unsafe { (api.device)(&desc) };
    if let Some(s) = slot {
        s.store(VALID | u32::from(idx), Ordering::Relaxed);
    }
    idx
}
