//! What the plugin says on stderr: one `kprof: ` line per message.
//!
//! A leaf: the crate root, [`timing`](crate::timing) and the tuning callbacks
//! all say things, and this module imports nothing of the crate, so none of
//! them imports the root for it.

/// Writes `msg` on one line of stderr, after `kprof: ` (a failed write is
/// ignored: there is nowhere else to say it).
pub fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}
