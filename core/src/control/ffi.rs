//! The C ABI of `libkprof_core.so`: the plugin table ([`kprof_core_api`]) and the
//! public annotation API of `ffi-headers/kprof.h`. Every function is wrapped in
//! [`guard`] so no panic reaches the caller.

use std::ffi::{c_char, c_int, CStr};
use std::sync::OnceLock;

use kprof_abi::guard::guard;
use kprof_abi::{
    message, Activity, Anomaly, CopyEnd, CoreApi, DeviceDesc, Kind, Site, SpaceName, ABI_VERSION,
};

use crate::base::devices::Device;
use crate::control::{hooks, job, start};
use crate::hot::events::{self, AtExtra};
use crate::hot::record::Op;
use crate::hot::runtime::{self, warn};

/// Text of a C string argument (lossy), `None` for NULL.
///
/// # Safety
/// `p` is NULL or NUL-terminated.
unsafe fn text(p: *const c_char) -> Option<String> {
    // SAFETY: forwarded from the caller.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

unsafe extern "C" fn attach(plugin: *const c_char) -> bool {
    guard(false, || {
        // SAFETY: plugins pass a NUL-terminated literal.
        let name = unsafe { text(plugin) }.unwrap_or_else(|| "unknown".into());
        let recording = start::attach(&name).is_some();
        if recording {
            hook_process_end();
        }
        recording
    })
}

/// Hooks the end of the process (exit, signals, fork: [`hooks`]) once the runtime
/// records; effective once. The hooks end the runtime, so the start does not know
/// them: whoever attached installs them, after the start completed (a signal
/// handled on a thread that still started the runtime would wait for it forever).
fn hook_process_end() {
    let signals = runtime::config().signals;
    hooks::install_exit_hooks(signals);
}

unsafe extern "C" fn configure(arg: *const c_char) -> bool {
    guard(false, || {
        // SAFETY: plugins pass NUL-terminated arguments.
        let Some(arg) = (unsafe { text(arg) }) else {
            return false;
        };
        let mut cfg = runtime::config();
        let before = cfg.buffer_mb;
        match cfg.apply_arg(&arg) {
            Ok(()) => {
                if cfg.buffer_mb != before && runtime::get().is_some() {
                    cfg.buffer_mb = before;
                    runtime::warn(&format!(
                        "'{arg}' comes after the buffers were sized; give it in the environment"
                    ));
                }
                true
            }
            Err(e) => {
                drop(cfg);
                runtime::warn(&e.to_string());
                false
            }
        }
    })
}

unsafe extern "C" fn option_flag(name: *const c_char) -> i32 {
    guard(-1, || {
        // SAFETY: plugins pass a NUL-terminated literal.
        let Some(name) = (unsafe { text(name) }) else {
            return -1;
        };
        runtime::config().flag(&name).map_or(-1, i32::from)
    })
}

unsafe extern "C" fn help() -> *const c_char {
    static HELP: OnceLock<Vec<u8>> = OnceLock::new();
    guard(c"".as_ptr(), || {
        HELP.get_or_init(|| {
            let mut v = crate::base::config::help_text().into_bytes();
            v.push(0);
            v
        })
        .as_ptr()
        .cast()
    })
}

unsafe extern "C" fn finalize() {
    guard((), start::plugin_finalize)
}

unsafe extern "C" fn device(desc: *const DeviceDesc) -> u16 {
    guard(0, || {
        // SAFETY: plugins pass a valid descriptor or NULL.
        let Some(d) = (unsafe { desc.as_ref() }) else {
            return 0;
        };
        // SAFETY: the descriptor's backend is NULL or NUL-terminated.
        let backend = unsafe { text(d.backend) }.unwrap_or_else(|| "Unknown".into());
        events::device(Device {
            backend,
            index: d.index,
            instance: d.instance,
        })
    })
}

unsafe extern "C" fn begin(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64 {
    // SAFETY: the ABI requires name to be NULL or NUL-terminated.
    guard(0, || unsafe { events::begin(kind, name, dev, parent) })
}

unsafe extern "C" fn end(kind: u8, guid: u64) {
    guard((), || events::end(kind, guid))
}

unsafe extern "C" fn instant(kind: u8, name: *const c_char, a: u64, b: u64) {
    // SAFETY: the ABI requires name to be NULL or NUL-terminated.
    guard((), || unsafe { events::instant(kind, name, a, b) })
}

unsafe extern "C" fn alloc(space: SpaceName, label: *const c_char, ptr: u64, bytes: u64) {
    // SAFETY: the ABI requires a readable space buffer and a NUL-terminated label.
    guard((), || unsafe {
        events::memory(Op::Alloc, space, label, ptr, bytes)
    })
}

unsafe extern "C" fn free(space: SpaceName, label: *const c_char, ptr: u64, bytes: u64) {
    // SAFETY: as for alloc.
    guard((), || unsafe {
        events::memory(Op::Free, space, label, ptr, bytes)
    })
}

unsafe extern "C" fn copy_begin(dst: CopyEnd, src: CopyEnd, bytes: u64) -> u64 {
    // SAFETY: as for alloc, for both ends.
    guard(0, || unsafe { events::copy_begin(dst, src, bytes) })
}

unsafe extern "C" fn section_create(name: *const c_char) -> u32 {
    // SAFETY: the ABI requires name to be NULL or NUL-terminated.
    guard(0, || unsafe { events::section_create(name) })
}

unsafe extern "C" fn section_start(id: u32) {
    guard((), || events::section(Op::SectionStart, id))
}

unsafe extern "C" fn section_stop(id: u32) {
    guard((), || events::section(Op::SectionStop, id))
}

unsafe extern "C" fn section_destroy(id: u32) {
    guard((), || events::section_destroy(id))
}

unsafe extern "C" fn metadata(key: *const c_char, value: *const c_char) {
    guard((), || {
        // SAFETY: the ABI requires NULL or NUL-terminated strings.
        let (k, v) = unsafe {
            (
                (!key.is_null()).then(|| CStr::from_ptr(key)),
                (!value.is_null()).then(|| CStr::from_ptr(value)),
            )
        };
        events::metadata(k, v)
    })
}

unsafe extern "C" fn anomaly(which: u32) {
    guard((), || {
        events::anomaly(Anomaly::from_u32(which).unwrap_or(Anomaly::InternalError))
    })
}

unsafe extern "C" fn thread_name(name: *const c_char) {
    guard((), || {
        // SAFETY: the ABI requires NULL or a NUL-terminated string.
        if let Some(n) = unsafe { text(name) } {
            events::thread_name(n);
        }
    })
}

unsafe extern "C" fn begin_static(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64 {
    // SAFETY: the ABI requires name to be NULL or a NUL-terminated, unchanging string.
    guard(0, || unsafe {
        events::begin_static(kind, name, dev, parent)
    })
}

unsafe extern "C" fn begin_at(kind: u8, codeptr: u64, dev: u16, parent: u64) -> u64 {
    // SAFETY: no key to read.
    guard(0, || unsafe {
        events::begin_at(kind, codeptr, dev, parent, AtExtra::None)
    })
}

unsafe extern "C" fn begin_at_arg(
    kind: u8,
    codeptr: u64,
    dev: u16,
    parent: u64,
    key: *const c_char,
    value: u64,
) -> u64 {
    let extra = AtExtra::Arg { key, value };
    // SAFETY: the ABI requires key to be NULL or a NUL-terminated, unchanging string.
    guard(0, || unsafe {
        events::begin_at(kind, codeptr, dev, parent, extra)
    })
}

unsafe extern "C" fn edge(kind: u8, from: u64, to: u64) {
    guard((), || events::edge(kind, from, to))
}

unsafe extern "C" fn begin_transfer(
    kind: u8,
    codeptr: u64,
    dev: u16,
    parent: u64,
    bytes: u64,
    direction: u32,
) -> u64 {
    let extra = AtExtra::Transfer { bytes, direction };
    // SAFETY: no key to read.
    guard(0, || unsafe {
        events::begin_at(kind, codeptr, dev, parent, extra)
    })
}

unsafe extern "C" fn arg(key: *const c_char, value: u64) {
    // SAFETY: the ABI requires key to be NULL or NUL-terminated.
    guard((), || unsafe { events::arg(key, value) })
}

unsafe extern "C" fn arg_static(key: *const c_char, value: u64) {
    // SAFETY: the ABI requires key to be NULL or a NUL-terminated literal.
    guard((), || unsafe { events::arg_static(key, value) })
}

unsafe extern "C" fn instant_static(kind: u8, name: *const c_char, a: u64, b: u64) {
    // SAFETY: the ABI requires name to be NULL or a NUL-terminated literal.
    guard((), || unsafe { events::instant_static(kind, name, a, b) })
}

unsafe extern "C" fn begin_transfer_named(
    kind: u8,
    name: *const c_char,
    dev: u16,
    parent: u64,
    bytes: u64,
    direction: u32,
) -> u64 {
    // SAFETY: the ABI requires name to be NULL or NUL-terminated.
    guard(0, || unsafe {
        events::begin_transfer_named(kind, name, dev, parent, bytes, direction)
    })
}

unsafe extern "C" fn now_ns() -> u64 {
    guard(0, events::now_ns)
}

unsafe extern "C" fn site() -> Site {
    guard(Site::default(), events::site)
}

unsafe extern "C" fn activity(a: *const Activity) {
    guard((), || {
        // SAFETY: the ABI requires NULL or a valid activity for the call; its
        // `size` says how much of it the plugin filled.
        let a =
            unsafe { a.as_ref() }.filter(|a| a.size as usize >= std::mem::size_of::<Activity>());
        match a {
            // SAFETY: the name and keys are NULL or NUL-terminated, as the ABI requires.
            Some(a) => unsafe { events::activity(a) },
            None => events::anomaly(Anomaly::UnknownEvent),
        }
    })
}

unsafe extern "C" fn on_flush(flush: unsafe extern "C" fn()) -> bool {
    guard(false, || crate::base::flush::register(flush))
}

unsafe extern "C" fn gpu_activity(set: i32) -> bool {
    guard(false, || start::gpu_activity(set > 0))
}

unsafe extern "C" fn device_cost(ns: u64) {
    guard((), || {
        if let Some(rt) = runtime::get() {
            rt.device_cost_ns
                .fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
        }
    })
}

unsafe extern "C" fn extension(
    name: *const c_char,
    json: *const c_char,
    summary: *const c_char,
) -> bool {
    guard(false, || {
        // SAFETY: the ABI requires NULL or NUL-terminated strings.
        let (Some(name), Some(json), Some(summary)) =
            (unsafe { text(name) }, unsafe { text(json) }, unsafe {
                text(summary)
            })
        else {
            return false;
        };
        crate::base::extensions::add(&name, &json, &summary)
    })
}

// ---- A job's reduction (control::job) ----

/// A form handed to a plugin: the bytes leaked as a boxed slice, `*len` set.
fn hand_out(bytes: Vec<u8>, len: *mut usize) -> *mut u8 {
    let b = bytes.into_boxed_slice();
    if !len.is_null() {
        // SAFETY: the caller passes NULL or a valid pointer.
        unsafe { *len = b.len() };
    }
    Box::into_raw(b).cast()
}

/// The bytes at `p` (`n` of them; empty for NULL).
///
/// # Safety
/// `p` is NULL or points to `n` readable bytes living across the use.
unsafe fn bytes<'a>(p: *const u8, n: usize) -> &'a [u8] {
    if p.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}

unsafe extern "C" fn job_profile(rank: u64, len: *mut usize) -> *mut u8 {
    guard(std::ptr::null_mut(), || match job::profile(rank) {
        Some(b) => hand_out(b, len),
        None => std::ptr::null_mut(),
    })
}

unsafe extern "C" fn job_fold(
    a: *const u8,
    a_len: usize,
    b: *const u8,
    b_len: usize,
    len: *mut usize,
) -> *mut u8 {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the ABI requires the forms to be valid for their lengths.
        let (x, y) = unsafe { (bytes(a, a_len), bytes(b, b_len)) };
        match job::fold(x, y) {
            Ok(f) => hand_out(f, len),
            Err(e) => {
                warn(&e.to_string());
                std::ptr::null_mut()
            }
        }
    })
}

unsafe extern "C" fn job_write(form: *const u8, len: usize) -> i32 {
    guard(1, || {
        // SAFETY: the ABI requires the form to be valid for its length.
        match job::write(unsafe { bytes(form, len) }) {
            Ok(_) => 0,
            Err(e) => {
                warn(&format!("the job's merged profile was not written: {e}"));
                1
            }
        }
    })
}

unsafe extern "C" fn job_done(merged: i32) {
    guard((), || job::done(merged != 0))
}

unsafe extern "C" fn job_free(form: *mut u8, len: usize) {
    if form.is_null() {
        return;
    }
    // SAFETY: `form` and `len` come from hand_out (a leaked boxed slice).
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(form, len)) });
}

