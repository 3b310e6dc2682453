//! The plugin's state and its life: starting at `InitializeInjection` (core,
//! CUPTI, layout, callbacks, activities, clock), the one line on stderr, and the
//! final flush when the run ends.

use std::ffi::CString;
use std::path::Path;
use std::sync::Once;

use kprof_abi::guard::guard;
use kprof_abi::CoreApi;

use crate::activity;
use crate::callbacks;
use crate::cupti::{self, check, CuptiError};
use crate::layout::Layout;
use crate::pool;
use crate::state::{measuring, State};
use crate::sys::cuda12::{self as c, CUpti_SubscriberHandle, Cupti};
use crate::sys::driver_cbids::TRACED_DRIVER_CALLS;

fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {line}");
}

fn metadata(api: &CoreApi, key: &str, value: &str) {
    let (Ok(k), Ok(v)) = (CString::new(key), CString::new(value)) else {
        return;
    };
    // SAFETY: NUL-terminated strings living across the call.
    unsafe { (api.metadata)(k.as_ptr(), v.as_ptr()) };
}

/// Address of a function of this library, to find its directory (and the core
/// next to it).
fn anchor() -> usize {
    initialize as *const () as usize
}

/// The activity kinds enabled; kernels are required, the others are best effort.
const KINDS: [(c::CUpti_ActivityKind, &str); 7] = [
    (
        c::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        "CONCURRENT_KERNEL",
    ),
    (c::CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"),
    (c::CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2"),
    (c::CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"),
    (c::CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2"),
    (c::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"),
    (c::CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD"),
];

/// Starts the plugin (once): loads and attaches the core, then CUPTI; says on
/// stderr, in one line, whether GPU activity is measured. The program runs
/// unchanged either way.
pub fn initialize() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let api = match kprof_abi::loader::load_core(anchor()) {
            Ok(api) => api,
            Err(e) => {
                say(&format!("{e}; CUDA runs without kprof"));
                return;
            }
        };
        // SAFETY: NUL-terminated literals.
        if unsafe { (api.option_flag)(c"enable".as_ptr()) } == 0
            // SAFETY: a NUL-terminated literal.
            || !unsafe { (api.attach)(c"cuda".as_ptr()) }
        {
            return;
        }
        match start(api) {
            Ok(st) => {
                let v = st.layout.version;
                say(&format!(
                    "GPU activity: CUPTI {v} (CUDA {}) active",
                    Layout::cuda_release(v)
                ));
            }
            Err(e) => {
                let reason = if driver_loaded() || !matches!(e, CuptiError::Call { .. }) {
                    e.to_string()
                } else {
                    format!("no CUDA driver in the process (libcuda.so.1; CUPTI says {e})")
                };
                metadata(api, "GPU activity", &format!("off: {reason}"));
                say(&format!("GPU activity off: {reason}"));
            }
        }
    });
}

fn start(api: &'static CoreApi) -> Result<&'static State, CuptiError> {
    let (cupti, path) = cupti::load()?;
    let mut version = 0u32;
    // SAFETY: a CUPTI function with a valid out pointer.
    check(&cupti, "cuptiGetVersion", unsafe {
        (cupti.cuptiGetVersion)(&mut version)
    })?;
    let layout = Layout::for_version(version)?;
    let debug = kprof_tables::settings::cuda::CUDA_DEBUG.flag() == Some(true);
    let st = State::set(api, cupti, layout, pool::from_env(), debug);
    st.recalibrate();
    let cu = &st.cupti;
    // SAFETY: registering this library's buffer callbacks, which have CUPTI's
    // signatures and live as long as the process.
    check(cu, "cuptiActivityRegisterCallbacks", unsafe {
        (cu.cuptiActivityRegisterCallbacks)(
            Some(activity::buffer_requested),
            Some(activity::buffer_completed),
        )
    })?;
    let mut enabled = Vec::new();
    let mut skipped = Vec::new();
    if let Err(e) = enable(cu, &mut enabled, &mut skipped) {
        // Leave CUPTI as if it had never been used: the program runs unchanged.
        for k in &enabled {
            // SAFETY: a CUPTI function taking a plain enum value.
            unsafe { (cu.cuptiActivityDisable)(*k) };
        }
        // SAFETY: not inside a CUPTI callback; detaches CUPTI from the process.
        unsafe { (cu.cuptiFinalize)() };
        return Err(e);
    }
    st.life.set_active(true);
    // SAFETY: core table functions; `flush` lives as long as the process.
    unsafe {
        (api.on_flush)(flush);
        (api.gpu_activity)(1);
    }
    metadata(
        api,
        "CUPTI version",
        &format!("{version} (CUDA {})", Layout::cuda_release(version)),
    );
    let file = kprof_abi::loader::library_path(st.cupti.cuptiGetVersion as usize)
        .unwrap_or_else(|| path.clone());
    metadata(api, "CUPTI library", &lib_path(&file));
    let l = st.layout;
    metadata(
        api,
        "CUPTI record layout",
        &format!(
            "{:?} {:?} {:?} {:?} {:?} {:?}{}",
            l.kernel,
            l.memcpy,
            l.memset,
            l.memory,
            l.sync,
            l.overhead,
            if l.newer_than_known {
                " (newer CUPTI than kprof knows: the newest known records are read)"
            } else {
                ""
            }
        ),
    );
    if !skipped.is_empty() {
        metadata(api, "CUPTI activities off", &skipped.join("; "));
    }
    if st.debug {
        kprof_gpu::debug_line!(
            "kprof-cuda: CUPTI {version} from {}, layout {l:?}, clock offset {} ns, buffers {} x {} KiB",
            lib_path(&file),
            st.clock.offset_ns(),
            st.pool.capacity(),
            st.pool.buffer_size() / 1024
        );
    }
    Ok(st)
}

/// Whether the CUDA driver library is in the process (it always is when the driver
/// called `InitializeInjection`).
fn driver_loaded() -> bool {
    // SAFETY: RTLD_NOLOAD loads nothing and runs no initializer; the handle only
    // adds a reference, dropped at once.
    unsafe {
        let h = libc::dlopen(
            c"libcuda.so.1".as_ptr(),
            libc::RTLD_LAZY | libc::RTLD_NOLOAD,
        );
        if h.is_null() {
            return false;
        }
        libc::dlclose(h);
        true
    }
}

/// Enables the activity kinds (kernels required, the others noted in `skipped`
/// when refused) and subscribes [`callbacks::on_api`] to the runtime API domain
/// and to the driver calls of [`TRACED_DRIVER_CALLS`] (the whole driver domain if
/// CUPTI refuses every one of them). The kinds enabled are pushed to `enabled`, also on an error.
fn enable(
    cu: &Cupti,
    enabled: &mut Vec<c::CUpti_ActivityKind>,
    skipped: &mut Vec<String>,
) -> Result<(), CuptiError> {
    for (i, (kind, name)) in KINDS.iter().enumerate() {
        // SAFETY: a CUPTI function taking a plain enum value.
        let rc = unsafe { (cu.cuptiActivityEnable)(*kind) };
        match check(cu, "cuptiActivityEnable", rc) {
            Ok(()) => enabled.push(*kind),
            Err(e) if i == 0 => return Err(e),
            Err(e) => skipped.push(format!("{name}: {e}")),
        }
    }
    let mut subscriber: CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: subscribing this library's callback, which has CUPTI's signature and
    // lives as long as the process.
    let rc = unsafe {
        (cu.cuptiSubscribe)(
            &mut subscriber,
            Some(callbacks::on_api),
            std::ptr::null_mut(),
        )
    };
    check(cu, "cuptiSubscribe", rc)?;
    let unsubscribe = |e: CuptiError| {
        // SAFETY: the subscriber CUPTI just gave.
        unsafe { (cu.cuptiUnsubscribe)(subscriber) };
        e
    };
    // SAFETY: the subscriber CUPTI just gave.
    let rc = unsafe { (cu.cuptiEnableDomain)(1, subscriber, c::CUPTI_CB_DOMAIN_RUNTIME_API) };
    check(cu, "cuptiEnableDomain(RUNTIME_API)", rc).map_err(unsubscribe)?;
    // Driver calls: only those that start, move or wait for device work or allocate
    // memory. The others (cuDeviceGetAttribute, cuKernelGetName, which the runtime
    // calls around every launch outside its API call) would cost a callback each
    // and show the runtime's internals.
    let mut traced = 0;
    for &(cbid, _) in TRACED_DRIVER_CALLS {
        // SAFETY: the subscriber CUPTI just gave; an id this CUPTI does not know is
        // refused with an error, and skipped.
        let rc =
            unsafe { (cu.cuptiEnableCallback)(1, subscriber, c::CUPTI_CB_DOMAIN_DRIVER_API, cbid) };
        traced += usize::from(rc == c::CUPTI_SUCCESS);
    }
    if traced == 0 {
        // SAFETY: as above.
        let rc = unsafe { (cu.cuptiEnableDomain)(1, subscriber, c::CUPTI_CB_DOMAIN_DRIVER_API) };
        check(cu, "cuptiEnableDomain(DRIVER_API)", rc).map_err(unsubscribe)?;
    }
    Ok(())
}

/// The file a library name resolved to (the loader's answer for a bare name).
fn lib_path(p: &Path) -> String {
    p.display().to_string()
}

/// The core's flush at the end of the run: CUPTI delivers every record it still
/// holds (forced flush), then the totals go into the profile's metadata.
pub extern "C" fn flush() {
    guard((), || {
        let Some(st) = measuring() else {
            return;
        };
        st.recalibrate();
        // SAFETY: a CUPTI function; completed buffers come back through
        // buffer_completed before it returns.
        unsafe { (st.cupti.cuptiActivityFlushAll)(c::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) };
        // SAFETY: NULL asks for CUPTI's global queue.
        unsafe { activity::report_dropped(st, std::ptr::null_mut(), 0) };
        st.life.finish();
        let t = activity::translator();
        let api = st.api;
        let (n, ns) = t.tool_overhead;
        if n > 0 {
            // SAFETY: a function of the core's table.
            unsafe { (api.device_cost)(ns) };
        }
        let (n, ns) = t.driver_overhead;
        if n > 0 {
            metadata(
                api,
                "CUDA driver overhead",
                &format!("{ns} ns in {n} records"),
            );
        }
        let (n, ns) = t.walked;
        if n > 0 {
            metadata(
                api,
                "CUPTI records translated",
                &format!("{n} records, {:.0} ns CPU each", ns as f64 / n as f64),
            );
        }
        metadata(
            api,
            "CUPTI buffers",
            &format!(
                "{} of at most {} x {} KiB, {} requests refused",
                st.pool.allocated(),
                st.pool.capacity(),
                st.pool.buffer_size() / 1024,
                st.pool.refused()
            ),
        );
        if st.debug {
            kprof_gpu::debug_line!(
                "kprof-cuda: flushed: {:?}, clock offset {} ns, pool {}/{} refused {}",
                t.counts,
                st.clock.offset_ns(),
                st.pool.allocated(),
                st.pool.capacity(),
                st.pool.refused()
            );
        }
    })
}
