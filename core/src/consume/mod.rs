//! What events become: the [`profile`] (aggregated statistics) and the timeline
//! traces ([`trace`]), and what samples of the process and the node become
//! ([`system`]).

pub mod profile;
pub mod system;
pub mod trace;
