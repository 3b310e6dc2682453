//! The core's `Activity` as both GPU plugins fill it.

use std::ffi::CStr;

use kprof_abi::{Activity, ActivityArg, Kind, ACTIVITY_ARGS};

use crate::correlation::Launch;

/// An argument slot left empty.
pub const NO_ARG: ActivityArg = ActivityArg {
    key: std::ptr::null(),
    value: 0,
};

/// A device activity of `kind` on device index `dev` (the core's, per stream),
/// from `start_ns` to `end_ns` on the core clock, under `launch` (the default: at
/// the root, no flow); the first [`ACTIVITY_ARGS`] of `args` are kept.
#[allow(clippy::too_many_arguments)]
pub fn activity(
    kind: Kind,
    direction: u8,
    dev: u16,
    name: &CStr,
    (start_ns, end_ns): (u64, u64),
    launch: Launch,
    bytes: u64,
    args: &[ActivityArg],
) -> Activity {
    let mut a = Activity {
        size: std::mem::size_of::<Activity>() as u32,
        kind: kind as u8,
        direction,
        nargs: args.len().min(ACTIVITY_ARGS) as u8,
        dev,
        name: name.as_ptr(),
        start_ns,
        end_ns,
        site: launch.site,
        flow_from: launch.api,
        bytes,
        args: [NO_ARG; ACTIVITY_ARGS],
    };
    for (d, s) in a.args.iter_mut().zip(args) {
        *d = *s;
    }
    a
}
