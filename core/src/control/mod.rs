//! Starting and ending the runtime ([`start`]), the process hooks that end it
//! however the process ends ([`hooks`]: exit, signals, fork), the C table the
//! plugins call ([`ffi`]), and the applications' policy API ([`policy`]).

pub mod ffi;
pub mod hooks;
pub mod job;
pub mod policy;
pub mod start;
