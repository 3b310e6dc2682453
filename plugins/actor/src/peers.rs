//! Per-peer message counters over time: with a trace (`KPROF_TRACE`), each PE's
//! trace gets four counter tracks per peer PE: `actor messages to PE <d>` and
//! `actor bytes to PE <d>`, the logical messages (OK pushes) this PE sent to `d`
//! so far, and `actor messages from PE <s>` and `actor bytes from PE <s>`, those
//! it received from `s` (OK pulls), each summed over its conveyors.
//!
//! No record per message: the counts are the conveyors' in-place rows
//! ([`state::Row`]). They are sampled at a bounded rate, at the first Conveyors
//! call at least [`interval_ns`] after the previous sample
//! (`KPROF_ACTOR_PEER_US`, default 1000 us; 0 turns the tracks off), and at
//! every `convey_free` and at the end of the run, so that a track's last value
//! is the PE's total for that peer. A sample writes a point (a core
//! [`Kind::UserCounter`] instant, which every trace format draws as a counter
//! track) only for the tracks whose value changed, so a track has at most one
//! point per interval, plus one per `convey_free`, plus the 0 it starts with at
//! the PE's first phase.
//!
//! The check is one compare of the clock the breakdown already read
//! ([`crate::state::leave`]'s `now`) against the next sample's time: with the
//! breakdown off (`KPROF_ACTOR_BREAKDOWN=0`) no clock is read and there are no
//! tracks. A sample's own time (two core calls per changed track) is the
//! conveyor's COMM, like the rest of kprof's work inside Conveyors' entries.

use std::ffi::CString;
use std::sync::{Mutex, OnceLock};

use kprof_abi::{CoreApi, Kind};

use crate::state::{self, op, Row};

/// The sampling interval in nanoseconds (`KPROF_ACTOR_PEER_US`, microseconds;
/// default 1000; 0: no tracks).
pub fn interval_ns() -> u64 {
    static NS: OnceLock<u64> = OnceLock::new();
    *NS.get_or_init(|| {
        kprof_tables::settings::actor::ACTOR_PEER_US
            .get()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(1000)
            .saturating_mul(1000)
    })
}

/// Whether the tracks are drawn: a trace is asked for, the breakdown's clock is
/// read, and the interval is not 0.
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let trace = kprof_tables::settings::core::TRACE
            .get()
            .is_some_and(|v| !v.trim().is_empty());
        trace && state::timing() && interval_ns() > 0
    })
}

/// Messages and bytes.
type Pair = (u64, u64);

/// The tracks of one PE: their names, what conveyors already freed sent and
/// received, and the values last written.
struct Tracks {
    /// Per peer: messages and bytes to it, then from it; never freed (the core
    /// keeps the pointers: [`CoreApi::instant_static`]).
    names: Vec<[&'static CString; 4]>,
    /// What freed conveyors sent and received, per peer.
    base: (Row, Row),
    /// The last values written, per peer (sent, received).
    last: Vec<(Pair, Pair)>,
}

/// The PE's tracks, made at its first phase (one thread drives a PE's
/// conveyors; the lock is taken only when sampling, at most once per interval).
static TRACKS: Mutex<Option<Tracks>> = Mutex::new(None);

/// A Conveyors entry `op` returned and was booked at `now` (ticks; 0 without
/// the breakdown): samples when one is due, at a `convey_free`, and arms the
/// sampling when a phase begins.
#[inline(always)]
pub fn after(api: &CoreApi, op: i32, now: u64) {
    if now != 0 && (now >= state::next_sample() || op == op::BEGIN || op == op::FREE) {
        slow(api, op, now);
    }
}

/// A sample is due at `now` after entry `op` (the hot path's check of
/// [`after`]'s first condition).
#[inline(never)]
pub fn due(op: i32, now: u64) {
    if let Some(api) = crate::core_table::api() {
        after(api, op, now);
    }
}

#[inline(never)]
fn slow(api: &CoreApi, op: i32, now: u64) {
    if !on() {
        return;
    }
    let armed = state::next_sample() != u64::MAX;
    if op == op::BEGIN && armed && now < state::next_sample() {
        return; // another conveyor of a running phase: nothing due
    }
    if !armed && !state::in_phase() {
        return; // a failed convey_begin, or calls after the phase
    }
    sample(api);
    let next = if state::in_phase() {
        let ticks = (interval_ns() as f64 / crate::clock::ns_per_tick_so_far()).max(1.0);
        now.saturating_add(ticks as u64)
    } else {
        u64::MAX
    };
    state::set_next_sample(next);
    // The sample's own time is COMM, not the segment that follows.
    state::comm_to_now();
}

/// Writes a point for every track whose value changed (the first sample makes
/// the tracks, each starting at 0).
fn sample(api: &CoreApi) {
    let npes = state::n_pes();
    if npes == 0 {
        return;
    }
    let mut guard = TRACKS.lock().unwrap_or_else(|p| p.into_inner());
    let t = match guard.as_mut() {
        Some(t) if t.last.len() == npes => t,
        _ => {
            let leak = |s: String| -> &'static CString {
                Box::leak(Box::new(CString::new(s).unwrap_or_default()))
            };
            let names: Vec<_> = (0..npes)
                .map(|d| {
                    [
                        leak(format!("actor messages to PE {d}")),
                        leak(format!("actor bytes to PE {d}")),
                        leak(format!("actor messages from PE {d}")),
                        leak(format!("actor bytes from PE {d}")),
                    ]
                })
                .collect();
            for name in names.iter().flatten() {
                point(api, name, 0);
            }
            guard.insert(Tracks {
                names,
                base: (Row::new(npes), Row::new(npes)),
                last: vec![((0, 0), (0, 0)); npes],
            })
        }
    };
    let add = |a: Pair, b: Pair| (a.0 + b.0, a.1 + b.1);
    for d in 0..npes {
        let (sent, received) = state::live(d);
        let now = (add(t.base.0.get(d), sent), add(t.base.1.get(d), received));
        let before = t.last[d];
        let values = [now.0 .0, now.0 .1, now.1 .0, now.1 .1];
        let old = [before.0 .0, before.0 .1, before.1 .0, before.1 .1];
        for ((name, v), o) in t.names[d].iter().zip(values).zip(old) {
            if v != o {
                point(api, name, v);
            }
        }
        t.last[d] = now;
    }
}

/// One value of the counter track `name`.
fn point(api: &CoreApi, name: &'static CString, value: u64) {
    // SAFETY: a NUL-terminated name that is never freed nor changed.
    unsafe {
        (api.instant_static)(
            Kind::UserCounter as u8,
            name.as_ptr(),
            (value as f64).to_bits(),
            0,
        )
    };
}

/// A conveyor is retired with its rows: what it sent and received stays in the
/// tracks.
pub fn absorb(sent: &Row, received: &Row) {
    if !on() {
        return;
    }
    let mut guard = TRACKS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(t) = guard.as_mut() {
        for d in 0..t.last.len() {
            let (m, b) = sent.get(d);
            t.base.0.add(d as i64, m, b);
            let (m, b) = received.get(d);
            t.base.1.add(d as i64, m, b);
        }
    }
}

/// The end of the run (conveyors never freed were retired): the last values.
pub fn finish(api: &CoreApi) {
    if on() && TRACKS.lock().is_ok_and(|t| t.is_some()) {
        sample(api);
    }
    state::set_next_sample(u64::MAX);
}