unsafe extern "C" fn stamp() -> u64 {
    guard(0, events::stamp)
}

unsafe extern "C" fn call(c: *const kprof_abi::Call) {
    guard((), || {
        // SAFETY: the ABI requires NULL or a valid call whose strings are
        // literals.
        if let Some(c) = unsafe { c.as_ref() } {
            // SAFETY: as above.
            unsafe { events::call(c) }
        }
    })
}

unsafe extern "C" fn end_at(kind: u8, guid: u64, at: u64) {
    guard((), || events::end_at(kind, guid, at))
}

unsafe extern "C" fn libraries_loaded() {
    guard((), crate::hot::stack_samples::libraries_loaded)
}

static API: CoreApi = CoreApi {
    size: std::mem::size_of::<CoreApi>(),
    version: ABI_VERSION,
    attach,
    configure,
    option_flag,
    help,
    finalize,
    device,
    begin,
    end,
    instant,
    alloc,
    free,
    copy_begin,
    section_create,
    section_start,
    section_stop,
    section_destroy,
    metadata,
    anomaly,
    thread_name,
    begin_at,
    edge,
    begin_transfer,
    arg,
    begin_transfer_named,
    begin_static,
    begin_at_arg,
    now_ns,
    site,
    activity,
    on_flush,
    gpu_activity,
    device_cost,
    arg_static,
    instant_static,
    extension,
    job_profile,
    job_fold,
    job_write,
    job_done,
    job_free,
    stamp,
    call,
    end_at,
    libraries_loaded,
};

