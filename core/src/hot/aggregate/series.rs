//! Series over the run in a fixed number of buckets ([`BUCKETS`]): the profile's
//! view over time (`over_time` in profile.json) in memory that does not grow
//! with the run's length. Buckets start [`BASE_NS`] wide from the runtime's start;
//! when the run outlasts the last one, neighbours are combined pairwise and the
//! width doubles, so a series always spans the whole run in between half and all
//! of its buckets.
//!
//! [`ThreadSeries`] is one thread's time in each [`Category`] per bucket, kept by
//! the thread's own profile as it records (in place, or by the writer from
//! records): every begin and end moves the thread's innermost category, and the
//! time since the previous move goes to the category it left.

use crate::base::category::{Category, CATEGORIES};
use crate::hot::clock::Clock;

/// Buckets of a series.
pub const BUCKETS: usize = 512;

/// Width of the first buckets, at least (ns): rounded up to a power of two of
/// clock ticks, so that a bucket's index is a shift.
pub const BASE_NS: u64 = 1_000;

/// Where the buckets are: from raw time `origin`, each `1 << shift` ticks wide.
/// Every series of a run has the same origin and base shift, so two of them
/// line up once the finer is coarsened to the other's shift.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Raw time where bucket 0 starts (the runtime's start).
    pub origin: u64,
    /// log2 of the buckets' width in ticks.
    pub shift: u32,
}

impl Grid {
    /// The first grid of a run started at raw `origin` on `clock`: buckets of
    /// [`BASE_NS`] or a little more.
    pub fn new(clock: &Clock, origin: u64) -> Grid {
        let mut shift = 0;
        while shift < 40 && clock.delta_ns(origin, origin + (1u64 << shift)) < BASE_NS {
            shift += 1;
        }
        Grid { origin, shift }
    }

    /// The bucket of raw time `ts` (times before the origin are in bucket 0).
    #[inline(always)]
    pub fn index(&self, ts: u64) -> usize {
        (ts.saturating_sub(self.origin) >> self.shift) as usize
    }

    /// Raw time where bucket `i` starts.
    pub fn start(&self, i: usize) -> u64 {
        self.origin + ((i as u64) << self.shift)
    }

    /// Width of a bucket in ticks.
    pub fn width(&self) -> u64 {
        1 << self.shift
    }
}

/// Combines buckets pairwise (bucket `i` becomes `combine(2i, 2i+1)`), the upper
/// half reset to `T::default()`: the same series at twice the width.
pub fn coalesce<T: Copy + Default>(rows: &mut [T], combine: impl Fn(T, T) -> T) {
    let n = rows.len();
    for i in 0..n / 2 {
        rows[i] = combine(rows[2 * i], rows[2 * i + 1]);
    }
    if n % 2 == 1 {
        rows[n / 2] = rows[n - 1];
    }
    for r in &mut rows[n.div_ceil(2)..] {
        *r = T::default();
    }
}

/// Adds one category row to another.
fn add_rows(a: [u64; CATEGORIES], b: [u64; CATEGORIES]) -> [u64; CATEGORIES] {
    let mut out = a;
    for (x, y) in out.iter_mut().zip(b) {
        *x += y;
    }
    out
}

/// One thread's ticks in each category per bucket, from its first begin to its
/// last end (idle: inside no instance in between).
#[derive(Debug, Clone)]
pub struct ThreadSeries {
    grid: Grid,
    /// Raw time of the latest move (0: the thread has not begun).
    last: u64,
    /// Raw time where the latest move's bucket ends (0: none, the next move
    /// takes the slow path).
    bucket_end: u64,
    /// The latest move's bucket, as an index of `rows`.
    current: usize,
    /// Bucket `lo + i` is `rows[i]`: all [`BUCKETS`] while the thread runs
    /// (made at its first begin), the used ones after [`ThreadSeries::compact`].
    rows: Box<[[u64; CATEGORIES]]>,
    lo: usize,
}

impl ThreadSeries {
    /// A series on `grid`, empty (no memory until the thread begins).
    pub fn new(grid: Grid) -> ThreadSeries {
        ThreadSeries {
            grid,
            last: 0,
            bucket_end: 0,
            current: 0,
            rows: Box::new([]),
            lo: 0,
        }
    }

    /// The thread leaves category `from` at raw time `ts` (for another, or for
    /// the same one inside a nested instance): the time since its last move goes
    /// to `from`.
    #[inline(always)]
    pub fn moved(&mut self, ts: u64, from: Category) {
        // Within the latest move's bucket: one add.
        if ts < self.bucket_end && ts >= self.last {
            if let Some(r) = self.rows.get_mut(self.current) {
                r[from as usize] += ts - self.last;
                self.last = ts;
                return;
            }
        }
        self.spread(ts, from);
    }

