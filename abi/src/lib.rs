//! The contract between kprof plugins and the one core runtime of a process.
//!
//! Every plugin library (Kokkos, OMPT, OpenACC, ...) is loaded by a different runtime
//! with different `dlopen` flags, so plugins must not rely on symbol interposition to
//! share state. Instead the core is its own shared library, `libkprof_core.so`, which
//! exports one symbol, [`CORE_API_SYMBOL`], returning a table of C function pointers
//! ([`CoreApi`]). Each plugin loads that library from its own directory with
//! [`loader::load_core`]; `dlopen` of the same file returns the same instance, so all
//! plugins of a process share one runtime, one clock and one output directory.
//!
//! The table is versioned: a plugin checks [`CoreApi::version`] and [`CoreApi::size`]
//! before use, so a newer core can append functions without breaking older plugins.

pub mod forward;
pub mod guard;
pub mod kind;
pub mod loader;

use std::ffi::c_char;

pub use kind::{message, Anomaly, Kind};

/// Version of the [`CoreApi`] layout. Bumped when a function changes meaning;
/// appending functions only grows [`CoreApi::size`].
pub const ABI_VERSION: u32 = 1;

/// Name of the function exported by `libkprof_core.so` that returns the table.
pub const CORE_API_SYMBOL: &[u8] = b"kprof_core_api\0";

/// Signature of [`CORE_API_SYMBOL`]: returns the table for `version`, or NULL when
/// the core cannot serve that version.
pub type CoreApiFn = unsafe extern "C" fn(version: u32) -> *const CoreApi;

/// A device (or host execution space) as a plugin describes it; the core hands back a
/// small index that events carry.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DeviceDesc {
    /// Back end or device kind, NUL-terminated (`"OpenMP"`, `"Cuda"`, ...).
    pub backend: *const c_char,
    /// Device number within the back end.
    pub index: u32,
    /// Execution-space instance / stream / queue within the device.
    pub instance: u32,
}

/// A memory space name as runtimes pass it: a bounded, possibly unterminated buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SpaceName {
    /// First byte of the name.
    pub ptr: *const c_char,
    /// Bytes available at `ptr`; the name ends at the first NUL or here.
    pub max_len: usize,
}

/// One side of a memory copy.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CopyEnd {
    /// Memory space of this side.
    pub space: SpaceName,
    /// Label (view name) of this side, NUL-terminated; may be NULL.
    pub label: *const c_char,
}

/// Where device work launched from a host thread belongs: the launching thread's
/// innermost open instance at the launch ([`CoreApi::site`]). Plugins keep it
/// with the vendor's correlation id and hand it back with the activity.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Site {
    /// GUID of that instance (0: nothing was open; the work goes at the root).
    pub guid: u64,
    /// The core's handle of the instance's call path (opaque; 0 when the core
    /// finds it from `guid` itself).
    pub node: u64,
}

/// A numeric argument of a device activity.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ActivityArg {
    /// Key: a NUL-terminated string never freed nor changed (a literal).
    pub key: *const c_char,
    /// Value.
    pub value: u64,
}

/// Arguments an [`Activity`] carries at most.
pub const ACTIVITY_ARGS: usize = 10;

/// Copy directions of an [`Activity`] (and of transfers).
pub mod direction {
    /// No copy.
    pub const NONE: u8 = 0;
    /// Host to device.
    pub const TO_DEVICE: u8 = 1;
    /// Device to host.
    pub const FROM_DEVICE: u8 = 2;
    /// Anything else (host to host, array copies).
    pub const OTHER: u8 = 4;
    /// Device to device, on one device.
    pub const DEVICE_TO_DEVICE: u8 = 5;
    /// Between two devices.
    pub const PEER: u8 = 6;
}

/// A device activity: work a device did, reported after the fact by a vendor
/// library (CUPTI, rocprofiler-sdk) with its own start and end, on a device
/// track that is not an OS thread ([`CoreApi::activity`]).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Activity {
    /// `size_of::<Activity>()` as the plugin built it.
    pub size: u32,
    /// [`Kind`] as u8: a device-activity kind ([`Kind::is_device_activity`]).
    pub kind: u8,
    /// For copies, one of [`direction`].
    pub direction: u8,
    /// Arguments in `args`.
    pub nargs: u8,
    /// Device and stream: the index [`CoreApi::device`] gave for a
    /// [`DeviceDesc`] whose `instance` is the stream (one track each).
    pub dev: u16,
    /// Name (a demangled kernel name, `"memcpy HtoD"`), NUL-terminated, copied.
    pub name: *const c_char,
    /// Start on the core clock, nanoseconds ([`CoreApi::now_ns`]).
    pub start_ns: u64,
    /// End on the core clock, nanoseconds.
    pub end_ns: u64,
    /// Where it belongs in the profile: the site taken at its launch.
    pub site: Site,
    /// GUID of the host slice a trace links to it with a flow (the API call that
    /// launched it); 0: `site.guid`.
    pub flow_from: u64,
    /// Bytes moved or set (copies, sets).
    pub bytes: u64,
    /// Numeric arguments (grid and block sizes, registers, shared memory).
    pub args: [ActivityArg; ACTIVITY_ARGS],
}

