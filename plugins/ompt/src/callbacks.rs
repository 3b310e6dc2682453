//! The OMPT callbacks: each translates one runtime event into calls of the core's
//! C table. All run on the runtime's threads, concurrently, on the hot path: no
//! allocation (but one block per explicit task), no lock, no system call; names are
//! static C strings, passed with `begin_static`, so the core's per-thread name cache
//! hits by pointer without comparing the text. Every body runs inside [`guard`], so
//! no panic reaches the runtime.
//!
//! Pointer arguments are the runtime's; the specification makes `ompt_data_t`
//! pointers valid for the duration of the callback, but kprof still checks each for
//! NULL because runtimes pass NULL where it does not apply (libomp 14 passes a NULL
//! `parallel_data` at the end of implicit tasks).
//!
//! Safety of every callback: it is only called by the OpenMP runtime, with the
//! arguments the specification gives its event (the registration in `lib.rs` binds
//! each function to its event's signature). The module is private: nothing else
//! can call them.
//!
//! `dependences` is not registered: the task graph's edges come from
//! `task_dependence`, and counting dependences is not worth a call per task.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

use kprof_abi::guard::guard;
use kprof_abi::{CoreApi, Kind};

use crate::core_table::api;
use crate::ompt::{
    control, scope, task_flag, task_status, Data, Device, DispatchChunk, Frame, FunctionLookup, Id,
    WaitId,
};
use crate::{device, handoff, join, map, task};

