//! The compact records the hot path appends: 64-bit words.
//!
//! An event starts with a head word: its [`Op`] in the top byte, its kind below,
//! then 16 and 32 op-specific bits. A *long* event follows its head with the full
//! timestamp and as many extension units (two words each) as its op says
//! ([`Op::ext_units`]). A *short* event ([`Op::is_short`]) keeps a 32-bit timestamp
//! delta in its head's low bits instead, relative to the thread's previous timed
//! event (every event but [`Op::Arg`] and [`Op::Gap`]): a nested begin or an end
//! is then one word, 8 bytes. On a virtual machine, where fresh buffer memory costs
//! more to fault in than recording does, the bytes per event are the overhead.
//!
//! GUIDs are implicit on the common path: a thread's GUIDs are its index in the high
//! bits and a counter below ([`crate::hot::open::GUID_SEQ_BITS`]), and every begin takes
//! the next one, so the writer recomputes them by counting begins ([`Op::Gap`] carries
//! the counter when records were dropped).
//!
//! Long events (`head`: the head word's 32 and 16 bits; then the timestamp word):
//!
//! | op | head 32 bits | head 16 bits | extension units |
//! |---|---|---|---|
//! | Begin | name id | device | — (parent: the enclosing instance) |
//! | BeginParent | name id | device | (parent GUID, 0) |
//! | End | GUID counter bits 0..32 | bits 32..48 (0: innermost of `kind`) | — |
//! | EndGuid | — | — | (GUID, 0): a GUID of another thread |
//! | Instant | name id | — | (a, b), kind-specific |
//! | Alloc, Free | label id | — | (address, bytes), (space name id, 0) |
//! | CopyBegin | dst label id | — | (bytes, src label id), (dst space id, src space id) |
//! | SectionStart, SectionStop | section id | — | — |
//! | Gap | lowest open depth while dropping | — | (records dropped, GUID counter at resume) |
//! | BeginAt | — | device | (code address, parent GUID): named by the writer |
//! | BeginTransfer | direction | device | (code address, parent GUID), (bytes, 0) |
//! | Edge | — | — | (from GUID, to GUID) |
//! | Arg | key name id | — | (value, 0); timestamp 0: belongs to the innermost open instance |
//! | BeginTransferNamed | name id | device | (parent GUID, 0), (bytes, direction) |
//! | BeginAtArg | argument key name id | device | (code address, value): nested in the innermost open instance |
//! | BeginCode | code address bits 0..32 | bits 32..48 | —: device 0, nested in the innermost open instance |
//! | Site | site number | — | —; timestamp 0: names the innermost open instance as a launch site |
//! | Counters | — | — | `MAX_COUNTERS / 2` x (value, value): the thread's counters, for the begin or end record right after it; timestamp 0 |
//! | Activity | name id | device | (end, bytes), (site, flow GUID), (direction and argument count, duration in ns), (start in ns, 0), `ACTIVITY_ARGS` x (key name id, value); the timestamp word is the device start: not the thread's time |
//!
//! Short events (the head's 32 bits: the timestamp delta):
//!
//! | op | head 16 bits | words after the head |
//! |---|---|---|
//! | BeginShort | name id | —: device 0, nested in the innermost open instance |
//! | BeginParentShort | name id | parent GUID: device 0 |
//! | EndShort | 0: innermost of `kind`; n: the thread's GUID n-1 before its last | — |
//! | BeginCodeShort | code slot | —: named after the slot's code address, device 0, nested in the innermost open instance |
//! | BeginCodeArgShort | code slot | argument key name id (bits 0..32), value below 2^32 (bits 32..64) |
//!
//! Code slots: each thread keeps the code addresses of its latest begins in
//! [`CODE_SLOTS`] slots (by hash of the address), mirrored by the writer. A begin
//! whose address is not in its slot is preceded by an untimed definition, in the
//! same all-or-nothing append:
//!
//! | op | head 16 bits | words after the head |
//! |---|---|---|
//! | CodeDef | code slot | the code address |

