//! How `kprof run` marks a signal it forwards to the program, so that the
//! program's side (`libkprof_signals.so`, preloaded by `kprof run`) can tell a
//! forwarded copy from one the program received directly, and deliver a signal
//! that reached both (a process-group `kill`, a batch system signalling every
//! process of a job) exactly once.
//!
//! A forwarded copy is sent with `sigqueue`; its value is [`encode`]`(origin)`,
//! where `origin` is the pid of whoever sent the signal to `kprof run`.

/// The signals `kprof run` forwards to the program (and whose copies the
/// program's side pairs).
pub const FORWARDED: [std::ffi::c_int; 6] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Environment variable holding the pid of `kprof run`, set for the program: a
/// copy queued by this pid with a value [`decode`] accepts is a forwarded one.
pub const RUN_PID_VAR: &str = kprof_tables::settings::RUN_PID;

/// A signal from one sender that reaches the program directly and through
/// `kprof run` within this many milliseconds is one signal (delivered once).
pub const WINDOW_MS: u32 = 1000;

/// `origin` when the sender is not known (no pid in the signal's information).
pub const NO_ORIGIN: u32 = u32::MAX;

/// Marks the high half of a forwarded signal's value ("kprf").
const MAGIC: u64 = 0x6b70_7266;

/// The value `kprof run` queues with a signal it forwards, first sent by `origin`.
pub fn encode(origin: u32) -> u64 {
    (MAGIC << 32) | u64::from(origin)
}

/// The origin of a forwarded signal's value; `None` for any other value.
pub fn decode(value: u64) -> Option<u32> {
    (value >> 32 == MAGIC).then_some(value as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_others_are_refused() {
        for origin in [0, 1, 4_194_304, NO_ORIGIN] {
            assert_eq!(decode(encode(origin)), Some(origin));
        }
        assert_eq!(decode(0), None);
        assert_eq!(decode(42), None);
        assert_eq!(decode(u64::MAX), None);
    }
}
