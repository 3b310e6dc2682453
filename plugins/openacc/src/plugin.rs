//! The plugin's state: registration (exactly once, through `acc_register_library`
//! or the constructor), the core table (loaded at registration, attached at the
//! first event), and the rare events (unknown event types, runtime shutdown).

use std::ffi::{c_int, CString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::Once;

use kprof_abi::CoreApi;

use crate::acc::{self, Callback, Prof, RegFn, ACC_REG};

/// How the callbacks were registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum How {
    /// The runtime called `acc_register_library` (it loaded kprof from `ACC_PROFLIB`).
    Library = 1,
    /// kprof's constructor called the runtime's `acc_prof_register` (kprof linked
    /// into the program or preloaded).
    Constructor = 2,
}

/// Set by the first registration; every later attempt does nothing.
static REGISTERED: AtomicBool = AtomicBool::new(false);
/// How the callbacks were registered (0: not yet).
static HOW: AtomicU8 = AtomicU8::new(0);
/// The core's table, loaded at registration (not attached yet).
static LOADED: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
/// The core's table once attached (first event); null before or when disabled.
static CORE: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
static ATTACH: Once = Once::new();
/// The runtime reported runtime_shutdown and kprof finalized.
static FINALIZED: AtomicBool = AtomicBool::new(false);
/// Unknown event types seen (0..63; 64: any other).
static UNKNOWN: [AtomicBool; 65] = [const { AtomicBool::new(false) }; 65];

fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}

/// Address of a function of this library that it does not export (an exported
/// name could bind to another library's copy), to find the library's own file.
fn anchor() -> usize {
    register_with as *const () as usize
}

/// How the callbacks were registered, if they were.
pub fn registered_how() -> Option<How> {
    match HOW.load(Ordering::Acquire) {
        1 => Some(How::Library),
        2 => Some(How::Constructor),
        _ => None,
    }
}

/// Loads the core and registers `on_event` (the crate's `callbacks::on_event`,
/// which calls back into this module) for events 1..=25 through `reg`, unless a
/// registration already happened. Never called from inside a callback (the
/// runtime's lock is held there). Returns whether it registered.
pub fn register_with(reg: RegFn, how: How, on_event: Callback) -> bool {
    if REGISTERED.swap(true, Ordering::AcqRel) {
        return false;
    }
    let api = match kprof_abi::loader::load_core(anchor()) {
        Ok(api) => api,
        Err(e) => {
            warn(&format!("{e}; OpenACC runs without kprof"));
            return false;
        }
    };
    // SAFETY: a NUL-terminated literal.
    if unsafe { (api.option_flag)(c"enable".as_ptr()) } == 0 {
        // KPROF_ENABLE=0: no callbacks at all, no cost.
        return false;
    }
    LOADED.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
    HOW.store(how as u8, Ordering::Release);
    for e in acc::event::DEVICE_INIT_START..acc::event::LAST {
        // SAFETY: `reg` is the runtime's registration function; the callback has the
        // signature every OpenACC event uses.
        unsafe { reg(e as c_int, Some(on_event), ACC_REG) };
    }
    true
}

/// The core table for an event: attaches the plugin at the first event (so a
/// program that loads kprof but never runs OpenACC gets no output directory).
#[inline(always)]
pub fn api_for(prof: &Prof) -> Option<&'static CoreApi> {
    // SAFETY: CORE holds null or a pointer to the core's static table.
    match unsafe { CORE.load(Ordering::Acquire).as_ref() } {
        Some(api) => Some(api),
        None => attach(prof),
    }
}

#[cold]
#[inline(never)]
fn attach(prof: &Prof) -> Option<&'static CoreApi> {
    ATTACH.call_once(|| {
        // SAFETY: LOADED holds null or the core's static table.
        let Some(api) = (unsafe { LOADED.load(Ordering::Acquire).as_ref() }) else {
            return;
        };
        // SAFETY: a NUL-terminated literal.
        if !unsafe { (api.attach)(c"openacc".as_ptr()) } {
            return;
        }
        let how = match registered_how() {
            Some(How::Library) => "acc_register_library (ACC_PROFLIB)",
            _ => "acc_prof_register (linked or preloaded)",
        };
        metadata(api, "OpenACC registration", how);
        if prof.version != 0 {
            metadata(api, "OpenACC version", &prof.version.to_string());
        }
        CORE.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
    });
    // SAFETY: as above.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

fn metadata(api: &CoreApi, key: &str, value: &str) {
    let (Ok(k), Ok(v)) = (CString::new(key), CString::new(value)) else {
        return;
    };
    // SAFETY: NUL-terminated strings living across the call.
    unsafe { (api.metadata)(k.as_ptr(), v.as_ptr()) };
}

/// An event type kprof does not know (a newer runtime, or garbage): ignored, and
/// reported once per type in the metadata (`OpenACC unknown event <n>`).
#[cold]
pub fn unknown_event(api: &CoreApi, ty: i32) {
    // SAFETY: a plain integer.
    unsafe { (api.anomaly)(kprof_abi::Anomaly::UnknownEvent as u32) };
    let slot = usize::try_from(ty).ok().filter(|&i| i < 64).unwrap_or(64);
    if !UNKNOWN[slot].swap(true, Ordering::Relaxed) {
        let key = if slot == 64 {
            "OpenACC unknown event (other)".to_string()
        } else {
            format!("OpenACC unknown event {ty}")
        };
        metadata(api, &key, "ignored");
    }
}

/// runtime_shutdown: the runtime is done; this plugin finalizes (once).
#[cold]
pub fn runtime_shutdown(api: &CoreApi) {
    if !FINALIZED.swap(true, Ordering::AcqRel) {
        // SAFETY: takes no arguments.
        unsafe { (api.finalize)() };
    }
}

/// Whether `ACC_PROFLIB` names this library (then the runtime calls
/// `acc_register_library` and the constructor must not register).
pub fn named_in_proflib() -> bool {
    let Some(list) = std::env::var_os("ACC_PROFLIB") else {
        return false;
    };
    let Some(me) = kprof_abi::loader::library_path(anchor()) else {
        return false;
    };
    let list = list.to_string_lossy().into_owned();
    list.split(';').any(|entry| names_file(entry.trim(), &me))
}

/// Whether the `dlopen` argument `entry` refers to the file `me`.
fn names_file(entry: &str, me: &Path) -> bool {
    if entry.is_empty() {
        return false;
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p));
    if entry.contains('/') {
        Path::new(entry) == me || canon(Path::new(entry)) == canon(me)
    } else {
        me.file_name().is_some_and(|n| n == entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proflib_entries() {
        let me = Path::new("/opt/kprof/lib/libkprof_acc.so");
        assert!(names_file("libkprof_acc.so", me));
        assert!(names_file("/opt/kprof/lib/libkprof_acc.so", me));
        assert!(!names_file("/opt/other/libkprof_acc.so.bak", me));
        assert!(!names_file("libother.so", me));
        assert!(!names_file("", me));
    }
}
