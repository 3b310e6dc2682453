//! `libkprof_cuda.so`: kprof's NVIDIA GPU activity plugin, over CUPTI.
//!
//! Loaded the way NVIDIA's tools are: `CUDA_INJECTION64_PATH` names this library,
//! and the CUDA driver calls [`InitializeInjection`] at `cuInit` (`kprof run` sets
//! the variable when the program links the CUDA runtime or driver). The plugin then
//! loads the core runtime (`libkprof_core.so`, shared with the other kprof
//! plugins) and CUPTI (`libcupti.so`, with `dlopen`: kprof never links it, so it
//! builds and runs without CUDA), and says in one line on stderr whether GPU
//! activity is measured.
//!
//! - `callbacks`: every CUDA runtime/driver call is a `gpu_api` slice on its
//!   thread; its correlation id is mapped to the thread's innermost open kprof
//!   instance (`correlation`, a lock-free ring).
//! - `activity`: CUPTI's records (kernels, copies, sets, synchronizations, device
//!   memory, overhead) from buffers of a bounded `pool`, read with the struct
//!   layouts of the loaded CUPTI's version (`layout`, `records`, the generated
//!   `sys`), their times put on the core clock (`clock`), and delivered to the core
//!   as device activities under their launch, allocations and frees.
//! - `state`: what the callbacks share, set once at the start.
//! - `plugin`: the start, and the final flush the core asks for at the end.
//!
//! No panic reaches CUDA (every entry point runs under `kprof_abi::guard`), and no
//! lock or allocation is taken on the launch path.

pub mod activity;
pub mod callbacks;
pub mod cupti;
pub mod layout;
pub mod names;
pub mod plugin;
pub mod pool;
pub mod records;
pub mod state;
pub mod sys;

use std::ffi::c_int;

use kprof_abi::guard::guard;

/// The CUDA driver's entry point for an injection library (`CUDA_INJECTION64_PATH`),
/// called once at `cuInit`. Returns 1: the program runs on whether or not GPU
/// activity could be measured.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    guard(1, || {
        plugin::initialize();
        1
    })
}
