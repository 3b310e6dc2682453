//! Plain data every layer reads: settings, anomaly counters, devices, the
//! process's identity, signal masks, GPU plugins' flush callbacks, plugins' own
//! output blocks; the atomics of the concurrent protocols ([`sync`]).

pub mod anomaly;
pub mod category;
pub mod config;
pub mod counter_kinds;
pub mod devices;
pub mod extensions;
pub mod flush;
pub mod process;
pub mod signals;
pub mod sync;
