//! What a Conveyors entry that returned sets going: the store books it
//! ([`crate::state`]), then the parts that watch the calls take their turn: the
//! per-peer tracks ([`crate::peers`]), the segments ([`crate::segments`]), the
//! porters' map ([`crate::porter`]). The store knows none of them: what it must
//! hand on (a retired conveyor's rows) it hands to what it is given.

use std::sync::atomic::AtomicU64;

use kprof_abi::CoreApi;

use crate::core_table::{self, api};
use crate::state::{self, op, Call};
use crate::{clock, peers, porter, segments, shmem_counts};

/// Books a Conveyors entry that returned (`mode`:
/// [`mod@crate::core_table::mode`]): the rows, the segments, the per-peer
/// tracks' sampling. A push, pull or advance of the conveyor looked up last
/// (about every call of a phase) takes the store's fast path
/// ([`state::book_fast`]); any other call [`slow`].
#[inline(always)]
pub fn booked(mode: u8, call: Call) {
    if !state::book_fast(call) {
        let Call {
            key,
            op,
            rc,
            pe,
            arg,
            t0,
            now,
        } = call;
        slow(mode, key, op, rc, pe, arg, t0, now);
        return;
    }
    if call.now >= state::next_sample() {
        peers::due(call.op, call.now);
    }
    if call.t0 != 0 && mode & core_table::mode::SEGMENTS != 0 {
        segments::after_call();
    }
}

/// [`booked`] for every other call: [`state::leave`], then the per-peer tracks
/// and the segments (cold: the begins, frees and calls of another conveyor
/// than the last one).
/// Takes the call's fields one by one: a `Call` passed by reference would be
/// written to the stack on the fast path too.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn slow(mode: u8, key: usize, op: i32, rc: i64, pe: i64, arg: u64, t0: u64, now: u64) {
    let call = Call {
        key,
        op,
        rc,
        pe,
        arg,
        t0,
        now,
    };
    if op == op::BEGIN {
        // A Conveyors entry: OpenSHMEM is initialized, its PEs can be asked
        // for (the rows of a new conveyor have one entry per PE).
        shmem_counts::learn_pes();
    }
    if op == op::BEGIN || op == op::FREE {
        // A porter's address may be a freed one's.
        porter::forget();
    }
    state::leave(call, peers::absorb);
    if let Some(api) = api() {
        peers::after(api, call.op, call.now);
        if call.t0 != 0 && mode & core_table::mode::SEGMENTS != 0 {
            segments::after(api);
        }
    }
}

/// The porter at `porter` sent a buffer of `bytes` on its local path to its rank
/// `dest` (porter-relative: mapped to a PE by [`crate::porter`]) for the
/// conveyor running now.
pub fn local_send(porter: usize, dest: i32, bytes: u64) {
    state::local_send(|| porter::pe_of(porter, dest), bytes);
}

/// The end of the run: the segments, the conveyors never freed, the per-peer
/// tracks, then the PE's breakdown, its odd calls and its OpenSHMEM calls.
pub fn finish(api: &CoreApi) {
    segments::finish(api);
    state::retire_all(peers::absorb);
    peers::finish(api);
    let k = clock::ns_per_tick();
    let odd: [(&str, &AtomicU64); 1] = [("porters_unmapped", &porter::UNMAPPED)];
    state::report(api, &odd, k);
    shmem_counts::report(api, k);
}
