//! `libkprof_ompt.so`: kprof's OpenMP plugin, an OMPT first-party tool.
//!
//! Loaded by an OpenMP runtime (LLVM libomp) from `OMP_TOOL_LIBRARIES`: the runtime
//! calls [`ompt_start_tool`], then our `initialize` with a lookup function from
//! which every OMPT entry point is fetched — the plugin never links libomp or
//! libgomp. `initialize` loads the one core runtime of the process
//! (`libkprof_core.so`, shared with the other kprof plugins), registers the
//! callbacks (module `callbacks`) and records what the runtime promised for each
//! (`ompt_set_callback`'s result decides features, not the version string).
//!
//! Each callback is a thin translation into the core's C table: parallel regions,
//! implicit tasks, worksharing constructs, synchronization regions, mutexes, explicit
//! tasks and target regions become nested instances whose GUIDs are kept in the
//! runtime's `ompt_data_t` words. No callback allocates (except one small block per
//! explicit task), locks or makes a system call, and none lets a panic reach the
//! runtime.

mod callbacks;
mod core_table;
pub mod device;
pub mod handoff;
pub mod join;
pub mod map;
pub mod ompt;
pub mod task;

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_uint, CStr, CString};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use kprof_abi::guard::guard;
use kprof_abi::CoreApi;

use core_table::api;
use ompt::{event, set, sig, Callback, Data, FunctionLookup, SetCallback, StartToolResult};

/// `ompt_set_callback`'s result per event number (0 = not registered / error).
static SET_RESULTS: [AtomicU8; event::COUNT] = [const { AtomicU8::new(0) }; event::COUNT];
/// What the runtime said about itself in `ompt_start_tool`.
static RUNTIME: OnceLock<(u32, String)> = OnceLock::new();

/// `ompt_set_callback`'s result for event `e` (0 when never registered).
pub fn set_result(e: i32) -> i32 {
    usize::try_from(e)
        .ok()
        .and_then(|i| SET_RESULTS.get(i))
        .map_or(0, |r| i32::from(r.load(Ordering::Relaxed)))
}

fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}

/// The start-tool result handed to the runtime; the runtime may write `tool_data`,
/// so it lives in an `UnsafeCell`.
struct ToolResult(UnsafeCell<StartToolResult>);

// SAFETY: the runtime reads the function pointers and owns `tool_data`; kprof
// itself never touches the cell after handing out its pointer.
unsafe impl Sync for ToolResult {}

static RESULT: ToolResult = ToolResult(UnsafeCell::new(StartToolResult {
    initialize: Some(initialize),
    finalize: Some(finalize),
    tool_data: Data { value: 0 },
}));

/// The OMPT entry point: the runtime calls it once, on whichever thread first
/// enters the runtime, with the OpenMP version it implements (`_OPENMP`) and its
/// own description. Returns the tool's initialize and finalize functions.
///
/// # Safety
/// `runtime_version` is NULL or NUL-terminated (the runtime's contract).
#[no_mangle]
pub unsafe extern "C" fn ompt_start_tool(
    omp_version: c_uint,
    runtime_version: *const c_char,
) -> *mut StartToolResult {
    guard(RESULT.0.get(), || {
        let text = if runtime_version.is_null() {
            String::new()
        } else {
            // SAFETY: non-NULL and NUL-terminated per the runtime's contract.
            unsafe { CStr::from_ptr(runtime_version) }
                .to_string_lossy()
                .into_owned()
        };
        let _ = RUNTIME.set((omp_version, text));
        RESULT.0.get()
    })
}

/// Address of a function of this library, to find the library's own file. Not
/// `ompt_start_tool`: libomp exports a weak one of its own, and a reference to an
/// exported name may bind to libomp's copy (interposition), so the anchor is a
/// function this library does not export.
fn anchor() -> usize {
    initialize as *const () as usize
}

