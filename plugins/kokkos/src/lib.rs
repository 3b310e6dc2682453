//! `libkprof.so`: kprof's Kokkos Tools plugin.
//!
//! Loaded by Kokkos from `KOKKOS_TOOLS_LIBS`. Each exported `kokkosp_*` callback is a
//! thin translation into the core runtime's C table (see [`kprof_abi`]): Kokkos'
//! identifiers become core GUIDs (stored in the `kID`/handle Kokkos gives back), device
//! ids become core device indices. No callback panics into Kokkos, and every callback
//! is forwarded to a chained next tool when one is configured.

pub mod args;
pub mod bridge;
pub mod chain;
pub mod device;
mod plain_path;
mod say;
pub mod timing;
pub mod tune;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub mod tuning;
pub mod types;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

use kprof_abi::guard::guard;
use kprof_abi::{CopyEnd, CoreApi, Kind, SpaceName};

use chain::next;
use plain_path::plain;
use say::warn;
use types::{DeviceInfo, SpaceHandle, ToolProgrammingInterface, ToolSettings};

/// The core's table once attached (measuring).
static CORE: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
/// The core's table once loaded, attached or not (its help text and options).
static TABLE: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
static LOAD: Once = Once::new();
pub use bridge::RAJA_BRIDGE_VERSION;

/// Address of a function of this library, to find the library's own file.
pub(crate) fn anchor() -> usize {
    kokkosp_init_library as *const () as usize
}

/// Loads the core runtime once and attaches to it, unless Kokkos only asks for the
/// tool's help (`--kokkos-tools-help`): then nothing is measured or written.
fn connect() -> Option<&'static CoreApi> {
    LOAD.call_once(|| match kprof_abi::loader::load_core(anchor()) {
        Ok(api) => {
            let table = api as *const CoreApi as *mut CoreApi;
            TABLE.store(table, Ordering::Release);
            if args::help_requested() {
                return;
            }
            // Options in KOKKOS_TOOLS_ARGS / --kokkos-tools-args must be known before
            // the runtime starts (buffer size) and before Kokkos asks for settings.
            args::apply(api, args::from_environment().iter().map(String::as_str));
            args::apply(api, args::from_command_line().iter().map(String::as_str));
            // SAFETY: a NUL-terminated literal.
            if unsafe { (api.attach)(c"kokkos".as_ptr()) } {
                CORE.store(table, Ordering::Release);
            }
        }
        Err(e) => warn(&format!("{e}; Kokkos runs without kprof")),
    });
    api()
}

/// The core's table once loaded, even when not attached (help mode).
fn table() -> Option<&'static CoreApi> {
    connect();
    // SAFETY: TABLE holds null or a pointer to the core's static table.
    unsafe { TABLE.load(Ordering::Acquire).as_ref() }
}

/// The core table, once attached.
#[inline(always)]
fn api() -> Option<&'static CoreApi> {
    // SAFETY: CORE holds null or a pointer to the core's static table.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

/// Opens the plain path once the tool is set up (the end of
/// `kokkosp_init_library`, before Kokkos runs a kernel), if nothing else is needed.
fn open_plain_path() {
    if let Some(api) = api() {
        if !bridge::active() && next().is_none() && !timing::fencing() {
            plain_path::open(api);
        }
    }
}

/// A space name as the core takes it.
fn space(h: &SpaceHandle) -> SpaceName {
    SpaceName {
        ptr: h.name.as_ptr(),
        max_len: h.name.len(),
    }
}

