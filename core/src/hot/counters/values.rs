//! The width of a counters reading and the reading itself, which both
//! [`crate::hot::counters`] and its PAPI calls (`papi.rs`) size their arrays by.
//! A leaf that imports nothing: `papi` takes the width from here rather than
//! from its parent, which uses `papi` (no import circle).

/// Most events counted at once (the width of a counters record and of a node's
/// totals).
pub const MAX_COUNTERS: usize = 8;

/// One reading of a thread's counters, in the order of
/// [`Counters::names`](crate::hot::counters::Counters::names).
pub type Values = [u64; MAX_COUNTERS];
