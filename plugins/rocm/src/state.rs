//! What the plugin's callbacks share once the SDK is configured: the core's
//! table, the SDK's functions, the clock, the kernel symbols, and the ring of
//! launches waiting for their records. Set once by `plugin` at configure; read by
//! `callbacks` and `records`.

use std::ffi::CString;
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, OnceLock};

use kprof_abi::CoreApi;
use kprof_gpu::clock::Clock;
use kprof_gpu::correlation::Ring;
use kprof_gpu::lifecycle::Lifecycle;
use rustc_hash::FxHashMap;

use crate::sys::{Abi, Rocprofiler, Status, STATUS_SUCCESS};

/// Launches remembered for their activities (see `correlation`).
pub static RING: Ring<65536> = Ring::new();

/// Why GPU activity is off.
#[derive(Debug, thiserror::Error)]
pub enum RocmError {
    /// A function of the SDK is not in the process.
    #[error("rocprofiler-sdk function {0} not found in the process")]
    Missing(&'static str),
    /// An SDK call failed.
    #[error("{func}: {text}")]
    Call {
        /// The function.
        func: &'static str,
        /// The SDK's text for its status.
        text: String,
    },
}

/// Everything the callbacks need.
pub struct State {
    /// The core's table.
    pub api: &'static CoreApi,
    /// The SDK's functions.
    pub rp: Rocprofiler,
    /// SDK time -> core time.
    pub clock: Clock,
    /// `KPROF_ROCM_DEBUG=1`: each call and record on stderr.
    pub debug: bool,
    /// Kernel symbols by kernel id (code object callbacks, buffer thread).
    pub kernels: Mutex<FxHashMap<u64, KernelSymbol>>,
    /// GPU agents in the SDK's order: (agent handle, HIP device number).
    pub gpus: OnceLock<Vec<(u64, u32)>>,
    /// The buffer of the activity records.
    pub buffer: AtomicU64,
    /// Started, and not past the core's final flush.
    pub life: Lifecycle,
    /// SDK version as `rocprofiler_configure` gave it, for the line and metadata.
    pub version: String,
    /// The SDK's record layouts, from the version number it gave.
    pub abi: Abi,
}

/// The state, set once by `plugin` at configure (read through [`state`]).
pub static STATE: OnceLock<State> = OnceLock::new();

/// The state, once configured.
#[inline(always)]
pub fn state() -> Option<&'static State> {
    STATE.get()
}

/// The state while measuring (started, not flushed yet).
#[inline(always)]
pub fn measuring() -> Option<&'static State> {
    state().filter(|s| s.life.measuring())
}

impl State {
    /// Recalibrates the clock offset (see `kprof_gpu::clock`).
    pub fn recalibrate(&self) {
        let get = self.rp.get_timestamp;
        self.clock.calibrate_with_core(self.api, || {
            let mut t = 0u64;
            // SAFETY: an SDK clock reading with a valid out pointer.
            let rc = unsafe { get(&mut t) };
            (rc == STATUS_SUCCESS).then_some(t)
        });
    }

    /// `Ok` when the SDK call `func` returned success, else its error with the
    /// SDK's text for `rc`.
    pub fn check(&self, func: &'static str, rc: Status) -> Result<(), RocmError> {
        if rc == STATUS_SUCCESS {
            Ok(())
        } else {
            Err(RocmError::Call {
                func,
                text: self.rp.status_text(rc),
            })
        }
    }
}

/// A kernel as its code object registered it.
#[derive(Debug, Clone)]
pub struct KernelSymbol {
    /// Demangled name (without a `.kd` descriptor suffix).
    pub name: CString,
    /// Scalar registers.
    pub sgprs: u32,
    /// Vector registers (architectural).
    pub vgprs: u32,
}