/// The plugin table for ABI `version`, or NULL when this core cannot serve it.
#[no_mangle]
pub extern "C" fn kprof_core_api(version: u32) -> *const CoreApi {
    if version == ABI_VERSION {
        &API
    } else {
        std::ptr::null()
    }
}

// ---- The public annotation API (ffi-headers/kprof.h) ----

/// Whether an annotation call records: one load and a branch once decided. The
/// first call decides (see [`start::decide_annotations`]): inert unless
/// measurement was asked for; when asked, it attaches the annotation API to the
/// runtime (starting it), so annotations work with or without a plugin and are
/// listed under "plugins". Every thread's first call waits for the one start.
#[inline(always)]
fn annotating() -> bool {
    match start::annotations() {
        start::Annotations::Measure => true,
        start::Annotations::Inert => false,
        start::Annotations::Undecided => guard(false, decide),
    }
}

/// Whether an annotation call is known to be inert: one load and a branch, all an
/// inert region costs.
#[inline(always)]
fn inert() -> bool {
    start::annotations() == start::Annotations::Inert
}

#[cold]
fn decide() -> bool {
    let (measure, attached) = start::decide_annotations();
    if attached {
        hook_process_end();
    }
    measure
}

/// Opens an annotation region on the calling thread.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kprof_region_begin(name: *const c_char) {
    if !inert() {
        // SAFETY: forwarded from the caller.
        unsafe { region_begin(name) }
    }
}

