//! Starting and ending the runtime ([`start`]), the process hooks that end it
//! however the process ends ([`hooks`]: exit, signals, fork), and the C table the
//! plugins call ([`ffi`]).

pub mod ffi;
pub mod hooks;
pub mod job;
pub mod start;
