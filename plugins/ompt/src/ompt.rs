//! The parts of the OMPT interface (OpenMP 5.0-5.2, "Tool Interface") this plugin
//! uses, written from the specification's type definitions. Enumerations are C
//! `enum`s, i.e. `int`-sized; they are taken as plain integers so that values a newer
//! runtime adds are just "unknown", never undefined behaviour.

use std::ffi::{c_char, c_int, c_void};

/// `ompt_data_t`: one 64-bit word the runtime keeps per thread, parallel region,
/// task or target region for the tool. kprof stores GUIDs (or, for explicit tasks, a
/// tagged pointer) in it.
#[repr(C)]
#[derive(Clone, Copy)]
pub union Data {
    /// The word as an integer.
    pub value: u64,
    /// The word as a pointer.
    pub ptr: *mut c_void,
}

/// `ompt_id_t`.
pub type Id = u64;
/// `ompt_wait_id_t`.
pub type WaitId = u64;

/// `ompt_callback_t`: the type-erased callback pointer `ompt_set_callback` takes.
pub type Callback = unsafe extern "C" fn();
/// `ompt_interface_fn_t`: what `lookup` returns.
pub type InterfaceFn = unsafe extern "C" fn();
/// `ompt_function_lookup_t`.
pub type FunctionLookup = unsafe extern "C" fn(name: *const c_char) -> Option<InterfaceFn>;
/// `ompt_set_callback_t`; returns an `ompt_set_result_t`.
pub type SetCallback = unsafe extern "C" fn(event: c_int, callback: Option<Callback>) -> c_int;
/// `ompt_initialize_t`.
pub type Initialize = unsafe extern "C" fn(
    lookup: Option<FunctionLookup>,
    initial_device: c_int,
    tool: *mut Data,
) -> c_int;
/// `ompt_finalize_t`.
pub type Finalize = unsafe extern "C" fn(tool: *mut Data);

/// `ompt_start_tool_result_t`: what `ompt_start_tool` hands the runtime.
#[repr(C)]
pub struct StartToolResult {
    /// Called once when the runtime initializes the tool.
    pub initialize: Option<Initialize>,
    /// Called once when the runtime shuts down.
    pub finalize: Option<Finalize>,
    /// The tool's own word, passed back to both.
    pub tool_data: Data,
}

/// `ompt_set_result_t` values.
pub mod set {
    /// The callback could not be set.
    pub const ERROR: i32 = 0;
    /// The callback will never be invoked.
    pub const NEVER: i32 = 1;
    /// The event cannot occur with this runtime.
    pub const IMPOSSIBLE: i32 = 2;
    /// The callback is invoked for some occurrences of the event.
    pub const SOMETIMES: i32 = 3;
    /// As `SOMETIMES`, with begin and end paired.
    pub const SOMETIMES_PAIRED: i32 = 4;
    /// The callback is invoked for every occurrence.
    pub const ALWAYS: i32 = 5;
}

/// `ompt_callbacks_t`: the event numbers passed to `ompt_set_callback`.
pub mod event {
    #![allow(missing_docs)]
    pub const THREAD_BEGIN: i32 = 1;
    pub const THREAD_END: i32 = 2;
    pub const PARALLEL_BEGIN: i32 = 3;
    pub const PARALLEL_END: i32 = 4;
    pub const TASK_CREATE: i32 = 5;
    pub const TASK_SCHEDULE: i32 = 6;
    pub const IMPLICIT_TASK: i32 = 7;
    pub const TARGET: i32 = 8;
    pub const TARGET_DATA_OP: i32 = 9;
    pub const TARGET_SUBMIT: i32 = 10;
    pub const CONTROL_TOOL: i32 = 11;
    pub const DEVICE_INITIALIZE: i32 = 12;
    pub const DEVICE_FINALIZE: i32 = 13;
    pub const DEVICE_LOAD: i32 = 14;
    pub const DEVICE_UNLOAD: i32 = 15;
    pub const SYNC_REGION_WAIT: i32 = 16;
    pub const MUTEX_RELEASED: i32 = 17;
    pub const DEPENDENCES: i32 = 18;
    pub const TASK_DEPENDENCE: i32 = 19;
    pub const WORK: i32 = 20;
    /// `masked` (5.1); `master` in 5.0, same number and signature.
    pub const MASKED: i32 = 21;
    pub const TARGET_MAP: i32 = 22;
    pub const SYNC_REGION: i32 = 23;
    pub const LOCK_INIT: i32 = 24;
    pub const LOCK_DESTROY: i32 = 25;
    pub const MUTEX_ACQUIRE: i32 = 26;
    pub const MUTEX_ACQUIRED: i32 = 27;
    pub const NEST_LOCK: i32 = 28;
    pub const FLUSH: i32 = 29;
    pub const CANCEL: i32 = 30;
    pub const REDUCTION: i32 = 31;
    pub const DISPATCH: i32 = 32;
    pub const TARGET_EMI: i32 = 33;
    pub const TARGET_DATA_OP_EMI: i32 = 34;
    pub const TARGET_SUBMIT_EMI: i32 = 35;
    pub const TARGET_MAP_EMI: i32 = 36;
    pub const ERROR: i32 = 37;
    /// One past the largest event number this plugin knows.
    pub const COUNT: usize = 38;

