//! Reducing the profiles of a job's processes (MPI ranks) to one, by plain
//! functions that know nothing of MPI: a process's report becomes a compact,
//! reducible form ([`fold::from_report`], [`form::JobProfile`], encoded with
//! protobuf); two forms fold into one ([`fold::Fold::fold`]: call paths unified by
//! name path, sums, minima and maxima with who holds them, sums of squares,
//! message rows); the result renders as the merged profile
//! ([`render::render`], schema [`MERGED_SCHEMA`]). `kprof merge` folds rank
//! directories one at a time; the MPI plugin folds the ranks' forms along a tree
//! over MPI at `MPI_Finalize` ([`crate::control::job`]). Folding is associative and
//! commutative, so both give the same profile.

pub mod fold;
pub mod form;
pub mod render;
mod schema;
pub mod summary;

pub use fold::{from_report, Fold, FormError};
pub use render::render;
// Defined in a leaf that `fold` and `render` use too; kept at their old paths here.
pub use schema::{CLOCK_ERROR_KEY, CLOCK_OFFSET_KEY, MERGED_SCHEMA};
