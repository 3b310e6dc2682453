//! How a kernel on a device back end (Cuda, HIP, OpenMPTarget, SYCL, OpenACC) is
//! timed.
//!
//! Kokkos calls the end callback of such a kernel as soon as it is launched: the
//! device may still be running it. Timed from the callbacks alone, the kernel would
//! report its launch time as its time. So, unless something else gives device times,
//! kprof fences the device at the end of each device kernel through the fence
//! Kokkos hands to the tool (`tpi.fence`), before the end timestamp is taken: the
//! kernel's time is then its device time. Kokkos reports that fence through
//! `kokkosp_begin_fence`/`end_fence` under a name that [`crate`]'s fence callbacks
//! fold into the kernel (never recorded as the program's fence).
//!
//! No fence is added when a GPU activity plugin (`libkprof_cuda.so`, ...) is active:
//! device times come from its activities; nor when Kokkos already fences around
//! every kernel (`--kokkos-fences=1`, or a chained tool that asks for it); nor for
//! host back ends (Serial, OpenMP, Threads, HPX), whose kernels are synchronous.
//!
//! The choice is made once, at the first device kernel (a GPU plugin injected by
//! the CUDA driver may attach after Kokkos initialized the tool), recorded as the
//! metadata `kokkos_device_timing` and said on one line of stderr.

use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use kprof_abi::CoreApi;

/// The metadata key naming how device kernels are timed.
pub const METADATA_KEY: &CStr = c"kokkos_device_timing";

/// Device types (bits 31..24 of a Kokkos device id) whose kernels run
/// asynchronously to the launching host thread: Cuda 2, HIP 3, OpenMPTarget 4,
/// SYCL 7, OpenACC 8. Serial 0, OpenMP 1, HPX 5 and Threads 6 are host back ends;
/// unknown types are not fenced (nothing says they are asynchronous).
const DEVICE_TYPES: u32 = 1 << 2 | 1 << 3 | 1 << 4 | 1 << 7 | 1 << 8;

/// Whether `dev_id` names an execution space of a device back end. Branch-free, so
/// that a host kernel pays one predictable branch on the result.
#[inline(always)]
pub fn is_device(dev_id: u32) -> bool {
    // Types above 31 map to bit 31, which is clear (a conditional move, no branch).
    let t = (dev_id >> 24).min(31);
    DEVICE_TYPES >> t & 1 != 0
}

/// How device kernels are timed, decided at the first one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fenced at their end through `tpi.fence`: their times are device times.
    Fence,
    /// A GPU activity plugin is active: no fence; device times come from it.
    GpuActivity,
    /// Kokkos fences around every kernel already (global fencing was requested).
    GlobalFences,
    /// Kokkos gave no tool fence: the times are launch times.
    NoToolFence,
}

impl Mode {
    /// The metadata value that tells the user what device kernel times mean.
    pub fn describe(self) -> &'static CStr {
        match self {
            Mode::Fence => c"fenced at kernel end (no GPU activity plugin)",
            Mode::GpuActivity => {
                c"GPU activity (device times from the GPU activity plugin; Kokkos kernel times are launch times)"
            }
            Mode::GlobalFences => c"fenced by Kokkos' global fences around every kernel",
            Mode::NoToolFence => {
                c"launch times only (Kokkos gave the tool no fence; device work not included)"
            }
        }
    }

    const fn code(self) -> u8 {
        match self {
            Mode::Fence => FENCE,
            Mode::GpuActivity => 2,
            Mode::GlobalFences => 3,
            Mode::NoToolFence => 4,
        }
    }
}

/// [`MODE`] before the first device kernel.
const UNDECIDED: u8 = 0;
/// [`MODE`] when device kernels are fenced ([`Mode::Fence`]).
const FENCE: u8 = 1;

/// The [`Mode`] code, [`UNDECIDED`] until the first device kernel.
static MODE: AtomicU8 = AtomicU8::new(UNDECIDED);
/// `tpi.fence` as an address (0: Kokkos gave none).
static TOOL_FENCE: AtomicUsize = AtomicUsize::new(0);
/// What the tool answered Kokkos for `requires_global_fencing`.
static GLOBAL_FENCING: AtomicBool = AtomicBool::new(false);

/// Keeps the fence of Kokkos' tool programming interface.
pub fn set_tool_fence(fence: Option<unsafe extern "C" fn(u32)>) {
    TOOL_FENCE.store(fence.map_or(0, |f| f as usize), Ordering::Release);
}

/// Notes whether Kokkos fences around every kernel (the answer given to
/// `kokkosp_request_tool_settings`).
pub fn set_global_fencing(on: bool) {
    GLOBAL_FENCING.store(on, Ordering::Release);
}

fn tool_fence() -> Option<unsafe extern "C" fn(u32)> {
    match TOOL_FENCE.load(Ordering::Acquire) {
        0 => None,
        // SAFETY: a non-zero value was stored from a function pointer of this type
        // by `set_tool_fence`.
        f => Some(unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(u32)>(f) }),
    }
}

