//! What kprof's GPU activity plugins (CUDA over CUPTI, ROCm over rocprofiler-sdk)
//! share, so that each plugin is only the translation of its vendor's API: the
//! lock-free map from the vendor's correlation id to the launch ([`correlation`]),
//! the offset between the vendor's clock and the core's ([`clock`]), readable
//! kernel names ([`names`]), and whether the plugin measures ([`lifecycle`]).

/// One line on stderr for a plugin's debug setting (`KPROF_CUDA_DEBUG`,
/// `KPROF_ROCM_DEBUG`), ignoring write errors (eprintln! would panic on a closed
/// stderr).
#[macro_export]
macro_rules! debug_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod activity;
pub mod clock;
pub mod correlation;
pub mod lifecycle;
pub mod names;
