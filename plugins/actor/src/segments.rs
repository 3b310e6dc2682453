//! Per-PE timelines and counters per segment: with a trace (`KPROF_TRACE`) or
//! counters (`KPROF_COUNTERS`), the MAIN / PROC / COMM segments of the actor
//! phase are also core instances of [`Kind::ActorSegment`], named `actor MAIN`,
//! `actor PROC` and `actor COMM`. The core then draws them as slices on the
//! PE's thread track (bounded by the trace's size limit, `--trace-max-mb`) and
//! reads the counters at their begin and end (`KPROF_COUNTER_KINDS` with
//! `actor`), so each segment kind gets its counter totals in the profile.
//!
//! A segment switch costs two core calls, so it is on only when asked for
//! (`KPROF_ACTOR_SEGMENTS=1` forces it, `0` turns it off) and never without the
//! breakdown (`KPROF_ACTOR_BREAKDOWN=0`). Segments are flat: one is open at a
//! time on the PE's conveyor thread.

use std::ffi::CStr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use kprof_abi::{CoreApi, Kind};

use crate::state;

/// Whether segments are core instances (see the module's text).
#[inline(always)]
pub fn on() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        use kprof_tables::settings::{core, Setting};
        let set = |s: Setting| {
            s.get()
                .is_some_and(|v| !v.trim().is_empty() && v.trim() != "0")
        };
        let forced = kprof_tables::settings::actor::ACTOR_SEGMENTS.get();
        state::timing()
            && match forced.as_deref().map(str::trim) {
                Some("0") => false,
                Some("1") => true,
                _ => set(core::TRACE) || set(core::COUNTERS),
            }
    })
}

/// No segment instance open.
const NONE: u8 = 0;
/// `actor MAIN`.
const MAIN: u8 = 1;
/// `actor PROC`.
const PROC: u8 = 2;
/// `actor COMM`.
const COMM: u8 = 3;

/// The instances' names, by segment - 1 (literals: the core keeps the pointers).
const NAMES: [&CStr; 3] = [c"actor MAIN", c"actor PROC", c"actor COMM"];

/// The segment instance open now.
static OPEN: AtomicU8 = AtomicU8::new(NONE);

/// Closes the open segment instance and opens `to` (NONE: none).
fn switch(api: &CoreApi, to: u8) {
    let cur = OPEN.load(Ordering::Relaxed);
    if cur == to {
        return;
    }
    if cur != NONE {
        // SAFETY: closes the calling thread's innermost ActorSegment instance,
        // the one this module opened.
        unsafe { (api.end)(Kind::ActorSegment as u8, 0) };
    }
    if let Some(name) = NAMES.get(usize::from(to).wrapping_sub(1)) {
        // SAFETY: a NUL-terminated literal, never freed.
        unsafe { (api.begin_static)(Kind::ActorSegment as u8, name.as_ptr(), 0, 0) };
    }
    OPEN.store(to, Ordering::Relaxed);
}

/// A Conveyors entry (`begins`: one that may start the phase, `convey_begin`)
/// or an OpenSHMEM call is about to run: COMM, when the phase runs.
#[inline]
pub fn enter(api: &CoreApi, begins: bool) {
    if begins || state::in_phase() {
        switch(api, COMM);
    }
}

/// The call returned and was booked: the segment that runs now (MAIN, PROC
/// after an OK pull, none once the phase ended).
#[inline]
pub fn after(api: &CoreApi) {
    let to = if !state::in_phase() {
        NONE
    } else if state::in_proc() {
        PROC
    } else {
        MAIN
    };
    switch(api, to);
}

/// [`enter`] from a hook (kept out of the hooks' code: segments are on only
/// with a trace or counters).
#[inline(never)]
pub fn enter_call(begins: bool) {
    if let Some(api) = crate::core_table::api() {
        enter(api, begins);
    }
}

/// [`after`] from a hook.
#[inline(never)]
pub fn after_call() {
    if let Some(api) = crate::core_table::api() {
        after(api);
    }
}

/// The end of the run: closes the open segment.
pub fn finish(api: &CoreApi) {
    switch(api, NONE);
}