/// Device kernels a thread may have open at once and still be fenced (Kokkos opens
/// one at a time; deeper ones are not fenced).
const OPEN_MAX: usize = 8;

thread_local! {
    /// The device kernels open on this thread, to be fenced at their end: (GUID,
    /// device id) by begin order, `OPEN_LEN` of them.
    static OPEN: [Cell<(u64, u32)>; OPEN_MAX] = const { [const { Cell::new((0, 0)) }; OPEN_MAX] };
    static OPEN_LEN: Cell<usize> = const { Cell::new(0) };
}

/// The mode, deciding it (and recording it) at the first call.
fn mode(api: &CoreApi) -> u8 {
    match MODE.load(Ordering::Acquire) {
        UNDECIDED => decide(api),
        m => m,
    }
}

#[cold]
#[inline(never)]
fn decide(api: &CoreApi) -> u8 {
    let mode = if GLOBAL_FENCING.load(Ordering::Acquire) {
        Mode::GlobalFences
    // SAFETY: a plain query of the core (set 0 only asks).
    } else if unsafe { (api.gpu_activity)(0) } {
        Mode::GpuActivity
    } else if tool_fence().is_none() {
        Mode::NoToolFence
    } else {
        Mode::Fence
    };
    if mode == Mode::Fence {
        // Before the mode says so: a thread that sees the fencing mode finds the
        // callbacks' plain path (which does not fence) closed.
        crate::plain_path::close();
    }
    match MODE.compare_exchange(UNDECIDED, mode.code(), Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            let text = mode.describe();
            // SAFETY: NUL-terminated literals.
            unsafe { (api.metadata)(METADATA_KEY.as_ptr(), text.as_ptr()) };
            crate::say::warn(&format!(
                "Kokkos kernels on device back ends: {}",
                text.to_string_lossy()
            ));
            mode.code()
        }
        // Another thread decided first: its choice holds.
        Err(m) => m,
    }
}

/// A device kernel `guid` (on `dev_id`) began on this thread: decides the mode at
/// the first one, and remembers it to be fenced at its end when fencing.
#[cold]
#[inline(never)]
pub fn begin_device(api: &CoreApi, guid: u64, dev_id: u32) {
    if guid == 0 || mode(api) != FENCE {
        return;
    }
    let _ = OPEN_LEN.try_with(|len| {
        let n = len.get();
        if n < OPEN_MAX {
            let _ = OPEN.try_with(|open| open[n].set((guid, dev_id)));
            len.set(n + 1);
        }
    });
}

/// Whether device kernels are fenced at their end (a load and a predictable branch
/// on every kernel end; false until a device kernel was seen).
#[inline(always)]
pub fn fencing() -> bool {
    MODE.load(Ordering::Relaxed) == FENCE
}

/// A kernel `kid` ends on this thread: if it is an open device kernel, fences its
/// device (the caller then takes the end timestamp).
#[cold]
#[inline(never)]
pub fn end_kernel(kid: u64) {
    let Some(dev_id) = take(kid) else {
        return;
    };
    if let Some(fence) = tool_fence() {
        // SAFETY: Kokkos' fence, which may be called from inside a callback; it
        // reports itself through kokkosp_begin/end_fence, which fold it.
        unsafe { fence(dev_id) };
    }
}

/// Removes `kid` from this thread's open device kernels, giving its device id.
fn take(kid: u64) -> Option<u32> {
    OPEN_LEN
        .try_with(|len| {
            let n = len.get();
            OPEN.try_with(|open| {
                let i = (0..n).rev().find(|&i| open[i].get().0 == kid)?;
                let dev_id = open[i].get().1;
                for j in i..n - 1 {
                    open[j].set(open[j + 1].get());
                }
                len.set(n - 1);
                Some(dev_id)
            })
            .ok()
            .flatten()
        })
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_back_ends_are_the_asynchronous_ones() {
        let at = |t: u32| is_device(t << 24 | 1);
        assert!(!at(0) && !at(1) && !at(5) && !at(6), "host back ends");
        assert!(
            at(2) && at(3) && at(4) && at(7) && at(8),
            "device back ends"
        );
        assert!(
            !at(9) && !at(31) && !at(32) && !at(42) && !at(255),
            "unknown"
        );
        assert!(is_device(0x0200_0000) && is_device(2 << 24 | 3 << 17 | 0x1_ffff));
    }

    #[test]
    fn open_device_kernels_are_matched_by_guid() {
        OPEN_LEN.with(|l| l.set(0));
        OPEN.with(|o| {
            o[0].set((10, 0x0200_0001));
            o[1].set((11, 0x0300_0001));
        });
        OPEN_LEN.with(|l| l.set(2));
        assert_eq!(take(99), None, "a host kernel");
        assert_eq!(take(10), Some(0x0200_0001), "out of order");
        assert_eq!(take(11), Some(0x0300_0001));
        assert_eq!(take(11), None, "taken once");
        assert_eq!(OPEN_LEN.with(Cell::get), 0);
    }
}