/// The operation of a head unit.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Opens an instance nested in the thread's innermost open one.
    Begin = 1,
    /// Opens an instance with an explicit parent GUID.
    BeginParent = 2,
    /// Closes an instance of this thread (or the innermost of `kind`).
    End = 3,
    /// Closes an instance by full GUID.
    EndGuid = 4,
    /// A point event.
    Instant = 5,
    /// A memory allocation.
    Alloc = 6,
    /// A memory deallocation.
    Free = 7,
    /// Opens a memory copy.
    CopyBegin = 8,
    /// A section started.
    SectionStart = 9,
    /// A section stopped.
    SectionStop = 10,
    /// Records were dropped before this one (buffers were full).
    Gap = 11,
    /// Opens an instance named after a code address.
    BeginAt = 12,
    /// Opens a data transfer named after a code address.
    BeginTransfer = 13,
    /// A dependence edge between two instances.
    Edge = 14,
    /// A numeric argument of the innermost open instance.
    Arg = 15,
    /// Opens a data transfer named by a string (a variable).
    BeginTransferNamed = 16,
    /// Opens an instance named after a code address, with one argument.
    BeginAtArg = 17,
    /// Opens an instance named after a code address below 2^48, on device 0,
    /// nested in the innermost open instance (one unit).
    BeginCode = 18,
    /// A short [`Op::Begin`] on device 0 of a name id below 2^16.
    BeginShort = 19,
    /// A short [`Op::BeginParent`] on device 0 of a name id below 2^16.
    BeginParentShort = 20,
    /// A short [`Op::End`] of one of the thread's 2^16 latest GUIDs or of the
    /// innermost of its kind.
    EndShort = 21,
    /// A one-word [`Op::BeginCode`] of an address in a code slot.
    BeginCodeShort = 22,
    /// A two-word [`Op::BeginAtArg`] of an address in a code slot, on device 0, with
    /// a key and a value below 2^32.
    BeginCodeArgShort = 23,
    /// Sets a code slot of the thread (untimed).
    CodeDef = 24,
    /// Names the innermost open instance as the site of device work being
    /// launched (untimed; see [`crate::hot::events::site`]).
    Site = 25,
    /// A device activity with its own start and end (see
    /// [`crate::hot::events::activity`]): not on the thread's timeline.
    Activity = 26,
    /// The thread's counters (`KPROF_COUNTERS`) read for the begin or end record
    /// that follows (untimed).
    Counters = 27,
}

impl Op {
    /// The op with discriminant `v`.
    pub fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Begin,
            2 => Op::BeginParent,
            3 => Op::End,
            4 => Op::EndGuid,
            5 => Op::Instant,
            6 => Op::Alloc,
            7 => Op::Free,
            8 => Op::CopyBegin,
            9 => Op::SectionStart,
            10 => Op::SectionStop,
            11 => Op::Gap,
            12 => Op::BeginAt,
            13 => Op::BeginTransfer,
            14 => Op::Edge,
            15 => Op::Arg,
            16 => Op::BeginTransferNamed,
            17 => Op::BeginAtArg,
            18 => Op::BeginCode,
            19 => Op::BeginShort,
            20 => Op::BeginParentShort,
            21 => Op::EndShort,
            22 => Op::BeginCodeShort,
            23 => Op::BeginCodeArgShort,
            24 => Op::CodeDef,
            25 => Op::Site,
            26 => Op::Activity,
            27 => Op::Counters,
            _ => return None,
        })
    }

    /// Whether this op opens an instance (and so takes the thread's next GUID).
    pub fn opens(self) -> bool {
        matches!(
            self,
            Op::Begin
                | Op::BeginParent
                | Op::CopyBegin
                | Op::BeginAt
                | Op::BeginTransfer
                | Op::BeginTransferNamed
                | Op::BeginAtArg
                | Op::BeginCode
                | Op::BeginShort
                | Op::BeginParentShort
                | Op::BeginCodeShort
                | Op::BeginCodeArgShort
        )
    }

    /// Whether the head word carries a timestamp delta instead of being followed by
    /// the timestamp.
    pub fn is_short(self) -> bool {
        matches!(
            self,
            Op::BeginShort
                | Op::BeginParentShort
                | Op::EndShort
                | Op::BeginCodeShort
                | Op::BeginCodeArgShort
                | Op::CodeDef
        )
    }

    /// Whether the event's time is the thread's time base for the next short event.
    pub fn is_timed(self) -> bool {
        !matches!(
            self,
            Op::Arg | Op::Gap | Op::CodeDef | Op::Site | Op::Activity | Op::Counters
        )
    }

    /// Words of an event of this op, head included.
    pub fn words(self) -> usize {
        match self {
            Op::BeginShort | Op::EndShort | Op::BeginCodeShort => 1,
            Op::BeginParentShort | Op::BeginCodeArgShort | Op::CodeDef => 2,
            _ => 2 + 2 * self.ext_units(),
        }
    }

    /// Extension units that follow a head unit of this op.
    pub fn ext_units(self) -> usize {
        match self {
            Op::Begin
            | Op::End
            | Op::SectionStart
            | Op::SectionStop
            | Op::BeginCode
            | Op::BeginShort
            | Op::BeginParentShort
            | Op::EndShort
            | Op::BeginCodeShort
            | Op::BeginCodeArgShort
            | Op::CodeDef
            | Op::Site => 0,
            Op::BeginParent
            | Op::EndGuid
            | Op::Instant
            | Op::Gap
            | Op::BeginAt
            | Op::Edge
            | Op::Arg
            | Op::BeginAtArg => 1,
            Op::Alloc | Op::Free | Op::CopyBegin | Op::BeginTransfer | Op::BeginTransferNamed => 2,
            Op::Activity => 4 + kprof_abi::ACTIVITY_ARGS,
            Op::Counters => crate::hot::counters::MAX_COUNTERS / 2,
        }
    }
}

