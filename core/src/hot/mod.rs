//! The hot path, run on the application's threads inside the runtimes' callbacks:
//! no lock, no allocation, no system call per event. [`events`] takes a timestamp
//! ([`clock`]) and either adds the event to the thread's own profile
//! ([`aggregate`]) or appends a [`record`] to the thread's chunk ([`thread`],
//! [`buffer`], [`arena`]). [`nesting`] holds the event vocabulary and the rules
//! that keep begins and ends nested; [`runtime`] the state of the one runtime.

pub mod aggregate;
pub mod arena;
pub mod buffer;
pub mod clock;
pub mod counters;
pub mod events;
pub mod intern;
pub mod nesting;
pub mod record;
pub mod runtime;
pub mod thread;
pub mod tls;
