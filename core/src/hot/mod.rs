//! The hot path, run on the application's threads inside the runtimes' callbacks:
//! no lock, no allocation, no system call per event. [`events`] takes a timestamp
//! ([`clock`]) and either adds the event to the thread's own profile
//! ([`aggregate`]) or appends a [`record`] to the thread's chunk ([`thread`],
//! [`buffer`], [`arena`]); [`current`] enters the calling thread ([`tls`]) for
//! each event. [`nesting`] holds the event vocabulary and the rules that keep
//! begins and ends nested; [`open`] the GUIDs and the open instances threads
//! publish for each other; [`runtime`] the state of the one runtime, whose
//! start and end follow [`lifecycle`]; [`quiesce`] how the end of the run waits
//! for events in progress; [`stack_samples`] the call-stack samples a timer
//! signal takes on each thread, unwound with the modules' data [`unwind`]
//! prepares, within the stack bounds [`mappings`] gives threads kprof found
//! without their reaching it.
//!
//! The modules' imports form no circle (`core/tests/layers`): what a thread's
//! state and profile need of the runtime is handed to them as data when they
//! are made ([`thread::Sink`], [`aggregate::local::Shared`]).

pub mod aggregate;
pub mod arena;
pub mod buffer;
pub mod clock;
pub mod counters;
pub mod current;
pub mod events;
pub mod intern;
pub mod lifecycle;
pub mod mappings;
pub mod nesting;
pub mod open;
pub mod quiesce;
pub mod record;
pub mod runtime;
pub mod stack_samples;
pub mod thread;
pub mod tls;
#[cfg(target_arch = "x86_64")]
pub mod unwind;
