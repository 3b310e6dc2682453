//! The Kokkos plugin's settings (`libkprof.so`).

use super::setting::{Group, Kind, Setting};

/// Whether kprof tunes Kokkos' tuning variables.
pub const TUNE: Setting = Setting {
    name: "tune",
    var: "KPROF_TUNE",
    run_flag: false,
    kind: Kind::Flag,
    meta: "0|1",
    default: "0",
    doc: "1: kprof tunes Kokkos' tuning variables (environment only)",
};

/// The file of converged tuning values.
pub const TUNING_CACHE: Setting = Setting {
    name: "tuning-cache",
    var: "KPROF_TUNING_CACHE",
    run_flag: false,
    kind: Kind::Path,
    meta: "FILE",
    default: "none",
    doc: "file of converged tuning values, read at start, written at exit",
};

/// The Kokkos plugin's settings.
pub const GROUP: Group = Group {
    part: "kokkos",
    settings: &[TUNE, TUNING_CACHE],
};
