//! `libkprof_raja.so`: kprof's RAJA runtime plugin.
//!
//! RAJA (built with `RAJA_ENABLE_RUNTIME_PLUGINS=ON`) dlopens every library named
//! by `RAJA_PLUGINS` and asks it for a C++ object through `RAJAGetPlugin` (older
//! RAJA: `getPlugin`). The object is made by the C++ half of this library
//! (`shim/kprof_raja_shim.cpp`, laid out as RAJA's `PluginStrategy`, see
//! `ffi-headers/kprof_raja_plugin.hpp`); its virtual functions forward here through
//! a table of C function pointers ([`Hooks`]), and this side translates them into
//! the core runtime's C table: `preLaunch`/`postLaunch` become one
//! [`Kind::RajaLaunch`] instance per kernel on a device named after the kernel's
//! platform. RAJA's capture (`preCapture`/`postCapture`, the copy of the loop body)
//! is not an instance of its own: with `KPROF_RAJA_CAPTURE=1` its duration becomes
//! the `capture_ns` argument of the kernel's launch.
//!
//! Kernels are named by `RAJA::Name` (passed to the core as an unchanging copy, see
//! [`names`]); an unnamed kernel is named after its launch site (a return address
//! the core's writer symbolizes), or `RAJA kernel (<platform>)` when none can be
//! found. The runtime starts on the first callback when the application never calls
//! `RAJA::util::init_plugins()`, and the core's exit handler writes everything when
//! it never calls `finalize_plugins()`. One plugin object per process records: when
//! RAJA holds several (the library named both by `RAJA_PLUGINS` and by
//! `init_plugins(path)`), the others stay inert and that is reported once. No
//! callback allocates (but on a name's first launch), locks or lets a panic reach
//! RAJA.

pub mod names;
pub mod platform;

use std::cell::Cell;
use std::ffi::{c_char, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Once, OnceLock};

use kprof_abi::guard::guard;
use kprof_abi::{Anomaly, CoreApi, Kind};

use platform::Platform;

/// The functions the C++ object calls (the shim's `KprofRajaHooks`).
#[repr(C)]
pub struct Hooks {
    /// `init(PluginOptions)`: the options string's data and size.
    pub init: unsafe extern "C" fn(opts: *const c_char, len: usize),
    /// `preLaunch` of a kernel with a name (size > 0): the context's raw platform
    /// and its kernel name's data and size (unchecked).
    pub launch: unsafe extern "C" fn(platform: i32, name: *const c_char, len: usize),
    /// `preLaunch` of a kernel without a name: the context's raw platform and the
    /// kernel's launch site (0: none found).
    pub launch_at: unsafe extern "C" fn(platform: i32, site: usize),
    /// `postLaunch`.
    pub launch_end: unsafe extern "C" fn(),
    /// `preCapture` (phase 0) / `postCapture` (phase 1): until connected, and
    /// then only when [`capture_enabled`].
    pub capture: unsafe extern "C" fn(phase: c_uint),
    /// `finalize()`.
    pub finalize: unsafe extern "C" fn(),
    /// A second plugin object of this library was called (it stays inert).
    pub duplicate: unsafe extern "C" fn(),
}

static HOOKS: Hooks = Hooks {
    init: hook_init,
    launch: hook_launch,
    launch_at: hook_launch_at,
    launch_end: hook_launch_end,
    capture: hook_capture,
    finalize: hook_finalize,
    duplicate: hook_duplicate,
};

extern "C" {
    /// Makes a plugin object forwarding to `hooks` (operator new; NULL when out of
    /// memory).
    fn kprof_raja_shim_new(hooks: *const Hooks) -> *mut c_void;
    /// Tells the shim whether to forward captures.
    fn kprof_raja_shim_capture(on: bool);
}

static CORE: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
/// The core table when a launch needs nothing but its begin (attached, capture
/// times off): the launches' fast paths test this one pointer. Null otherwise.
static FAST: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
static LOAD: Once = Once::new();
static FINALIZED: AtomicBool = AtomicBool::new(false);
static WARNED_LAYOUT: AtomicBool = AtomicBool::new(false);
static DUPLICATE: AtomicBool = AtomicBool::new(false);
static CAPTURE: AtomicBool = AtomicBool::new(false);
/// The clock captures are timed with (the TSC where invariant), calibrated when
/// captures are timed.
static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();

/// The longest kernel name taken as plausible (a longer `size()` means the
/// `std::string` was not read with the layout RAJA wrote it in).
pub const MAX_NAME: usize = 1 << 16;

fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}

/// Address of a function of this library that it does not export, to find the
/// library's own file.
fn anchor() -> usize {
    connect as *const () as usize
}

