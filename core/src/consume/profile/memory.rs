//! Memory in use per space, from allocation and deallocation events delivered in
//! timestamp order: current bytes, high-water mark and when, the largest allocations,
//! and what was never freed.
//!
//! The runtime's own memory is told apart from the program's. Kokkos allocates
//! per-thread scratch buffers for team kernels when its back ends start (before any
//! tool is loaded), grows them when a team kernel asks for more scratch, and frees
//! them when its back ends stop (after tools are finalized). A tool therefore sees
//! frees of blocks it never saw allocated, and allocations it never sees freed:
//! - Kokkos 4.x frees the old buffer as `[unlabeled]` and allocates the new one as
//!   `Kokkos::OpenMP::scratch_mem` (`Kokkos::Serial::scratch_mem`, ...): the new
//!   block is recognised by its label ([`is_runtime_label`]).
//! - Kokkos 3.4 labels both `[unlabeled]` (its Serial back end uses
//!   `Kokkos::Serial::scratch_mem`): an allocation labelled `[unlabeled]` that
//!   follows a free of an unknown `[unlabeled]` block is the runtime replacing it.
//!
//! Such frees are not counted as unknown, and the runtime's blocks are never listed as
//! leaks (they still count in bytes in use and the high-water mark: they are memory
//! the process holds). A free of an unknown `[unlabeled]` block that no runtime
//! allocation follows by the end of the run is counted as unknown after all
//! ([`Space::unmatched_frees`]).

use rustc_hash::FxHashMap;

use crate::hot::aggregate::series::{coalesce, Grid, BUCKETS};

/// Largest allocations remembered per space.
pub const LARGEST: usize = 10;

/// The label Kokkos gives its own raw allocations (and raw deallocations).
pub const UNLABELED: &str = "[unlabeled]";

/// Whether `label` names memory the Kokkos runtime allocates for itself: its
/// per-thread or per-team scratch (`Kokkos::OpenMP::scratch_mem`,
/// `Kokkos::Serial::scratch_mem`, `Kokkos::InternalScratchSpace`, ...).
pub fn is_runtime_label(label: &str) -> bool {
    label.strip_prefix("Kokkos::").is_some_and(|rest| {
        rest.as_bytes()
            .windows(7)
            .any(|w| w.eq_ignore_ascii_case(b"scratch"))
    })
}

/// What a label says about an allocation or deallocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    /// A label of the program's (a View's name, a raw allocation's label).
    Program,
    /// `[unlabeled]`: the runtime's raw blocks (or a program's unlabeled raw ones).
    Unlabeled,
    /// A label only the runtime uses ([`is_runtime_label`]).
    Runtime,
}

impl Label {
    /// Classifies a label's text.
    pub fn of(text: &str) -> Label {
        if text == UNLABELED {
            Label::Unlabeled
        } else if is_runtime_label(text) {
            Label::Runtime
        } else {
            Label::Program
        }
    }
}

/// What a deallocation matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freed {
    /// A live allocation.
    Known,
    /// An unknown `[unlabeled]` block, held as the runtime's until the run ends.
    Pending,
    /// Nothing kprof saw allocated: an unknown free.
    Unknown,
}

/// One live allocation.
#[derive(Clone, Copy, Debug)]
pub struct Live {
    /// Label id.
    pub label: u32,
    /// Size.
    pub bytes: u64,
    /// Allocated by the runtime for itself (never a leak of the program's).
    pub runtime: bool,
}

/// One memory space.
#[derive(Default)]
pub struct Space {
    /// Allocations seen.
    pub allocations: u64,
    /// Deallocations matched.
    pub deallocations: u64,
    /// Bytes in use now.
    pub current: u64,
    /// Most bytes in use at once.
    pub high_water: u64,
    /// Raw time the high-water mark was reached.
    pub high_water_ts: u64,
    /// Live allocations by address.
    pub live: FxHashMap<u64, Live>,
    /// The largest allocations: (bytes, label id), largest first.
    pub largest: Vec<(u64, u32)>,
    /// Frees of unknown `[unlabeled]` blocks not yet followed by the runtime's
    /// allocation of their replacement.
    pending_runtime_frees: u64,
}

impl Space {
    /// Records an allocation at raw time `ts` (a program's: for the traces' bytes in
    /// use, where the owner does not matter).
    pub fn alloc(&mut self, ts: u64, label: u32, ptr: u64, bytes: u64) {
        self.alloc_labelled(ts, label, Label::Program, ptr, bytes);
    }

    /// Records a deallocation; false when `ptr` is not a live allocation.
    pub fn free(&mut self, ptr: u64) -> bool {
        self.free_labelled(ptr, Label::Program) == Freed::Known
    }

