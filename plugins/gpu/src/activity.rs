//! A vendor's device record delivered to the core as both GPU plugins do it:
//! its times on the core clock, under the launch its correlation id names, as
//! the core's `Activity`.

use std::ffi::CStr;

use kprof_abi::{Activity, ActivityArg, Anomaly, CoreApi, Kind, ACTIVITY_ARGS};

use crate::clock::Clock;
use crate::correlation::{Launch, Ring};

/// An argument slot left empty.
pub const NO_ARG: ActivityArg = ActivityArg {
    key: std::ptr::null(),
    value: 0,
};

/// A device activity of `kind` on device index `dev` (the core's, per stream),
/// from `start_ns` to `end_ns` on the core clock, under `launch` (the default: at
/// the root, no flow); the first [`ACTIVITY_ARGS`] of `args` are kept.
#[allow(clippy::too_many_arguments)]
fn activity(
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

/// Copies `pairs` into `args` (as many as fit); returns how many.
pub fn fill(args: &mut [ActivityArg; ACTIVITY_ARGS], pairs: &[(&'static CStr, u64)]) -> usize {
    let n = pairs.len().min(ACTIVITY_ARGS);
    for (d, (k, v)) in args.iter_mut().zip(pairs) {
        *d = ActivityArg {
            key: k.as_ptr(),
            value: *v,
        };
    }
    n
}

/// One vendor record of device work, as the plugin read it.
pub struct Record<'a> {
    /// What it is.
    pub kind: Kind,
    /// For copies, one of `kprof_abi::direction`.
    pub direction: u8,
    /// The core's device index of its device and stream.
    pub dev: u16,
    /// Its name.
    pub name: &'a CStr,
    /// Start and end on the vendor's clock.
    pub times: (u64, u64),
    /// The vendor's correlation id of the call that launched it.
    pub correlation: u32,
    /// Bytes moved or set.
    pub bytes: u64,
    /// Its arguments.
    pub args: &'a [ActivityArg],
}

/// What became of a delivered record (for the plugin's own counts and debug
/// lines; the core counted the anomalies).
pub enum Delivery {
    /// Its times could not be converted or end before they start: not delivered.
    BadTime,
    /// Delivered, from `start_ns` to `end_ns` on the core clock, under `launch`
    /// (None: its correlation id was unknown; it went to the profile's root).
    Delivered {
        /// Its launch.
        launch: Option<Launch>,
        /// Start on the core clock.
        start_ns: u64,
        /// End on the core clock.
        end_ns: u64,
    },
}

/// Delivers `r` to the core: times converted with `clock`, placed under the
/// launch `ring` holds for its correlation id. Unusable times
/// (`device_time_invalid`) and unknown ids (`device_unknown_correlation`) are
/// counted as anomalies.
pub fn deliver<const N: usize>(
    api: &CoreApi,
    clock: &Clock,
    ring: &Ring<N>,
    r: &Record<'_>,
) -> Delivery {
    let times = (clock.to_core(r.times.0), clock.to_core(r.times.1));
    let (Some(start), Some(end)) = times else {
        // SAFETY: a function of the core's table.
        unsafe { (api.anomaly)(Anomaly::DeviceTimeInvalid as u32) };
        return Delivery::BadTime;
    };
    if end < start {
        // SAFETY: as above.
        unsafe { (api.anomaly)(Anomaly::DeviceTimeInvalid as u32) };
        return Delivery::BadTime;
    }
    let launch = ring.get(r.correlation);
    if launch.is_none() {
        // SAFETY: as above.
        unsafe { (api.anomaly)(Anomaly::UnknownCorrelation as u32) };
    }
    let a = activity(
        r.kind,
        r.direction,
        r.dev,
        r.name,
        (start, end),
        launch.unwrap_or_default(),
        r.bytes,
        r.args,
    );
    // SAFETY: a function of the core's table; the activity and its strings live
    // across the call (the core copies the name).
    unsafe { (api.activity)(&a) };
    Delivery::Delivered {
        launch,
        start_ns: start,
        end_ns: end,
    }
}
