//! Porter-relative destinations to PEs. Conveyors' porter methods (`local_send`)
//! name their destination by its rank in the porter, not by PE: a one-hop
//! porter's ranks are the PEs, but the porters of a multi-hop conveyor (bale's
//! matrix and tensor conveyors) each span a subset of the PEs (the PEs of this
//! node, or the PEs of this local rank on every node). Every bale 3.0 porter
//! holds its rank -> PE table: `porter_t`'s `n_ranks` (an `int` at byte 48),
//! `my_rank` (52) and `relative` (an `int32_t*` at 64), which bale's own
//! profiling reads (`relative[dest]`).
//!
//! A porter is checked once, by copies that cannot fault (through a pipe: a
//! bad address makes `write` fail with EFAULT instead of a crash): its fields
//! must be a plausible rank and count, its table readable, every entry a PE of
//! the job, and its own rank's entry this PE. A porter that passes is read
//! directly from then on (its table lives as long as it does); one that does
//! not is counted ([`UNMAPPED`]) and its destinations are taken as PEs (right
//! for one-hop porters). The checked porters are forgotten whenever a
//! conveyor begins or is freed (a new porter may reuse a freed one's address).

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::state;

/// Byte offsets in bale 3.0's `porter_t`.
const N_RANKS_AT: usize = 48;
const MY_RANK_AT: usize = 52;
const RELATIVE_AT: usize = 64;

/// One checked porter.
struct Known {
    /// The porter's address (0: free).
    porter: AtomicUsize,
    /// Its rank -> PE table (0: not recognized, destinations are PEs).
    relative: AtomicUsize,
    /// Its ranks.
    n_ranks: AtomicU32,
}

const CACHE: usize = 16;
static KNOWN: [Known; CACHE] = [const {
    Known {
        porter: AtomicUsize::new(0),
        relative: AtomicUsize::new(0),
        n_ranks: AtomicU32::new(0),
    }
}; CACHE];
/// The next entry to replace when all are taken.
static VICTIM: AtomicUsize = AtomicUsize::new(0);

/// Porters whose fields are not bale 3.0's porter_t (their destinations were
/// taken as PEs).
pub static UNMAPPED: AtomicU64 = AtomicU64::new(0);

/// Forgets the checked porters (a conveyor begins or is freed).
pub fn forget() {
    for k in &KNOWN {
        k.porter.store(0, Ordering::Relaxed);
    }
}

/// The PE of rank `dest` of the porter at `porter`.
pub fn pe_of(porter: usize, dest: i32) -> i64 {
    let known = KNOWN
        .iter()
        .find(|k| porter != 0 && k.porter.load(Ordering::Relaxed) == porter);
    let (relative, n_ranks) = match known {
        Some(k) => (
            k.relative.load(Ordering::Relaxed),
            k.n_ranks.load(Ordering::Relaxed),
        ),
        None => {
            let (relative, n_ranks) = check(porter).unwrap_or_else(|| {
                state::bump(&UNMAPPED, 1);
                (0, 0)
            });
            let k = match KNOWN.iter().find(|k| k.porter.load(Ordering::Relaxed) == 0) {
                Some(k) => k,
                None => &KNOWN[VICTIM.fetch_add(1, Ordering::Relaxed) % CACHE],
            };
            k.relative.store(relative, Ordering::Relaxed);
            k.n_ranks.store(n_ranks, Ordering::Relaxed);
            k.porter.store(porter, Ordering::Relaxed);
            (relative, n_ranks)
        }
    };
    match u32::try_from(dest) {
        Ok(d) if relative != 0 && d < n_ranks => {
            // SAFETY: `relative` holds `n_ranks` int32 entries, all read without
            // fault when the porter was checked; the porter (and its table) is
            // alive while its local_send runs.
            i64::from(unsafe { *(relative as *const i32).add(d as usize) })
        }
        _ => i64::from(dest),
    }
}

/// Checks the porter at `porter` as a bale 3.0 porter_t: its table and rank
/// count, when they are one.
fn check(porter: usize) -> Option<(usize, u32)> {
    let npes = state::n_pes();
    let me = state::my_pe();
    if porter == 0 || npes == 0 || me < 0 {
        return None;
    }
    let mut head = [0u8; RELATIVE_AT + 8];
    if !copy(porter, &mut head) {
        return None;
    }
    let int = |at: usize| i32::from_ne_bytes(head[at..at + 4].try_into().unwrap_or([0; 4]));
    let (n_ranks, my_rank) = (int(N_RANKS_AT), int(MY_RANK_AT));
    let relative = usize::from_ne_bytes(
        head[RELATIVE_AT..RELATIVE_AT + 8]
            .try_into()
            .unwrap_or([0; 8]),
    );
    let n = usize::try_from(n_ranks)
        .ok()
        .filter(|&n| n >= 1 && n <= npes)?;
    let mine = usize::try_from(my_rank).ok().filter(|&r| r < n)?;
    if relative == 0 || relative % 4 != 0 {
        return None;
    }
    let mut table = vec![0u8; 4 * n];
    if !copy(relative, &mut table) {
        return None;
    }
    let pes: Vec<i32> = table
        .chunks_exact(4)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let valid = pes.iter().all(|&p| p >= 0 && (p as usize) < npes) && i64::from(pes[mine]) == me;
    valid.then_some((relative, n as u32))
}

