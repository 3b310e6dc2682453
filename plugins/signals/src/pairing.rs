//! Pairing the two copies of one signal: the one the program received directly
//! and the one `kprof run` forwarded, in whichever order they arrive.
//!
//! Each signal keeps its last unpaired arrival in one atomic word (how it came,
//! who sent it, when), updated by compare-and-swap: async-signal-safe, and right
//! when two threads take the two copies at the same moment.

use std::sync::atomic::{AtomicU64, Ordering};

use kprof_abi::forward::NO_ORIGIN;

const VALID: u64 = 1 << 63;
const FORWARDED: u64 = 1 << 62;
/// Bits kept of a sender's pid (Linux pids are below 2^22).
const ORIGIN_MASK: u64 = (1 << 30) - 1;

/// One arrival of a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Forwarded by `kprof run` (rather than sent to the program directly).
    pub forwarded: bool,
    /// Pid of the sender (of the sender to `kprof run` for a forwarded copy), or
    /// [`NO_ORIGIN`].
    pub origin: u32,
    /// Monotonic milliseconds, wrapping.
    pub ms: u32,
}

fn pack(a: Arrival) -> u64 {
    let origin = if a.origin == NO_ORIGIN {
        ORIGIN_MASK
    } else {
        u64::from(a.origin) & ORIGIN_MASK
    };
    VALID | if a.forwarded { FORWARDED } else { 0 } | (origin << 32) | u64::from(a.ms)
}

fn unpack(v: u64) -> Option<Arrival> {
    if v & VALID == 0 {
        return None;
    }
    let origin = (v >> 32) & ORIGIN_MASK;
    Some(Arrival {
        forwarded: v & FORWARDED != 0,
        origin: if origin == ORIGIN_MASK {
            NO_ORIGIN
        } else {
            origin as u32
        },
        ms: v as u32,
    })
}

/// Whether `b` is the other copy of `a`: one came directly and one through
/// `kprof run`, from the same known sender, within `window_ms` of each other
/// (either order: two threads may read the clock in one order and record in the
/// other).
fn pairs(a: Arrival, b: Arrival, window_ms: u32) -> bool {
    let apart = a.ms.wrapping_sub(b.ms);
    a.forwarded != b.forwarded
        && a.origin == b.origin
        && a.origin != NO_ORIGIN
        && (apart < window_ms || apart.wrapping_neg() < window_ms)
}

/// The last unpaired arrival of one signal.
pub struct Last(AtomicU64);

impl Last {
    /// No arrival yet.
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Whether `a` is the second copy of a signal already delivered; then the two
    /// are paired and forgotten. Otherwise `a` is recorded as the last arrival
    /// (to be delivered).
    pub fn is_second_copy(&self, a: Arrival, window_ms: u32) -> bool {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            let second = unpack(cur).is_some_and(|b| pairs(a, b, window_ms));
            let next = if second { 0 } else { pack(a) };
            match self
                .0
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return second,
                Err(now) => cur = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(forwarded: bool, origin: u32, ms: u32) -> Arrival {
        Arrival {
            forwarded,
            origin,
            ms,
        }
    }

    #[test]
    fn packing_round_trips() {
        for a in [
            arrival(true, 1, 0),
            arrival(false, 4_194_303, u32::MAX),
            arrival(true, NO_ORIGIN, 77),
            arrival(false, 0, 5),
        ] {
            assert_eq!(unpack(pack(a)), Some(a));
        }
        assert_eq!(unpack(0), None);
    }

    #[test]
    fn a_direct_and_a_forwarded_copy_from_one_sender_are_one_signal() {
        // Direct first, then forwarded; and the other way round.
        for first in [false, true] {
            let last = Last::new();
            assert!(!last.is_second_copy(arrival(first, 100, 10), 1000));
            assert!(last.is_second_copy(arrival(!first, 100, 12), 1000));
            // Paired and forgotten: the next one is a new signal.
            assert!(!last.is_second_copy(arrival(!first, 100, 13), 1000));
        }
    }

    #[test]
    fn genuine_repeats_are_all_delivered() {
        let last = Last::new();
        // Two sent to kprof run only, two to the program only.
        assert!(!last.is_second_copy(arrival(true, 100, 10), 1000));
        assert!(!last.is_second_copy(arrival(true, 100, 11), 1000));
        let last = Last::new();
        assert!(!last.is_second_copy(arrival(false, 100, 10), 1000));
        assert!(!last.is_second_copy(arrival(false, 100, 11), 1000));
        // Other senders, unknown senders, or too far apart.
        let last = Last::new();
        assert!(!last.is_second_copy(arrival(false, 100, 10), 1000));
        assert!(!last.is_second_copy(arrival(true, 101, 11), 1000));
        let last = Last::new();
        assert!(!last.is_second_copy(arrival(false, NO_ORIGIN, 10), 1000));
        assert!(!last.is_second_copy(arrival(true, NO_ORIGIN, 11), 1000));
        let last = Last::new();
        assert!(!last.is_second_copy(arrival(false, 100, 10), 1000));
        assert!(!last.is_second_copy(arrival(true, 100, 1010), 1000));
    }

    #[test]
    fn clock_read_out_of_order_and_wrapping_still_pair() {
        let last = Last::new();
        assert!(!last.is_second_copy(arrival(false, 7, 20), 1000));
        assert!(last.is_second_copy(arrival(true, 7, 19), 1000));
        let last = Last::new();
        assert!(!last.is_second_copy(arrival(true, 7, u32::MAX - 1), 1000));
        assert!(last.is_second_copy(arrival(false, 7, 3), 1000));
    }

    #[test]
    fn two_threads_taking_the_two_copies_deliver_exactly_one() {
        for _ in 0..2000 {
            let last = std::sync::Arc::new(Last::new());
            let threads: Vec<_> = [false, true]
                .into_iter()
                .map(|forwarded| {
                    let last = last.clone();
                    std::thread::spawn(move || {
                        !last.is_second_copy(arrival(forwarded, 9, 500), 1000)
                    })
                })
                .collect();
            let delivered = threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .filter(|&d| d)
                .count();
            assert_eq!(delivered, 1);
        }
    }
}
