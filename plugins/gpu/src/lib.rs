//! What kprof's GPU activity plugins (CUDA over CUPTI, ROCm over rocprofiler-sdk)
//! share, so that each plugin is only the translation of its vendor's API: the
//! lock-free map from the vendor's correlation id to the launch ([`correlation`]),
//! the offset between the vendor's clock and the core's ([`clock`]), and readable
//! kernel names ([`names`]).

pub mod clock;
pub mod correlation;
pub mod names;