    /// [`ThreadSeries::moved`] across buckets, or the first move, or a time
    /// that went back (kept where it was: one thread's clock only grows).
    #[cold]
    #[inline(never)]
    fn spread(&mut self, ts: u64, from: Category) {
        if self.last == 0 {
            self.last = ts;
            return;
        }
        if ts < self.last {
            return;
        }
        if self.rows.len() < BUCKETS {
            self.expand();
        }
        while self.grid.index(ts) >= BUCKETS {
            coalesce(&mut self.rows, add_rows);
            self.grid.shift += 1;
        }
        let mut at = self.last;
        while at < ts {
            let i = self.grid.index(at);
            let next = self.grid.start(i + 1).min(ts);
            self.rows[i][from as usize] += next - at;
            at = next;
        }
        self.last = ts;
        let i = self.grid.index(ts);
        self.current = i;
        self.bucket_end = self.grid.start(i + 1);
    }

    /// All buckets again (after [`ThreadSeries::compact`]).
    fn expand(&mut self) {
        let mut rows = vec![[0u64; CATEGORIES]; BUCKETS].into_boxed_slice();
        rows[self.lo..self.lo + self.rows.len()].copy_from_slice(&self.rows);
        self.rows = rows;
        self.lo = 0;
    }

    /// Keeps only the buckets the thread was in (its thread is gone: a
    /// short-lived thread then holds a few rows, not [`BUCKETS`]).
    pub fn compact(&mut self) {
        let used = |r: &[u64; CATEGORIES]| r.iter().any(|&x| x != 0);
        let Some(first) = self.rows.iter().position(used) else {
            self.rows = Box::new([]);
            return;
        };
        let end = self.rows.iter().rposition(used).map_or(first, |e| e + 1);
        self.rows = self.rows[first..end].into();
        self.lo += first;
        // Rows are no longer indexed by bucket: the next move takes the slow path.
        self.bucket_end = 0;
    }

    /// Its grid now.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// Adds its ticks per bucket and category into `sum`, which is on `grid`
    /// (the same origin, a shift at least this series').
    pub fn add_to(&self, grid: Grid, sum: &mut [[u64; CATEGORIES]]) {
        let by = grid.shift.saturating_sub(self.grid.shift);
        for (k, r) in self.rows.iter().enumerate() {
            let i = (self.lo + k) >> by;
            if let Some(s) = sum.get_mut(i) {
                *s = add_rows(*s, *r);
            }
        }
    }

    /// Memory it holds (bytes).
    pub fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_halves_the_resolution() {
        let mut v = [1u64, 2, 3, 4, 5];
        coalesce(&mut v, |a, b| a + b);
        assert_eq!(v, [3, 7, 5, 0, 0]);
        let mut m = [4u64, 1, 0, 9];
        coalesce(&mut m, u64::max);
        assert_eq!(m, [4, 9, 0, 0]);
    }

    /// Ticks go to the category left, split at bucket boundaries; the series
    /// doubles its width when time passes its last bucket, keeping every tick.
    #[test]
    fn a_thread_series_keeps_every_tick_in_bounded_memory() {
        let grid = Grid {
            origin: 1000,
            shift: 4,
        };
        let mut s = ThreadSeries::new(grid);
        s.moved(1000 + 8, Category::Idle); // first begin: starts here
        s.moved(1000 + 40, Category::Idle); // idle 8..40: buckets 0, 1, 2
        s.moved(1000 + 41, Category::Kernel);
        let mut sum = vec![[0; CATEGORIES]; BUCKETS];
        s.add_to(grid, &mut sum);
        assert_eq!(sum[0][Category::Idle as usize], 8);
        assert_eq!(sum[1][Category::Idle as usize], 16);
        assert_eq!(sum[2][Category::Idle as usize], 8);
        assert_eq!(sum[2][Category::Kernel as usize], 1);
        // Far past the last bucket: 16 * 512 * 3 ticks later, two doublings.
        let far = 1000 + 41 + 16 * BUCKETS as u64 * 3;
        s.moved(far, Category::Wait);
        assert_eq!(s.grid().shift, 6);
        assert_eq!(s.bytes(), BUCKETS * CATEGORIES * 8);
        let mut sum = vec![[0; CATEGORIES]; BUCKETS];
        s.add_to(s.grid(), &mut sum);
        let total: u64 = sum.iter().flatten().sum();
        assert_eq!(total, far - 1008);
        assert_eq!(sum[0][Category::Idle as usize], 32);
        // Compacted, then coarsened into a wider grid: the same ticks.
        s.compact();
        assert!(s.bytes() < BUCKETS * CATEGORIES * 8);
        let wide = Grid { shift: 8, ..grid };
        let mut coarse = vec![[0; CATEGORIES]; BUCKETS];
        s.add_to(wide, &mut coarse);
        assert_eq!(coarse.iter().flatten().sum::<u64>(), far - 1008);
        // A move after compacting expands it again.
        s.moved(far + 5, Category::Idle);
        let mut again = vec![[0; CATEGORIES]; BUCKETS];
        s.add_to(s.grid(), &mut again);
        assert_eq!(again.iter().flatten().sum::<u64>(), far + 5 - 1008);
    }
}