/// Copies `out.len()` bytes from `addr` without faulting: through a pipe, whose
/// `write` fails with EFAULT on an address that is not readable. One copy at a
/// time: the pipe is the process's, and two threads' bytes would interleave in
/// it (a porter is checked once, so the lock is off the message path).
fn copy(addr: usize, out: &mut [u8]) -> bool {
    static PIPE: OnceLock<Option<[i32; 2]>> = OnceLock::new();
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some([rd, wr]) = *PIPE.get_or_init(|| {
        let mut fds = [0i32; 2];
        // SAFETY: a valid out-array of two descriptors.
        let ok = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0;
        ok.then_some(fds)
    }) else {
        return false;
    };
    for (i, chunk) in out.chunks_mut(4096).enumerate() {
        let from = addr.wrapping_add(i * 4096);
        // SAFETY: the kernel reads `chunk.len()` bytes at `from` for the pipe,
        // failing with EFAULT (no signal) where they are not mapped readable.
        let w = unsafe { libc::write(wr, from as *const libc::c_void, chunk.len()) };
        if w != chunk.len() as isize {
            if w > 0 {
                drain(rd);
            }
            return false;
        }
        // SAFETY: reads what was just written into `chunk`, which is that long.
        let r = unsafe { libc::read(rd, chunk.as_mut_ptr().cast(), chunk.len()) };
        if r != chunk.len() as isize {
            drain(rd);
            return false;
        }
    }
    true
}

/// Empties the pipe after a partial copy.
fn drain(rd: i32) {
    let mut junk = [0u8; 4096];
    // SAFETY: reads into a local buffer of that size (non-blocking).
    while unsafe { libc::read(rd, junk.as_mut_ptr().cast(), junk.len()) } > 0 {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_readable_memory_and_refuses_unmapped() {
        let src: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let mut out = vec![0u8; src.len()];
        assert!(copy(src.as_ptr() as usize, &mut out));
        assert_eq!(out, src);
        let mut small = [0u8; 8];
        assert!(!copy(8, &mut small));
        // The pipe is empty again: the next copy is exact.
        assert!(copy(src.as_ptr() as usize + 3, &mut small));
        assert_eq!(&small, &src[3..11]);
    }

    /// A porter_t laid out as bale 3.0's: (n_ranks, my_rank, relative).
    #[repr(C)]
    struct Fake {
        head: [u64; 6],
        n_ranks: i32,
        my_rank: i32,
        pad: [i32; 2],
        relative: usize,
        tail: [u64; 4],
    }

    fn fake(n_ranks: i32, my_rank: i32, relative: usize) -> Box<Fake> {
        Box::new(Fake {
            head: [0; 6],
            n_ranks,
            my_rank,
            pad: [0; 2],
            relative,
            tail: [0; 4],
        })
    }

    #[test]
    fn maps_ranks_through_a_checked_table_and_refuses_the_rest() {
        // PE 2 of 4, the local porter of node 1 (PEs 2 and 3), rank 0.
        state::set_pes(2, 4);
        let table: Vec<i32> = vec![2, 3];
        let good = fake(2, 0, table.as_ptr() as usize);
        assert_eq!(
            check(&*good as *const Fake as usize),
            Some((table.as_ptr() as usize, 2))
        );
        forget();
        assert_eq!(pe_of(&*good as *const Fake as usize, 1), 3);
        assert_eq!(pe_of(&*good as *const Fake as usize, 0), 2);
        // Out of the porter's ranks: taken as is.
        assert_eq!(pe_of(&*good as *const Fake as usize, 5), 5);
        // Its own entry is not this PE; an entry outside the job; a rank
        // outside the count; more ranks than PEs; an unmapped table: refused,
        // without a fault.
        let other: Vec<i32> = vec![0, 1];
        let outside: Vec<i32> = vec![2, 9];
        for (n, mine, rel) in [
            (2, 0, other.as_ptr() as usize),
            (2, 0, outside.as_ptr() as usize),
            (2, 2, table.as_ptr() as usize),
            (5, 0, table.as_ptr() as usize),
            (2, 0, 0x10),
            (2, 0, usize::MAX - 7),
        ] {
            let f = fake(n, mine, rel);
            assert_eq!(
                check(&*f as *const Fake as usize),
                None,
                "{n} {mine} {rel:#x}"
            );
        }
        let before = UNMAPPED.load(Ordering::Relaxed);
        let bad = fake(2, 0, 0x10);
        assert_eq!(pe_of(&*bad as *const Fake as usize, 1), 1);
        assert_eq!(UNMAPPED.load(Ordering::Relaxed), before + 1);
        forget();
    }
}
