//! Per-instance samples of a node for scatterplots (`KPROF_SAMPLES`): a uniform
//! random sample of at most `k` of its instances' (begin, duration), however many
//! instances there are. Reservoir sampling by Li's Algorithm L: once the
//! reservoir is full, the index of the next instance to keep is drawn ahead, so an
//! instance costs one count and one comparison; random numbers are drawn only for
//! the kept ones (about `k ln(n/k)` of `n`). The generator is the thread's own
//! xorshift64* (no lock, no system call).
//!
//! The kept ones are many all the same (a program of 80,000 parallel regions
//! keeps about two instances per region, over its call paths and threads, each
//! three logarithms and an exponential): the exponential of the small numbers
//! Algorithm L gives it is a short series ([`exp_small`]), and the floor of a
//! skip a truncation, not calls into libm.

/// A thread's random numbers: xorshift64* (Vigna), enough for sampling.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; 0 is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in (0, 1), never 0 (its logarithm is taken).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; `n` > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// `1/i!` for `i` in 0..=7: the Taylor series of `e^x` that [`exp_small`]
/// sums.
const EXP_TERMS: [f64; 8] = [
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
];

/// `e^x`. The weight of Algorithm L is multiplied by `e^x` with `x = ln(u)/k`,
/// nearly always small (`k` is the sample's size: 1000 by default): for `|x|`
/// up to 1/16 the Taylor series to `x^7` is within 2e-14 relative of it
/// (what it leaves out is below `x^8/8!`), in a dozen instructions where
/// libm's `exp` takes about 60; larger `|x|` go to [`f64::exp`].
#[inline]
pub fn exp_small(x: f64) -> f64 {
    if x.abs() > 0.0625 || x.is_nan() {
        return x.exp();
    }
    EXP_TERMS.iter().rev().fold(0.0, |p, c| p * x + c)
}

/// The sample of one node's instances: `(raw begin, duration ns)`.
#[derive(Debug, Clone, Default)]
pub struct Reservoir {
    /// The kept instances, at most `k`, in no order.
    pub items: Vec<(u64, u64)>,
    /// Instances offered.
    pub seen: u64,
    /// The 1-based index of the next instance to keep (once full).
    next: u64,
    /// Algorithm L's running weight.
    w: f64,
    /// The most instances it keeps (set by the first offer).
    k: usize,
}

impl Reservoir {
    /// Offers one instance; keeps a uniform sample of at most `k` (> 0).
    #[inline(always)]
    pub fn offer(&mut self, begin: u64, dur: u64, k: usize, rng: &mut Rng) {
        self.seen += 1;
        if self.seen == self.next {
            self.replace(begin, dur, k, rng);
        } else if self.items.len() < k {
            self.fill(begin, dur, k, rng);
        }
    }

