//! The compact records the hot path appends: 16-byte units.
//!
//! An event is one head unit, followed by as many extension units as its [`Op`]
//! says ([`Op::ext_units`]). A kernel begin and its end take one unit each, 32 bytes
//! per instance: half the cache traffic between application threads and the writer
//! of a fixed 32-byte record.
//!
//! GUIDs are implicit on the common path: a thread's GUIDs are its index in the high
//! bits and a counter below ([`crate::thread::GUID_SEQ_BITS`]), and every begin takes
//! the next one, so the writer recomputes them by counting begins ([`Op::Gap`] carries
//! the counter when records were dropped).
//!
//! | op | head `name` | head `aux` | extension units |
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
        )
    }

    /// Extension units that follow a head unit of this op.
    pub fn ext_units(self) -> usize {
        match self {
            Op::Begin | Op::End | Op::SectionStart | Op::SectionStop | Op::BeginCode => 0,
            Op::BeginParent
            | Op::EndGuid
            | Op::Instant
            | Op::Gap
            | Op::BeginAt
            | Op::Edge
            | Op::Arg
            | Op::BeginAtArg => 1,
            Op::Alloc | Op::Free | Op::CopyBegin | Op::BeginTransfer | Op::BeginTransferNamed => 2,
        }
    }
}

/// One 16-byte unit: a head (timestamp, name, aux, kind, op) or an extension (two
/// 64-bit values).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    w0: u64,
    w1: u64,
}

const _: () = assert!(std::mem::size_of::<Record>() == 16);

impl Record {
    /// A head unit.
    #[inline(always)]
    pub fn head(ts: u64, op: Op, kind: u8, name: u32, aux: u16) -> Record {
        Record {
            w0: ts,
            w1: u64::from(name) | u64::from(aux) << 32 | u64::from(kind) << 48 | (op as u64) << 56,
        }
    }

    /// An extension unit.
    #[inline(always)]
    pub fn ext(a: u64, b: u64) -> Record {
        Record { w0: a, w1: b }
    }

    /// Raw timestamp (head).
    pub fn ts(&self) -> u64 {
        self.w0
    }

    /// Name id or op-specific 32 bits (head).
    pub fn name(&self) -> u32 {
        self.w1 as u32
    }

    /// Device or op-specific 16 bits (head).
    pub fn aux(&self) -> u16 {
        (self.w1 >> 32) as u16
    }

    /// Kind discriminant (head).
    pub fn kind(&self) -> u8 {
        (self.w1 >> 48) as u8
    }

    /// Op discriminant (head).
    pub fn op(&self) -> u8 {
        (self.w1 >> 56) as u8
    }

    /// First value (extension).
    pub fn a(&self) -> u64 {
        self.w0
    }

    /// Second value (extension).
    pub fn b(&self) -> u64 {
        self.w1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_fields_round_trip() {
        let r = Record::head(123, Op::CopyBegin, 6, 0xdead_beef, 0xabcd);
        assert_eq!(
            (r.ts(), r.op(), r.kind(), r.name(), r.aux()),
            (123, Op::CopyBegin as u8, 6, 0xdead_beef, 0xabcd)
        );
        let e = Record::ext(u64::MAX, 7);
        assert_eq!((e.a(), e.b()), (u64::MAX, 7));
        for v in 1..=18 {
            assert_eq!(Op::from_u8(v).map(|o| o as u8), Some(v));
        }
        assert_eq!(Op::from_u8(0), None);
    }
}