/// Loads the core runtime once and attaches to it (lazily, on the first callback
/// when RAJA never calls `init`).
fn connect() -> Option<&'static CoreApi> {
    LOAD.call_once(|| {
        match kprof_abi::loader::load_core(anchor()) {
            Ok(api) => {
                // SAFETY: a NUL-terminated literal.
                if unsafe { (api.attach)(c"raja".as_ptr()) } {
                    CORE.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
                    let on = kprof_tables::settings::raja::RAJA_CAPTURE
                        .get()
                        .is_some_and(|v| capture_enabled(&v));
                    if on {
                        CLOCK.get_or_init(quanta::Clock::new);
                    }
                    CAPTURE.store(on, Ordering::Relaxed);
                    if !on {
                        FAST.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
                    }
                }
            }
            Err(e) => warn(&format!("{e}; RAJA runs without kprof")),
        }
        // SAFETY: sets an atomic flag (off too when kprof is disabled or absent,
        // so that captures stop calling here).
        unsafe { kprof_raja_shim_capture(CAPTURE.load(Ordering::Relaxed)) };
    });
    api()
}

/// The core table, once attached.
#[inline(always)]
fn api() -> Option<&'static CoreApi> {
    // SAFETY: CORE holds null or a pointer to the core's static table.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

/// The core table, connecting on first use.
#[inline(always)]
fn api_or_connect() -> Option<&'static CoreApi> {
    api().or_else(connect)
}

/// What a kernel name read from a `PluginContext` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name {
    /// No `RAJA::Name` (size 0).
    Empty,
    /// A usable NUL-terminated name.
    Given,
    /// Not a libstdc++ C++11 `std::string` as kprof reads it: NULL data with a
    /// size, a size over [`MAX_NAME`], or no NUL at `data[size]`.
    Implausible,
}

/// Checks a `std::string`'s `data()`/`size()` as read through libstdc++'s C++11
/// layout. libstdc++ keeps `data()[size()] == '\0'` at all times, so a string read
/// with the wrong layout almost never passes.
///
/// # Safety
/// When `ptr` is non-NULL and `len <= MAX_NAME`, `ptr[len]` must be readable
/// (true for a real `std::string`).
pub unsafe fn check_name(ptr: *const c_char, len: usize) -> Name {
    if len == 0 {
        return Name::Empty;
    }
    if ptr.is_null() || len > MAX_NAME {
        return Name::Implausible;
    }
    // SAFETY: per the function's contract.
    if unsafe { *ptr.add(len) } != 0 {
        return Name::Implausible;
    }
    Name::Given
}

/// Counts a context kprof could not read and says so once.
#[cold]
fn layout_mismatch(api: &CoreApi) {
    // SAFETY: a plain integer.
    unsafe { (api.anomaly)(Anomaly::InternalError as u32) };
    if !WARNED_LAYOUT.swap(true, Ordering::Relaxed) {
        warn(
            "RAJA passed a PluginContext kprof cannot read (RAJA built with another C++ \
             standard library ABI than libstdc++'s _GLIBCXX_USE_CXX11_ABI=1?); such kernels \
             are named \"RAJA kernel (<platform>)\" and counted in internal_errors. See docs/raja.md.",
        );
    }
}

