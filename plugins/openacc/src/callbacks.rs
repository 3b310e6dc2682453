//! The one callback kprof registers for every OpenACC event, and the translation of
//! each event into calls of the core's C table.
//!
//! Start events open an instance and keep its GUID in the event's `tool_info` (the
//! runtime hands it back in the matching end event); a runtime whose structures are
//! too short for `tool_info` gets stack-style pairing (`end(kind, 0)`: the innermost
//! open instance of that kind on the thread). An end whose `tool_info` is NULL
//! although the runtime provides the field had no start: counted as an unmatched
//! end, nothing closed.
//!
//! | events | core |
//! |---|---|
//! | device_init / device_shutdown start, end | `AccDeviceInit` / `AccDeviceShutdown` slices |
//! | compute_construct start, end | `AccCompute` |
//! | enter_data, exit_data start, end | `AccEnterData`, `AccExitData`; for a `data` construct also an `AccData` slice from its enter start to its exit end |
//! | update, wait start, end | `AccUpdate`, `AccWait` |
//! | enqueue_launch start, end | `AccLaunch` named by the kernel, with arguments `gangs`, `workers`, `vector_length` |
//! | enqueue_upload / download start, end | `AccUpload` / `AccDownload` named by the variable: a transfer (bytes, direction), so in `deep_copies` between `Host` and the device |
//! | alloc, free | `alloc` / `free` in space `acc device N` at the device address |
//! | create, delete | `alloc` / `free` in space `acc device N present` at the host address |
//! | runtime_shutdown | the plugin's `finalize` |
//!
//! Construct names: `func (file:line)` when the runtime gives a source location,
//! else the construct (`parallel`, `data`, `update`, `parallel (implicit)`, ...).
//! Devices: back end `OpenACC <device type>`, index = device number, instance = the
//! async queue of the operation.

use std::ffi::c_char;

use kprof_abi::guard::guard;
use kprof_abi::{Anomaly, CoreApi, Kind, SpaceName};

use crate::acc::{
    self, construct, event, ApiInfo, Common, Data, EventInfo, Launch, Prof, ProfInfo,
};
use crate::names::{self, Key};
use crate::{device, plugin};

/// Label of data without a variable name.
const UNNAMED: &std::ffi::CStr = c"(unnamed)";

/// The callback registered for events 1..=25.
///
/// # Safety
/// Called by the OpenACC runtime with pointers that are NULL or valid for their
/// `valid_bytes` during the call.
pub unsafe extern "C" fn on_event(info: *mut ProfInfo, ev: *mut EventInfo, _api: *mut ApiInfo) {
    guard((), || {
        // SAFETY: the runtime's contract.
        let (prof, common) = unsafe { (Prof::read(info), Common::read(ev)) };
        let ty = if info.is_null() {
            common.event_type
        } else {
            prof.event_type
        };
        let Some(api) = plugin::api_for(&prof) else {
            return;
        };
        // SAFETY: forwarded.
        unsafe { dispatch(api, ty, &prof, &common, ev) }
    })
}

