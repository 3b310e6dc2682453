//! Kokkos device ids: bits 31..24 the back end, 23..17 the device index, 16..0 the
//! execution-space instance. Decoded once per distinct id and cached lock-free.

use std::sync::atomic::{AtomicU64, Ordering};

use kprof_abi::{CoreApi, DeviceDesc};

/// Back-end names by the device type in the top byte.
const BACKENDS: [&std::ffi::CStr; 9] = [
    c"Serial",
    c"OpenMP",
    c"Cuda",
    c"HIP",
    c"OpenMPTarget",
    c"HPX",
    c"Threads",
    c"SYCL",
    c"OpenACC",
];

/// A decoded device id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// Back end name (`"OpenMP"`, or `"Unknown(N)"`).
    pub backend: String,
    /// Device index.
    pub index: u32,
    /// Instance id.
    pub instance: u32,
}

/// Splits a device id into back end, device index and instance.
pub fn decode(dev_id: u32) -> Decoded {
    let kind = (dev_id >> 24) as usize;
    Decoded {
        backend: BACKENDS
            .get(kind)
            .map(|b| b.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("Unknown({kind})")),
        index: (dev_id >> 17) & 0x7f,
        instance: dev_id & 0x1_ffff,
    }
}

const SLOTS: usize = 16;
const VALID: u64 = 1 << 31;
static CACHE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

/// The core's index for `dev_id`.
#[inline]
pub fn index(api: &CoreApi, dev_id: u32) -> u16 {
    let slot = &CACHE[(dev_id ^ dev_id >> 24) as usize % SLOTS];
    let e = slot.load(Ordering::Relaxed);
    if e & VALID != 0 && (e >> 32) as u32 == dev_id {
        return e as u16;
    }
    register(api, dev_id, slot)
}

#[cold]
fn register(api: &CoreApi, dev_id: u32, slot: &AtomicU64) -> u16 {
    let d = decode(dev_id);
    let backend = std::ffi::CString::new(d.backend).unwrap_or_default();
    let desc = DeviceDesc {
        backend: backend.as_ptr(),
        index: d.index,
        instance: d.instance,
    };
    // SAFETY: the descriptor and its string live across the call.
    let idx = unsafe { (api.device)(&desc) };
    slot.store(
        u64::from(dev_id) << 32 | VALID | u64::from(idx),
        Ordering::Relaxed,
    );
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_measured_ids() {
        assert_eq!(
            decode(0x0100_0001),
            Decoded {
                backend: "OpenMP".into(),
                index: 0,
                instance: 1
            }
        );
        assert_eq!(decode(0x0000_0001).backend, "Serial");
        let cuda1 = decode(2 << 24 | 1 << 17 | 5);
        assert_eq!(
            (cuda1.backend.as_str(), cuda1.index, cuda1.instance),
            ("Cuda", 1, 5)
        );
        assert_eq!(decode(0x2a00_0000).backend, "Unknown(42)");
        assert_eq!(decode(0x0100_0000).instance, 0);
    }
}