/// Bits of a code slot number.
pub const CODE_SLOT_BITS: u32 = 8;
/// Code slots per thread.
pub const CODE_SLOTS: usize = 1 << CODE_SLOT_BITS;

/// The code slot of address `codeptr` (Fibonacci hashing: call sites a few bytes
/// apart land far apart).
#[inline(always)]
pub fn code_slot(codeptr: u64) -> u16 {
    (codeptr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CODE_SLOT_BITS)) as u16
}

/// The head word of an event: op, kind, 16 and 32 op-specific bits.
#[inline(always)]
pub fn head(op: Op, kind: u8, low: u32, aux: u16) -> u64 {
    u64::from(low) | u64::from(aux) << 32 | u64::from(kind) << 48 | (op as u64) << 56
}

/// A long event's first two words: head and timestamp.
#[inline(always)]
pub fn long(ts: u64, op: Op, kind: u8, low: u32, aux: u16) -> [u64; 2] {
    [head(op, kind, low, aux), ts]
}

/// A decoded head word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head(pub u64);

impl Head {
    /// Op discriminant.
    pub fn op(self) -> u8 {
        (self.0 >> 56) as u8
    }

    /// Kind discriminant.
    pub fn kind(self) -> u8 {
        (self.0 >> 48) as u8
    }

    /// The 16 op-specific bits: device, name id of a short begin, or the back
    /// reference of a short end.
    pub fn aux(self) -> u16 {
        (self.0 >> 32) as u16
    }

    /// The 32 op-specific bits: name id, or a short event's timestamp delta.
    pub fn low(self) -> u32 {
        self.0 as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_fields_round_trip() {
        let [h, ts] = long(123, Op::CopyBegin, 6, 0xdead_beef, 0xabcd);
        let h = Head(h);
        assert_eq!(
            (ts, h.op(), h.kind(), h.low(), h.aux()),
            (123, Op::CopyBegin as u8, 6, 0xdead_beef, 0xabcd)
        );
        for v in 1..=27 {
            let op = Op::from_u8(v).unwrap();
            assert_eq!(op as u8, v);
            let short = matches!(v, 19..=24);
            assert_eq!(op.is_short(), short);
        }
        let words = [
            Op::BeginShort,
            Op::EndShort,
            Op::BeginParentShort,
            Op::Begin,
            Op::BeginAt,
        ]
        .map(Op::words);
        assert_eq!(words, [1, 1, 2, 2, 4]);
        assert_eq!(Op::BeginTransfer.words(), 6);
        assert_eq!(Op::from_u8(0), None);
        assert_eq!(Op::from_u8(28), None);
        assert_eq!(Op::Counters.words(), 10);
        assert_eq!(Op::Activity.words(), 30);
        // Neighbouring call sites take different slots.
        let slots: std::collections::HashSet<u16> = (0..64)
            .map(|i| code_slot(0x7f00_1234_0000 + 5 * i))
            .collect();
        assert!(slots.len() >= 60, "{slots:?}");
        assert!(slots.iter().all(|&s| usize::from(s) < CODE_SLOTS));
    }
}
