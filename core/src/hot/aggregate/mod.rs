//! In-place aggregation: without a trace, a thread's nested events never become
//! records. The thread keeps its open instances as frames of its own profile
//! ([`local::ThreadProfile`], repaired by the same nesting rules as the writer's)
//! and adds each instance to its node as it ends: nothing grows with the number
//! of events, and the writer has nothing to do until the end, when it merges the
//! threads' profiles. The writer builds the same per-thread profiles from records
//! when a trace is on.
//!
//! The parts: one thread's call-path tree ([`tree`]) with each node's statistics
//! ([`stats`]), its task graph ([`task_graph`]), its devices' busy time
//! ([`busy`]), and the profile that holds them ([`local`]).

pub mod busy;
pub mod local;
pub mod samples;
pub mod series;
pub mod stats;
pub mod task_graph;
pub mod tree;
