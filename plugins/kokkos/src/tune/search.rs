//! The search of one tuning problem: which point of a lattice (one axis per output
//! variable) gives the lowest cost, when every measurement is noisy.
//!
//! A race by successive halving: the candidates of a round are measured in turn
//! (interleaved, so that a drift of the machine hits them alike) until each has
//! `target` measurements; the better half by median goes on, with twice the
//! measurements, until one is left. Medians, not means: a preempted run is an
//! outlier, not a shift. Small lattices race every point (exhaustive); large ones
//! race the default, its neighbours and a spread sample, then race the winner
//! against its neighbours at a shrinking radius (a pattern search) until the
//! winner stays. The default is candidate 0 and the first one measured, so tuning
//! starts where no tuning is; the winner replaces it only when it is measurably
//! better ([`MIN_GAIN`]). Then the search exploits: every later request gets the
//! best point.
//!
//! Written here rather than taken from a crate: the derivative-free optimizers on
//! crates.io (argmin's Nelder-Mead, ...) drive the objective themselves through a
//! closure, while here each measurement is one Kokkos context that arrives when the
//! program runs it; the race is a few dozen lines of bookkeeping.

use std::collections::HashMap;

/// Lattices of at most this many points are searched exhaustively.
pub const EXHAUSTIVE_MAX: usize = 32;
/// Measurements of each candidate in the first round of a race.
pub const FIRST_SAMPLES: usize = 3;
/// Points in the first race of a large lattice (the default included).
pub const SAMPLED: usize = 16;
/// Relative improvement over the default below which the default is kept.
pub const MIN_GAIN: f64 = 0.01;
/// Races around the winner after the first, at most.
const MAX_REFINEMENTS: u32 = 8;

/// One point of the lattice and what it measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// An index on each axis.
    pub point: Vec<usize>,
    /// Its costs, in arrival order.
    pub samples: Vec<f64>,
}

impl Candidate {
    /// The median cost (infinite before the first measurement).
    pub fn median(&self) -> f64 {
        median(&self.samples)
    }
}

/// The median of `v` (the mean of the middle two for an even count); infinite
/// when empty.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::INFINITY;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// How the lattice is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Every point races.
    Exhaustive,
    /// A sample races, then the winner's neighbourhood.
    Sampled,
    /// The best point came from an earlier run's cache: no search.
    Cached,
}

impl Strategy {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exhaustive => "exhaustive",
            Strategy::Sampled => "sampled race and pattern search",
            Strategy::Cached => "cached",
        }
    }
}

/// The search of one problem.
#[derive(Debug, Clone)]
pub struct Search {
    sizes: Vec<usize>,
    strategy: Strategy,
    candidates: Vec<Candidate>,
    index: HashMap<Vec<usize>, usize>,
    /// Candidates racing in this round.
    alive: Vec<usize>,
    /// Measurements each alive candidate needs before the round ends.
    target: usize,
    /// The best candidate once converged.
    best: Option<usize>,
    /// Winner of the previous race (sampled search).
    last_winner: Option<usize>,
    refinements: u32,
    /// Measurements recorded while searching.
    searching: u64,
    rng: u64,
}

