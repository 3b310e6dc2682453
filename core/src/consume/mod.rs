//! What events become: the [`profile`] (aggregated statistics), the timeline
//! traces ([`trace`]) and the [`concurrency`] view (threads per kind of work).

pub mod concurrency;
pub mod profile;
pub mod trace;
