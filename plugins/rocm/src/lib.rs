//! `libkprof_rocm.so`: kprof's AMD GPU activity plugin, over rocprofiler-sdk.
//!
//! Loaded the way rocprofiler-sdk loads tools: the SDK calls the tool's
//! [`rocprofiler_configure`], found in a library named by `ROCP_TOOL_LIBRARIES`
//! (which the SDK opens) or in any library of the process that exports it. The
//! plugin loads the core runtime (`libkprof_core.so`, shared with the other
//! kprof plugins), finds the SDK's functions in the process (never linked: kprof
//! builds and runs without ROCm), and says in one line on stderr whether GPU
//! activity is measured.
//!
//! - `callbacks`: every HIP runtime call is a `gpu_api` slice on its thread, and
//!   its correlation id is mapped to the thread's innermost open kprof instance
//!   (the CUDA plugin's lock-free ring); kernel symbols registered with code
//!   objects name the dispatches.
//! - `records`: the SDK's buffer of kernel dispatch, memory copy and memory
//!   allocation records, put on the core clock and delivered to the core as
//!   device activities under their launch, allocations and frees.
//! - `state`: what the callbacks share, set once at configure.
//! - `plugin`: configuration, start and the final flush.
//!
//! No panic reaches the SDK (every entry point runs under `kprof_abi::guard`),
//! and no lock or allocation is taken on the HIP call path.

pub mod callbacks;
pub mod plugin;
pub mod records;
// Private, with `pub` items: the crate's own, as its `pub(crate)` items were,
// without a `pub(crate)` (which reads as a use of the crate's root, and the root
// uses `plugin`, which uses it: a module circle).
mod state;
pub mod sys;

use std::ffi::c_char;

use kprof_abi::guard::guard;

/// rocprofiler-sdk's entry point of a tool, called once by the SDK as it
/// initializes (when the first ROCm runtime registers with it). Returns the
/// tool's initialize/finalize functions, or NULL when kprof is disabled or the
/// SDK's functions cannot be found (the SDK then leaves the tool out).
///
/// # Safety
/// Called by rocprofiler-sdk with `client_id` NULL or valid for the call.
#[no_mangle]
pub unsafe extern "C" fn rocprofiler_configure(
    version: u32,
    runtime_version: *const c_char,
    priority: u32,
    client_id: *mut sys::ClientId,
) -> *mut sys::ToolConfigureResult {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the SDK's arguments, as `rocprofiler_configure` receives them.
        unsafe { plugin::configure(version, runtime_version, priority, client_id) }
    })
}