    /// The specification's name of event `e` (without the `ompt_callback_` prefix).
    pub fn name(e: i32) -> &'static str {
        const NAMES: [&str; COUNT] = [
            "?",
            "thread_begin",
            "thread_end",
            "parallel_begin",
            "parallel_end",
            "task_create",
            "task_schedule",
            "implicit_task",
            "target",
            "target_data_op",
            "target_submit",
            "control_tool",
            "device_initialize",
            "device_finalize",
            "device_load",
            "device_unload",
            "sync_region_wait",
            "mutex_released",
            "dependences",
            "task_dependence",
            "work",
            "masked",
            "target_map",
            "sync_region",
            "lock_init",
            "lock_destroy",
            "mutex_acquire",
            "mutex_acquired",
            "nest_lock",
            "flush",
            "cancel",
            "reduction",
            "dispatch",
            "target_emi",
            "target_data_op_emi",
            "target_submit_emi",
            "target_map_emi",
            "error",
        ];
        usize::try_from(e)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or("?")
    }
}

/// `ompt_scope_endpoint_t`.
pub mod scope {
    /// The scope begins.
    pub const BEGIN: i32 = 1;
    /// The scope ends.
    pub const END: i32 = 2;
    /// Begin and end in one callback (5.1).
    pub const BEGINEND: i32 = 3;
}

/// `ompt_thread_t`.
pub mod thread {
    #![allow(missing_docs)]
    pub const INITIAL: i32 = 1;
    pub const WORKER: i32 = 2;
    pub const OTHER: i32 = 3;
    pub const UNKNOWN: i32 = 4;
}

/// `ompt_work_t`.
pub mod work {
    #![allow(missing_docs)]
    pub const LOOP: i32 = 1;
    pub const SECTIONS: i32 = 2;
    pub const SINGLE_EXECUTOR: i32 = 3;
    pub const SINGLE_OTHER: i32 = 4;
    pub const WORKSHARE: i32 = 5;
    pub const DISTRIBUTE: i32 = 6;
    pub const TASKLOOP: i32 = 7;
    pub const SCOPE: i32 = 8;
    pub const LOOP_STATIC: i32 = 10;
    pub const LOOP_DYNAMIC: i32 = 11;
    pub const LOOP_GUIDED: i32 = 12;
    pub const LOOP_OTHER: i32 = 13;
}

/// `ompt_sync_region_t`.
pub mod sync {
    #![allow(missing_docs)]
    /// Deprecated in 5.1; still reported by libomp 14 for some barriers.
    pub const BARRIER: i32 = 1;
    /// Deprecated in 5.1; libomp 14's implicit barriers.
    pub const BARRIER_IMPLICIT: i32 = 2;
    pub const BARRIER_EXPLICIT: i32 = 3;
    pub const BARRIER_IMPLEMENTATION: i32 = 4;
    pub const TASKWAIT: i32 = 5;
    pub const TASKGROUP: i32 = 6;
    pub const REDUCTION: i32 = 7;
    pub const BARRIER_IMPLICIT_WORKSHARE: i32 = 8;
    pub const BARRIER_IMPLICIT_PARALLEL: i32 = 9;
    pub const BARRIER_TEAMS: i32 = 10;
}