/// Called by Kokkos right after loading the tool.
///
/// # Safety
/// Called by Kokkos with its documented arguments.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_init_library(
    load_seq: c_int,
    interface_ver: u64,
    dev_info_count: u32,
    dev_info: *mut DeviceInfo,
) {
    guard((), || {
        bridge::init(interface_ver);
        if table().is_none() {
            return;
        }
        if let Some(api) = api() {
            let version = format!("{interface_ver}\0");
            // SAFETY: NUL-terminated strings living across the call.
            unsafe {
                (api.metadata)(
                    c"Kokkos Tools interface version".as_ptr(),
                    version.as_ptr().cast(),
                )
            };
        }
        let own = kprof_abi::loader::library_path(anchor());
        match chain::load(load_seq, own.as_deref()) {
            Ok(Some(n)) => {
                if let Some(f) = n.init {
                    // SAFETY: forwarding Kokkos' own arguments to the next tool.
                    unsafe { f(load_seq + 1, interface_ver, dev_info_count, dev_info) };
                }
            }
            Ok(None) => {}
            Err(e) => warn(&e),
        }
        open_plain_path();
    })
}

/// Called by `Kokkos::finalize()`.
#[no_mangle]
pub extern "C" fn kokkosp_finalize_library() {
    guard((), || {
        if let Some(f) = next().and_then(|n| n.finalize) {
            // SAFETY: forwarding to the next tool.
            unsafe { f() };
        }
        if let Some(api) = api() {
            // SAFETY: the core's finalize takes no arguments and is idempotent.
            unsafe { (api.finalize)() };
        }
    })
}

/// Tool arguments from `--kokkos-tools-args` or `KOKKOS_TOOLS_ARGS`.
///
/// # Safety
/// `argv` holds `argc` NUL-terminated strings (Kokkos adds a NULL after them).
#[no_mangle]
pub unsafe extern "C" fn kokkosp_parse_args(argc: c_int, argv: *mut *mut c_char) {
    guard((), || {
        if let Some(api) = connect() {
            // SAFETY: forwarded from Kokkos.
            let list = unsafe { args::from_argv(argc, argv as *const *const c_char) };
            args::apply(api, list.iter().map(String::as_str));
        }
        if let Some(f) = next().and_then(|n| n.parse_args) {
            // SAFETY: forwarding Kokkos' arguments unchanged.
            unsafe { f(argc, argv) };
        }
    })
}

/// `--kokkos-tools-help`.
///
/// # Safety
/// `exe` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_print_help(exe: *mut c_char) {
    guard((), || {
        let help = table().map(|api| {
            // SAFETY: the core returns a static NUL-terminated string.
            unsafe { CStr::from_ptr((api.help)()) }
                .to_string_lossy()
                .into_owned()
        });
        warn(&format!(
            "kprof Kokkos plugin (libkprof.so). Usage: --kokkos-tools-args=\"--name=value ...\"\n{}",
            help.unwrap_or_default(),
        ));
        if let Some(f) = next().and_then(|n| n.print_help) {
            // SAFETY: forwarding Kokkos' argument.
            unsafe { f(exe) };
        }
    })
}

/// Kokkos asks whether it must fence around kernels and regions.
///
/// # Safety
/// `settings` is NULL or points to `num_actions`-sized settings.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_request_tool_settings(
    num_actions: u32,
    settings: *mut ToolSettings,
) {
    guard((), || {
        if settings.is_null() || num_actions == 0 {
            return;
        }
        let ours = table()
            // SAFETY: a NUL-terminated literal.
            .map(|api| unsafe { (api.option_flag)(c"kokkos-fences".as_ptr()) } == 1)
            .unwrap_or(false);
        let mut theirs = false;
        if let Some(f) = next().and_then(|n| n.request_settings) {
            // SAFETY: settings is valid (checked above); the next tool may write it.
            unsafe {
                (*settings).requires_global_fencing = 1;
                f(num_actions, settings);
                theirs = (*settings).requires_global_fencing != 0;
            }
        }
        // With Kokkos fencing around every kernel, device kernels need no fence of ours.
        timing::set_global_fencing(ours || theirs);
        // SAFETY: settings is valid (checked above).
        unsafe { (*settings).requires_global_fencing = u8::from(ours || theirs) };
    })
}