/// `ompt_initialize_t`: loads and attaches the core, registers the callbacks.
/// Returns 1 to keep the tool active, 0 to let the program run without it.
unsafe extern "C" fn initialize(
    lookup: Option<FunctionLookup>,
    _initial_device_num: c_int,
    _tool_data: *mut Data,
) -> c_int {
    guard(0, || {
        let Some(lookup) = lookup else { return 0 };
        let api = match kprof_abi::loader::load_core(anchor()) {
            Ok(api) => api,
            Err(e) => {
                warn(&format!("{e}; OpenMP runs without kprof"));
                return 0;
            }
        };
        // SAFETY: a NUL-terminated literal.
        if !unsafe { (api.attach)(c"openmp".as_ptr()) } {
            // kprof disabled or finalized: no callbacks at all, no cost.
            return 0;
        }
        // SAFETY: lookup is the runtime's function; the name is NUL-terminated.
        let Some(set_fn) = (unsafe { lookup(c"ompt_set_callback".as_ptr()) }) else {
            warn("the OpenMP runtime has no ompt_set_callback; OpenMP runs without kprof");
            return 0;
        };
        // SAFETY: the specification gives ompt_set_callback this signature;
        // function pointers of any signature have the same size.
        let set_fn: SetCallback = unsafe { std::mem::transmute::<_, SetCallback>(set_fn) };
        // Publish the table before registering: callbacks may fire on other threads
        // as soon as they are set.
        core_table::publish(api);
        // SAFETY: a function of this library, which stays loaded.
        unsafe { (api.on_flush)(callbacks::flush_parked) };
        join::forget_at_fork();
        register_all(set_fn);
        describe(api);
        1
    })
}

/// `ompt_finalize_t`: the runtime shuts down; write everything.
unsafe extern "C" fn finalize(_tool_data: *mut Data) {
    guard((), || {
        if let Some(api) = api() {
            // SAFETY: takes no arguments; idempotent.
            unsafe { (api.finalize)() };
        }
    })
}

/// Registers one callback and records the runtime's answer.
fn set_one(set_fn: SetCallback, e: i32, cb: Callback) -> i32 {
    // SAFETY: `cb` has the signature the specification gives event `e` (the table
    // in register_all pairs them); the runtime only stores it.
    let r = unsafe { set_fn(e, Some(cb)) };
    if let Some(slot) = usize::try_from(e).ok().and_then(|i| SET_RESULTS.get(i)) {
        slot.store(r.clamp(0, 255) as u8, Ordering::Relaxed);
    }
    r
}

/// Whether a `ompt_set_callback` result means the callback can fire.
pub fn fires(result: i32) -> bool {
    result >= set::SOMETIMES
}

