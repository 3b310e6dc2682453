//! The HClib-Actor / Conveyors plugin's settings (`libkprof_actor.so`).

use super::setting::{Group, Kind, Setting};

/// The MAIN/PROC/COMM breakdown.
pub const ACTOR_BREAKDOWN: Setting = Setting {
    name: "actor-breakdown",
    var: "KPROF_ACTOR_BREAKDOWN",
    run_flag: false,
    kind: Kind::Flag,
    meta: "0|1",
    default: "1",
    doc: "the MAIN/PROC/COMM breakdown; 0 counts messages only and reads no clock per call",
};

/// Hooking Conveyors' entries at load time.
pub const ACTOR_HOOK: Setting = Setting {
    name: "actor-hook",
    var: "KPROF_ACTOR_HOOK",
    run_flag: false,
    kind: Kind::Flag,
    meta: "0|1",
    default: "1",
    doc: "hook Conveyors' entries at load time (x86-64) when the program was not linked with kprof's wrappers; 0: do not",
};

/// Segments as instances of the call tree.
pub const ACTOR_SEGMENTS: Setting = Setting {
    name: "actor-segments",
    var: "KPROF_ACTOR_SEGMENTS",
    run_flag: false,
    kind: Kind::Flag,
    meta: "0|1",
    default: "1 with a trace or counters, else 0",
    doc: "MAIN/PROC/COMM segments as instances (in traces, with counters)",
};

/// The sampling interval of the per-peer tracks.
pub const ACTOR_PEER_US: Setting = Setting {
    name: "actor-peer-us",
    var: "KPROF_ACTOR_PEER_US",
    run_flag: false,
    kind: Kind::Count {
        min: 0,
        max: u64::MAX / 1000,
        off: false,
        expected: "microseconds, 0 (no tracks) or more",
    },
    meta: "US",
    default: "1000",
    doc: "microseconds between samples of the per-peer message tracks of a trace; 0: no tracks",
};

/// The actor plugin's settings.
pub const GROUP: Group = Group {
    part: "actor",
    settings: &[ACTOR_BREAKDOWN, ACTOR_HOOK, ACTOR_SEGMENTS, ACTOR_PEER_US],
};