/// Kokkos hands over its tool programming interface (by value): its `fence` times
/// kernels on device back ends ([`timing`]).
#[no_mangle]
pub extern "C" fn kokkosp_provide_tool_programming_interface(
    num_actions: u32,
    tpi: ToolProgrammingInterface,
) {
    guard((), || {
        // Only the first slot is defined (the rest is uninitialised padding).
        if num_actions >= 1 {
            timing::set_tool_fence(tpi.fence);
        }
        if let Some(f) = next().and_then(|n| n.provide_tpi) {
            // SAFETY: forwarding Kokkos' struct unchanged.
            unsafe { f(num_actions, tpi) };
        }
    })
}

/// Opens a kernel of `kind`, forwarding to the next tool.
///
/// # Safety
/// `name` NULL or NUL-terminated; `kid` NULL or writable.
#[inline(always)]
unsafe fn begin_kernel(
    kind: Kind,
    name: *const c_char,
    dev_id: u32,
    kid: *mut u64,
    fwd: Option<unsafe extern "C" fn(*const c_char, u32, *mut u64)>,
) {
    let guid = match api() {
        Some(_) if bridge::deferred() => 0,
        Some(api) => {
            let dev = device::index(api, dev_id);
            // RAJA's bridge names no kernel: label them (a static string).
            // SAFETY: name is NULL or NUL-terminated (Kokkos' contract).
            let ours = if bridge::active() && !name.is_null() && unsafe { *name } == 0 {
                c"RAJA kernel".as_ptr()
            } else {
                name
            };
            // SAFETY: ours is NULL or NUL-terminated.
            let guid = unsafe { (api.begin)(kind as u8, ours, dev, 0) };
            // `kind` is a constant at each call site: fences never take this branch.
            if kind != Kind::Fence && timing::is_device(dev_id) {
                timing::begin_device(api, guid, dev_id);
            }
            guid
        }
        None => 0,
    };
    if !kid.is_null() {
        // SAFETY: Kokkos passes a pointer to its id storage.
        unsafe { *kid = guid };
    }
    if let Some(f) = fwd {
        let mut theirs = 0u64;
        // SAFETY: forwarding to the next tool with our own id storage.
        unsafe { f(name, dev_id, &mut theirs) };
        chain::push_kernel_id(guid, theirs);
    }
}

/// Closes a kernel of `kind`, forwarding to the next tool. A kernel on a device back
/// end is fenced first when [`timing`] says so, so that its end is the device's.
#[inline(always)]
fn end_kernel(kind: Kind, kid: u64, fwd: Option<unsafe extern "C" fn(u64)>) {
    if let Some(api) = api().filter(|_| !bridge::deferred()) {
        if kind != Kind::Fence && timing::fencing() {
            timing::end_kernel(kid);
        }
        // SAFETY: plain integers.
        unsafe { (api.end)(kind as u8, kid) };
    }
    if let Some(f) = fwd {
        // SAFETY: forwarding the next tool's own id.
        unsafe { f(chain::pop_kernel_id(kid)) };
    }
}

/// [`begin_kernel`] out of the plain path's line.
///
/// # Safety
/// As [`begin_kernel`].
#[inline(never)]
unsafe fn begin_kernel_full(
    kind: Kind,
    name: *const c_char,
    dev_id: u32,
    kid: *mut u64,
    fwd: Option<unsafe extern "C" fn(*const c_char, u32, *mut u64)>,
) {
    // SAFETY: forwarded from the caller.
    unsafe { begin_kernel(kind, name, dev_id, kid, fwd) }
}

/// [`end_kernel`] out of the plain path's line.
#[inline(never)]
fn end_kernel_full(kind: Kind, kid: u64, fwd: Option<unsafe extern "C" fn(u64)>) {
    end_kernel(kind, kid, fwd)
}