/// Runs `f` with the core table when attached, never unwinding into the runtime.
#[inline(always)]
fn with_api(f: impl FnOnce(&'static CoreApi)) {
    guard((), || {
        if let Some(api) = api() {
            f(api)
        }
    })
}

/// The word of an `ompt_data_t`, 0 for NULL.
///
/// # Safety
/// `d` is NULL or valid for reads (the runtime's contract for callback arguments).
#[inline(always)]
unsafe fn word(d: *const Data) -> u64 {
    // SAFETY: caller's contract; every bit pattern is a valid u64.
    unsafe { d.as_ref().map_or(0, |d| d.value) }
}

/// Stores `v` in an `ompt_data_t` unless it is NULL.
///
/// # Safety
/// `d` is NULL or valid for writes.
#[inline(always)]
unsafe fn set_word(d: *mut Data, v: u64) {
    // SAFETY: caller's contract.
    if let Some(d) = unsafe { d.as_mut() } {
        d.value = v;
    }
}

/// Opens (scope begin) or closes (scope end, innermost of `kind` on this thread) a
/// named instance; `beginend` records both.
#[inline(always)]
fn scoped(api: &CoreApi, endpoint: c_int, kind: Kind, name: &'static CStr) {
    // SAFETY: static NUL-terminated name; plain integers.
    unsafe {
        if endpoint != scope::END {
            (api.begin_static)(kind as u8, name.as_ptr(), 0, 0);
        }
        if endpoint != scope::BEGIN {
            (api.end)(kind as u8, 0);
        }
    }
}

/// As [`scoped`], named after a code address.
#[inline(always)]
fn scoped_at(api: &CoreApi, endpoint: c_int, kind: Kind, codeptr: *const c_void) {
    // SAFETY: plain integers.
    unsafe {
        if endpoint != scope::END {
            (api.begin_at)(kind as u8, codeptr as u64, 0, 0);
        }
        if endpoint != scope::BEGIN {
            (api.end)(kind as u8, 0);
        }
    }
}

/// `thread_begin`: names the thread by its OpenMP role.
pub unsafe extern "C" fn thread_begin(thread_type: c_int, _thread_data: *mut Data) {
    with_api(|api| {
        // SAFETY: a static NUL-terminated name (copied by the core).
        unsafe { (api.thread_name)(map::thread_name(thread_type).as_ptr()) }
    })
}

/// `thread_end`: nothing to record (the core closes what the thread left open).
pub unsafe extern "C" fn thread_end(_thread_data: *mut Data) {}

/// `parallel_begin`: opens the region on the encountering thread, named after the
/// construct's code address; its GUID goes into `parallel_data`.
pub unsafe extern "C" fn parallel_begin(
    _encountering_task: *mut Data,
    _frame: *const Frame,
    parallel_data: *mut Data,
    requested_team_size: c_uint,
    _flags: c_int,
    codeptr_ra: *const c_void,
) {
    with_api(|api| {
        // The actual team size is the number of implicit tasks the region gets.
        // SAFETY: a static key; plain integers.
        let guid = unsafe {
            (api.begin_at_arg)(
                Kind::OmpParallel as u8,
                codeptr_ra as u64,
                0,
                0,
                c"requested_team_size".as_ptr(),
                u64::from(requested_team_size),
            )
        };
        // SAFETY: the runtime's parallel data, NULL or writable.
        unsafe { set_word(parallel_data, guid) };
    })
}

/// `parallel_end`: closes the region, and publishes when it joined for its
/// workers, whose ends libomp reports late (see [`join`]).
pub unsafe extern "C" fn parallel_end(
    parallel_data: *mut Data,
    _encountering_task: *mut Data,
    _flags: c_int,
    _codeptr_ra: *const c_void,
) {
    with_api(|api| {
        // SAFETY: NULL or readable.
        let region = unsafe { word(parallel_data) };
        // SAFETY: no arguments; then plain integers.
        let at = unsafe { (api.stamp)() };
        // SAFETY: plain integers.
        unsafe { (api.end)(Kind::OmpParallel as u8, region) };
        join::publish(region, at);
    })
}

/// `implicit_task`: one team member's share of a parallel region, nested under the
/// region (an explicit parent: workers run on other threads). The initial task
/// spans the whole program and is skipped. A worker's task ends no later than
/// its region joined: libomp reports its end only when the worker is next woken
/// (see [`join`]).
pub unsafe extern "C" fn implicit_task(
    endpoint: c_int,
    parallel_data: *mut Data,
    task_data: *mut Data,
    _actual_parallelism: c_uint,
    index: c_uint,
    flags: c_int,
) {
    if flags & task_flag::INITIAL != 0 {
        return;
    }
    with_api(|api| {
        if endpoint != scope::END {
            // The primary thread (index 0) has just opened the region itself: it is
            // the innermost instance there, so no explicit parent (one record less).
            let parent = if index == 0 {
                0
            } else {
                // SAFETY: NULL or readable.
                unsafe { word(parallel_data) }
            };
            // SAFETY: static name; plain integers.
            let guid = unsafe {
                (api.begin_static)(
                    Kind::OmpImplicitTask as u8,
                    c"implicit task".as_ptr(),
                    0,
                    parent,
                )
            };
            // SAFETY: NULL or writable. Implicit task words are GUIDs (tag clear).
            unsafe { set_word(task_data, guid & !task::TAG) };
            if parent != 0 {
                join::worker_begin(guid & !task::TAG, parent);
            }
        }
        if endpoint != scope::BEGIN {
            // Only the task's own word: libomp 14 ends with a NULL parallel_data.
            // SAFETY: NULL or readable.
            let guid = unsafe { word(task_data) };
            let guid = if guid & task::TAG != 0 { 0 } else { guid };
            let kind = Kind::OmpImplicitTask as u8;
            match join::worker_end(guid) {
                // SAFETY: plain integers.
                0 => unsafe { (api.end)(kind, guid) },
                // SAFETY: plain integers.
                at => unsafe { (api.end_at)(kind, guid, at) },
            }
        }
    })
}

/// The core's flush as the run ends (`CoreApi::on_flush`): the implicit tasks
/// of workers parked at their region's join, which libomp reports ending only
/// after kprof wrote its output, end at the join (see [`join`]).
pub unsafe extern "C" fn flush_parked() {
    with_api(|api| {
        for (task, at) in join::parked() {
            // SAFETY: plain integers.
            unsafe { (api.end_at)(Kind::OmpImplicitTask as u8, task, at) };
        }
    })
}

/// `work`: a worksharing construct (loop, sections, single, ...), named after its
/// code address; closed as the innermost of its kind on the thread.
pub unsafe extern "C" fn work(
    wstype: c_int,
    endpoint: c_int,
    _parallel_data: *mut Data,
    _task_data: *mut Data,
    _count: u64,
    codeptr_ra: *const c_void,
) {
    with_api(|api| scoped_at(api, endpoint, map::work_kind(wstype), codeptr_ra))
}

/// `dispatch` (5.1): a chunk, iteration or section handed to this thread, as an
/// instant with the first iteration and the iteration count where known.
pub unsafe extern "C" fn dispatch(
    _parallel_data: *mut Data,
    _task_data: *mut Data,
    kind: c_int,
    instance: Data,
) {
    with_api(|api| {
        // SAFETY: every bit pattern of the union is a valid u64.
        let raw = unsafe { instance.value };
        let (a, b) = if map::dispatch_has_chunk(kind) {
            // SAFETY: for chunk dispatches `instance.ptr` is NULL or points to an
            // ompt_dispatch_chunk_t valid during the callback.
            match unsafe { (raw as *const DispatchChunk).as_ref() } {
                Some(c) => (c.start, c.iterations),
                None => (0, 0),
            }
        } else if kind == crate::ompt::dispatch::ITERATION {
            // The iteration variable's value, one iteration.
            (raw, 1)
        } else {
            (0, 0)
        };
        // SAFETY: static name; plain integers.
        unsafe {
            (api.instant)(
                Kind::OmpDispatch as u8,
                map::dispatch_name(kind).as_ptr(),
                a,
                b,
            )
        };
    })
}

/// `sync_region`: barriers, taskwait, taskgroup, reductions. On a worker, an
/// end reported after its region joined (libomp reports a worker's implicit
/// barrier as ending when the worker is next woken) ends at the join: the
/// barrier was waiting until then, what follows is idle (see [`join`]).
pub unsafe extern "C" fn sync_region(
    kind: c_int,
    endpoint: c_int,
    _parallel_data: *mut Data,
    _task_data: *mut Data,
    _codeptr_ra: *const c_void,
) {
    with_api(|api| {
        let (k, name) = map::sync_region(kind);
        if endpoint == scope::END {
            let at = join::worker_join();
            if at != 0 {
                // SAFETY: plain integers.
                unsafe { (api.end_at)(k as u8, 0, at) };
                return;
            }
        }
        scoped(api, endpoint, k, name)
    })
}

/// `sync_region_wait`: the waiting inside a synchronization region, as its own
/// slice — except in implicit barriers, where libomp reports the wait back to back
/// with the barrier (the barrier slice already is the wait) and, on workers, only
/// when the next parallel region wakes them: those two callbacks would sit on the
/// next region's critical path for no information, so they are not recorded.
pub unsafe extern "C" fn sync_region_wait(
    kind: c_int,
    endpoint: c_int,
    _parallel_data: *mut Data,
    _task_data: *mut Data,
    _codeptr_ra: *const c_void,
) {
    if map::is_implicit_barrier(kind) {
        return;
    }
    with_api(|api| scoped(api, endpoint, Kind::OmpSyncWait, c"wait"))
}

/// `reduction`: as a synchronization region of its kind (fires only when the
/// runtime reduces with a critical section or a tree).
pub unsafe extern "C" fn reduction(
    kind: c_int,
    endpoint: c_int,
    parallel_data: *mut Data,
    task_data: *mut Data,
    codeptr_ra: *const c_void,
) {
    // SAFETY: forwarding the runtime's arguments.
    unsafe { sync_region(kind, endpoint, parallel_data, task_data, codeptr_ra) }
}

thread_local! {
    /// Whether this thread has a mutex wait open: `nest_lock` begins follow either a
    /// waiting acquire (close the wait) or a test (nothing to close).
    static MUTEX_WAIT: Cell<bool> = const { Cell::new(false) };
}

fn set_waiting(v: bool) -> bool {
    MUTEX_WAIT.try_with(|w| w.replace(v)).unwrap_or(false)
}

/// `mutex_acquire`: starts waiting for a lock, critical, atomic or ordered. A
/// `test` never waits (and has no `acquired` when it fails): nothing to open.
pub unsafe extern "C" fn mutex_acquire(
    kind: c_int,
    _hint: c_uint,
    _implementation: c_uint,
    _wait_id: WaitId,
    _codeptr_ra: *const c_void,
) {
    if map::mutex_is_test(kind) {
        return;
    }
    with_api(|api| {
        set_waiting(true);
        // SAFETY: static name; plain integers.
        unsafe {
            (api.begin_static)(
                Kind::OmpMutexWait as u8,
                map::mutex_name(kind).as_ptr(),
                0,
                0,
            )
        };
    })
}

/// Closes this thread's open mutex wait, if any.
#[inline(always)]
fn end_wait(api: &CoreApi) {
    if set_waiting(false) {
        // SAFETY: plain integers.
        unsafe { (api.end)(Kind::OmpMutexWait as u8, 0) };
    }
}

/// `mutex_acquired`: the wait ends, holding begins.
pub unsafe extern "C" fn mutex_acquired(kind: c_int, _wait_id: WaitId, _codeptr_ra: *const c_void) {
    with_api(|api| {
        end_wait(api);
        // SAFETY: static name; plain integers.
        unsafe {
            (api.begin_static)(
                Kind::OmpMutexHold as u8,
                map::mutex_name(kind).as_ptr(),
                0,
                0,
            )
        };
    })
}

/// `mutex_released`: holding ends (on the thread that acquired it).
pub unsafe extern "C" fn mutex_released(
    _kind: c_int,
    _wait_id: WaitId,
    _codeptr_ra: *const c_void,
) {
    with_api(|api| {
        // SAFETY: plain integers.
        unsafe { (api.end)(Kind::OmpMutexHold as u8, 0) };
    })
}

/// `nest_lock`: a nested acquisition (begin) or release (end) of a nest lock the
/// thread already owns, as a hold nested in the outer one.
pub unsafe extern "C" fn nest_lock(endpoint: c_int, _wait_id: WaitId, _codeptr_ra: *const c_void) {
    with_api(|api| {
        if endpoint != scope::END {
            end_wait(api);
        }
        scoped(api, endpoint, Kind::OmpMutexHold, c"nest lock")
    })
}

/// `lock_init`: nothing to record.
pub unsafe extern "C" fn lock_init(
    _kind: c_int,
    _hint: c_uint,
    _implementation: c_uint,
    _wait_id: WaitId,
    _codeptr_ra: *const c_void,
) {
}

/// `lock_destroy`: nothing to record.
pub unsafe extern "C" fn lock_destroy(_kind: c_int, _wait_id: WaitId, _codeptr_ra: *const c_void) {}

/// `masked` (`master` in 5.0): the block only the primary thread runs.
pub unsafe extern "C" fn masked(
    endpoint: c_int,
    _parallel_data: *mut Data,
    _task_data: *mut Data,
    _codeptr_ra: *const c_void,
) {
    with_api(|api| scoped(api, endpoint, Kind::OmpMasked, c"masked"))
}

/// `task_create`: an explicit task is created. Records a zero-length creation
/// marker named after the task construct — its GUID identifies the task in the
/// task graph — and gives the task its block (see [`task`]).
pub unsafe extern "C" fn task_create(
    _encountering_task: *mut Data,
    _frame: *const Frame,
    new_task_data: *mut Data,
    flags: c_int,
    _has_dependences: c_int,
    codeptr_ra: *const c_void,
) {
    if flags & (task_flag::INITIAL | task_flag::IMPLICIT) != 0 || new_task_data.is_null() {
        return;
    }
    with_api(|api| {
        let kind = Kind::OmpTaskCreate as u8;
        // The ompt_task_flag_t (explicit, undeferred, untied, final, mergeable...)
        // as an argument.
        // SAFETY: a static key; plain integers.
        let creation = unsafe {
            (api.begin_at_arg)(
                kind,
                codeptr_ra as u64,
                0,
                0,
                c"flags".as_ptr(),
                flags as u32 as u64,
            )
        };
        // SAFETY: plain integers.
        unsafe { (api.end)(kind, creation) };
        // A taskwait with dependences (5.1) is a task in the graph that never runs:
        // its word is the creation GUID itself, no block to free.
        let w = if flags & task_flag::TASKWAIT != 0 {
            creation & !task::TAG
        } else {
            task::new_word(creation, codeptr_ra as u64)
        };
        // SAFETY: checked non-NULL; the runtime's task data is writable.
        unsafe { set_word(new_task_data, w) };
        // The runtime queues the task after this returns.
        handoff::release(new_task_data);
    })
}

/// `task_schedule`: this thread stops running `prior` (completed, yielded,
/// switched, detached, cancelled) and starts or resumes `next`. Each stretch of
/// execution of an explicit task is one slice, a child of its creation marker.
pub unsafe extern "C" fn task_schedule(
    prior_task_data: *mut Data,
    prior_task_status: c_int,
    next_task_data: *mut Data,
) {
    with_api(|api| {
        handoff::acquire(prior_task_data);
        // SAFETY: NULL or readable.
        let prior = unsafe { word(prior_task_data) };
        match prior_task_status {
            // Fulfilled while the task may still run on another thread: nothing
            // ends here.
            task_status::EARLY_FULFILL => {}
            status => {
                // SAFETY: a word kprof stored; a block is live until retired, and
                // it is retired only below, once, at the final status.
                if let Some(t) = unsafe { task::info(prior) } {
                    if t.exec != 0 {
                        // SAFETY: plain integers.
                        unsafe { (api.end)(Kind::OmpTask as u8, t.exec) };
                        t.exec = 0;
                    }
                }
                if matches!(
                    status,
                    task_status::COMPLETE
                        | task_status::CANCEL
                        | task_status::LATE_FULFILL
                        | task_status::TASKWAIT_COMPLETE
                ) {
                    task::retire(prior);
                }
            }
        }
        // The prior task may resume, or be named by a dependence, on another thread.
        handoff::release(prior_task_data);
        handoff::acquire(next_task_data);
        // SAFETY: NULL or readable; a word kprof stored for a live task.
        if let Some(t) = unsafe { task::info(word(next_task_data)) } {
            // SAFETY: plain integers.
            t.exec = unsafe { (api.begin_at)(Kind::OmpTask as u8, t.codeptr, 0, t.creation) };
        }
    })
}

/// `task_dependence`: `sink` waits for `src`, an edge of the task graph between
/// their creation markers.
pub unsafe extern "C" fn task_dependence(src_task_data: *mut Data, sink_task_data: *mut Data) {
    with_api(|api| {
        handoff::acquire(src_task_data);
        handoff::acquire(sink_task_data);
        // SAFETY: NULL or readable words kprof stored for live tasks (see task).
        let (from, to) = unsafe {
            (
                task::graph_id(word(src_task_data)),
                task::graph_id(word(sink_task_data)),
            )
        };
        if from != 0 && to != 0 {
            // SAFETY: plain integers.
            unsafe { (api.edge)(Kind::OmpTaskCreate as u8, from, to) };
        }
    })
}

/// `flush`: not recorded.
pub unsafe extern "C" fn flush(_thread_data: *mut Data, _codeptr_ra: *const c_void) {}

/// `cancel`: not recorded.
pub unsafe extern "C" fn cancel(_task_data: *mut Data, _flags: c_int, _codeptr_ra: *const c_void) {}

/// `control_tool` (`omp_control_tool`): kprof has no commands; answers "ignored".
pub unsafe extern "C" fn control_tool(
    _command: u64,
    _modifier: u64,
    _arg: *mut c_void,
    _codeptr_ra: *const c_void,
) -> c_int {
    control::IGNORED
}

/// `error` (the `error` directive at run time): the runtime prints it; not recorded.
pub unsafe extern "C" fn error(
    _severity: c_int,
    _message: *const c_char,
    _length: usize,
    _codeptr_ra: *const c_void,
) {
}

/// `device_initialize`: an instant named by the device type, with its number.
pub unsafe extern "C" fn device_initialize(
    device_num: c_int,
    type_: *const c_char,
    _device: *mut Device,
    _lookup: Option<FunctionLookup>,
    _documentation: *const c_char,
) {
    with_api(|api| {
        device::index(api, device_num);
        let name = if type_.is_null() {
            c"device".as_ptr()
        } else {
            type_
        };
        // SAFETY: NUL-terminated (runtime's or ours); the core copies it.
        unsafe { (api.instant)(Kind::OmpDevice as u8, name, device_num as u64, 0) };
    })
}

/// `device_finalize`: an instant.
pub unsafe extern "C" fn device_finalize(device_num: c_int) {
    with_api(|api| {
        // SAFETY: static name; plain integers.
        unsafe {
            (api.instant)(
                Kind::OmpDevice as u8,
                c"finalize".as_ptr(),
                device_num as u64,
                0,
            )
        };
    })
}

/// `device_load`: an instant `load <file>` with the device number and bytes (rare:
/// once per code image, so building the name is fine).
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn device_load(
    device_num: c_int,
    filename: *const c_char,
    _offset_in_file: i64,
    _vma_in_file: *mut c_void,
    bytes: usize,
    _host_addr: *mut c_void,
    _device_addr: *mut c_void,
    _module_id: u64,
) {
    with_api(|api| {
        let file = if filename.is_null() {
            "(unnamed)".into()
        } else {
            // SAFETY: NUL-terminated per the runtime's contract.
            unsafe { CStr::from_ptr(filename) }.to_string_lossy()
        };
        let name = CString::new(format!("load {file}")).unwrap_or_default();
        // SAFETY: a NUL-terminated string living across the call; the core copies.
        unsafe {
            (api.instant)(
                Kind::OmpDevice as u8,
                name.as_ptr(),
                device_num as u64,
                bytes as u64,
            )
        };
    })
}

/// `device_unload`: an instant with the module id.
pub unsafe extern "C" fn device_unload(device_num: c_int, module_id: u64) {
    with_api(|api| {
        // SAFETY: static name; plain integers.
        unsafe {
            (api.instant)(
                Kind::OmpDevice as u8,
                c"unload".as_ptr(),
                device_num as u64,
                module_id,
            )
        };
    })
}

thread_local! {
    /// Device index of the target region this thread is in, for its submits (the
    /// submit callbacks carry no device number).
    static TARGET_DEV: Cell<u16> = const { Cell::new(0) };
}

/// Notes (or, with 0, forgets) the device of this thread's target region.
fn set_target_dev(dev: u16) {
    let _ = TARGET_DEV.try_with(|d| d.set(dev));
}

fn target_dev() -> u16 {
    TARGET_DEV.try_with(Cell::get).unwrap_or(0)
}

/// `target_emi`: a target region (or enter/exit data, update) on a device; its
/// GUID goes into `target_data` for the data operations and submits inside.
pub unsafe extern "C" fn target_emi(
    _kind: c_int,
    endpoint: c_int,
    device_num: c_int,
    _task_data: *mut Data,
    _target_task_data: *mut Data,
    target_data: *mut Data,
    codeptr_ra: *const c_void,
) {
    with_api(|api| {
        if endpoint != scope::END {
            let dev = device::index(api, device_num);
            set_target_dev(dev);
            // SAFETY: plain integers.
            let guid = unsafe { (api.begin_at)(Kind::OmpTarget as u8, codeptr_ra as u64, dev, 0) };
            // SAFETY: NULL or writable.
            unsafe { set_word(target_data, guid) };
        }
        if endpoint != scope::BEGIN {
            // SAFETY: NULL or readable; plain integers.
            unsafe { (api.end)(Kind::OmpTarget as u8, word(target_data)) };
        }
    })
}

/// `target` (5.0 form, when EMI is unsupported): as [`target_emi`], closed as the
/// innermost target region of the thread.
pub unsafe extern "C" fn target(
    _kind: c_int,
    endpoint: c_int,
    device_num: c_int,
    _task_data: *mut Data,
    _target_id: Id,
    codeptr_ra: *const c_void,
) {
    with_api(|api| {
        if endpoint != scope::END {
            let dev = device::index(api, device_num);
            set_target_dev(dev);
            // SAFETY: plain integers.
            unsafe { (api.begin_at)(Kind::OmpTarget as u8, codeptr_ra as u64, dev, 0) };
        }
        if endpoint != scope::BEGIN {
            // SAFETY: plain integers.
            unsafe { (api.end)(Kind::OmpTarget as u8, 0) };
        }
    })
}

/// Opens a target data operation: a transfer of `bytes` on the device it concerns.
fn data_op_begin(
    api: &CoreApi,
    parent: u64,
    optype: c_int,
    src_device_num: c_int,
    dest_device_num: c_int,
    bytes: usize,
    codeptr_ra: *const c_void,
) -> u64 {
    let num = map::data_op_device(optype, src_device_num, dest_device_num);
    let dev = device::index(api, num);
    let direction = map::data_op_direction(optype);
    let kind = Kind::OmpTargetData as u8;
    // SAFETY: plain integers.
    unsafe {
        (api.begin_transfer)(
            kind,
            codeptr_ra as u64,
            dev,
            parent,
            bytes as u64,
            direction,
        )
    }
}

/// `target_data_op_emi`: a data operation (alloc, transfer, delete) inside a target
/// region, its GUID kept in `host_op_id` between begin and end.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn target_data_op_emi(
    endpoint: c_int,
    _target_task_data: *mut Data,
    target_data: *mut Data,
    host_op_id: *mut Id,
    optype: c_int,
    _src_addr: *mut c_void,
    src_device_num: c_int,
    _dest_addr: *mut c_void,
    dest_device_num: c_int,
    bytes: usize,
    codeptr_ra: *const c_void,
) {
    with_api(|api| {
        if endpoint != scope::END {
            // SAFETY: NULL or readable.
            let parent = unsafe { word(target_data) };
            let guid = data_op_begin(
                api,
                parent,
                optype,
                src_device_num,
                dest_device_num,
                bytes,
                codeptr_ra,
            );
            // SAFETY: NULL or writable (the tool owns the id in EMI callbacks).
            if let Some(id) = unsafe { host_op_id.as_mut() } {
                *id = guid;
            }
        }
        if endpoint != scope::BEGIN {
            // SAFETY: NULL or readable.
            let guid = unsafe { host_op_id.as_ref() }.copied().unwrap_or(0);
            // SAFETY: plain integers.
            unsafe { (api.end)(Kind::OmpTargetData as u8, guid) };
        }
    })
}