/// `ompt_mutex_t`.
pub mod mutex {
    #![allow(missing_docs)]
    pub const LOCK: i32 = 1;
    pub const TEST_LOCK: i32 = 2;
    pub const NEST_LOCK: i32 = 3;
    pub const TEST_NEST_LOCK: i32 = 4;
    pub const CRITICAL: i32 = 5;
    pub const ATOMIC: i32 = 6;
    pub const ORDERED: i32 = 7;
}

/// `ompt_task_flag_t` bits.
pub mod task_flag {
    #![allow(missing_docs)]
    pub const INITIAL: i32 = 0x1;
    pub const IMPLICIT: i32 = 0x2;
    pub const EXPLICIT: i32 = 0x4;
    pub const TARGET: i32 = 0x8;
    pub const TASKWAIT: i32 = 0x10;
}

/// `ompt_task_status_t`.
pub mod task_status {
    #![allow(missing_docs)]
    pub const COMPLETE: i32 = 1;
    pub const YIELD: i32 = 2;
    pub const CANCEL: i32 = 3;
    pub const DETACH: i32 = 4;
    pub const EARLY_FULFILL: i32 = 5;
    pub const LATE_FULFILL: i32 = 6;
    pub const SWITCH: i32 = 7;
    pub const TASKWAIT_COMPLETE: i32 = 8;
}

/// `ompt_dispatch_t`.
pub mod dispatch {
    #![allow(missing_docs)]
    pub const ITERATION: i32 = 1;
    pub const SECTION: i32 = 2;
    pub const WS_LOOP_CHUNK: i32 = 3;
    pub const TASKLOOP_CHUNK: i32 = 4;
    pub const DISTRIBUTE_CHUNK: i32 = 5;
}

/// `ompt_dispatch_chunk_t`: what `instance.ptr` points to for chunk dispatches.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DispatchChunk {
    /// First iteration of the chunk.
    pub start: u64,
    /// Iterations in the chunk.
    pub iterations: u64,
}

/// `ompt_target_data_op_t`.
pub mod data_op {
    #![allow(missing_docs)]
    pub const ALLOC: i32 = 1;
    pub const TRANSFER_TO_DEVICE: i32 = 2;
    pub const TRANSFER_FROM_DEVICE: i32 = 3;
    pub const DELETE: i32 = 4;
    pub const ASSOCIATE: i32 = 5;
    pub const DISASSOCIATE: i32 = 6;
    /// The `_async` variants are the plain ones plus this.
    pub const ASYNC: i32 = 16;
}

/// `omp_control_tool` results a tool returns.
pub mod control {
    /// The tool ignored the command.
    pub const IGNORED: i32 = 1;
}

/// Opaque runtime types the callbacks pass by pointer and kprof never reads.
pub type Frame = c_void;
/// `ompt_device_t`, opaque.
pub type Device = c_void;
/// `ompt_dependence_t`, not read (only counted).
pub type Dependence = c_void;

/// The callback signatures of the specification, one per callback type, so that
/// registration checks each function against its event's type at compile time.
pub mod sig {
    use super::{Data, Dependence, Device, Frame, FunctionLookup, Id, WaitId};
    use std::ffi::{c_char, c_int, c_uint, c_void};

