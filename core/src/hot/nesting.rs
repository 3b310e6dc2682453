//! The vocabulary of events and the rules that keep them nested.
//!
//! Runtimes call begin/end in orders a trace format cannot take (an end for an id
//! that is not innermost, a pop with nothing pushed, records lost to a full buffer).
//! A thread's stack of open instances turns them into begins and ends that always
//! nest, counting every repair as an anomaly. The rules ([`ended_at`],
//! [`count_unclosed`]) are shared by the writer decoding records (its stack of
//! [`Slice`]s, [`crate::collect::resolve::Nesting`]) and by the in-place profile of
//! a recording thread (its frames, [`crate::hot::aggregate::local`]), so every
//! consumer (profile, traces) sees the same repaired stream. [`Consumer`] is what takes the
//! events on the writer's side.

use kprof_abi::{Anomaly, Kind};

use crate::base::anomaly::Anomalies;
use crate::hot::counters::Values;

/// Extra fields of a memory copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyInfo {
    /// Bytes copied.
    pub bytes: u64,
    /// Source label id.
    pub src_label: u32,
    /// Destination space name id.
    pub dst_space: u32,
    /// Source space name id.
    pub src_space: u32,
}

/// A data transfer's size and direction (0 allocation, 1 to device, 2 from
/// device, 3 delete, 4 other).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    /// Bytes moved.
    pub bytes: u64,
    /// Direction code.
    pub direction: u32,
}

/// Turns code addresses into name ids (the writer's symbolizer).
pub trait Symbols {
    /// The name id for code address `addr`.
    fn name_of(&mut self, addr: u64) -> u32;
}

/// An open (or just closed) instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// Thread index.
    pub thread: u32,
    /// The instance's GUID.
    pub guid: u64,
    /// Explicit parent GUID (0: the enclosing slice on this thread).
    pub parent: u64,
    /// The slice this one is nested in on its thread (GUID and kind), if any.
    pub enclosing: Option<(u64, Kind)>,
    /// What it is.
    pub kind: Kind,
    /// Name id (destination label for copies).
    pub name: u32,
    /// Device index.
    pub dev: u16,
    /// Raw begin time.
    pub begin: u64,
    /// Copy details, for [`Kind::DeepCopy`].
    pub copy: Option<CopyInfo>,
    /// Transfer details, for data operations named by address.
    pub transfer: Option<Transfer>,
    /// Numeric arguments attached while it was open (key name id, value): the
    /// first `nargs` entries; complete when the slice ends.
    pub args: [(u32, u64); MAX_ARGS],
    /// Arguments in `args`.
    pub nargs: u8,
    /// Its end was among records dropped (the buffers were full): it is closed
    /// where recording resumed, so its duration is not known and must not count.
    pub end_lost: bool,
    /// Counter values (`KPROF_COUNTERS`): read at its begin while it is open;
    /// what it counted (end minus begin) once [`Slice::counted`] is set.
    pub counters: Option<Values>,
    /// `counters` holds what the instance counted (its end was read too).
    pub counted: bool,
}

/// Arguments kept per slice.
pub const MAX_ARGS: usize = 4;

/// What a begin carries besides name and parent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    /// Copy details, for [`Kind::DeepCopy`].
    pub copy: Option<CopyInfo>,
    /// Transfer details.
    pub transfer: Option<Transfer>,
    /// A first argument recorded with the begin.
    pub arg: Option<(u32, u64)>,
    /// The thread's counters read at the begin (`KPROF_COUNTERS`).
    pub counters: Option<Values>,
}

impl Extras {
    /// Nothing besides name and parent.
    pub const NONE: Extras = Extras {
        copy: None,
        transfer: None,
        arg: None,
        counters: None,
    };
}

impl Slice {
    /// A plain slice (no parent, copy, transfer, arguments or counters) for
    /// unit tests.
    #[cfg(test)]
    pub(crate) fn plain(thread: u32, guid: u64, kind: Kind, name: u32, begin: u64) -> Slice {
        Slice {
            thread,
            guid,
            parent: 0,
            enclosing: None,
            kind,
            name,
            dev: 0,
            begin,
            copy: None,
            transfer: None,
            args: [(0, 0); MAX_ARGS],
            nargs: 0,
            end_lost: false,
            counters: None,
            counted: false,
        }
    }

    /// What the instance counted, in the order of the counters' names, once it
    /// ended with its counters read.
    pub fn counted(&self) -> Option<&Values> {
        self.counters.as_ref().filter(|_| self.counted)
    }

    /// The arguments attached to this slice.
    pub fn args(&self) -> &[(u32, u64)] {
        &self.args[..usize::from(self.nargs).min(MAX_ARGS)]
    }
}