/// Handles event `ty`.
///
/// # Safety
/// `ev` is NULL or valid for its `valid_bytes`; `prof` and `common` were read from
/// the runtime's structures of this call.
#[inline(always)]
unsafe fn dispatch(api: &CoreApi, ty: i32, prof: &Prof, c: &Common, ev: *mut EventInfo) {
    use event::*;
    let queue = device::instance(prof.async_);
    match ty {
        DEVICE_INIT_START => start(api, Kind::AccDeviceInit, prof, c, 0),
        DEVICE_INIT_END => finish(api, Kind::AccDeviceInit, c),
        DEVICE_SHUTDOWN_START => start(api, Kind::AccDeviceShutdown, prof, c, 0),
        DEVICE_SHUTDOWN_END => finish(api, Kind::AccDeviceShutdown, c),
        RUNTIME_SHUTDOWN => plugin::runtime_shutdown(api),
        CREATE | DELETE | ALLOC | FREE => {
            // SAFETY: forwarded.
            let d = unsafe { Data::read(ev, c.valid_bytes) };
            memory(api, ty, prof, &d);
        }
        ENTER_DATA_START => {
            if c.parent == construct::DATA {
                site_begin(api, Kind::AccData, prof, c, queue);
            }
            start(api, Kind::AccEnterData, prof, c, queue);
        }
        ENTER_DATA_END => finish(api, Kind::AccEnterData, c),
        EXIT_DATA_START => start(api, Kind::AccExitData, prof, c, queue),
        EXIT_DATA_END => {
            finish(api, Kind::AccExitData, c);
            if c.parent == construct::DATA {
                // SAFETY: plain integers.
                unsafe { (api.end)(Kind::AccData as u8, 0) };
            }
        }
        UPDATE_START => start(api, Kind::AccUpdate, prof, c, queue),
        UPDATE_END => finish(api, Kind::AccUpdate, c),
        COMPUTE_CONSTRUCT_START => start(api, Kind::AccCompute, prof, c, queue),
        COMPUTE_CONSTRUCT_END => finish(api, Kind::AccCompute, c),
        ENQUEUE_LAUNCH_START => {
            // SAFETY: forwarded.
            let l = unsafe { Launch::read(ev, c.valid_bytes) };
            let dev = device::index(api, prof.device_type, prof.device_number, queue);
            // SAFETY: the kernel name is NULL or NUL-terminated (runtime's contract).
            let guid = unsafe {
                names::with_name(Key::Launch(l.kernel_name, None), |name| {
                    (api.begin)(Kind::AccLaunch as u8, name, dev, 0)
                })
            };
            // The launch shape as arguments of the slice: one node per kernel,
            // with the range of each in the profile.
            if let Some((g, w, v)) = l.shape {
                // SAFETY: static keys; plain integers.
                unsafe {
                    (api.arg)(c"gangs".as_ptr(), g);
                    (api.arg)(c"workers".as_ptr(), w);
                    (api.arg)(c"vector_length".as_ptr(), v);
                }
            }
            c.put_word(guid);
        }
        ENQUEUE_LAUNCH_END => finish(api, Kind::AccLaunch, c),
        ENQUEUE_UPLOAD_START | ENQUEUE_DOWNLOAD_START => {
            // SAFETY: forwarded.
            let d = unsafe { Data::read(ev, c.valid_bytes) };
            transfer_begin(api, ty == ENQUEUE_UPLOAD_START, prof, c, &d, queue);
        }
        ENQUEUE_UPLOAD_END => transfer_end(api, Kind::AccUpload, c),
        ENQUEUE_DOWNLOAD_END => transfer_end(api, Kind::AccDownload, c),
        WAIT_START => start(api, Kind::AccWait, prof, c, queue),
        WAIT_END => finish(api, Kind::AccWait, c),
        _ => plugin::unknown_event(api, ty),
    }
}

/// Opens an instance of `kind` named after the event's site; returns its GUID.
#[inline(always)]
fn site_begin(api: &CoreApi, kind: Kind, prof: &Prof, c: &Common, queue: u32) -> u64 {
    let dev = device::index(api, prof.device_type, prof.device_number, queue);
    let begin = |name: *const c_char| {
        // SAFETY: a NUL-terminated name valid during the call; plain integers.
        unsafe { (api.begin)(kind as u8, name, dev, 0) }
    };
    if prof.src_file.is_null() && prof.func_name.is_null() {
        let name = if c.parent < 0 {
            // No event structure: the construct is unknown, the kind says enough.
            kind_name(kind)
        } else {
            acc::construct_name(c.parent, c.implicit)
        };
        begin(name.as_ptr())
    } else {
        // SAFETY: the runtime's strings are NULL or NUL-terminated.
        unsafe {
            names::with_name(
                Key::Source(prof.func_name, prof.src_file, prof.line_no),
                begin,
            )
        }
    }
}

/// Name of an instance whose construct the runtime did not give.
fn kind_name(kind: Kind) -> &'static std::ffi::CStr {
    match kind {
        Kind::AccCompute => c"compute construct",
        Kind::AccEnterData => c"enter data",
        Kind::AccExitData => c"exit data",
        Kind::AccUpdate => c"update",
        Kind::AccWait => c"wait",
        Kind::AccDeviceInit => c"device init",
        Kind::AccDeviceShutdown => c"device shutdown",
        _ => c"unknown construct",
    }
}