    /// `ompt_callback_thread_begin_t`.
    pub type ThreadBegin = unsafe extern "C" fn(c_int, *mut Data);
    /// `ompt_callback_thread_end_t`.
    pub type ThreadEnd = unsafe extern "C" fn(*mut Data);
    /// `ompt_callback_parallel_begin_t`.
    pub type ParallelBegin =
        unsafe extern "C" fn(*mut Data, *const Frame, *mut Data, c_uint, c_int, *const c_void);
    /// `ompt_callback_parallel_end_t`.
    pub type ParallelEnd = unsafe extern "C" fn(*mut Data, *mut Data, c_int, *const c_void);
    /// `ompt_callback_implicit_task_t`.
    pub type ImplicitTask =
        unsafe extern "C" fn(c_int, *mut Data, *mut Data, c_uint, c_uint, c_int);
    /// `ompt_callback_work_t`.
    pub type Work = unsafe extern "C" fn(c_int, c_int, *mut Data, *mut Data, u64, *const c_void);
    /// `ompt_callback_dispatch_t`.
    pub type Dispatch = unsafe extern "C" fn(*mut Data, *mut Data, c_int, Data);
    /// `ompt_callback_sync_region_t` (sync_region, sync_region_wait, reduction).
    pub type SyncRegion = unsafe extern "C" fn(c_int, c_int, *mut Data, *mut Data, *const c_void);
    /// `ompt_callback_mutex_acquire_t` (mutex_acquire, lock_init).
    pub type MutexAcquire = unsafe extern "C" fn(c_int, c_uint, c_uint, WaitId, *const c_void);
    /// `ompt_callback_mutex_t` (mutex_acquired, mutex_released, lock_destroy).
    pub type Mutex = unsafe extern "C" fn(c_int, WaitId, *const c_void);
    /// `ompt_callback_nest_lock_t`.
    pub type NestLock = unsafe extern "C" fn(c_int, WaitId, *const c_void);
    /// `ompt_callback_masked_t` (`master` in 5.0).
    pub type Masked = unsafe extern "C" fn(c_int, *mut Data, *mut Data, *const c_void);
    /// `ompt_callback_task_create_t`.
    pub type TaskCreate =
        unsafe extern "C" fn(*mut Data, *const Frame, *mut Data, c_int, c_int, *const c_void);
    /// `ompt_callback_task_schedule_t`.
    pub type TaskSchedule = unsafe extern "C" fn(*mut Data, c_int, *mut Data);
    /// `ompt_callback_dependences_t`.
    pub type Dependences = unsafe extern "C" fn(*mut Data, *const Dependence, c_int);
    /// `ompt_callback_task_dependence_t`.
    pub type TaskDependence = unsafe extern "C" fn(*mut Data, *mut Data);
    /// `ompt_callback_flush_t`.
    pub type Flush = unsafe extern "C" fn(*mut Data, *const c_void);
    /// `ompt_callback_cancel_t`.
    pub type Cancel = unsafe extern "C" fn(*mut Data, c_int, *const c_void);
    /// `ompt_callback_control_tool_t`.
    pub type ControlTool = unsafe extern "C" fn(u64, u64, *mut c_void, *const c_void) -> c_int;
    /// `ompt_callback_error_t`.
    pub type Error = unsafe extern "C" fn(c_int, *const c_char, usize, *const c_void);
    /// `ompt_callback_device_initialize_t`.
    pub type DeviceInitialize = unsafe extern "C" fn(
        c_int,
        *const c_char,
        *mut Device,
        Option<FunctionLookup>,
        *const c_char,
    );
    /// `ompt_callback_device_finalize_t`.
    pub type DeviceFinalize = unsafe extern "C" fn(c_int);
    /// `ompt_callback_device_load_t`.
    pub type DeviceLoad = unsafe extern "C" fn(
        c_int,
        *const c_char,
        i64,
        *mut c_void,
        usize,
        *mut c_void,
        *mut c_void,
        u64,
    );
    /// `ompt_callback_device_unload_t`.
    pub type DeviceUnload = unsafe extern "C" fn(c_int, u64);
    /// `ompt_callback_target_t`.
    pub type Target = unsafe extern "C" fn(c_int, c_int, c_int, *mut Data, Id, *const c_void);
    /// `ompt_callback_target_emi_t`.
    pub type TargetEmi =
        unsafe extern "C" fn(c_int, c_int, c_int, *mut Data, *mut Data, *mut Data, *const c_void);
    /// `ompt_callback_target_data_op_t`.
    pub type TargetDataOp = unsafe extern "C" fn(
        Id,
        Id,
        c_int,
        *mut c_void,
        c_int,
        *mut c_void,
        c_int,
        usize,
        *const c_void,
    );
    /// `ompt_callback_target_data_op_emi_t`.
    pub type TargetDataOpEmi = unsafe extern "C" fn(
        c_int,
        *mut Data,
        *mut Data,
        *mut Id,
        c_int,
        *mut c_void,
        c_int,
        *mut c_void,
        c_int,
        usize,
        *const c_void,
    );
    /// `ompt_callback_target_submit_t`.
    pub type TargetSubmit = unsafe extern "C" fn(Id, Id, c_uint);
    /// `ompt_callback_target_submit_emi_t`.
    pub type TargetSubmitEmi = unsafe extern "C" fn(c_int, *mut Data, *mut Id, c_uint);
}
