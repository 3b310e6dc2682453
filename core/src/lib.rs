//! kprof-core: the measurement runtime of kprof.
//!
//! One instance per process, built as `libkprof_core.so` and shared by every plugin
//! through the C table of [`kprof_abi`] (see [`ffi::kprof_core_api`]). The data path:
//! a plugin callback calls [`events`], which timestamps ([`clock`]) and appends a
//! [`record`] to the calling thread's chunk ([`thread`], [`buffer`]); full chunks go
//! to the [`writer`] thread, which resolves each thread's stream ([`resolve`]) and
//! feeds the [`profile`]; at shutdown ([`runtime`], [`lifecycle`]) the [`output`]
//! module writes `profile.json`, `profile.csv` and the [`summary`].

pub mod anomaly;
pub mod arena;
pub mod buffer;
pub mod clock;
pub mod config;
pub mod csv_out;
pub mod devices;
pub mod events;
pub mod ffi;
pub mod flat;
pub mod in_place;
pub mod intern;
pub mod lifecycle;
pub mod output;
pub mod process;
pub mod profile;
pub mod record;
pub mod report;
pub mod resolve;
pub mod runtime;
pub mod summary;
pub mod symbolize;
pub mod thread;
pub mod tls;
pub mod trace;
pub mod writer;
