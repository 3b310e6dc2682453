//! The names a merged profile is read and written by: its schema and the
//! metadata keys of a process's clock offset. A leaf that imports nothing:
//! [`crate::reduce`]'s folding and rendering take these from here rather than
//! from their parent, which uses them (no import circle).

/// Schema of merged profiles.
pub const MERGED_SCHEMA: &str = "kprof-merged/1";

/// Metadata key of this process's clock offset to rank 0's, in ns (signed).
pub const CLOCK_OFFSET_KEY: &str = "clock offset to rank 0 (ns)";
/// Metadata key of that offset's error bound, in ns.
pub const CLOCK_ERROR_KEY: &str = "clock offset error (ns)";
