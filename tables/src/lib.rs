//! kprof's tables, read by every other crate: the runtime models kprof
//! measures ([`models`]), the settings it reads from `KPROF_*` variables
//! ([`settings`]) and the optional libraries it finds at run time
//! ([`libraries`]). The CLI's flags, its detection, its help and messages, the
//! runtime's validation, the tests' builds and the docs' checks all come from
//! here, so a model or a setting is added in one place.

pub mod libraries;
pub mod models;
pub mod nearest;
pub mod settings;