/// `target_data_op` (5.0 form): one callback per operation, recorded as a
/// zero-length transfer.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn target_data_op(
    _target_id: Id,
    _host_op_id: Id,
    optype: c_int,
    _src_addr: *mut c_void,
    src_device_num: c_int,
    _dest_addr: *mut c_void,
    dest_device_num: c_int,
    bytes: usize,
    codeptr_ra: *const c_void,
) {
    with_api(|api| {
        let guid = data_op_begin(
            api,
            0,
            optype,
            src_device_num,
            dest_device_num,
            bytes,
            codeptr_ra,
        );
        // SAFETY: plain integers.
        unsafe { (api.end)(Kind::OmpTargetData as u8, guid) };
    })
}

/// `target_submit_emi`: a kernel submitted to the device, inside its target region.
pub unsafe extern "C" fn target_submit_emi(
    endpoint: c_int,
    target_data: *mut Data,
    host_op_id: *mut Id,
    _requested_num_teams: c_uint,
) {
    with_api(|api| {
        if endpoint != scope::END {
            // SAFETY: NULL or readable.
            let parent = unsafe { word(target_data) };
            // SAFETY: static name; plain integers.
            let guid = unsafe {
                (api.begin_static)(
                    Kind::OmpTargetSubmit as u8,
                    c"submit".as_ptr(),
                    target_dev(),
                    parent,
                )
            };
            // SAFETY: NULL or writable.
            if let Some(id) = unsafe { host_op_id.as_mut() } {
                *id = guid;
            }
        }
        if endpoint != scope::BEGIN {
            // SAFETY: NULL or readable.
            let guid = unsafe { host_op_id.as_ref() }.copied().unwrap_or(0);
            // SAFETY: plain integers.
            unsafe { (api.end)(Kind::OmpTargetSubmit as u8, guid) };
        }
    })
}

/// `target_submit` (5.0 form): one callback per submission, a zero-length slice.
pub unsafe extern "C" fn target_submit(
    _target_id: Id,
    _host_op_id: Id,
    _requested_num_teams: c_uint,
) {
    with_api(|api| {
        // SAFETY: static name; plain integers.
        unsafe {
            let guid = (api.begin_static)(
                Kind::OmpTargetSubmit as u8,
                c"submit".as_ptr(),
                target_dev(),
                0,
            );
            (api.end)(Kind::OmpTargetSubmit as u8, guid);
        }
    })
}
