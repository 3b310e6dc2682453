//! The optional libraries: those kprof finds at run time and never links, with
//! the file names tried for each, in order. The runtime's and the plugins'
//! loaders try these names, and `kprof --version` says which of them the
//! loader finds now, so what it prints is what a run would load.

use crate::settings::{self, Setting};

/// An optional library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Library {
    /// Its word in `kprof --version` (`otf2`, `papi`, ...).
    pub name: &'static str,
    /// What kprof does with it, for sentences.
    pub what: &'static str,
    /// The file names the loader is asked for, in order.
    pub names: &'static [&'static str],
    /// The setting that names the file instead, if there is one.
    pub setting: Option<&'static Setting>,
}

/// OTF2 3.x, for `KPROF_TRACE=otf2`: Debian's runtime package's names first,
/// then upstream's.
pub const OTF2: Library = Library {
    name: "otf2",
    what: "OTF2 traces",
    names: &[
        "libopen-trace-format2.so.10",
        "libotf2.so.10",
        "libopen-trace-format2.so",
        "libotf2.so",
    ],
    setting: Some(&settings::core::OTF2_LIB),
};

/// PAPI 6 or 7, for `KPROF_COUNTERS`: the development link first, then the
/// runtime packages' names (Debian's libpapi7.x).
pub const PAPI: Library = Library {
    name: "papi",
    what: "hardware counters",
    names: &[
        "libpapi.so",
        "libpapi.so.7.1",
        "libpapi.so.7.0",
        "libpapi.so.7",
    ],
    setting: Some(&settings::core::PAPI_LIB),
};

/// CUPTI (CUDA 12 and 13), for the CUDA plugin. The plugin also tries the
/// toolkit's `extras/CUPTI/lib64` after these.
pub const CUPTI: Library = Library {
    name: "cuda",
    what: "NVIDIA GPU activity (CUPTI)",
    names: &["libcupti.so", "libcupti.so.13", "libcupti.so.12"],
    setting: Some(&settings::cuda::CUPTI_LIB),
};

/// rocprofiler-sdk, for the ROCm plugin: the plugin looks for these among the
/// libraries already in the program (the HIP runtime loads the SDK).
pub const ROCPROFILER_SDK: Library = Library {
    name: "rocm",
    what: "AMD GPU activity (rocprofiler-sdk)",
    names: &[
        "librocprofiler-sdk.so",
        "librocprofiler-sdk.so.1",
        "librocprofiler-sdk.so.0",
    ],
    setting: None,
};

/// Open MPI 4.x and 5.x's C library: the MPI plugin's first family.
pub const OPEN_MPI: Library = Library {
    name: "open-mpi",
    what: "MPI (Open MPI)",
    names: &["libmpi.so.40"],
    setting: None,
};

/// MPICH 3.x and 4.x's C library: the MPI plugin's second family (its ABI is
/// the one Intel MPI, MVAPICH and Cray MPICH share).
pub const MPICH: Library = Library {
    name: "mpich",
    what: "MPI (MPICH)",
    names: &["libmpich.so.12"],
    setting: None,
};

/// Every optional library, in `kprof --version`'s order.
pub const OPTIONAL: [&Library; 6] = [&OTF2, &PAPI, &OPEN_MPI, &MPICH, &CUPTI, &ROCPROFILER_SDK];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_shared_libraries() {
        for (i, a) in OPTIONAL.iter().enumerate() {
            for b in &OPTIONAL[i + 1..] {
                assert_ne!(a.name, b.name);
            }
            assert!(!a.names.is_empty());
            for n in a.names {
                assert!(n.starts_with("lib") && n.contains(".so"), "{n}");
            }
        }
    }
}