    /// Adds an instance while the reservoir is not full; draws the first skip
    /// once it is.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, begin: u64, dur: u64, k: usize, rng: &mut Rng) {
        self.k = k;
        if self.items.is_empty() {
            // Most call paths of a large profile have one instance: room for
            // one, not the four a first push makes.
            self.items.reserve_exact(1);
        }
        self.items.push((begin, dur));
        if self.items.len() == k {
            self.w = exp_small(rng.unit().ln() / k as f64);
            self.skip(rng);
        }
    }

    /// Keeps this instance in place of a random one, and draws the next.
    #[cold]
    #[inline(never)]
    fn replace(&mut self, begin: u64, dur: u64, k: usize, rng: &mut Rng) {
        let at = rng.below(self.items.len() as u64) as usize;
        self.items[at] = (begin, dur);
        self.w *= exp_small(rng.unit().ln() / k as f64);
        self.skip(rng);
    }

    /// Algorithm L: the next kept index is geometric with parameter `w`.
    fn skip(&mut self, rng: &mut Rng) {
        let gap = rng.unit().ln() / (1.0 - self.w).ln();
        // A weight so close to 1 that no later instance is ever kept. (Not
        // negative: the truncation is the floor, without a call for it.)
        let gap = if gap.is_finite() && gap >= 0.0 {
            gap.min(1e18) as u64
        } else {
            u64::MAX / 2
        };
        self.next = self.seen.saturating_add(gap).saturating_add(1);
    }

    /// Merges another node's sample (another thread's) into this one: a sample
    /// of at most `k` of both, each side kept in proportion to the instances it
    /// stands for. Merged reservoirs take no more instances (end of run).
    pub fn merge(&mut self, o: &Reservoir, rng: &mut Rng) {
        let k = self.k.max(o.k);
        self.k = k;
        let total = self.seen + o.seen;
        if total == 0 || o.items.is_empty() {
            self.seen = total;
            return;
        }
        let keep = k.min(self.items.len() + o.items.len());
        let mine = ((keep as f64 * self.seen as f64 / total as f64).round() as usize)
            .min(self.items.len())
            .max(keep.saturating_sub(o.items.len()));
        let theirs = (keep - mine).min(o.items.len());
        let mut pick = |list: &mut Vec<(u64, u64)>, n: usize| {
            // A partial Fisher-Yates shuffle: the first n are a uniform subset.
            for i in 0..n {
                let j = i + rng.below((list.len() - i) as u64) as usize;
                list.swap(i, j);
            }
            list.truncate(n);
        };
        pick(&mut self.items, mine);
        let mut other = o.items.clone();
        pick(&mut other, theirs);
        self.items.extend(other);
        self.seen = total;
        // No more offers: never matches.
        self.next = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10^6 instances of one kernel, at times 0..10^6: exactly k kept, spread
    /// uniformly over the run (chi-square over ten time bins, 9 degrees of
    /// freedom: below 27.88, the 0.1% critical value).
    #[test]
    fn a_million_instances_keep_k_uniformly() {
        const N: u64 = 1_000_000;
        for k in [1000usize, 100] {
            let mut r = Reservoir::default();
            let mut rng = Rng::new(42 + k as u64);
            for i in 0..N {
                r.offer(i, 7, k, &mut rng);
            }
            assert_eq!(r.items.len(), k);
            assert_eq!(r.seen, N);
            let mut bins = [0u64; 10];
            for &(t, d) in &r.items {
                assert_eq!(d, 7);
                bins[(t * 10 / N) as usize] += 1;
            }
            let expect = k as f64 / 10.0;
            let chi2: f64 = bins
                .iter()
                .map(|&o| (o as f64 - expect).powi(2) / expect)
                .sum();
            assert!(chi2 < 27.88, "k {k}: bins {bins:?}, chi-square {chi2}");
            // No instance kept twice.
            let mut t: Vec<u64> = r.items.iter().map(|x| x.0).collect();
            t.sort_unstable();
            t.dedup();
            assert_eq!(t.len(), k);
        }
    }

    /// The short exponential against libm's, over the arguments sampling
    /// gives it and beyond.
    #[test]
    fn exp_small_agrees_with_libm() {
        for i in 0..=200_000 {
            let x = -1.0 + 2.0 * f64::from(i) / 200_000.0;
            let (got, want) = (exp_small(x), x.exp());
            assert!(
                (got - want).abs() <= 2e-14 * want,
                "exp_small({x}) = {got:e}, libm {want:e}"
            );
        }
        for k in [1.0, 10.0, 1000.0, 100_000.0] {
            for u in [1e-300, 1e-9, 0.5, 1.0 - 1e-16] {
                let x = f64::ln(u) / k;
                assert!((exp_small(x) - x.exp()).abs() <= 2e-14 * x.exp(), "{u} {k}");
            }
        }
        assert_eq!(exp_small(0.0), 1.0);
        assert_eq!(exp_small(f64::NEG_INFINITY), 0.0);
        assert!(exp_small(f64::NAN).is_nan());
    }

    #[test]
    fn fewer_instances_than_k_are_all_kept_and_merges_stay_bounded() {
        let mut rng = Rng::new(1);
        let mut a = Reservoir::default();
        for i in 0..10 {
            a.offer(i, i, 100, &mut rng);
        }
        assert_eq!(a.items.len(), 10);
        let mut b = Reservoir::default();
        for i in 0..10_000 {
            b.offer(1000 + i, 1, 100, &mut rng);
        }
        a.merge(&b, &mut rng);
        assert_eq!(a.items.len(), 100);
        assert_eq!(a.seen, 10_010);
        // a stood for 0.1% of the instances: at most one of its own is kept.
        assert!(a.items.iter().filter(|x| x.0 < 1000).count() <= 1);
    }
}