/// A start event: opens the instance and keeps its GUID in `tool_info`.
#[inline(always)]
fn start(api: &CoreApi, kind: Kind, prof: &Prof, c: &Common, queue: u32) {
    let guid = site_begin(api, kind, prof, c, queue);
    c.put_word(guid);
}

/// An end event: closes the instance its start opened.
#[inline(always)]
fn finish(api: &CoreApi, kind: Kind, c: &Common) {
    if let Some(guid) = started(api, c) {
        // SAFETY: plain integers.
        unsafe { (api.end)(kind as u8, guid) };
    }
}

/// The GUID to close at an end event: the start's (from `tool_info`), 0 for the
/// innermost instance when the runtime has no `tool_info`, None (counted) when the
/// runtime has `tool_info` but no start left a GUID there.
#[inline(always)]
fn started(api: &CoreApi, c: &Common) -> Option<u64> {
    if c.tool_info.is_null() {
        return Some(0);
    }
    match c.take_word() {
        0 => {
            // SAFETY: plain integer.
            unsafe { (api.anomaly)(Anomaly::UnmatchedEnd as u32) };
            None
        }
        guid => Some(guid),
    }
}

/// The variable's name, or a static placeholder.
fn var_label(d: &Data) -> *const c_char {
    if d.var_name.is_null() {
        UNNAMED.as_ptr()
    } else {
        d.var_name
    }
}

/// Runs `f` with the name of device `n`'s memory space (`present`: its present
/// table) as the core takes it.
fn with_space<R>(n: i32, present: bool, f: impl FnOnce(SpaceName) -> R) -> R {
    // SAFETY: Key::Space holds no pointers.
    unsafe {
        names::with_name(Key::Space(n, present), |p| {
            f(SpaceName {
                ptr: p,
                max_len: libc::strlen(p) + 1,
            })
        })
    }
}

/// create/delete/alloc/free: device memory in use per device.
fn memory(api: &CoreApi, ty: i32, prof: &Prof, d: &Data) {
    let present = matches!(ty, event::CREATE | event::DELETE);
    // The present table is keyed by host address; device memory by device address.
    let (first, second) = if present {
        (d.host_ptr, d.device_ptr)
    } else {
        (d.device_ptr, d.host_ptr)
    };
    let ptr = if first != 0 { first } else { second };
    let label = var_label(d);
    with_space(prof.device_number, present, |space| {
        // SAFETY: the space name lives across the call; the label is static or
        // the runtime's NUL-terminated string.
        unsafe {
            if matches!(ty, event::CREATE | event::ALLOC) {
                (api.alloc)(space, label, ptr, d.bytes)
            } else {
                (api.free)(space, label, ptr, d.bytes)
            }
        }
    });
}

/// enqueue_upload_start / enqueue_download_start: an `AccUpload`/`AccDownload`
/// transfer named by the variable (its GUID in `tool_info`) with its bytes and
/// direction: in the profile's `deep_copies` between "Host" and the device.
fn transfer_begin(api: &CoreApi, upload: bool, prof: &Prof, c: &Common, d: &Data, queue: u32) {
    let (kind, direction) = if upload {
        (Kind::AccUpload, 1)
    } else {
        (Kind::AccDownload, 2)
    };
    let dev = device::index(api, prof.device_type, prof.device_number, queue);
    let label = var_label(d);
    // SAFETY: the label is NUL-terminated; plain integers.
    let guid = unsafe { (api.begin_transfer_named)(kind as u8, label, dev, 0, d.bytes, direction) };
    c.put_word(guid);
}

/// enqueue_upload_end / enqueue_download_end: closes the transfer.
fn transfer_end(api: &CoreApi, kind: Kind, c: &Common) {
    if let Some(guid) = started(api, c) {
        // SAFETY: plain integers.
        unsafe { (api.end)(kind as u8, guid) };
    }
}