    /// Records an allocation at raw time `ts`; `kind` classifies its label.
    pub fn alloc_labelled(&mut self, ts: u64, label: u32, kind: Label, ptr: u64, bytes: u64) {
        self.allocations += 1;
        let runtime = match kind {
            Label::Runtime => true,
            Label::Unlabeled => self.pending_runtime_frees > 0,
            Label::Program => false,
        };
        if runtime {
            self.pending_runtime_frees = self.pending_runtime_frees.saturating_sub(1);
        }
        let entry = Live {
            label,
            bytes,
            runtime,
        };
        if let Some(old) = self.live.insert(ptr, entry) {
            // The runtime never reported freeing the previous block at this address.
            self.current = self.current.saturating_sub(old.bytes);
        }
        self.current = self.current.saturating_add(bytes);
        if self.current > self.high_water {
            self.high_water = self.current;
            self.high_water_ts = ts;
        }
        if self.largest.len() < LARGEST || self.largest.last().is_some_and(|l| l.0 < bytes) {
            let at = self.largest.partition_point(|l| l.0 >= bytes);
            self.largest.insert(at, (bytes, label));
            self.largest.truncate(LARGEST);
        }
    }

    /// Records a deallocation of `ptr`; `kind` classifies its label.
    pub fn free_labelled(&mut self, ptr: u64, kind: Label) -> Freed {
        match self.live.remove(&ptr) {
            Some(old) => {
                self.deallocations += 1;
                self.current = self.current.saturating_sub(old.bytes);
                Freed::Known
            }
            None if kind == Label::Unlabeled => {
                self.pending_runtime_frees += 1;
                Freed::Pending
            }
            None => Freed::Unknown,
        }
    }

    /// Frees of unknown `[unlabeled]` blocks that no runtime allocation followed:
    /// unknown frees after all.
    pub fn unmatched_frees(&self) -> u64 {
        self.pending_runtime_frees
    }

    /// The program's allocations still live: (address, allocation).
    pub fn leaks(&self) -> impl Iterator<Item = (u64, Live)> + '_ {
        self.live
            .iter()
            .filter(|(_, l)| !l.runtime)
            .map(|(&p, &l)| (p, l))
    }
}

/// Bytes in use per space over the run: per bucket of a [`Grid`], the most in
/// use at once (every space on the same grid; coarsened together).
pub struct MemorySeries {
    grid: Grid,
    /// By space name id.
    spaces: FxHashMap<u32, SpaceSeries>,
}

/// One space's series.
struct SpaceSeries {
    max: Box<[u64]>,
    /// The bucket of its latest change.
    last: usize,
    /// Bytes in use since then.
    current: u64,
}

impl MemorySeries {
    /// An empty series on `grid`.
    pub fn new(grid: Grid) -> MemorySeries {
        MemorySeries {
            grid,
            spaces: FxHashMap::default(),
        }
    }

    /// Space `space` holds `bytes` from raw time `ts` on (times arrive in order).
    pub fn set(&mut self, space: u32, ts: u64, bytes: u64) {
        self.cover(ts);
        let i = self.grid.index(ts);
        let s = self.spaces.entry(space).or_insert_with(|| SpaceSeries {
            max: vec![0; BUCKETS].into_boxed_slice(),
            last: i,
            current: 0,
        });
        s.carry(i);
        s.max[i] = s.max[i].max(bytes);
        s.current = bytes;
    }

    /// Coarsens the grid until raw time `ts` is in its last bucket or before.
    fn cover(&mut self, ts: u64) {
        while self.grid.index(ts) >= BUCKETS {
            for s in self.spaces.values_mut() {
                coalesce(&mut s.max, u64::max);
                s.last /= 2;
            }
            self.grid.shift += 1;
        }
    }

    /// The series up to raw time `end`, on a grid with at least `shift`: the
    /// grid, and per space (name id) the most in use per bucket, one value per
    /// bucket up to `end`'s.
    pub fn finish(mut self, end: u64, shift: u32) -> (Grid, Vec<(u32, Vec<u64>)>) {
        self.cover(end);
        while self.grid.shift < shift {
            for s in self.spaces.values_mut() {
                coalesce(&mut s.max, u64::max);
                s.last /= 2;
            }
            self.grid.shift += 1;
        }
        let n = self.grid.index(end) + 1;
        let mut out: Vec<(u32, Vec<u64>)> = self
            .spaces
            .into_iter()
            .map(|(space, mut s)| {
                s.carry(n - 1);
                (space, s.max[..n].to_vec())
            })
            .collect();
        out.sort_unstable_by_key(|(space, _)| *space);
        (self.grid, out)
    }
}

