//! The sort keys of `report` and of the job's report: a leaf, so the report's
//! modules share them without importing the command line's root.

use clap::ValueEnum;

/// Sort keys of `report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SortKey {
    /// Exclusive time.
    #[value(name = "self")]
    SelfTime,
    /// Inclusive time.
    Total,
    /// Instances.
    Count,
}
