//! The CUDA plugin's settings (`libkprof_cuda.so`).

use super::setting::{Group, Kind, Setting};

/// The CUPTI library.
pub const CUPTI_LIB: Setting = Setting {
    name: "cupti-lib",
    var: "KPROF_CUPTI_LIB",
    run_flag: false,
    kind: Kind::Path,
    meta: "PATH",
    default: "libcupti.so from the loader's search, CUDA_HOME, /usr/local/cuda",
    doc: "path of libcupti.so, tried alone when set",
};

/// Activity buffers.
pub const CUDA_BUFFERS: Setting = Setting {
    name: "cuda-buffers",
    var: "KPROF_CUDA_BUFFERS",
    run_flag: false,
    kind: Kind::Count {
        min: 1,
        max: u32::MAX as u64,
        off: false,
        expected: "a whole number, 1 or more",
    },
    meta: "N",
    default: "64",
    doc: "activity buffers handed to CUPTI; beyond them records are dropped and counted",
};

/// Size of each activity buffer.
pub const CUDA_BUFFER_KB: Setting = Setting {
    name: "cuda-buffer-kb",
    var: "KPROF_CUDA_BUFFER_KB",
    run_flag: false,
    kind: Kind::Count {
        min: 1,
        max: 1 << 20,
        off: false,
        expected: "a whole number of KiB, 1 to 1048576",
    },
    meta: "KIB",
    default: "1024",
    doc: "KiB of each activity buffer",
};

/// One line per CUPTI step on stderr.
pub const CUDA_DEBUG: Setting = Setting {
    name: "cuda-debug",
    var: "KPROF_CUDA_DEBUG",
    run_flag: false,
    kind: Kind::Flag,
    meta: "0|1",
    default: "0",
    doc: "1: say on stderr what the plugin does with CUPTI",
};

/// The CUDA plugin's settings.
pub const GROUP: Group = Group {
    part: "cuda",
    settings: &[CUPTI_LIB, CUDA_BUFFERS, CUDA_BUFFER_KB, CUDA_DEBUG],
};
