//! CUPTI's callback API: each CUDA runtime and driver call becomes a host slice
//! (`gpu_api`) on the calling thread, and its correlation id is mapped to the
//! thread's innermost open instance and that slice.
//!
//! A runtime call (`cudaLaunchKernel`) makes driver calls (`cuLaunchKernel`)
//! inside it: those open no slice of their own but map their correlation id to the
//! runtime call's launch too, so an activity finds its launch whichever of the two
//! ids CUPTI gives it. A driver call made outside any runtime call (a program on
//! the driver API) is a slice of its own. Of the driver calls only those that
//! start, move or wait for device work or allocate memory are traced (see
//! `plugin::enable`). No lock, no allocation: a thread-local
//! cell, the correlation ring, and CUPTI's per-call `correlationData` slot, which
//! carries the slice's GUID from the call's entry to its exit.

use std::cell::Cell;
use std::ffi::c_void;

use kprof_abi::guard::guard;
use kprof_abi::{Kind, Site};

use crate::state::{self, RING};
use crate::sys::cuda12::{
    CUpti_CallbackData, CUpti_CallbackDomain, CUpti_CallbackId, CUPTI_API_ENTER, CUPTI_API_EXIT,
    CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_RUNTIME_API,
};
use kprof_gpu::correlation::Launch;

const NO_LAUNCH: Launch = Launch {
    site: Site { guid: 0, node: 0 },
    api: 0,
};

thread_local! {
    /// Runtime calls open on this thread (depth) and the innermost one's launch.
    static RUNTIME: Cell<(u32, Launch)> = const { Cell::new((0, NO_LAUNCH)) };
}

/// The callback subscribed to the runtime and driver API domains.
///
/// # Safety
/// Called by CUPTI with `cbdata` pointing to a `CUpti_CallbackData` for these
/// domains.
pub unsafe extern "C" fn on_api(
    _userdata: *mut c_void,
    domain: CUpti_CallbackDomain,
    _cbid: CUpti_CallbackId,
    cbdata: *const c_void,
) {
    guard((), || {
        let Some(st) = state::measuring() else {
            return;
        };
        // SAFETY: for the API domains CUPTI passes a CUpti_CallbackData that lives
        // for the duration of the callback.
        let Some(d) = (unsafe { cbdata.cast::<CUpti_CallbackData>().as_ref() }) else {
            return;
        };
        let api = st.api;
        let runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
        if !runtime && domain != CUPTI_CB_DOMAIN_DRIVER_API {
            return;
        }
        let slot = d.correlationData;
        if st.debug {
            debug_call(runtime, d);
        }
        match d.callbackSite {
            CUPTI_API_ENTER => {
                let (depth, open) = RUNTIME.try_with(Cell::get).unwrap_or((0, NO_LAUNCH));
                if !runtime && depth > 0 {
                    // Inside a runtime call: its launch, no slice.
                    RING.insert(d.correlationId, open);
                    set_slot(slot, 0);
                    return;
                }
                // SAFETY: core table functions, callable from any thread.
                let site = unsafe { (api.site)() };
                let name = if d.functionName.is_null() {
                    c"CUDA API call".as_ptr()
                } else {
                    d.functionName
                };
                // SAFETY: CUPTI's function names are static strings of the library,
                // never freed nor changed, as begin_static requires.
                let guid = unsafe { (api.begin_static)(Kind::GpuApi as u8, name, 0, 0) };
                let launch = Launch { site, api: guid };
                RING.insert(d.correlationId, launch);
                set_slot(slot, guid);
                if runtime {
                    let _ = RUNTIME.try_with(|c| c.set((depth + 1, launch)));
                }
            }
            CUPTI_API_EXIT => {
                if runtime {
                    let _ = RUNTIME.try_with(|c| {
                        let (depth, open) = c.get();
                        c.set((depth.saturating_sub(1), open));
                    });
                }
                if slot.is_null() {
                    return;
                }
                // SAFETY: CUPTI's per-call slot, written by us at this call's entry.
                let guid = unsafe { *slot };
                if guid != 0 {
                    // SAFETY: core table function; guid is the slice opened at entry.
                    unsafe { (api.end)(Kind::GpuApi as u8, guid) };
                }
            }
            _ => {}
        }
    })
}

/// `KPROF_CUDA_DEBUG`: one line per API call entry and exit.
#[cold]
fn debug_call(runtime: bool, d: &CUpti_CallbackData) {
    let name = if d.functionName.is_null() {
        std::borrow::Cow::Borrowed("?")
    } else {
        // SAFETY: CUPTI's NUL-terminated static function name.
        unsafe { std::ffi::CStr::from_ptr(d.functionName) }.to_string_lossy()
    };
    let depth = RUNTIME.try_with(|c| c.get().0).unwrap_or(0);
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    kprof_gpu::debug_line!(
        "kprof-cuda: {} {} {name} corr={} tid={tid} runtime-depth={depth}",
        if d.callbackSite == CUPTI_API_ENTER {
            "enter"
        } else {
            "exit "
        },
        if runtime { "runtime" } else { "driver " },
        d.correlationId
    );
}

fn set_slot(slot: *mut u64, v: u64) {
    if !slot.is_null() {
        // SAFETY: CUPTI's per-call slot, valid from the call's entry to its exit.
        unsafe { *slot = v };
    }
}
