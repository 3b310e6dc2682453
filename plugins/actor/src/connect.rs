//! Loading and attaching the core on first use, and the end of the run.
//!
//! Apart from the crate's root, which only declares the modules and installs
//! the load-time hooks: the hooks, the wrappers, the OpenSHMEM calls and the
//! functions of `kprof_actor.h` all connect here, and this module uses the
//! parts it sets going ([`crate::segments`], [`crate::dispatch`] at the end),
//! none of which imports it back.

use std::sync::Once;

use kprof_abi::CoreApi;

use crate::core_table::{self, api, mode};
use crate::say::warn;
use crate::{clock, dispatch, segments, state};

static LOAD: Once = Once::new();

/// Address of a function of this library that it does not export, to find the
/// library's own file.
fn anchor() -> usize {
    connect as *const () as usize
}

/// Loads the core runtime once and attaches to it; registers the exit flush.
fn connect() -> Option<&'static CoreApi> {
    LOAD.call_once(|| match kprof_abi::loader::load_core(anchor()) {
        Ok(api) => {
            // SAFETY: a NUL-terminated literal.
            if unsafe { (api.attach)(c"actor".as_ptr()) } {
                clock::start();
                // SAFETY: `flush` is an extern "C" function of this library,
                // which is never unloaded (preloaded).
                unsafe { (api.on_flush)(flush) };
                core_table::publish(api);
                let mut m = mode::ON;
                if state::timing() {
                    m |= mode::TIMING;
                }
                if segments::on() {
                    m |= mode::SEGMENTS;
                    register_thread(api);
                }
                core_table::set_mode(m);
            }
        }
        Err(e) => warn(&format!("{e}; the actor program runs without kprof")),
    });
    api()
}

/// Registers the calling thread with the core now, outside any phase. With
/// segments, the PE's conveyor thread (the one that loads the plugin, or makes
/// the first Conveyors call) records a switch at every Conveyors call; its
/// first event would register it (its state, buffers, a read of
/// `/proc/self/task/<tid>/comm`): 0.15 to 1 ms, tens of ms when the PE is
/// descheduled meanwhile, inside the first phase's first switch and before the
/// first slice's begin, so that the slices would miss that much of the phase.
/// Naming the thread registers it; the name is the thread's own, the one the
/// registration reads.
fn register_thread(api: &CoreApi) {
    let mut name = [0u8; 17];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL-terminated, into the
    // 17-byte buffer.
    if unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) } == 0 {
        // SAFETY: a NUL-terminated buffer that outlives the call (the core
        // copies the name).
        unsafe { (api.thread_name)(name.as_ptr().cast()) };
    }
}

/// [`mode()`](fn@core_table::mode), connecting on first use.
#[inline(always)]
pub fn mode_or_connect() -> u8 {
    match core_table::mode() {
        0 => connect_mode(),
        m => m,
    }
}

#[cold]
#[inline(never)]
fn connect_mode() -> u8 {
    connect().map_or(0, |_| core_table::mode())
}

/// The core table, connecting on first use.
#[inline(always)]
pub fn api_or_connect() -> Option<&'static CoreApi> {
    api().or_else(connect)
}

/// Called by the core once when the run ends, before it writes: delivers what
/// conveyors never freed hold, and the PE's breakdown.
unsafe extern "C" fn flush() {
    kprof_abi::guard::guard((), || {
        if let Some(api) = api() {
            dispatch::finish(api);
        }
        core_table::finalize();
    });
}