impl Slice {
    /// The GUID of the slice this one should be linked to by a flow, if any: an
    /// explicit parent that does not enclose it, or the enclosing slice when it comes
    /// from another programming model (a Kokkos kernel inside a user region, an
    /// OpenMP region inside a Kokkos kernel). Plain nesting within one model needs no
    /// arrow: the timeline shows it.
    pub fn flow_parent(&self) -> Option<u64> {
        // An explicit parent that encloses this slice is plain nesting; any other
        // (on another thread, or one that already ended, like a task's creation)
        // gets an arrow.
        if self.parent != 0 && self.enclosing.map(|(g, _)| g) != Some(self.parent) {
            return Some(self.parent);
        }
        match self.enclosing {
            // A GPU API call is how the enclosing construct does its work, not
            // another model's construct: nesting shows it.
            Some((guid, kind))
                if kind.model() != self.kind.model() && self.kind != Kind::GpuApi =>
            {
                Some(guid)
            }
            _ => None,
        }
    }
}

/// Arguments a device activity carries at most.
pub const ACTIVITY_ARGS: usize = kprof_abi::ACTIVITY_ARGS;

/// Where a device activity belongs in the profile, as the core's opaque
/// [`kprof_abi::Site::node`] word says: the node of an in-place profile, or the
/// number of a site record the writer resolves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteRef {
    /// At the root (nothing was open at the launch, or the site is unknown).
    Root,
    /// Node `node` of thread `thread`'s in-place profile.
    Node {
        /// Thread index.
        thread: u32,
        /// Node in that thread's tree.
        node: u32,
    },
    /// The site record with this number (a trace is on).
    Token(u64),
}

const SITE_NODE: u64 = 1 << 63;
const SITE_TOKEN: u64 = 1 << 62;

impl SiteRef {
    /// The opaque word plugins carry.
    pub fn word(self) -> u64 {
        match self {
            SiteRef::Root => 0,
            SiteRef::Node { thread, node } => SITE_NODE | u64::from(thread) << 32 | u64::from(node),
            SiteRef::Token(t) => SITE_TOKEN | (t & (SITE_TOKEN - 1)),
        }
    }

    /// The site a word names (anything else: the root).
    pub fn from_word(w: u64) -> SiteRef {
        if w & SITE_NODE != 0 {
            SiteRef::Node {
                thread: (w >> 32) as u32 & 0x7fff_ffff,
                node: w as u32,
            }
        } else if w & SITE_TOKEN != 0 {
            SiteRef::Token(w & (SITE_TOKEN - 1))
        } else {
            SiteRef::Root
        }
    }
}

/// A device activity: work a device did between `begin` and `end` (raw times on
/// the core clock), reported after the fact on thread `thread`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceActivity {
    /// The thread that reported it (the vendor's buffer thread).
    pub thread: u32,
    /// What it is ([`Kind::is_device_activity`]).
    pub kind: Kind,
    /// Name id.
    pub name: u32,
    /// Device (and stream) index: its track.
    pub dev: u16,
    /// Raw start.
    pub begin: u64,
    /// Raw end.
    pub end: u64,
    /// Start in CLOCK_MONOTONIC ns and duration in ns, exactly as the plugin
    /// gave them (raw times are converted and may each be a nanosecond off:
    /// outputs use these).
    pub begin_ns: u64,
    /// See `begin_ns`.
    pub dur_ns: u64,
    /// Bytes moved or set.
    pub bytes: u64,
    /// Copy direction (`kprof_abi::direction`).
    pub direction: u8,
    /// Where it belongs in the profile.
    pub site: SiteRef,
    /// GUID of the host slice a trace draws a flow from (0: none).
    pub flow_from: u64,
    /// Arguments (key name id, value): the first `nargs`.
    pub args: [(u32, u64); ACTIVITY_ARGS],
    /// Arguments in `args`.
    pub nargs: u8,
}

impl DeviceActivity {
    /// The arguments it carries.
    pub fn args(&self) -> &[(u32, u64)] {
        &self.args[..usize::from(self.nargs).min(ACTIVITY_ARGS)]
    }
}