macro_rules! kernel_callbacks {
    ($($begin:ident, $end:ident, $kind:expr, $fb:ident, $fe:ident;)*) => {$(
        /// Kokkos kernel begin.
        ///
        /// # Safety
        /// `name` NULL or NUL-terminated; `kid` NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $begin(name: *const c_char, dev_id: u32, kid: *mut u64) {
            guard((), || match plain() {
                Some(api) if !timing::is_device(dev_id) => {
                    let dev = device::index(api, dev_id);
                    // SAFETY: name is NULL or NUL-terminated (Kokkos' contract).
                    let guid = unsafe { (api.begin)($kind as u8, name, dev, 0) };
                    if !kid.is_null() {
                        // SAFETY: Kokkos passes a pointer to its id storage.
                        unsafe { *kid = guid };
                    }
                }
                // SAFETY: forwarded from Kokkos.
                _ => unsafe { begin_kernel_full($kind, name, dev_id, kid, next().and_then(|n| n.$fb)) },
            })
        }

        /// Kokkos kernel end.
        #[no_mangle]
        pub extern "C" fn $end(kid: u64) {
            guard((), || match plain() {
                // SAFETY: plain integers.
                Some(api) => unsafe { (api.end)($kind as u8, kid) },
                None => end_kernel_full($kind, kid, next().and_then(|n| n.$fe)),
            })
        }
    )*};
}

kernel_callbacks! {
    kokkosp_begin_parallel_for, kokkosp_end_parallel_for, Kind::ParallelFor, begin_for, end_for;
    kokkosp_begin_parallel_reduce, kokkosp_end_parallel_reduce, Kind::ParallelReduce, begin_reduce, end_reduce;
    kokkosp_begin_parallel_scan, kokkosp_end_parallel_scan, Kind::ParallelScan, begin_scan, end_scan;
}

/// The handle of a fence folded into the kernel or region it times (never a GUID
/// of the core's: a GUID's top bits are a thread index, far below 2^64 - 1).
const FOLDED_FENCE: u64 = u64::MAX;

/// What Kokkos names the fences it runs for a tool, and only those: the ones around
/// every kernel and region callback while the tool keeps `requires_global_fencing`
/// ("Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence"), and those a
/// tool asks for through `tpi.fence` ("Kokkos::Tools::Experimental::Impl::
/// tool_invoked_fence: Tool Requested Fence"). The prefix alone tells them apart from
/// the program's fences, so the check costs a few byte compares on the hot path.
const TOOL_FENCE_PREFIX: &[u8] = b"Kokkos::Tools::";

/// Whether `name` is a fence Kokkos runs because a tool asked for it.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[inline(always)]
unsafe fn is_tool_fence(name: *const c_char) -> bool {
    if name.is_null() {
        return false;
    }
    // Byte by byte, so no byte past a shorter name's NUL is read (the NUL is a
    // mismatch); the program's own fence names fail within their first bytes.
    TOOL_FENCE_PREFIX.iter().enumerate().all(|(i, &b)| {
        // SAFETY: every byte up to the first mismatch (at the latest the NUL) is part
        // of the string.
        (unsafe { *name.add(i) }) as u8 == b
    })
}

/// Kokkos fence begin. The fences Kokkos runs for a tool are folded into the kernel
/// or region they time: not recorded (their time stays in the enclosing instance).
///
/// # Safety
/// `name` NULL or NUL-terminated; `handle` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_begin_fence(name: *const c_char, dev_id: u32, handle: *mut u64) {
    guard((), || {
        let fwd = next().and_then(|n| n.begin_fence);
        // SAFETY: name is NULL or NUL-terminated (Kokkos' contract).
        if !unsafe { is_tool_fence(name) } {
            // SAFETY: forwarded from Kokkos.
            return unsafe { begin_kernel(Kind::Fence, name, dev_id, handle, fwd) };
        }
        if !handle.is_null() {
            // SAFETY: Kokkos passes a pointer to its handle storage.
            unsafe { *handle = FOLDED_FENCE };
        }
        if let Some(f) = fwd {
            let mut theirs = 0u64;
            // SAFETY: forwarding to the next tool with our own handle storage.
            unsafe { f(name, dev_id, &mut theirs) };
            chain::push_kernel_id(FOLDED_FENCE, theirs);
        }
    })
}

