//! In-place aggregation: without a trace, a thread's nested events never become
//! records. The thread keeps its open instances as frames of its own profile
//! ([`ThreadProfile`], repaired by the same nesting rules as the writer's) and
//! adds each instance to its node as it ends: nothing grows with the number of
//! events, and the writer has nothing to do until the end, when it merges the
//! threads' profiles.

use crate::hot::aggregate::local::ThreadProfile;
use crate::hot::nesting::{Event, Opening};
use crate::hot::runtime::Runtime;
use crate::hot::thread::ThreadSlot;

/// One thread's in-place state.
pub struct InPlace {
    /// The thread's profile.
    pub profile: ThreadProfile,
}

impl InPlace {
    /// The state of the thread of `slot`.
    pub fn new(rt: &'static Runtime, slot: &'static ThreadSlot, max_depth: usize) -> InPlace {
        InPlace {
            profile: ThreadProfile::new(rt, slot, max_depth),
        }
    }

    /// Opens an instance.
    #[inline(always)]
    pub fn begin(&mut self, o: Opening) {
        self.profile.open(&o);
    }

    /// Closes instance `guid` (0: the innermost of `kind`) at raw time `ts`.
    #[inline(always)]
    pub fn end(&mut self, ts: u64, kind: u8, guid: u64) {
        self.profile.close(ts, kind, guid);
    }

    /// Attaches an argument to the innermost open instance.
    #[inline]
    pub fn arg(&mut self, key: u32, value: u64) {
        self.profile.arg(key, value);
    }

    /// Takes an event that opens nothing (an instant, an edge).
    #[inline]
    pub fn point(&mut self, ev: &Event<'_>) {
        self.profile.event(ev);
    }

    /// Closes what is still open at raw time `end` (the run ended).
    pub fn close_all(&mut self, end: u64) {
        self.profile.close_all(end);
    }
}