/// Registers every callback kprof handles.
fn register_all(set_fn: SetCallback) {
    use callbacks as cb;
    // Each function is first bound to its event's signature (checked by the
    // compiler), then erased to `ompt_callback_t` as `ompt_set_callback` takes it.
    macro_rules! erase {
        ($f:path, $t:ident) => {{
            let f: sig::$t = $f;
            // SAFETY: function pointers of every signature have the same size and
            // representation; the runtime calls it back with signature $t.
            unsafe { std::mem::transmute::<sig::$t, Callback>(f) }
        }};
    }
    macro_rules! reg {
        ($($e:ident => $f:path : $t:ident),* $(,)?) => {$(
            set_one(set_fn, event::$e, erase!($f, $t));
        )*};
    }
    reg! {
        THREAD_BEGIN => cb::thread_begin: ThreadBegin,
        THREAD_END => cb::thread_end: ThreadEnd,
        PARALLEL_BEGIN => cb::parallel_begin: ParallelBegin,
        PARALLEL_END => cb::parallel_end: ParallelEnd,
        IMPLICIT_TASK => cb::implicit_task: ImplicitTask,
        WORK => cb::work: Work,
        DISPATCH => cb::dispatch: Dispatch,
        SYNC_REGION => cb::sync_region: SyncRegion,
        SYNC_REGION_WAIT => cb::sync_region_wait: SyncRegion,
        REDUCTION => cb::reduction: SyncRegion,
        MUTEX_ACQUIRE => cb::mutex_acquire: MutexAcquire,
        MUTEX_ACQUIRED => cb::mutex_acquired: Mutex,
        MUTEX_RELEASED => cb::mutex_released: Mutex,
        NEST_LOCK => cb::nest_lock: NestLock,
        LOCK_INIT => cb::lock_init: MutexAcquire,
        LOCK_DESTROY => cb::lock_destroy: Mutex,
        MASKED => cb::masked: Masked,
        TASK_CREATE => cb::task_create: TaskCreate,
        TASK_SCHEDULE => cb::task_schedule: TaskSchedule,
        TASK_DEPENDENCE => cb::task_dependence: TaskDependence,
        FLUSH => cb::flush: Flush,
        CANCEL => cb::cancel: Cancel,
        CONTROL_TOOL => cb::control_tool: ControlTool,
        ERROR => cb::error: Error,
        DEVICE_INITIALIZE => cb::device_initialize: DeviceInitialize,
        DEVICE_FINALIZE => cb::device_finalize: DeviceFinalize,
        DEVICE_LOAD => cb::device_load: DeviceLoad,
        DEVICE_UNLOAD => cb::device_unload: DeviceUnload,
    }
    // When both an EMI callback and its 5.0 form are registered only the EMI one
    // fires: use EMI where the runtime supports it, the 5.0 form otherwise.
    if !fires(set_one(
        set_fn,
        event::TARGET_EMI,
        erase!(cb::target_emi, TargetEmi),
    )) {
        reg! { TARGET => cb::target: Target }
    }
    let data_op_emi = erase!(cb::target_data_op_emi, TargetDataOpEmi);
    if !fires(set_one(set_fn, event::TARGET_DATA_OP_EMI, data_op_emi)) {
        reg! { TARGET_DATA_OP => cb::target_data_op: TargetDataOp }
    }
    let submit_emi = erase!(cb::target_submit_emi, TargetSubmitEmi);
    if !fires(set_one(set_fn, event::TARGET_SUBMIT_EMI, submit_emi)) {
        reg! { TARGET_SUBMIT => cb::target_submit: TargetSubmit }
    }
}

/// A word for a `ompt_set_result_t`.
pub fn result_name(r: i32) -> &'static str {
    match r {
        set::ERROR => "error",
        set::NEVER => "never",
        set::IMPOSSIBLE => "impossible",
        set::SOMETIMES => "sometimes",
        set::SOMETIMES_PAIRED => "sometimes_paired",
        set::ALWAYS => "always",
        _ => "unknown",
    }
}

/// Records the runtime's self-description and what it promised per callback as
/// metadata (once, at initialize).
fn describe(api: &CoreApi) {
    let mut pairs: Vec<(String, String)> = Vec::new();
    if let Some((version, text)) = RUNTIME.get() {
        pairs.push(("OpenMP runtime".into(), text.clone()));
        pairs.push(("OpenMP version".into(), version.to_string()));
    }
    let callbacks: Vec<String> = (1..event::COUNT as i32)
        .filter(|&e| set_result(e) != 0)
        .map(|e| format!("{}={}", event::name(e), result_name(set_result(e))))
        .collect();
    pairs.push(("OMPT callbacks".into(), callbacks.join(",")));
    for (k, v) in pairs {
        let (Ok(k), Ok(v)) = (CString::new(k), CString::new(v)) else {
            continue;
        };
        // SAFETY: NUL-terminated strings living across the call.
        unsafe { (api.metadata)(k.as_ptr(), v.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_names_and_firing() {
        assert_eq!(result_name(5), "always");
        assert_eq!(result_name(1), "never");
        assert_eq!(result_name(77), "unknown");
        assert!(fires(set::ALWAYS) && fires(set::SOMETIMES) && fires(set::SOMETIMES_PAIRED));
        assert!(!fires(set::NEVER) && !fires(set::IMPOSSIBLE) && !fires(set::ERROR));
        assert_eq!(event::name(event::TARGET_SUBMIT_EMI), "target_submit_emi");
        assert_eq!(event::name(event::ERROR), "error");
        assert_eq!(event::name(0), "?");
        assert_eq!(event::name(38), "?");
    }
}
