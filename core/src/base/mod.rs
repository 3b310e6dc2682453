//! Plain data every layer reads: settings, anomaly counters, devices, the
//! process's identity, signal masks, GPU plugins' flush callbacks.

pub mod anomaly;
pub mod config;
pub mod devices;
pub mod flush;
pub mod process;
pub mod signals;