/// [`kprof_region_begin`] past the inert check: out of line, so that an inert call
/// does not pay for this one's frame.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[inline(never)]
unsafe fn region_begin(name: *const c_char) {
    if annotating() {
        guard((), || {
            // SAFETY: forwarded from the caller.
            unsafe { events::region_begin(name) };
        });
    }
}

/// Closes the calling thread's annotation region `name` (NULL: the innermost).
/// An end by another name than the innermost region's is counted and noted
/// (`mismatched_region_ends`), and repaired: see [`events::region_end`].
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kprof_region_end(name: *const c_char) {
    if !inert() {
        // SAFETY: forwarded from the caller.
        unsafe { region_end(name) }
    }
}

/// [`kprof_region_end`] past the inert check, out of line as [`region_begin`].
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[inline(never)]
unsafe fn region_end(name: *const c_char) {
    if annotating() {
        // SAFETY: forwarded from the caller.
        guard((), || unsafe { events::region_end(name) });
    }
}

/// Records a named instant event.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kprof_event(name: *const c_char) {
    if annotating() {
        // SAFETY: forwarded from the caller.
        guard((), || unsafe {
            events::instant(Kind::Marker as u8, name, 0, 0)
        });
    }
}

/// Records a value of the counter `name` (a counter track in traces; count, min,
/// max, mean and last value in the profile).
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kprof_counter(name: *const c_char, value: f64) {
    if annotating() {
        // SAFETY: forwarded from the caller.
        guard((), || unsafe {
            events::instant(Kind::UserCounter as u8, name, value.to_bits(), 0)
        });
    }
}