impl Search {
    /// A search over a lattice with `sizes` points on each axis (each at least 1)
    /// starting from `default`; `seed` makes the sample of a large lattice
    /// reproducible.
    pub fn new(sizes: Vec<usize>, default: Vec<usize>, seed: u64) -> Search {
        let sizes: Vec<usize> = sizes.into_iter().map(|s| s.max(1)).collect();
        let default: Vec<usize> = default
            .iter()
            .zip(&sizes)
            .map(|(&d, &s)| d.min(s - 1))
            .collect();
        let total = sizes
            .iter()
            .try_fold(1usize, |acc, &s| acc.checked_mul(s))
            .unwrap_or(usize::MAX);
        let strategy = if total <= EXHAUSTIVE_MAX {
            Strategy::Exhaustive
        } else {
            Strategy::Sampled
        };
        let mut s = Search {
            sizes,
            strategy,
            candidates: Vec::new(),
            index: HashMap::new(),
            alive: Vec::new(),
            target: FIRST_SAMPLES,
            best: None,
            last_winner: None,
            refinements: 0,
            searching: 0,
            rng: seed ^ 0x9e37_79b9_7f4a_7c15,
        };
        let d = s.add(default.clone());
        s.alive.push(d);
        match strategy {
            Strategy::Exhaustive => {
                for p in 0..total {
                    let point = s.unrank(p);
                    let c = s.add(point);
                    if c != d {
                        s.alive.push(c);
                    }
                }
            }
            _ => {
                let radius = s.radii(0);
                for c in s.neighbours(&default, &radius) {
                    s.alive.push(c);
                }
                let mut tries = 0;
                while s.alive.len() < SAMPLED.min(total) && tries < 16 * SAMPLED {
                    tries += 1;
                    let point: Vec<usize> = (0..s.sizes.len())
                        .map(|k| (s.random() % s.sizes[k] as u64) as usize)
                        .collect();
                    let c = s.add(point);
                    if !s.alive.contains(&c) {
                        s.alive.push(c);
                    }
                }
            }
        }
        if s.alive.len() == 1 {
            s.best = Some(d);
        }
        s
    }

    /// A search that already converged to `best` (from a cache), `default` being
    /// what the program proposes.
    pub fn converged(sizes: Vec<usize>, default: Vec<usize>, best: Vec<usize>) -> Search {
        let mut s = Search::new(sizes, default, 0);
        s.strategy = Strategy::Cached;
        let best: Vec<usize> = best
            .iter()
            .zip(&s.sizes)
            .map(|(&b, &n)| b.min(n - 1))
            .collect();
        let b = s.add(best);
        s.alive = vec![b];
        s.best = Some(b);
        s
    }

    /// How it searches.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Every candidate proposed so far; the default is the first.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    /// Whether the search is over (every request now gets [`Search::best`]).
    pub fn is_converged(&self) -> bool {
        self.best.is_some()
    }

    /// The best candidate: the converged one, else the best median so far.
    pub fn best(&self) -> usize {
        self.best.unwrap_or_else(|| {
            (0..self.candidates.len())
                .min_by(|&a, &b| {
                    self.candidates[a]
                        .median()
                        .total_cmp(&self.candidates[b].median())
                })
                .unwrap_or(0)
        })
    }

    /// Measurements recorded before the search converged.
    pub fn searching(&self) -> u64 {
        self.searching
    }

    /// The candidate to run next.
    pub fn next(&self) -> usize {
        if let Some(b) = self.best {
            return b;
        }
        // The first alive candidate with the fewest measurements: the alive list
        // is visited in order, round-robin (the default first).
        self.alive
            .iter()
            .copied()
            .min_by_key(|&c| self.candidates[c].samples.len())
            .unwrap_or(0)
    }

    /// Records one measurement of candidate `id` (ignored when unknown).
    pub fn record(&mut self, id: usize, cost: f64) {
        if !cost.is_finite() {
            return;
        }
        let Some(c) = self.candidates.get_mut(id) else {
            return;
        };
        c.samples.push(cost);
        if self.best.is_some() {
            return;
        }
        self.searching += 1;
        while self.best.is_none()
            && self
                .alive
                .iter()
                .all(|&a| self.candidates[a].samples.len() >= self.target)
        {
            self.advance();
        }
    }

    /// Ends a round: halves the race, or ends it.
    fn advance(&mut self) {
        if self.alive.len() > 1 {
            let mut ranked = self.alive.clone();
            ranked.sort_by(|&a, &b| {
                self.candidates[a]
                    .median()
                    .total_cmp(&self.candidates[b].median())
                    .then(a.cmp(&b))
            });
            ranked.truncate(ranked.len().div_ceil(2));
            // Keep the visiting order (default first when it survives).
            self.alive.retain(|c| ranked.contains(c));
            self.target *= 2;
            if self.alive.len() > 1 {
                return;
            }
        }
        let winner = self.alive[0];
        if self.strategy == Strategy::Sampled && self.refinements < MAX_REFINEMENTS {
            let radius = self.radii(self.refinements);
            let finest = radius.iter().all(|&r| r <= 1);
            if self.last_winner != Some(winner) || !finest {
                self.last_winner = Some(winner);
                self.refinements += 1;
                let point = self.candidates[winner].point.clone();
                let around = self.neighbours(&point, &radius);
                if !around.is_empty() {
                    self.alive = vec![winner];
                    self.alive.extend(around);
                    self.target = FIRST_SAMPLES.max(1);
                    // The winner has its measurements; its rivals start afresh.
                    return;
                }
            }
        }
        self.finish(winner);
    }

