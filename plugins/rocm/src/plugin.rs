//! The plugin's state and life: `rocprofiler_configure` (core, SDK functions),
//! the tool's initialize (agents, context, services, buffer, clock), the one
//! line on stderr, and the flushes at the end (the core's, and the SDK's
//! finalize of the tool).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use kprof_abi::guard::guard;
use kprof_abi::CoreApi;
use kprof_gpu::clock::Clock;
use rustc_hash::FxHashMap;

use crate::callbacks;
use crate::records;
use crate::state::{measuring, state, RocmError, State, STATE};
use crate::sys::{
    self, Abi, AgentHead, BufferId, ClientFinalize, ClientId, ClientIdV1, ContextId, Rocprofiler,
    Status, ToolConfigureResult, STATUS_SUCCESS,
};
use kprof_gpu::lifecycle::Lifecycle;

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

/// Address of a function of this library, to find its directory (and the core).
fn anchor() -> usize {
    configure as *const () as usize
}

/// The configure result handed to the SDK (it copies it).
struct Result_(ToolConfigureResult);
// SAFETY: immutable after construction; the pointer in it is NULL.
unsafe impl Sync for Result_ {}

static RESULT: Result_ = Result_(ToolConfigureResult {
    size: std::mem::size_of::<ToolConfigureResult>(),
    initialize: Some(tool_initialize),
    finalize: Some(tool_finalize),
    tool_data: std::ptr::null_mut(),
});

/// `rocprofiler_configure`: loads the core and finds the SDK's functions; NULL
/// (the tool stays out) when kprof is disabled or the SDK is not usable.
///
/// # Safety
/// `runtime_version` is NULL or NUL-terminated; `client_id` is NULL or valid.
pub unsafe fn configure(
    version: u32,
    runtime_version: *const c_char,
    _priority: u32,
    client_id: *mut ClientId,
) -> *mut ToolConfigureResult {
    if STATE.get().is_some() {
        return std::ptr::null_mut();
    }
    let api = match kprof_abi::loader::load_core(anchor()) {
        Ok(api) => api,
        Err(e) => {
            say(&format!("{e}; HIP runs without kprof"));
            return std::ptr::null_mut();
        }
    };
    // SAFETY: NUL-terminated literals.
    if unsafe { (api.option_flag)(c"enable".as_ptr()) } == 0
        // SAFETY: a NUL-terminated literal.
        || !unsafe { (api.attach)(c"rocm".as_ptr()) }
    {
        return std::ptr::null_mut();
    }
    let abi = Abi::of(version);
    let version = if runtime_version.is_null() {
        version.to_string()
    } else {
        // SAFETY: the SDK's NUL-terminated version string.
        unsafe { CStr::from_ptr(runtime_version) }
            .to_string_lossy()
            .into_owned()
    };
    let rp = match Rocprofiler::resolve() {
        Ok(rp) => rp,
        Err(missing) => {
            let e = RocmError::Missing(missing);
            metadata(api, "GPU activity", &format!("off: {e}"));
            say(&format!("GPU activity off: {e}"));
            return std::ptr::null_mut();
        }
    };
    let debug = kprof_tables::settings::rocm::ROCM_DEBUG.flag() == Some(true);
    let _ = STATE.set(State {
        api,
        rp,
        clock: Clock::default(),
        debug,
        kernels: Mutex::new(FxHashMap::default()),
        gpus: OnceLock::new(),
        buffer: AtomicU64::new(0),
        life: Lifecycle::new(),
        version,
        abi,
    });
    if !client_id.is_null() {
        // SAFETY: the SDK's client id, in the layout of its version; the tool
        // may name itself.
        unsafe {
            match abi {
                Abi::V0 => (*client_id).name = c"kprof".as_ptr(),
                Abi::V1 => (*client_id.cast::<ClientIdV1>()).name = c"kprof".as_ptr(),
            }
        }
    }
    std::ptr::addr_of!(RESULT.0).cast_mut()
}

