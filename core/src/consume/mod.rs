//! What events become: the [`profile`] (aggregated statistics) and the timeline
//! traces ([`trace`]).

pub mod profile;
pub mod trace;