/// Kokkos fence end.
#[no_mangle]
pub extern "C" fn kokkosp_end_fence(handle: u64) {
    guard((), || {
        let fwd = next().and_then(|n| n.end_fence);
        if handle != FOLDED_FENCE {
            return end_kernel(Kind::Fence, handle, fwd);
        }
        if let Some(f) = fwd {
            // SAFETY: forwarding the next tool's own handle.
            unsafe { f(chain::pop_kernel_id(handle)) };
        }
    })
}

/// `Kokkos::Profiling::pushRegion`.
///
/// # Safety
/// `name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_push_profile_region(name: *const c_char) {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: name is NULL or NUL-terminated (Kokkos' contract).
            unsafe { (api.begin)(Kind::Region as u8, name, 0, 0) };
        }
        if let Some(f) = next().and_then(|n| n.push_region) {
            // SAFETY: forwarding.
            unsafe { f(name) };
        }
    })
}

/// `Kokkos::Profiling::popRegion`.
#[no_mangle]
pub extern "C" fn kokkosp_pop_profile_region() {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: plain integers.
            unsafe { (api.end)(Kind::Region as u8, 0) };
        }
        if let Some(f) = next().and_then(|n| n.pop_region) {
            // SAFETY: forwarding.
            unsafe { f() };
        }
    })
}

/// `Kokkos::Profiling::createProfileSection`.
///
/// # Safety
/// `name` NULL or NUL-terminated; `sec_id` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_create_profile_section(name: *const c_char, sec_id: *mut u32) {
    guard((), || {
        // SAFETY: name is NULL or NUL-terminated.
        let id = api().map_or(0, |api| unsafe { (api.section_create)(name) });
        if !sec_id.is_null() {
            // SAFETY: Kokkos passes its id storage.
            unsafe { *sec_id = id };
        }
        if let Some(f) = next().and_then(|n| n.create_section) {
            let mut theirs = 0u32;
            // SAFETY: forwarding with our own id storage.
            unsafe { f(name, &mut theirs) };
            chain::map_id(u64::from(id), u64::from(theirs));
        }
    })
}

macro_rules! section_callbacks {
    ($($name:ident, $core:ident, $fwd:ident, $keep:expr;)*) => {$(
        /// Kokkos profile section operation.
        #[no_mangle]
        pub extern "C" fn $name(sec_id: u32) {
            guard((), || {
                if let Some(api) = api() {
                    // SAFETY: plain integers.
                    unsafe { (api.$core)(sec_id) };
                }
                if let Some(f) = next().and_then(|n| n.$fwd) {
                    // SAFETY: forwarding the next tool's own id.
                    unsafe { f(chain::their_id(u64::from(sec_id), $keep) as u32) };
                }
            })
        }
    )*};
}

section_callbacks! {
    kokkosp_start_profile_section, section_start, start_section, true;
    kokkosp_stop_profile_section, section_stop, stop_section, true;
    kokkosp_destroy_profile_section, section_destroy, destroy_section, false;
}

/// `Kokkos::Profiling::markEvent`.
///
/// # Safety
/// `name` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_profile_event(name: *const c_char) {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: name is NULL or NUL-terminated.
            unsafe { (api.instant)(Kind::Marker as u8, name, 0, 0) };
        }
        if let Some(f) = next().and_then(|n| n.profile_event) {
            // SAFETY: forwarding.
            unsafe { f(name) };
        }
    })
}

/// Kokkos configuration metadata.
///
/// # Safety
/// `key`, `value` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_declare_metadata(key: *const c_char, value: *const c_char) {
    guard((), || {
        if let Some(api) = connect() {
            // SAFETY: NULL or NUL-terminated strings.
            unsafe { (api.metadata)(key, value) };
        }
        if let Some(f) = next().and_then(|n| n.declare_metadata) {
            // SAFETY: forwarding.
            unsafe { f(key, value) };
        }
    })
}

