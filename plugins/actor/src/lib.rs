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
mod connect;
mod core_table;
pub mod dispatch;
pub mod hook;
pub mod peers;
pub mod porter;
mod say;
pub mod segments;
pub mod shmem;
mod shmem_counts;
pub mod state;
pub mod wrap;

/// The library's constructor: installs the load-time hooks ([`hook`]) before
/// the program's `main`.
#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

extern "C" fn constructor() {
    kprof_abi::guard::guard((), hook::install);
}