impl SpaceSeries {
    /// Carries the bytes in use into the buckets after the latest change, up
    /// to bucket `i`: they held at least that much.
    fn carry(&mut self, i: usize) {
        for m in &mut self.max[(self.last + 1).min(i)..=i] {
            *m = (*m).max(self.current);
        }
        self.last = self.last.max(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_water_and_leaks() {
        let mut s = Space::default();
        s.alloc_labelled(1, 1, Label::Program, 0x10, 100);
        s.alloc_labelled(2, 2, Label::Program, 0x20, 50);
        assert_eq!(s.free_labelled(0x10, Label::Program), Freed::Known);
        s.alloc_labelled(3, 3, Label::Program, 0x30, 80);
        assert_eq!(s.free_labelled(0x99, Label::Program), Freed::Unknown);
        assert_eq!((s.current, s.high_water, s.high_water_ts), (130, 150, 2));
        assert_eq!(s.leaks().count(), 2);
        assert_eq!(s.largest, vec![(100, 1), (80, 3), (50, 2)]);
        assert_eq!(s.unmatched_frees(), 0);
    }

    #[test]
    fn runtime_labels() {
        assert!(is_runtime_label("Kokkos::OpenMP::scratch_mem"));
        assert!(is_runtime_label("Kokkos::Serial::scratch_mem"));
        assert!(is_runtime_label("Kokkos::InternalScratchSpace"));
        assert!(!is_runtime_label("scratch_mem"));
        assert!(!is_runtime_label("Kokkos::View::initialization [x]"));
        assert!(!is_runtime_label("my_scratch"));
        assert_eq!(Label::of(UNLABELED), Label::Unlabeled);
        assert_eq!(Label::of("x"), Label::Program);
    }

    /// Kokkos 4.x growing its scratch: an unknown `[unlabeled]` free, then a
    /// labelled runtime allocation, per thread; neither a leak nor an unknown free.
    #[test]
    fn runtime_scratch_kokkos_4() {
        let mut s = Space::default();
        for t in 0..2 {
            assert_eq!(s.free_labelled(0x100 + t, Label::Unlabeled), Freed::Pending);
            s.alloc_labelled(1, 7, Label::Runtime, 0x200 + t, 1000);
        }
        s.alloc_labelled(2, 8, Label::Program, 0x300, 10);
        assert_eq!(s.unmatched_frees(), 0);
        assert_eq!(s.leaks().map(|(p, _)| p).collect::<Vec<_>>(), vec![0x300]);
        assert_eq!(s.current, 2010);
    }

    /// Kokkos 3.4: both the free and the new block are `[unlabeled]`, frees of all
    /// threads first; a later `[unlabeled]` allocation with nothing pending is the
    /// program's, and a pending free nothing replaced stays unknown.
    #[test]
    fn runtime_scratch_kokkos_3_4() {
        let mut s = Space::default();
        s.free_labelled(0x100, Label::Unlabeled);
        s.free_labelled(0x101, Label::Unlabeled);
        s.alloc_labelled(1, 0, Label::Unlabeled, 0x200, 1000);
        s.alloc_labelled(1, 0, Label::Unlabeled, 0x201, 1000);
        s.alloc_labelled(2, 0, Label::Unlabeled, 0x300, 64);
        assert_eq!(s.leaks().map(|(p, _)| p).collect::<Vec<_>>(), vec![0x300]);
        assert_eq!(s.free_labelled(0x200, Label::Unlabeled), Freed::Known);
        assert_eq!(s.free_labelled(0x999, Label::Unlabeled), Freed::Pending);
        assert_eq!(s.unmatched_frees(), 1);
    }

    /// Most in use per bucket, carried over buckets without a change, and
    /// coarsened by maxima when the run outlasts the buckets.
    #[test]
    fn memory_series_keeps_the_most_in_use_per_bucket() {
        let grid = Grid {
            origin: 0,
            shift: 4,
        };
        let mut m = MemorySeries::new(grid);
        m.set(7, 5, 100); // bucket 0
        m.set(7, 6, 40);
        m.set(7, 50, 300); // bucket 3; buckets 1 and 2 hold 40
        m.set(7, 52, 0);
        let (g, v) = m.finish(100, 4);
        assert_eq!(g, grid);
        assert_eq!(v, vec![(7, vec![100, 40, 40, 300, 0, 0, 0])]);
        // Past the last bucket: the width doubles, maxima of pairs.
        let mut m = MemorySeries::new(grid);
        m.set(1, 5, 100);
        m.set(1, 40, 10);
        m.set(1, 16 * BUCKETS as u64 + 20, 7);
        let (g, v) = m.finish(16 * BUCKETS as u64 + 30, 0);
        assert_eq!(g.shift, 5);
        assert_eq!(v[0].1.len(), BUCKETS / 2 + 1);
        assert_eq!(&v[0].1[..3], &[100, 100, 10]);
        assert_eq!(v[0].1[BUCKETS / 2], 10);
        assert_eq!(v[0].1[BUCKETS / 2 - 1], 10);
    }
}