    /// Converges to `winner` unless it is not measurably better than the default.
    fn finish(&mut self, winner: usize) {
        let d = self.candidates[0].median();
        let w = self.candidates[winner].median();
        let better = w < d - MIN_GAIN * d.abs();
        self.best = Some(if better { winner } else { 0 });
        self.alive = vec![self.best.unwrap_or(0)];
    }

    /// The neighbour radius on each axis in refinement round `round`: an eighth
    /// of the axis, halved each round, at least 1.
    fn radii(&self, round: u32) -> Vec<usize> {
        self.sizes
            .iter()
            .map(|&s| ((s / 8) >> round.min(31)).max(1))
            .collect()
    }

    /// Candidates one radius away from `point` on each axis (added when new),
    /// those not yet measured first.
    fn neighbours(&mut self, point: &[usize], radius: &[usize]) -> Vec<usize> {
        let mut out = Vec::new();
        for k in 0..point.len() {
            if self.sizes[k] <= 1 {
                continue;
            }
            let lo = point[k].saturating_sub(radius[k]);
            let hi = (point[k] + radius[k]).min(self.sizes[k] - 1);
            for v in [lo, hi] {
                if v == point[k] {
                    continue;
                }
                let mut p = point.to_vec();
                p[k] = v;
                let c = self.add(p);
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// The candidate at `point`, added when new.
    fn add(&mut self, point: Vec<usize>) -> usize {
        if let Some(&c) = self.index.get(&point) {
            return c;
        }
        let c = self.candidates.len();
        self.index.insert(point.clone(), c);
        self.candidates.push(Candidate {
            point,
            samples: Vec::new(),
        });
        c
    }

    /// The `p`-th lattice point in row-major order.
    fn unrank(&self, mut p: usize) -> Vec<usize> {
        let mut point = vec![0; self.sizes.len()];
        for k in (0..self.sizes.len()).rev() {
            point[k] = p % self.sizes[k];
            p /= self.sizes[k];
        }
        point
    }

    /// splitmix64: a reproducible spread sample, no dependency.
    fn random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noise: a reproducible stream, multiplicative jitter of up to `jitter` and
    /// an outlier (x `spike`) one time in `every`.
    struct Noise {
        state: u64,
        /// Measurements until the next outlier.
        until_spike: u64,
    }

    impl Noise {
        fn new(seed: u64) -> Noise {
            Noise {
                state: seed,
                until_spike: 0,
            }
        }
        fn unit(&mut self) -> f64 {
            self.state = self
                .state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.state >> 11) as f64 / (1u64 << 53) as f64
        }
        fn apply(&mut self, cost: f64, jitter: f64, every: u64, spike: f64) -> f64 {
            let j = 1.0 + jitter * (2.0 * self.unit() - 1.0);
            if self.until_spike == 0 {
                self.until_spike = every;
            }
            self.until_spike -= 1;
            if self.until_spike == 0 {
                cost * j * spike
            } else {
                cost * j
            }
        }
    }

    /// Runs `search` on `cost` for `contexts` requests; returns the context at
    /// which it converged.
    fn drive(
        search: &mut Search,
        contexts: usize,
        mut cost: impl FnMut(&[usize]) -> f64,
    ) -> Option<usize> {
        for i in 0..contexts {
            if search.is_converged() {
                return Some(i);
            }
            let c = search.next();
            let p = search.candidates()[c].point.clone();
            search.record(c, cost(&p));
        }
        search.is_converged().then_some(contexts)
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_infinite());
    }

    #[test]
    fn small_set_is_searched_exhaustively_from_the_default() {
        // {1,2,4,...,128}, default 16 (index 4), minimum at 4 (index 2).
        let mut s = Search::new(vec![8], vec![4], 1);
        assert_eq!(s.strategy(), Strategy::Exhaustive);
        assert_eq!(s.candidates()[s.next()].point, vec![4], "default first");
        let mut noise = Noise::new(7);
        let at = drive(&mut s, 500, |p| {
            let x = p[0] as f64 - 2.0;
            noise.apply(20_000.0 * (1.0 + 0.5 * x * x), 0.15, 7, 5.0)
        })
        .expect("converges");
        assert_eq!(s.candidates()[s.best()].point, vec![2]);
        assert_eq!(s.candidates().len(), 8, "every value tried");
        // 8 x 3 + 4 x 3 + 2 x 6 measurements.
        assert_eq!(at, 48);
        assert_eq!(s.searching(), 48);
        // Exploits from then on.
        for _ in 0..10 {
            assert_eq!(s.next(), s.best());
        }
    }

    #[test]
    fn flat_objective_keeps_the_default() {
        let mut s = Search::new(vec![5], vec![3], 1);
        let mut noise = Noise::new(3);
        drive(&mut s, 500, |_| noise.apply(1000.0, 0.005, 1000, 1.0)).expect("converges");
        assert_eq!(s.best(), 0, "no measurable gain: the default stays");
    }

    #[test]
    fn large_two_dimensional_lattice_converges_near_the_minimum() {
        // 19 x 19 (Kokkos 3.4's team-size tuner has such ranges), default at the
        // corner, minimum at (13, 5); noisy with outliers.
        for seed in 1..=8 {
            let mut s = Search::new(vec![19, 19], vec![0, 0], seed);
            assert_eq!(s.strategy(), Strategy::Sampled);
            let mut noise = Noise::new(seed * 31);
            let f = |p: &[usize]| {
                let (x, y) = (p[0] as f64 - 13.0, p[1] as f64 - 5.0);
                1000.0 * (1.0 + 0.02 * (x * x + y * y))
            };
            let at = drive(&mut s, 5000, |p| noise.apply(f(p), 0.05, 11, 4.0))
                .unwrap_or_else(|| panic!("seed {seed}: no convergence"));
            let best = s.candidates()[s.best()].point.clone();
            assert!(
                f(&best) <= 1000.0 * 1.1,
                "seed {seed}: converged to {best:?} (cost {})",
                f(&best)
            );
            assert!(at < 1500, "seed {seed}: {at} contexts");
        }
    }

    #[test]
    fn continuous_axis_is_refined() {
        // A 1001-point axis (a continuous range), minimum at 700, default 0.
        let mut s = Search::new(vec![1001], vec![0], 5);
        let mut noise = Noise::new(9);
        let f = |p: &[usize]| {
            let x = (p[0] as f64 - 700.0) / 1000.0;
            1.0 + 4.0 * x * x
        };
        drive(&mut s, 5000, |p| noise.apply(f(p), 0.02, 13, 3.0)).expect("converges");
        let best = s.candidates()[s.best()].point[0];
        assert!((600..=800).contains(&best), "best {best}");
    }

    #[test]
    fn cached_search_starts_at_the_best() {
        let mut s = Search::converged(vec![8], vec![4], vec![2]);
        assert_eq!(s.strategy(), Strategy::Cached);
        assert_eq!(s.candidates()[s.next()].point, vec![2]);
        s.record(s.next(), 5.0);
        assert_eq!(s.searching(), 0);
    }

    #[test]
    fn bad_measurements_are_ignored() {
        let mut s = Search::new(vec![4], vec![0], 1);
        s.record(99, 1.0);
        s.record(0, f64::NAN);
        assert_eq!(s.searching(), 0);
        let single = Search::new(vec![1, 1], vec![0, 0], 1);
        assert!(single.is_converged(), "nothing to search");
    }
}
