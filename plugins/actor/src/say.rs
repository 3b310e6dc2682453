//! What the plugin says on stderr: one `kprof: ` line per message.
//!
//! A leaf: [`crate::connect`] and the load-time hooks ([`crate::hook`]) both
//! say things, and this module imports nothing of the crate.

/// Writes `msg` on one line of stderr, after `kprof: ` (a failed write is
/// ignored: there is nowhere else to say it).
pub fn warn(msg: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "kprof: {msg}");
}