/// A View allocation.
///
/// # Safety
/// `label` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_allocate_data(
    handle: SpaceHandle,
    label: *const c_char,
    ptr: *const c_void,
    size: u64,
) {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: the handle is a 64-byte buffer on our stack; label per Kokkos.
            unsafe { (api.alloc)(space(&handle), label, ptr as u64, size) };
        }
        if let Some(f) = next().and_then(|n| n.allocate) {
            // SAFETY: forwarding.
            unsafe { f(handle, label, ptr, size) };
        }
    })
}

/// A View deallocation.
///
/// # Safety
/// `label` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_deallocate_data(
    handle: SpaceHandle,
    label: *const c_char,
    ptr: *const c_void,
    size: u64,
) {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: as for allocate.
            unsafe { (api.free)(space(&handle), label, ptr as u64, size) };
        }
        if let Some(f) = next().and_then(|n| n.deallocate) {
            // SAFETY: forwarding.
            unsafe { f(handle, label, ptr, size) };
        }
    })
}

/// `Kokkos::deep_copy` begins.
///
/// # Safety
/// Labels NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_begin_deep_copy(
    dst_handle: SpaceHandle,
    dst_label: *const c_char,
    dst_ptr: *const c_void,
    src_handle: SpaceHandle,
    src_label: *const c_char,
    src_ptr: *const c_void,
    size: u64,
) {
    guard((), || {
        if let Some(api) = api() {
            let dst = CopyEnd {
                space: space(&dst_handle),
                label: dst_label,
            };
            let src = CopyEnd {
                space: space(&src_handle),
                label: src_label,
            };
            // SAFETY: handles live on our stack; labels per Kokkos.
            unsafe { (api.copy_begin)(dst, src, size) };
        }
        if let Some(f) = next().and_then(|n| n.begin_deep_copy) {
            // SAFETY: forwarding.
            unsafe {
                f(
                    dst_handle, dst_label, dst_ptr, src_handle, src_label, src_ptr, size,
                )
            };
        }
    })
}

/// `Kokkos::deep_copy` ends (the innermost open copy of this thread).
#[no_mangle]
pub extern "C" fn kokkosp_end_deep_copy() {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: plain integers.
            unsafe { (api.end)(Kind::DeepCopy as u8, 0) };
        }
        if let Some(f) = next().and_then(|n| n.end_deep_copy) {
            // SAFETY: forwarding.
            unsafe { f() };
        }
    })
}

/// Dual-view activity; `flag` is C `bool` taken as a byte so any value is valid.
fn dual_view(
    kind: Kind,
    label: *const c_char,
    ptr: *const c_void,
    flag: u8,
    fwd: Option<unsafe extern "C" fn(*const c_char, *const c_void, bool)>,
) {
    if let Some(api) = api() {
        // SAFETY: label NULL or NUL-terminated (Kokkos' contract).
        unsafe { (api.instant)(kind as u8, label, ptr as u64, u64::from(flag != 0)) };
    }
    if let Some(f) = fwd {
        // SAFETY: forwarding.
        unsafe { f(label, ptr, flag != 0) };
    }
}

/// `DualView::sync`.
///
/// # Safety
/// `label` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_dual_view_sync(
    label: *const c_char,
    ptr: *const c_void,
    to_device: u8,
) {
    guard((), || {
        dual_view(
            Kind::DualViewSync,
            label,
            ptr,
            to_device,
            next().and_then(|n| n.dual_view_sync),
        )
    })
}

/// `DualView::modify`.
///
/// # Safety
/// `label` NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kokkosp_dual_view_modify(
    label: *const c_char,
    ptr: *const c_void,
    on_device: u8,
) {
    guard((), || {
        dual_view(
            Kind::DualViewModify,
            label,
            ptr,
            on_device,
            next().and_then(|n| n.dual_view_modify),
        )
    })
}
