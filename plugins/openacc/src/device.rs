//! OpenACC devices and async queues as core device indices: back end
//! `"OpenACC <device type>"`, index = device number, instance = async queue.
//! Registered on first sight and cached per thread (every event carries them).

use std::cell::Cell;

use kprof_abi::{CoreApi, DeviceDesc};

use crate::acc;

/// Cached (key, index) pairs per thread.
const SLOTS: usize = 8;

thread_local! {
    static CACHE: Cell<[(u64, u16); SLOTS]> = const { Cell::new([(u64::MAX, 0); SLOTS]) };
}

/// The instance (async queue) of an operation: the async argument (`async(n)` ->
/// n); synchronous operations and `async` without an argument are instance 0.
#[inline(always)]
pub fn instance(async_: i64) -> u32 {
    u32::try_from(async_).unwrap_or(0)
}

/// The core's index for device `number` of type `device_type`, queue `instance`
/// (0 when the type is unknown or the core's table is full).
#[inline]
pub fn index(api: &CoreApi, device_type: i32, number: i32, instance: u32) -> u16 {
    if device_type < 0 {
        return 0;
    }
    let number = u32::try_from(number).unwrap_or(0);
    // Key: type (8 bits), number (24 bits), instance (32 bits); others uncached.
    let cacheable = device_type < 256 && number < (1 << 24);
    let key = (device_type as u64) << 56 | u64::from(number) << 32 | u64::from(instance);
    let slot = (key ^ key >> 29 ^ key >> 56) as usize % SLOTS;
    if cacheable {
        if let Ok(entries) = CACHE.try_with(Cell::get) {
            let (k, idx) = entries[slot];
            if k == key {
                return idx;
            }
        }
    }
    let desc = DeviceDesc {
        backend: acc::device_type_name(device_type).as_ptr(),
        index: number,
        instance,
    };
    // SAFETY: the descriptor and its static string live across the call.
    let idx = unsafe { (api.device)(&desc) };
    if cacheable {
        let _ = CACHE.try_with(|c| {
            let mut entries = c.get();
            entries[slot] = (key, idx);
            c.set(entries);
        });
    }
    idx
}
