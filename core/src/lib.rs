//! kprof-core: the measurement runtime of kprof.
//!
//! One instance per process, built as `libkprof_core.so` and shared by every plugin
//! through the C table of [`kprof_abi`] (see [`control::ffi::kprof_core_api`]).
//!
//! The folders are the layers of the data path, and imports go one way, from the
//! end of the path down to its start (a layer uses only the layers below it;
//! `tests/layers.rs` checks it):
//!
//! - [`control`]: starting and ending the runtime (first attach, finalize, exit,
//!   signals, fork) and the C table the plugins call;
//! - [`collect`]: the writer thread, which decodes records ([`collect::resolve`]),
//!   names code addresses and, at the end, merges and writes everything;
//! - [`consume`]: what events become: the [`consume::profile`] and the traces
//!   ([`consume::trace`]);
//! - [`reduce`]: a job's processes as one profile (beside [`consume`]: neither
//!   uses the other);
//! - [`output`]: the report model, the files, the summary;
//! - [`hot`]: the hot path, on the application's threads: the clock, the thread
//!   state, records and buffers, the nesting rules, and the in-place aggregation
//!   into each thread's own profile ([`hot::aggregate`]);
//! - [`base`]: plain data every layer reads: settings, anomaly counters, devices,
//!   the process, signal masks.
//!
//! Without a trace, an event goes plugin -> [`hot::events`] -> the thread's
//! in-place profile ([`hot::aggregate`]), and the writer merges the threads' profiles at the
//! end; with a trace, [`hot::events`] appends a [`hot::record`] to the thread's
//! [`hot::buffer`] chunk, and the writer feeds the decoded events to the profile
//! and the trace writers as the run goes.

pub mod base;
pub mod collect;
pub mod consume;
pub mod control;
pub mod hot;
pub mod output;
pub mod reduce;