/// Whether a `KPROF_RAJA_CAPTURE` value turns capture times on.
pub fn capture_enabled(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

thread_local! {
    /// The start of this thread's current capture, then (after postCapture) its
    /// duration, waiting for the launch (only with KPROF_RAJA_CAPTURE=1).
    static CAPTURED: Cell<Captured> = const { Cell::new(Captured::None) };
}

#[derive(Clone, Copy)]
enum Captured {
    None,
    Since(u64),
    Took(u64),
}

unsafe extern "C" fn hook_capture(phase: c_uint) {
    guard((), || {
        // The first capture connects (and learns whether captures are timed).
        if api_or_connect().is_none() || !CAPTURE.load(Ordering::Relaxed) {
            return;
        }
        let Some(clock) = CLOCK.get() else { return };
        let now = clock.raw();
        CAPTURED.with(|c| {
            c.set(match (phase, c.get()) {
                (0, _) => Captured::Since(now),
                (_, Captured::Since(t)) => Captured::Took(clock.delta_as_nanos(t, now)),
                _ => Captured::None,
            })
        });
    })
}

/// The kind every launch is recorded as.
const LAUNCH: u8 = Kind::RajaLaunch as u8;

/// `preLaunch` of a named kernel. The fast path (connected, capture times off, a
/// platform with its device registered, a plausible name already in the name
/// table: every launch of a kernel after its first) is one begin on the core's
/// path for unchanging names; anything else takes [`launch`]. Names of up to 15
/// bytes are looked up here; longer ones, which take loops over their text, in
/// [`hook_launch_long`], so that this path keeps every value in a scratch
/// register (no frame).
unsafe extern "C" fn hook_launch(platform: i32, name: *const c_char, len: usize) {
    // 1 to 15 bytes (0 goes the long way, to `launch`).
    if len.wrapping_sub(1) < names::EXACT {
        // SAFETY: the function's contract.
        guard((), || unsafe { launch_named(platform, name, len) })
    } else {
        // SAFETY: the function's contract.
        unsafe { hook_launch_long(platform, name, len) }
    }
}

/// [`hook_launch`] for names over 15 bytes (and size 0, which is no name).
#[inline(never)]
unsafe extern "C" fn hook_launch_long(platform: i32, name: *const c_char, len: usize) {
    guard((), || {
        if len > names::EXACT {
            // SAFETY: the function's contract.
            unsafe { launch_named(platform, name, len) }
        } else {
            // SAFETY: the function's contract.
            unsafe { launch(platform, name, len, 0) }
        }
    })
}

/// [`hook_launch`]'s body.
///
/// # Safety
/// `name`/`len` are a `std::string`'s `data()`/`size()` as the shim read them
/// (or garbage, which is bounded before reading one byte).
#[inline(always)]
unsafe fn launch_named(platform: i32, name: *const c_char, len: usize) {
    // SAFETY: name[len] is read only when name is not NULL and len is at
    // most MAX_CACHED (below MAX_NAME), as check_name does; the name is
    // looked up only with its NUL at name[len] (names::cached reads within
    // name[0..=len]).
    if !name.is_null() && len <= names::MAX_CACHED && unsafe { *name.add(len) } == 0 {
        // SAFETY: as above.
        if let Some(copy) = unsafe { names::cached(name, len) } {
            // (Read after the lookup, which then needs fewer registers.)
            let dev = platform::known_device(platform);
            // SAFETY: FAST holds null or a pointer to the core's static table.
            if let Some(api) = unsafe { FAST.load(Ordering::Acquire).as_ref() } {
                if dev != 0 {
                    // SAFETY: an unchanging NUL-terminated copy; integers.
                    unsafe { (api.begin_static)(LAUNCH, copy, dev, 0) };
                    return;
                }
            }
        }
    }
    // SAFETY: name/len come from the context's std::string.
    unsafe { launch(platform, name, len, 0) }
}

/// `preLaunch` of a kernel without a name, launched from `site` (0: unknown).
/// The fast path (connected, capture times off, a registered platform, a site)
/// is one code-address begin; anything else takes [`launch`].
unsafe extern "C" fn hook_launch_at(platform: i32, site: usize) {
    guard((), || {
        // SAFETY: FAST holds null or a pointer to the core's static table.
        if let Some(api) = unsafe { FAST.load(Ordering::Acquire).as_ref() } {
            let dev = platform::known_device(platform);
            if dev != 0 && site != 0 {
                // SAFETY: integers.
                unsafe { (api.begin_at)(LAUNCH, site as u64, dev, 0) };
                return;
            }
        }
        // SAFETY: an empty name is never read.
        unsafe { launch(platform, std::ptr::null(), 0, site) }
    })
}

/// Any launch, the whole way: connects on the first callback, registers the
/// platform's device, checks the context, copies a name on its first launch,
/// attaches the capture time. `extern "C"` (it cannot unwind: its own guard)
/// so that the fast paths end in a jump here, keeping no frame of their own.
///
/// # Safety
/// `name`/`len` are a `std::string`'s `data()`/`size()` as the shim read them
/// (or garbage, which [`check_name`] bounds before reading one byte).
#[cold]
#[inline(never)]
unsafe extern "C" fn launch(platform: i32, name: *const c_char, len: usize, site: usize) {
    guard((), || {
        // SAFETY: the function's contract.
        unsafe { launch_unguarded(platform, name, len, site) }
    })
}

/// [`launch`]'s body.
///
/// # Safety
/// As [`launch`].
unsafe fn launch_unguarded(platform: i32, name: *const c_char, len: usize, site: usize) {
    let Some(api) = api_or_connect() else { return };
    let plat = Platform::from_raw(platform);
    let dev = platform::device(api, plat);
    let checked = if plat == Platform::Unknown {
        Name::Implausible
    } else {
        // SAFETY: the function's contract.
        unsafe { check_name(name, len) }
    };
    // SAFETY: names are NUL-terminated (checked, or static, or unchanging
    // copies); the rest integers.
    unsafe {
        match checked {
            // SAFETY (unchanging): check_name found the NUL at name[len].
            Name::Given => match names::unchanging(name, len) {
                Some(copy) => (api.begin_static)(LAUNCH, copy, dev, 0),
                None => (api.begin)(LAUNCH, name, dev, 0),
            },
            Name::Empty if site != 0 => (api.begin_at)(LAUNCH, site as u64, dev, 0),
            Name::Empty => (api.begin_static)(LAUNCH, plat.fallback_name().as_ptr(), dev, 0),
            Name::Implausible => {
                layout_mismatch(api);
                (api.begin_static)(LAUNCH, plat.fallback_name().as_ptr(), dev, 0)
            }
        }
    };
    if CAPTURE.load(Ordering::Relaxed) {
        if let Captured::Took(ns) = CAPTURED.with(|c| c.replace(Captured::None)) {
            // SAFETY: a static key; attaches to the launch just opened.
            unsafe { (api.arg)(c"capture_ns".as_ptr(), ns) };
        }
    }
}

unsafe extern "C" fn hook_launch_end() {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: plain integers; 0 closes this thread's innermost open
            // launch (RAJA's pre/post calls nest per thread).
            unsafe { (api.end)(LAUNCH, 0) };
        }
    })
}

