//! The RAJA plugin's settings (`libkprof_raja.so`).

use super::setting::{Group, Kind, Setting};

/// Whether kernels are captured (timed with RAJA's capture callbacks).
pub const RAJA_CAPTURE: Setting = Setting {
    name: "raja-capture",
    var: "KPROF_RAJA_CAPTURE",
    run_flag: false,
    kind: Kind::Flag,
    meta: "0|1",
    default: "0",
    doc: "1: time RAJA's kernel captures (preCapture to postCapture) as well",
};

/// The RAJA plugin's settings.
pub const GROUP: Group = Group {
    part: "raja",
    settings: &[RAJA_CAPTURE],
};