/// The tool's initialize, called by the SDK after every tool is configured:
/// creates the context, services and buffer and starts them. Returns 0 (also
/// when GPU activity is off: the program runs unchanged).
unsafe extern "C" fn tool_initialize(_finalize: ClientFinalize, _data: *mut c_void) -> c_int {
    guard(0, || {
        let Some(st) = state() else {
            return 0;
        };
        let api = st.api;
        match start(st) {
            Ok(()) => say(&format!(
                "GPU activity: rocprofiler-sdk {} active",
                st.version
            )),
            Err(e) => {
                metadata(api, "GPU activity", &format!("off: {e}"));
                say(&format!("GPU activity off: {e}"));
            }
        }
        0
    })
}

/// Buffer size (`KPROF_ROCM_BUFFER_KB`, default 1024 KiB): the SDK delivers the
/// records at 7/8 of it and drops (counted) beyond it, never blocking the program.
fn buffer_bytes() -> usize {
    kprof_tables::settings::rocm::ROCM_BUFFER_KB
        .count()
        .unwrap_or(1024) as usize
        * 1024
}

fn start(st: &'static State) -> Result<(), RocmError> {
    let rp = &st.rp;
    st.recalibrate();
    let _ = st.gpus.set(query_gpus(rp));
    let mut ctx = ContextId::default();
    // SAFETY: SDK calls during the tool's initialize, with valid pointers and this
    // library's callbacks (which live as long as the process).
    unsafe {
        st.check("rocprofiler_create_context", (rp.create_context)(&mut ctx))?;
        st.check(
            "rocprofiler_configure_callback_tracing_service(CODE_OBJECT)",
            (rp.configure_callback_tracing_service)(
                ctx,
                sys::CALLBACK_TRACING_CODE_OBJECT,
                std::ptr::null(),
                0,
                Some(callbacks::on_code_object),
                std::ptr::null_mut(),
            ),
        )?;
        st.check(
            "rocprofiler_configure_callback_tracing_service(HIP_RUNTIME_API)",
            (rp.configure_callback_tracing_service)(
                ctx,
                sys::CALLBACK_TRACING_HIP_RUNTIME_API,
                std::ptr::null(),
                0,
                Some(callbacks::on_hip),
                std::ptr::null_mut(),
            ),
        )?;
        let size = buffer_bytes();
        let mut buffer = BufferId::default();
        st.check(
            "rocprofiler_create_buffer",
            (rp.create_buffer)(
                ctx,
                size,
                size / 8 * 7,
                sys::BUFFER_POLICY_DISCARD,
                Some(records::on_buffer),
                std::ptr::null_mut(),
                &mut buffer,
            ),
        )?;
        st.buffer.store(buffer.handle, Ordering::Relaxed);
        st.check(
            "rocprofiler_configure_buffer_tracing_service(KERNEL_DISPATCH)",
            (rp.configure_buffer_tracing_service)(
                ctx,
                sys::BUFFER_TRACING_KERNEL_DISPATCH,
                std::ptr::null(),
                0,
                buffer,
            ),
        )?;
        st.check(
            "rocprofiler_configure_buffer_tracing_service(MEMORY_COPY)",
            (rp.configure_buffer_tracing_service)(
                ctx,
                sys::BUFFER_TRACING_MEMORY_COPY,
                std::ptr::null(),
                0,
                buffer,
            ),
        )?;
        // Memory allocation records came with SDK 0.6: best effort.
        let rc = (rp.configure_buffer_tracing_service)(
            ctx,
            st.abi.buffer_tracing_memory_allocation(),
            std::ptr::null(),
            0,
            buffer,
        );
        if rc != STATUS_SUCCESS {
            metadata(
                st.api,
                "rocprofiler-sdk memory allocations",
                &format!("off: {}", rp.status_text(rc)),
            );
        }
        // Active before the start: the first call after it is measured.
        st.life.set_active(true);
        if let Err(e) = st.check("rocprofiler_start_context", (rp.start_context)(ctx)) {
            st.life.set_active(false);
            return Err(e);
        }
        (st.api.on_flush)(flush);
        (st.api.gpu_activity)(1);
    }
    metadata(st.api, "rocprofiler-sdk version", &st.version);
    let gpus = st.gpus.get().map_or(0, Vec::len);
    metadata(st.api, "rocprofiler-sdk GPU agents", &gpus.to_string());
    if st.debug {
        kprof_gpu::debug_line!(
            "kprof-rocm: rocprofiler-sdk {}, {gpus} GPU agents, clock offset {} ns, buffer {} KiB",
            st.version,
            st.clock.offset_ns(),
            buffer_bytes() / 1024
        );
    }
    Ok(())
}

