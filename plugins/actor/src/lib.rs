//! `libkprof_actor.so`: kprof's HClib-Actor / Conveyors plugin.
//!
//! FA-BSP programs (HClib-Actor selectors on OpenSHMEM PEs) send small logical
//! messages that bale's Conveyors library aggregates into buffers. This plugin
//! measures, per PE and per conveyor (a selector's mailbox), in place and
//! without a record per message:
//!
//! - the **logical** matrix: `convey_push` calls that returned `convey_OK`
//!   (count and bytes per destination PE; a full buffer returns FAIL and is
//!   retried, so the calls are not the messages) and OK `convey_pull`s per
//!   source;
//! - the **physical** matrix of Conveyors' remote path: the non-blocking puts
//!   (`shmem_putmem_nbi`) Conveyors issues, per destination PE; of its local
//!   path, the buffers the porter's `local_send` copies (hooked, [`hook`]); and
//!   the signals the remote porter's `nonblock_progress` puts after completing
//!   its puts (hooked), with its calls and completions;
//! - the **MAIN / PROC / COMM** breakdown: COMM is the time inside Conveyors'
//!   entries and inside OpenSHMEM calls, PROC the time from an OK pull to the
//!   next Conveyors call (the message handler), MAIN the rest of the actor
//!   phase (from the first `convey_begin` to the last `convey_free`).
//!
//! Conveyors is a static library inside the executable, so its entries are
//! reached by load-time hooks of the executable's own entries ([`hook`],
//! x86-64), by link-time wrappers ([`wrap`], `ffi-headers/kprof_actor_wrap.c`)
//! or through the functions of `ffi-headers/kprof_actor.h` ([`mod@api`]);
//! OpenSHMEM through its profiling interface ([`shmem`]: every `shmem_*` is a
//! weak alias of `pshmem_*`, so this preloaded library's `shmem_*` come first
//! and forward to `pshmem_*`).
//!
//! The results go through the core's existing paths: message rows are
//! [`Kind::Message`](kprof_abi::Kind::Message) instants (channel `conveyor <n> logical`, `conveyor <n>
//! physical remote`, `conveyor <n> physical local`, `conveyor <n> physical
//! progress`, `actor direct`, `openshmem put`) emitted when a conveyor is
//! freed (and at exit for conveyors never freed); the breakdown is metadata
//! (`actor.main_ns`, `actor.conveyor.<n>.proc_ns`, ...). Conveyors are driven by
//! one thread per PE (a bale conveyor is not thread-safe either): the counters
//! are atomics updated with plain loads and stores, no locked instruction.

pub mod api;
pub mod clock;
pub mod dispatch;
pub mod hook;
pub mod peers;
pub mod porter;
pub mod segments;
pub mod shmem;
pub mod state;
pub mod wrap;

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use std::sync::Once;

use kprof_abi::CoreApi;

/// The library's constructor: installs the load-time hooks ([`hook`]) before
/// the program's `main`.
#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

extern "C" fn constructor() {
    kprof_abi::guard::guard((), hook::install);
}

static CORE: AtomicPtr<CoreApi> = AtomicPtr::new(std::ptr::null_mut());
static LOAD: Once = Once::new();
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// What is measured, as [`MODE`] holds it: one load tells a hook whether kprof
/// is attached and what to do.
pub mod mode {
    /// Attached (the core table is there): count.
    pub const ON: u8 = 1;
    /// The MAIN/PROC/COMM breakdown ([`crate::state::timing`]).
    pub const TIMING: u8 = 2;
    /// Segments are core instances ([`crate::segments::on`]).
    pub const SEGMENTS: u8 = 4;
}

/// [`mod@mode`] bits, set once attached; 0 before and after the run.
static MODE: AtomicU8 = AtomicU8::new(0);

fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}

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
                CORE.store(api as *const CoreApi as *mut CoreApi, Ordering::Release);
                let mut m = mode::ON;
                if state::timing() {
                    m |= mode::TIMING;
                }
                if segments::on() {
                    m |= mode::SEGMENTS;
                }
                MODE.store(m, Ordering::Release);
            }
        }
        Err(e) => warn(&format!("{e}; the actor program runs without kprof")),
    });
    api()
}

/// The core table, once attached (None when kprof is disabled or after the end).
#[inline(always)]
fn api() -> Option<&'static CoreApi> {
    if FINALIZED.load(Ordering::Relaxed) {
        return None;
    }
    // SAFETY: CORE holds null or a pointer to the core's static table.
    unsafe { CORE.load(Ordering::Acquire).as_ref() }
}

/// What to measure ([`mod@mode`] bits; 0: nothing, kprof is not attached).
#[inline(always)]
fn mode() -> u8 {
    MODE.load(Ordering::Relaxed)
}

/// [`mode()`], connecting on first use.
#[inline(always)]
fn mode_or_connect() -> u8 {
    match mode() {
        0 => connect_mode(),
        m => m,
    }
}

#[cold]
#[inline(never)]
fn connect_mode() -> u8 {
    connect().map_or(0, |_| mode())
}

/// The core table, connecting on first use.
#[inline(always)]
fn api_or_connect() -> Option<&'static CoreApi> {
    api().or_else(connect)
}

/// Called by the core once when the run ends, before it writes: delivers what
/// conveyors never freed hold, and the PE's breakdown.
unsafe extern "C" fn flush() {
    kprof_abi::guard::guard((), || {
        if let Some(api) = api() {
            dispatch::finish(api);
        }
        MODE.store(0, Ordering::Relaxed);
        FINALIZED.store(true, Ordering::Relaxed);
    });
}
