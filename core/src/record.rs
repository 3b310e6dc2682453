//! The compact record the hot path appends: 32 bytes, fixed size, no pointers.
//!
//! An event is one head record, sometimes followed by continuation records
//! ([`Op::Cont`]) carrying extra fields (memory events, copies). Field meanings by op:
//!
//! | op | `a` | `b` | `name` | `aux` |
//! |---|---|---|---|---|
//! | Begin | new GUID | explicit parent GUID or 0 | name id | device index |
//! | End | GUID (0: innermost of `kind`) | — | — | — |
//! | Instant | kind-specific | kind-specific | name id | — |
//! | Alloc / Free | pointer | bytes | label id | — (+1 Cont: `name` = space id) |
//! | Begin of DeepCopy | GUID | parent | dst label id | — (+1 Cont: `a` bytes, `name` src label, `b` dst space id << 32 \| src space id) |
//! | SectionStart / Stop | section id | — | — | — |
//! | Gap | records dropped just before | — | — | — |

/// The operation a record performs.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Opens an instance.
    Begin = 1,
    /// Closes an instance.
    End = 2,
    /// A point event.
    Instant = 3,
    /// Extra fields of the preceding head record.
    Cont = 4,
    /// A memory allocation.
    Alloc = 5,
    /// A memory deallocation.
    Free = 6,
    /// A section started.
    SectionStart = 7,
    /// A section stopped.
    SectionStop = 8,
    /// Records were dropped before this one (buffers were full).
    Gap = 9,
}

impl Op {
    /// The op with discriminant `v`.
    pub fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Begin,
            2 => Op::End,
            3 => Op::Instant,
            4 => Op::Cont,
            5 => Op::Alloc,
            6 => Op::Free,
            7 => Op::SectionStart,
            8 => Op::SectionStop,
            9 => Op::Gap,
            _ => return None,
        })
    }
}

/// One buffer entry. See the module documentation for field meanings.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Record {
    /// Raw clock ticks.
    pub ts: u64,
    /// First operand.
    pub a: u64,
    /// Second operand.
    pub b: u64,
    /// Interned string id.
    pub name: u32,
    /// Small operand (device index).
    pub aux: u16,
    /// [`kprof_abi::Kind`] discriminant.
    pub kind: u8,
    /// [`Op`] discriminant.
    pub op: u8,
}

const _: () = assert!(std::mem::size_of::<Record>() == 32);
