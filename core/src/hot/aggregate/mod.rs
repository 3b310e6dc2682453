//! In-place aggregation: one thread's call-path tree ([`tree`]) with each node's
//! statistics ([`stats`]), its task graph ([`task_graph`]), and the profile that
//! holds them ([`local`]).

pub mod local;
pub mod stats;
pub mod task_graph;
pub mod tree;
