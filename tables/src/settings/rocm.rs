//! The ROCm plugin's settings (`libkprof_rocm.so`).

use super::setting::{Group, Kind, Setting};

/// Size of rocprofiler-sdk's record buffer.
pub const ROCM_BUFFER_KB: Setting = Setting {
    name: "rocm-buffer-kb",
    var: "KPROF_ROCM_BUFFER_KB",
    run_flag: false,
    kind: Kind::Count {
        min: 1,
        max: 1 << 30,
        off: false,
        expected: "a whole number of KiB, 1 or more",
    },
    meta: "KIB",
    default: "1024",
    doc: "KiB of the SDK's record buffer: records are delivered at 7/8 of it and dropped (counted) beyond it",
};

/// One line per rocprofiler-sdk step on stderr.
pub const ROCM_DEBUG: Setting = Setting {
    name: "rocm-debug",
    var: "KPROF_ROCM_DEBUG",
    run_flag: false,
    kind: Kind::Flag,
    meta: "0|1",
    default: "0",
    doc: "1: say on stderr what the plugin does with rocprofiler-sdk",
};

/// The ROCm plugin's settings.
pub const GROUP: Group = Group {
    part: "hip",
    settings: &[ROCM_BUFFER_KB, ROCM_DEBUG],
};
