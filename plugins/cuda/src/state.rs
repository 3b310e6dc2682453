//! What the plugin's callbacks share once CUPTI is loaded: the core's table,
//! CUPTI's functions, the record layout, the clock, the buffer pool, and the ring
//! of launches waiting for their activities. Set once by `plugin` at the start;
//! read by `callbacks` (on every CUDA call) and `activity` (on every buffer).

use std::sync::OnceLock;

use kprof_abi::CoreApi;
use kprof_gpu::clock::Clock;
use kprof_gpu::correlation::Ring;
use kprof_gpu::lifecycle::Lifecycle;

use crate::layout::Layout;
use crate::pool::Pool;
use crate::sys::cuda12::{self as c, Cupti};

/// Launches remembered for their activities (2 MiB; see `correlation`).
pub static RING: Ring<65536> = Ring::new();

/// Everything the callbacks need, set once CUPTI is loaded.
pub struct State {
    /// The core's table.
    pub api: &'static CoreApi,
    /// CUPTI's functions.
    pub cupti: Cupti,
    /// The record structs this CUPTI writes.
    pub layout: Layout,
    /// CUPTI time -> core time.
    pub clock: Clock,
    /// Buffers for CUPTI.
    pub pool: Pool,
    /// `KPROF_CUDA_DEBUG=1`: each record on stderr as it is translated.
    pub debug: bool,
    /// Started, and not past the final flush.
    pub life: Lifecycle,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The state, once CUPTI is loaded.
#[inline(always)]
pub fn state() -> Option<&'static State> {
    STATE.get()
}

/// The state while measuring (active, not flushed yet).
#[inline(always)]
pub fn measuring() -> Option<&'static State> {
    state().filter(|s| s.life.measuring())
}

impl State {
    /// The state of a CUPTI just loaded, not measuring yet; set once per process
    /// (a second start gets the first state).
    pub fn set(
        api: &'static CoreApi,
        cupti: Cupti,
        layout: Layout,
        pool: Pool,
        debug: bool,
    ) -> &'static State {
        STATE.get_or_init(|| State {
            api,
            cupti,
            layout,
            clock: Clock::default(),
            pool,
            debug,
            life: Lifecycle::new(),
        })
    }

    /// Recalibrates the clock offset (see `kprof_gpu::clock`).
    pub fn recalibrate(&self) {
        let get = self.cupti.cuptiGetTimestamp;
        self.clock.calibrate_with_core(self.api, || {
            let mut t = 0u64;
            // SAFETY: a CUPTI clock reading with a valid out pointer.
            let rc = unsafe { get(&mut t) };
            (rc == c::CUPTI_SUCCESS).then_some(t)
        });
    }
}
