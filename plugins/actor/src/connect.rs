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
                }
                core_table::set_mode(m);
            }
        }
        Err(e) => warn(&format!("{e}; the actor program runs without kprof")),
    });
    api()
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