/// Arguments a [`Call`] carries at most.
pub const CALL_ARGS: usize = 4;

/// A call recorded whole once it returned ([`CoreApi::call`]): one node under
/// the calling thread's innermost open instance, from `begin` (a
/// [`CoreApi::stamp`] taken before the call) to now, with its arguments and at
/// most one message. For calls inside which the thread records nothing else (a
/// PMPI wrapper): one call into the core instead of a begin, an end and one per
/// argument and message.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Call {
    /// [`Kind`] as u8.
    pub kind: u8,
    /// Arguments in `args`.
    pub nargs: u8,
    /// Name: a NUL-terminated string never freed nor changed (a literal).
    pub name: *const c_char,
    /// [`CoreApi::stamp`] before the call.
    pub begin: u64,
    /// Numeric arguments (keys are literals, as for [`CoreApi::arg_static`]).
    pub args: [ActivityArg; CALL_ARGS],
    /// The message's channel (a literal, as for [`CoreApi::instant_static`]);
    /// NULL: the call carries no message.
    pub channel: *const c_char,
    /// The message: [`message::pack`]ed peer, direction and count.
    pub message: u64,
    /// The message's bytes.
    pub bytes: u64,
}

/// The function table exported by the core. All functions are safe to call from any
/// thread at any time: before the runtime started they start it or do nothing, after
/// it finalized they are ignored and counted.
#[repr(C)]
pub struct CoreApi {
    /// `size_of::<CoreApi>()` of the core that built this table.
    pub size: usize,
    /// [`ABI_VERSION`] of the core that built this table.
    pub version: u32,
    /// Starts the runtime if it is not running and records that `plugin` (a short
    /// NUL-terminated name such as `"kokkos"`) uses it. Returns false when kprof is
    /// disabled (`KPROF_ENABLE=0`) or already finalized.
    pub attach: unsafe extern "C" fn(plugin: *const c_char) -> bool,
    /// Applies one option, `--name=value` or `KPROF_NAME=value`. Returns false (after
    /// one line on stderr) when the option is unknown or its value invalid.
    pub configure: unsafe extern "C" fn(arg: *const c_char) -> bool,
    /// The value of a boolean option (`"kokkos-fences"`), after the environment and
    /// every `configure` so far: 1 true, 0 false, -1 unknown option.
    pub option_flag: unsafe extern "C" fn(name: *const c_char) -> i32,
    /// Help text listing every option, NUL-terminated, static.
    pub help: unsafe extern "C" fn() -> *const c_char,
    /// The calling plugin is done: when every attached plugin has finalized, writes
    /// all output and stops measuring (otherwise the exit handler does). Call once.
    pub finalize: unsafe extern "C" fn(),
    /// Index of a device, registering it on first sight (0 when invalid).
    pub device: unsafe extern "C" fn(desc: *const DeviceDesc) -> u16,
    /// Opens an instance of `kind` named `name` on `dev` and returns its GUID (never
    /// 0 while measuring). `parent` is an explicit parent GUID (e.g. on another
    /// thread), or 0 for the innermost open instance of the calling thread.
    pub begin: unsafe extern "C" fn(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64,
    /// Closes the instance `guid` of `kind`; `guid` 0 closes the innermost open
    /// instance of `kind` on the calling thread (stack-style APIs).
    pub end: unsafe extern "C" fn(kind: u8, guid: u64),
    /// Records an instant event of `kind` (a marker, a dual-view sync, ...) with two
    /// kind-specific values.
    pub instant: unsafe extern "C" fn(kind: u8, name: *const c_char, a: u64, b: u64),
    /// Records an allocation of `bytes` at `ptr` in `space`, labelled `label`.
    pub alloc: unsafe extern "C" fn(space: SpaceName, label: *const c_char, ptr: u64, bytes: u64),
    /// Records the deallocation of `ptr` in `space`.
    pub free: unsafe extern "C" fn(space: SpaceName, label: *const c_char, ptr: u64, bytes: u64),
    /// Opens a memory copy of `bytes` from `src` to `dst` (kind [`Kind::DeepCopy`]);
    /// closed with `end(Kind::DeepCopy, guid)`.
    pub copy_begin: unsafe extern "C" fn(dst: CopyEnd, src: CopyEnd, bytes: u64) -> u64,
    /// Creates a named section (a timer started and stopped by id, possibly on
    /// different threads, accumulated across starts); returns its id (never 0).
    pub section_create: unsafe extern "C" fn(name: *const c_char) -> u32,
    /// Starts section `id`.
    pub section_start: unsafe extern "C" fn(id: u32),
    /// Stops section `id`.
    pub section_stop: unsafe extern "C" fn(id: u32),
    /// Destroys section `id` (its totals stay in the profile).
    pub section_destroy: unsafe extern "C" fn(id: u32),
    /// Records a metadata key/value pair.
    pub metadata: unsafe extern "C" fn(key: *const c_char, value: *const c_char),
    /// Counts an anomaly a plugin detected ([`Anomaly`] as u32).
    pub anomaly: unsafe extern "C" fn(which: u32),
    /// Names the calling thread in profiles and traces (e.g. `"OpenMP worker 3"`);
    /// NUL-terminated, copied.
    pub thread_name: unsafe extern "C" fn(name: *const c_char),
    /// Opens an instance named after a code address (the return address a runtime
    /// reports, OMPT's `codeptr_ra`): the writer thread symbolizes it to
    /// `function (file:line)` or `module+0xoffset`, off the hot path. Otherwise as
    /// [`CoreApi::begin`].
    pub begin_at: unsafe extern "C" fn(kind: u8, codeptr: u64, dev: u16, parent: u64) -> u64,
    /// Records a dependence edge `from` -> `to` between two instances (GUIDs), e.g.
    /// between explicit tasks: the task graph.
    pub edge: unsafe extern "C" fn(kind: u8, from: u64, to: u64),
    /// Opens an instance of a data transfer of `bytes` (e.g. a target data
    /// operation), named after `codeptr` like [`CoreApi::begin_at`]; `direction` is
    /// 0 allocation, 1 to device, 2 from device, 3 delete, 4 other.
    pub begin_transfer: unsafe extern "C" fn(
        kind: u8,
        codeptr: u64,
        dev: u16,
        parent: u64,
        bytes: u64,
        direction: u32,
    ) -> u64,
    /// Attaches a numeric argument (`key`, a static NUL-terminated string, and
    /// `value`) to the calling thread's innermost open instance: shown with the slice
    /// in traces and as min/max per call path in the profile (OpenMP team sizes,
    /// OpenACC gangs). At most 4 per instance; more are ignored.
    pub arg: unsafe extern "C" fn(key: *const c_char, value: u64),
    /// Opens a data transfer named `name` (a variable), otherwise as
    /// [`CoreApi::begin_transfer`].
    pub begin_transfer_named: unsafe extern "C" fn(
        kind: u8,
        name: *const c_char,
        dev: u16,
        parent: u64,
        bytes: u64,
        direction: u32,
    ) -> u64,
    /// As [`CoreApi::begin`] for a `name` that is never freed nor changed (a string
    /// literal): the core trusts the pointer and skips comparing the text. The
    /// cheaper call for plugins whose names are static.
    pub begin_static:
        unsafe extern "C" fn(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64,
    /// [`CoreApi::begin_at`] and one [`CoreApi::arg`] in one call and one record:
    /// `key` is a static NUL-terminated string as for `begin_static`.
    pub begin_at_arg: unsafe extern "C" fn(
        kind: u8,
        codeptr: u64,
        dev: u16,
        parent: u64,
        key: *const c_char,
        value: u64,
    ) -> u64,
    /// The core clock now, in CLOCK_MONOTONIC nanoseconds: what
    /// [`Activity::start_ns`] is measured in (a GPU plugin calibrates the vendor's
    /// clock against it).
    pub now_ns: unsafe extern "C" fn() -> u64,
    /// The calling thread's innermost open instance, as the [`Site`] of device
    /// work it is launching now.
    pub site: unsafe extern "C" fn() -> Site,
    /// Records a device activity (any thread, typically the vendor's buffer
    /// thread). Unknown kinds and sites are counted as anomalies.
    pub activity: unsafe extern "C" fn(a: *const Activity),
    /// Registers `flush`, called once when the run ends (finalize, exit, a
    /// terminating signal) before any output is written, so that a plugin can
    /// deliver the device activities its vendor still buffers (or the ends its
    /// runtime reports only later, with [`CoreApi::end_at`]). At most 8.
    pub on_flush: unsafe extern "C" fn(flush: unsafe extern "C" fn()) -> bool,
    /// `set` > 0: a GPU activity plugin is active from now on (device times come
    /// from it). Returns whether one is active (`set` <= 0 only asks).
    pub gpu_activity: unsafe extern "C" fn(set: i32) -> bool,
    /// Adds `ns` to kprof's own cost on the device side: the vendor library's
    /// overhead as it reports it (CUPTI's overhead records: buffer flushes,
    /// instrumentation), shown with kprof's cost in the profile.
    pub device_cost: unsafe extern "C" fn(ns: u64),
    /// As [`CoreApi::arg`] for a `key` that is never freed nor changed (a string
    /// literal): the core trusts the pointer, as for [`CoreApi::begin_static`].
    pub arg_static: unsafe extern "C" fn(key: *const c_char, value: u64),
    /// As [`CoreApi::instant`] for a `name` that is never freed nor changed (a
    /// string literal). The cheaper call for plugins that record a message per
    /// call (the MPI plugin).
    pub instant_static: unsafe extern "C" fn(kind: u8, name: *const c_char, a: u64, b: u64),
    /// Adds a block named `name` to profile.json (`json`, one JSON document, under
    /// `extensions.<name>`) and `summary` (lines, may be empty) to the summary: for
    /// what a plugin computes itself (the Kokkos tuner's results). Call it from an
    /// [`CoreApi::on_flush`] callback so it comes before the output is written; a
    /// later call for the same name replaces the block. Returns false when `json`
    /// does not parse (nothing is added) or a string is NULL.
    pub extension: unsafe extern "C" fn(
        name: *const c_char,
        json: *const c_char,
        summary: *const c_char,
    ) -> bool,
    /// A job's reduction (the MPI plugin at `MPI_Finalize`), step 1: ends this
    /// process's profile now (its own files are written, its summary held back)
    /// and returns its reducible form, naming the process `rank`; `*len` gets
    /// the length. NULL when the core is not recording. Free with
    /// [`CoreApi::job_free`].
    pub job_profile: unsafe extern "C" fn(rank: u64, len: *mut usize) -> *mut u8,
    /// Step 2: folds form `b` into form `a` and returns the result (`*len` its
    /// length; free with [`CoreApi::job_free`]); NULL when either is malformed.
    pub job_fold: unsafe extern "C" fn(
        a: *const u8,
        a_len: usize,
        b: *const u8,
        b_len: usize,
        len: *mut usize,
    ) -> *mut u8,
    /// Step 3 (one process, MPI rank 0): writes the job's merged profile from
    /// `form` into a new `KPROF_JOB_OUTPUT_DIR` and prints the job's summary.
    /// Returns 0 when written; otherwise it has said why in one line.
    pub job_write: unsafe extern "C" fn(form: *const u8, len: usize) -> i32,
    /// Step 4: `merged` != 0: this process's profile is in the job's (its own
    /// profile files are removed unless `KPROF_PER_RANK=1`); 0: it is not (its
    /// summary is printed as without a reduction).
    pub job_done: unsafe extern "C" fn(merged: i32),
    /// Frees a form returned by [`CoreApi::job_profile`] or [`CoreApi::job_fold`].
    pub job_free: unsafe extern "C" fn(form: *mut u8, len: usize),
    /// The core clock now, in its own units (TSC ticks where the core reads the
    /// TSC): only to hand back as [`Call::begin`]. Cheaper than
    /// [`CoreApi::now_ns`], which converts.
    pub stamp: unsafe extern "C" fn() -> u64,
    /// Records a [`Call`] whole (see there). Hardware counters are not read for
    /// it.
    pub call: unsafe extern "C" fn(call: *const Call),
    /// As [`CoreApi::end`], at `at` (a [`CoreApi::stamp`] taken earlier, on any
    /// thread) instead of now: for an end a runtime reports late (libomp reports
    /// a worker's implicit barrier and implicit task ending when the worker is
    /// next woken, long after its region joined). Never later than now nor
    /// earlier than the thread's last event; 0 means now. Hardware counters are
    /// read now. A `guid` of another thread's instance (a thread parked where it
    /// cannot report the end before the run ends; called from an
    /// [`CoreApi::on_flush`] callback) is kept: if that instance is still open
    /// when the run ends, it ends at `at`, with what is open inside it.
    pub end_at: unsafe extern "C" fn(kind: u8, guid: u64, at: u64),
    /// The program loaded libraries just now (MPI's components, inside
    /// `MPI_Init`): with call-stack samples on, the core reads their unwind
    /// information, so that samples taken in their code unwind past it. Not for
    /// a signal handler; costs a walk of the loader's list, nothing when sampling
    /// is off.
    pub libraries_loaded: unsafe extern "C" fn(),
}
