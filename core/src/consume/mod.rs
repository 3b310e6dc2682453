//! What events become: the [`profile`] (aggregated statistics), the timeline
//! traces ([`trace`]) and the [`concurrency`] view (threads per kind of work), and
//! what samples of the process and the node become ([`system`]).

pub mod concurrency;
pub mod profile;
pub mod system;
pub mod trace;