unsafe extern "C" fn hook_duplicate() {
    guard((), || {
        if DUPLICATE.swap(true, Ordering::Relaxed) {
            return;
        }
        warn(
            "RAJA loaded the RAJA plugin more than once (RAJA_PLUGINS and \
             RAJA::util::init_plugins(path) name the same library?); one plugin object \
             records every kernel once, the others are ignored",
        );
        if let Some(api) = api_or_connect() {
            // SAFETY: NUL-terminated literals.
            unsafe {
                (api.metadata)(
                    c"RAJA duplicate plugin objects".as_ptr(),
                    c"ignored (RAJA loaded libkprof_raja.so more than once; one object records)"
                        .as_ptr(),
                )
            };
        }
    })
}

unsafe extern "C" fn hook_init(opts: *const c_char, len: usize) {
    guard((), || {
        let Some(api) = connect() else { return };
        // SAFETY: as for a kernel name.
        if unsafe { check_name(opts, len) } == Name::Given {
            // SAFETY: NUL-terminated strings.
            unsafe { (api.metadata)(c"RAJA plugin options".as_ptr(), opts) };
        }
    })
}

unsafe extern "C" fn hook_finalize() {
    guard((), || {
        if FINALIZED.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(api) = api() {
            // SAFETY: takes no arguments; the core writes when the last attached
            // plugin finalizes.
            unsafe { (api.finalize)() };
        }
    })
}

fn new_plugin() -> *mut c_void {
    // SAFETY: HOOKS is a static table that outlives every plugin object.
    guard(std::ptr::null_mut(), || unsafe {
        kprof_raja_shim_new(&HOOKS)
    })
}

/// RAJA's runtime plugin entry point: a new plugin object (RAJA owns and deletes
/// it). Does not start kprof: that happens on the object's first callback.
#[no_mangle]
#[allow(non_snake_case)]
pub extern "C" fn RAJAGetPlugin() -> *mut c_void {
    new_plugin()
}

/// The deprecated name of [`RAJAGetPlugin`], looked up by older RAJA.
#[no_mangle]
#[allow(non_snake_case)]
pub extern "C" fn getPlugin() -> *mut c_void {
    new_plugin()
}

/// The name used for kernels without `RAJA::Name` and without a known launch site.
pub fn fallback_name(platform_raw: i32) -> &'static CStr {
    Platform::from_raw(platform_raw).fallback_name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        let ok = c"axpy";
        // SAFETY: literals with their NUL.
        unsafe {
            assert_eq!(check_name(ok.as_ptr(), 4), Name::Given);
            assert_eq!(check_name(ok.as_ptr(), 0), Name::Empty);
            assert_eq!(check_name(std::ptr::null(), 0), Name::Empty);
            assert_eq!(check_name(std::ptr::null(), 3), Name::Implausible);
            assert_eq!(check_name(ok.as_ptr(), 2), Name::Implausible);
            assert_eq!(check_name(ok.as_ptr(), MAX_NAME + 1), Name::Implausible);
        }
        assert_eq!(fallback_name(1), c"RAJA kernel (host)");
        assert_eq!(fallback_name(3), c"RAJA kernel (unknown platform)");
        for on in ["1", "true", "YES", " on "] {
            assert!(capture_enabled(on), "{on}");
        }
        for off in ["0", "", "no", "2"] {
            assert!(!capture_enabled(off), "{off}");
        }
    }
}
