//! Duration statistics of a node: count, inclusive and exclusive totals, extremes,
//! and an exact sum of squares for the standard deviation.

/// Statistics over the instances of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Instances.
    pub count: u64,
    /// Inclusive time.
    pub total_ns: u64,
    /// Exclusive time (inclusive minus children on the same thread).
    pub self_ns: u64,
    /// Shortest instance.
    pub min_ns: u64,
    /// Longest instance.
    pub max_ns: u64,
    /// The sum of squares, a u128 kept as two words so that a node needs no
    /// 16-byte alignment (8 bytes less per node, of a million).
    sum_sq: [u64; 2],
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            count: 0,
            total_ns: 0,
            self_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_sq: [0; 2],
        }
    }
}

impl Stats {
    /// Adds one instance of `total_ns` inclusive and `self_ns` exclusive time.
    ///
    /// (On every end. The sums cannot reach their types' limits: one thread's
    /// durations add up to its run, 2^64 ns is 584 years, and a square is below
    /// 2^128 / 2^64; so plain adds, not saturating ones.)
    #[inline(always)]
    pub fn add(&mut self, total_ns: u64, self_ns: u64) {
        self.count += 1;
        self.total_ns = self.total_ns.wrapping_add(total_ns);
        self.self_ns = self.self_ns.wrapping_add(self_ns);
        self.min_ns = self.min_ns.min(total_ns);
        self.max_ns = self.max_ns.max(total_ns);
        self.set_sum_sq(
            self.sum_sq()
                .wrapping_add(u128::from(total_ns) * u128::from(total_ns)),
        );
    }

    /// Merges another node's statistics into these.
    pub fn merge(&mut self, o: &Stats) {
        self.count += o.count;
        self.total_ns = self.total_ns.saturating_add(o.total_ns);
        self.self_ns = self.self_ns.saturating_add(o.self_ns);
        self.min_ns = self.min_ns.min(o.min_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
        self.set_sum_sq(self.sum_sq().saturating_add(o.sum_sq()));
    }

    fn sum_sq(&self) -> u128 {
        u128::from(self.sum_sq[1]) << 64 | u128::from(self.sum_sq[0])
    }

    fn set_sum_sq(&mut self, v: u128) {
        self.sum_sq = [v as u64, (v >> 64) as u64];
    }

    /// Shortest instance (0 when none).
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min_ns
        }
    }

    /// Mean inclusive time.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.count as f64
        }
    }

    /// Population standard deviation of the inclusive time.
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.mean();
        (self.sum_sq() as f64 / n - mean * mean).max(0.0).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments() {
        let mut s = Stats::default();
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.add(v, v / 2);
        }
        assert_eq!((s.count, s.total_ns, s.min(), s.max_ns), (8, 40, 2, 9));
        assert_eq!(s.mean(), 5.0);
        assert!((s.stddev() - 2.0).abs() < 1e-9);
        let mut t = Stats::default();
        t.merge(&s);
        t.merge(&Stats::default());
        assert_eq!(t, s);
    }
}