/// A thread-ordered event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A slice opened (nested in the previously opened, still open ones).
    Begin(&'a Slice),
    /// The innermost open slice closed at raw time `end`.
    End(&'a Slice, u64),
    /// A point event.
    Instant {
        /// Thread index.
        thread: u32,
        /// What it is.
        kind: Kind,
        /// Name id.
        name: u32,
        /// Kind-specific values.
        a: u64,
        /// Kind-specific values.
        b: u64,
        /// Raw time.
        ts: u64,
    },
    /// A device activity (not on the thread's timeline: its own times).
    Activity(&'a DeviceActivity),
    /// Thread `thread` launched device work from its innermost open instance
    /// (`guid`, 0 when none): site record number `token`.
    Site {
        /// Thread index.
        thread: u32,
        /// Site record number.
        token: u64,
        /// The innermost open instance.
        guid: u64,
    },
    /// A dependence edge `from` -> `to` (GUIDs), recorded on `thread` at `ts`.
    Edge {
        /// Thread index.
        thread: u32,
        /// What depends on what.
        kind: Kind,
        /// The instance depended on.
        from: u64,
        /// The dependent instance.
        to: u64,
        /// Raw time.
        ts: u64,
    },
}

/// An event whose meaning depends on order across threads (memory in use, section
/// timers); the writer delivers these in timestamp order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Global {
    /// An allocation.
    Alloc {
        /// Space name id.
        space: u32,
        /// Label id.
        label: u32,
        /// Address.
        ptr: u64,
        /// Size.
        bytes: u64,
    },
    /// A deallocation.
    Free {
        /// Space name id.
        space: u32,
        /// Label id.
        label: u32,
        /// Address.
        ptr: u64,
        /// Size as reported.
        bytes: u64,
    },
    /// A section started.
    SectionStart(u32),
    /// A section stopped.
    SectionStop(u32),
}

/// What receives the resolved events.
pub trait Consumer {
    /// A thread-ordered event.
    fn event(&mut self, ev: &Event<'_>);
    /// A cross-thread event, in timestamp order (raw time `ts`).
    fn global(&mut self, ts: u64, ev: &Global);
}

/// What opens an instance: the fields of a [`Slice`] known at its begin.
#[derive(Debug, Clone, Copy)]
pub struct Opening {
    /// The instance's GUID.
    pub guid: u64,
    /// Explicit parent GUID (0: the enclosing instance).
    pub parent: u64,
    /// Kind discriminant (an unknown one opens nothing).
    pub kind: u8,
    /// Name id.
    pub name: u32,
    /// Device index.
    pub dev: u16,
    /// Raw begin time.
    pub begin: u64,
    /// Copy, transfer or first argument.
    pub extras: Extras,
}

/// An open instance as a stack of open instances holds it: what the nesting
/// rules look at.
pub trait OpenInstance {
    /// Its GUID.
    fn guid(&self) -> u64;
    /// Its kind.
    fn kind(&self) -> Kind;
}

impl OpenInstance for Slice {
    fn guid(&self) -> u64 {
        self.guid
    }
    fn kind(&self) -> Kind {
        self.kind
    }
}

/// The nesting rule of an end: the position in `stack` (innermost last) of the
/// instance an end of `guid` (0: the innermost of `kind`) closes, with every
/// instance above it. An end that closes more than the innermost is counted as
/// out of order; an end of nothing open as unmatched (unless records were `lost`:
/// then it is most likely a lost begin's end).
#[inline(always)]
pub fn ended_at<T: OpenInstance>(
    stack: &[T],
    kind: u8,
    guid: u64,
    lost: bool,
    anomalies: &Anomalies,
) -> Option<usize> {
    let pos = if guid != 0 {
        stack.iter().rposition(|s| s.guid() == guid)
    } else {
        stack.iter().rposition(|s| s.kind() as u8 == kind)
    };
    match pos {
        None => {
            if !lost {
                anomalies.count(Anomaly::UnmatchedEnd);
            }
            None
        }
        Some(p) => {
            if p + 1 < stack.len() {
                anomalies.count(Anomaly::OutOfOrderEnd);
            }
            Some(p)
        }
    }
}

/// When the instances still open as the run ends at raw time `end` end, given
/// by GUID outermost first: at `end`, except an instance `late` names (an end
/// reported for it by another thread: GUID, raw time) and those open inside
/// it, which end at that time. Never later inside than outside.
pub fn ends_at_exit(open: impl Iterator<Item = u64>, end: u64, late: &[(u64, u64)]) -> Vec<u64> {
    let mut cap = end;
    open.map(|guid| {
        if let Some(&(_, at)) = late.iter().find(|&&(g, _)| g == guid) {
            cap = cap.min(at);
        }
        cap
    })
    .collect()
}

/// The rule for an instance still open when the run ends: counted, except kinds
/// runtimes normally leave open (see [`Kind::may_end_late`]).
pub fn count_unclosed(kind: Kind, anomalies: &Anomalies) {
    if !kind.may_end_late() {
        anomalies.count(Anomaly::UnclosedAtExit);
    }
}