/// Records `count` messages of `bytes` bytes to (`direction` 0) or from (1) peer
/// `peer` on `channel`: this process's row of the channel's message matrix.
///
/// # Safety
/// `channel` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kprof_message(
    channel: *const c_char,
    direction: c_int,
    peer: u32,
    count: u64,
    bytes: u64,
) {
    if !annotating() {
        return;
    }
    guard((), || {
        let direction = if direction == 1 {
            message::RECEIVE
        } else {
            message::SEND
        };
        let a = message::pack(peer, direction, count);
        // SAFETY: forwarded from the caller.
        unsafe { events::instant(Kind::Message as u8, channel, a, bytes) };
    })
}

/// Records a metadata pair.
///
/// # Safety
/// `key` and `value` are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn kprof_metadata(key: *const c_char, value: *const c_char) {
    if annotating() {
        // SAFETY: forwarded from the caller (metadata guards itself).
        unsafe { metadata(key, value) };
    }
}

/// Writes all output now and stops measuring (nothing when nothing measured).
#[no_mangle]
pub extern "C" fn kprof_finalize() {
    guard((), start::shutdown)
}

// ---- The policy API (ffi-headers/kprof.h; see crate::control::policy) ----

/// Fills `*out` with the calling thread's live statistics of `path`: 1 found, 0
/// not in the thread's tree (zeroed), -1 no live statistics (zeroed).
///
/// # Safety
/// `path` is NULL or NUL-terminated; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn kprof_stats_of(
    path: *const c_char,
    out: *mut crate::control::policy::PathStats,
) -> c_int {
    let measuring = annotating();
    guard(-1, || {
        // SAFETY: forwarded from the caller.
        let path = unsafe { text(path) }.unwrap_or_default();
        let live = if measuring {
            crate::control::policy::stats_of(&path)
        } else {
            None
        };
        let (rc, stats) = match live {
            Some(Some(s)) => (1, s),
            Some(None) => (0, Default::default()),
            None => (-1, Default::default()),
        };
        // SAFETY: out is NULL or writable (the caller's contract).
        if let Some(o) = unsafe { out.as_mut() } {
            *o = stats;
        }
        rc
    })
}

/// Registers a policy callback for `path`, run by [`kprof_policy_poll`] at most
/// every `period_ns`; returns its handle, 0 when refused.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `callback` is NULL or a function of the
/// declared type, callable until the process ends.
#[no_mangle]
pub unsafe extern "C" fn kprof_policy_register(
    path: *const c_char,
    period_ns: u64,
    callback: Option<crate::control::policy::PolicyFn>,
    user: *mut std::ffi::c_void,
) -> c_int {
    // Policies run without measurement too (with zeroed statistics): only
    // measuring starts the runtime.
    annotating();
    guard(0, || {
        // SAFETY: forwarded from the caller.
        let (Some(path), Some(callback)) = (unsafe { text(path) }, callback) else {
            return 0;
        };
        crate::control::policy::register(&path, period_ns, callback, user as usize)
    })
}

/// Runs the policies whose period has passed, on the calling thread; returns how
/// many ran.
#[no_mangle]
pub extern "C" fn kprof_policy_poll() -> c_int {
    annotating();
    guard(0, crate::control::policy::poll)
}
