//! Plain data every layer reads: settings, anomaly counters, devices, the
//! process's identity, signal masks.

pub mod anomaly;
pub mod config;
pub mod devices;
pub mod process;
pub mod signals;