/// The GPU agents in the SDK's order, numbered as HIP numbers its devices
/// (without `HIP_VISIBLE_DEVICES`): 0, 1, ...
fn query_gpus(rp: &Rocprofiler) -> Vec<(u64, u32)> {
    unsafe extern "C" fn each(
        version: u32,
        agents: *mut *const c_void,
        n: usize,
        data: *mut c_void,
    ) -> Status {
        guard(STATUS_SUCCESS, || {
            if version != sys::AGENT_INFO_VERSION_0 || agents.is_null() || data.is_null() {
                return STATUS_SUCCESS;
            }
            // SAFETY: `data` is the vector `query_gpus` passed.
            let out = unsafe { &mut *data.cast::<Vec<(u64, u32)>>() };
            for i in 0..n {
                // SAFETY: the SDK's array of `n` agent pointers.
                let a = unsafe { *agents.add(i) }.cast::<AgentHead>();
                if a.is_null() {
                    continue;
                }
                // SAFETY: every agent struct starts with this head.
                let a = unsafe { *a };
                if a.agent_type == sys::AGENT_TYPE_GPU {
                    let n = out.len() as u32;
                    out.push((a.id.handle, n));
                }
            }
            STATUS_SUCCESS
        })
    }
    let mut v: Vec<(u64, u32)> = Vec::new();
    // SAFETY: an SDK query calling `each` synchronously with `v`.
    unsafe {
        (rp.query_available_agents)(
            sys::AGENT_INFO_VERSION_0,
            Some(each),
            std::mem::size_of::<AgentHead>(),
            (&mut v as *mut Vec<(u64, u32)>).cast(),
        )
    };
    v
}

/// Has the SDK deliver every record it holds.
fn flush_buffer(st: &State) {
    let b = st.buffer.load(Ordering::Relaxed);
    if b == 0 {
        return;
    }
    st.recalibrate();
    // SAFETY: an SDK call; the records come back through `records::on_buffer`
    // before it returns.
    unsafe { (st.rp.flush_buffer)(BufferId { handle: b }) };
}

/// The SDK's finalize of the tool (at its exit handler, or when the tool asked):
/// every record still buffered goes to the core.
unsafe extern "C" fn tool_finalize(_data: *mut c_void) {
    guard((), || {
        if let Some(st) = measuring() {
            flush_buffer(st);
        }
    })
}

/// The core's flush at the end of the run: the SDK delivers every record it
/// still holds, then the totals go into the profile's metadata.
pub extern "C" fn flush() {
    guard((), || {
        let Some(st) = measuring() else {
            return;
        };
        flush_buffer(st);
        st.life.finish();
        let t = records::translator();
        let (n, ns) = t.walked;
        if n > 0 {
            metadata(
                st.api,
                "rocprofiler-sdk records translated",
                &format!("{n} records, {:.0} ns CPU each", ns as f64 / n as f64),
            );
        }
        if st.debug {
            kprof_gpu::debug_line!(
                "kprof-rocm: flushed: {:?}, clock offset {} ns",
                t.counts,
                st.clock.offset_ns()
            );
        }
    })
}
