//! The search of one tuning problem: which point of a lattice (one axis per output
//! variable) gives the lowest cost, when every measurement is noisy.
//!
//! A race that drops a candidate as soon as the measurements show it slower beyond
//! the noise: every round measures each candidate still in the race once
//! (interleaved, so that a drift of the machine hits them alike); from the second
//! round on, a candidate whose lower bound is above the leader's upper bound leaves
//! the race. A candidate is measured again only while its difference to the
//! leader is within the noise, so a clearly slower one costs two measurements on a
//! quiet machine, and close rivals get more, up to [`MAX_ROUNDS`] (the budget).
//!
//! Noise on a busy machine is one-sided: a preempted context takes longer, never
//! shorter. So a candidate's cost is estimated by its **lowest** measurement, not
//! its mean or median. Its bounds are that estimate plus or minus [`MARGIN`]
//! spreads; the lower bound exists only once the candidate was measured often
//! enough that all its measurements being preempted has a chance of at most
//! [`ALL_PREEMPTED`] (one preempted measurement alone says nothing). The
//! [`Noise`] is read from the measurements: the spread (the width of the jitter
//! of measurements nothing preempted) and the share of preempted measurements: on
//! a quiet machine two measurements of a candidate suffice, on a loaded one it
//! takes four or more, and close rivals race longer.
//!
//! Small lattices race every point (exhaustive); large ones race the default, its
//! neighbours and an evenly spread sample, then race the winner against its
//! neighbours (a pattern search): a neighbour becomes the centre only when it is
//! faster beyond the noise, the radius halves when none is, until the centre stays
//! at the finest radius. The default is candidate 0 and the first one measured, so
//! tuning starts where no tuning is. **Do no harm**: the winner replaces the
//! default only when the default's lower bound is above the winner's upper bound
//! (or the default left a race so, against a leader at least as slow as the
//! winner); else the default stays. Then the search exploits: every later request
//! gets the best point.
//!
//! Written here rather than taken from a crate: the derivative-free optimizers on
//! crates.io (argmin's Nelder-Mead, ...) drive the objective themselves through a
//! closure, while here each measurement is one Kokkos context that arrives when the
//! program runs it; the race is a few dozen lines of bookkeeping.

use std::collections::HashMap;

/// Lattices of at most this many points are searched exhaustively.
pub const EXHAUSTIVE_MAX: usize = 32;
/// Points in the first race of a large lattice (the default and its neighbours
/// included).
pub const SAMPLED: usize = 12;
/// Measurements of each candidate in one race, at most (the budget): candidates
/// still within the noise of the leader then are ties, and the leader wins.
pub const MAX_ROUNDS: usize = 8;
/// The least relative spread assumed (timer and cache effects).
pub const MIN_SPREAD: f64 = 0.01;
/// The largest relative spread assumed (also the spread before any candidate has
/// two measurements).
pub const MAX_SPREAD: f64 = 0.5;
/// Spreads between a candidate's estimate and its bounds.
pub const MARGIN: f64 = 0.75;
/// The chance, at most, that every measurement of a candidate dropped from a
/// race was preempted.
pub const ALL_PREEMPTED: f64 = 0.02;
/// Races around the winner after the first, at most.
const MAX_REFINEMENTS: u32 = 24;

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

    /// The estimated cost: the lowest measurement (noise only adds to a cost);
    /// infinite before the first measurement.
    pub fn estimate(&self) -> f64 {
        self.samples.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// The cost's lower bound: the estimate less [`MARGIN`] spreads, once
    /// measured often enough that all its measurements being preempted is
    /// unlikely ([`Noise::trusted`]); minus infinity before.
    fn lower(&self, noise: &Noise) -> f64 {
        if noise.trusted(self.samples.len()) {
            let e = self.estimate();
            e - MARGIN * noise.spread * e.abs()
        } else {
            f64::NEG_INFINITY
        }
    }

    /// The cost's upper bound: the estimate plus [`MARGIN`] spreads (noise only
    /// adds to a cost, so the lowest measurement bounds it but for the jitter).
    fn upper(&self, noise: &Noise) -> f64 {
        let e = self.estimate();
        e + MARGIN * noise.spread * e.abs()
    }
}

/// What the measurements so far say about the noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// The relative width of the jitter of measurements that nothing preempted:
    /// the median, over candidates measured twice or more, of the relative gap
    /// between their lowest measurement and the highest of their lower half,
    /// scaled to the width that gap implies for evenly spread measurements (the
    /// lower half, so that up to half of a candidate's measurements may be
    /// preempted), within [`MIN_SPREAD`] and [`MAX_SPREAD`].
    pub spread: f64,
    /// The share of measurements that were preempted: above their candidate's
    /// lowest by more than two spreads (one added to the count and two to the
    /// total, so that no measurement proves a quiet machine).
    pub preempted: f64,
}

impl Noise {
    /// Whether `n` measurements of one candidate are enough that all of them
    /// were preempted has a chance of at most [`ALL_PREEMPTED`].
    pub fn trusted(&self, n: usize) -> bool {
        self.preempted.powi(n.min(64) as i32) <= ALL_PREEMPTED
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
    /// Candidates racing now, in visiting order (the default first when in).
    alive: Vec<usize>,
    /// Measurements of each candidate in the current race.
    in_race: Vec<usize>,
    /// The current round of the race: it ends when every alive candidate has
    /// this many measurements in the race.
    round: usize,
    /// The best candidate once converged.
    best: Option<usize>,
    /// Whether the default left a race, slower than its leader beyond the noise
    /// (every later leader is at least as fast).
    default_beaten: bool,
    /// Winner of the previous race (sampled search).
    last_winner: Option<usize>,
    /// The pattern search's radius: an eighth of each axis, halved `level` times.
    level: u32,
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
            in_race: Vec::new(),
            round: 1,
            best: None,
            default_beaten: false,
            last_winner: None,
            level: 0,
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
                let want = SAMPLED.min(total);
                if s.sizes.len() == 1 {
                    // One axis: evenly spread, ends included.
                    let n = s.sizes[0];
                    let k = want.saturating_sub(s.alive.len()).max(2);
                    for j in 0..k {
                        let c = s.add(vec![j * (n - 1) / (k - 1)]);
                        if !s.alive.contains(&c) {
                            s.alive.push(c);
                        }
                    }
                }
                let mut tries = 0;
                while s.alive.len() < want && tries < 16 * SAMPLED {
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

    /// The best candidate: the converged one, else the lowest estimate so far.
    pub fn best(&self) -> usize {
        self.best.unwrap_or_else(|| {
            (0..self.candidates.len())
                .min_by(|&a, &b| {
                    self.candidates[a]
                        .estimate()
                        .total_cmp(&self.candidates[b].estimate())
                })
                .unwrap_or(0)
        })
    }

    /// Measurements recorded before the search converged.
    pub fn searching(&self) -> u64 {
        self.searching
    }

    /// What the measurements so far say about the noise.
    pub fn noise(&self) -> Noise {
        let mut gaps = Vec::new();
        for c in self.candidates.iter().filter(|c| c.samples.len() >= 2) {
            let mut s = c.samples.clone();
            s.sort_by(f64::total_cmp);
            // n measurements spread evenly over a width w leave about k w / (n + 1)
            // between the lowest and the (k + 1)-th; k within the lower half, not
            // preempted unless most measurements are.
            let k = ((s.len() - 1) / 2).max(1);
            let gap = (s[k] - s[0]) / s[0].abs() * (s.len() + 1) as f64 / k as f64;
            gaps.push(if gap.is_nan() { 0.0 } else { gap });
        }
        let spread = if gaps.is_empty() {
            MAX_SPREAD
        } else {
            gaps.sort_by(f64::total_cmp);
            median(&gaps).clamp(MIN_SPREAD, MAX_SPREAD)
        };
        let (mut preempted, mut total) = (1.0, 2.0);
        for c in &self.candidates {
            let e = c.estimate();
            let beyond = e + 4.0 * spread * e.abs();
            preempted += c.samples.iter().filter(|&&s| s > beyond).count() as f64;
            total += c.samples.len() as f64;
        }
        Noise {
            spread,
            preempted: preempted / total,
        }
    }

    /// The candidate to run next.
    pub fn next(&self) -> usize {
        if let Some(b) = self.best {
            return b;
        }
        // The first alive candidate with the fewest measurements in this race:
        // the alive list is visited in order, round-robin (the default first).
        self.alive
            .iter()
            .copied()
            .min_by_key(|&c| self.in_race[c])
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
        if self.alive.contains(&id) {
            self.in_race[id] += 1;
        }
        while self.best.is_none() && self.alive.iter().all(|&a| self.in_race[a] >= self.round) {
            self.advance();
        }
    }

    /// The alive candidate with the lowest estimate (the earliest on a tie).
    fn leader(&self) -> usize {
        self.alive
            .iter()
            .copied()
            .min_by(|&a, &b| {
                self.candidates[a]
                    .estimate()
                    .total_cmp(&self.candidates[b].estimate())
            })
            .unwrap_or(0)
    }

    /// Ends a round: drops the candidates slower than the leader beyond the
    /// noise, and ends the race when one is left or the budget is spent.
    fn advance(&mut self) {
        let noise = self.noise();
        let leader = self.leader();
        if self.round >= 2 {
            let bound = self.candidates[leader].upper(&noise);
            let cands = &self.candidates;
            self.alive
                .retain(|&c| c == leader || cands[c].lower(&noise) <= bound);
            self.default_beaten |= !self.alive.contains(&0);
        }
        if self.alive.len() > 1 && self.round < MAX_ROUNDS {
            self.round += 1;
            return;
        }
        if self.strategy == Strategy::Sampled && self.refinements < MAX_REFINEMENTS {
            // A pattern search: a neighbour becomes the centre only when it is
            // faster beyond the noise (the centre left the race); then the radius
            // stays, else it halves, until the centre stays at the finest.
            let centre = self.last_winner.filter(|c| self.alive.contains(c));
            let winner = centre.unwrap_or(leader);
            let finest = self.radii(self.level).iter().all(|&r| r <= 1);
            if centre.is_none() || !finest {
                if centre.is_some() {
                    self.level += 1;
                }
                self.last_winner = Some(winner);
                self.refinements += 1;
                let radius = self.radii(self.level);
                let point = self.candidates[winner].point.clone();
                let around = self.neighbours(&point, &radius);
                if !around.is_empty() {
                    self.alive = vec![winner];
                    self.alive.extend(around);
                    self.in_race.iter_mut().for_each(|n| *n = 0);
                    self.round = 1;
                    return;
                }
            }
            self.finish(winner);
            return;
        }
        let winner = leader;
        self.finish(winner);
    }

    /// Converges to `winner` when the default is slower beyond the noise (its
    /// lower bound above the winner's upper bound): do no harm; else to the
    /// default.
    fn finish(&mut self, winner: usize) {
        let noise = self.noise();
        let better = winner != 0
            && (self.default_beaten
                || self.candidates[0].lower(&noise) > self.candidates[winner].upper(&noise));
        let best = if better { winner } else { 0 };
        self.best = Some(best);
        self.alive = vec![best];
    }

    /// The neighbour radius on each axis at `level`: an eighth of the axis,
    /// halved `level` times, at least 1.
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
        self.in_race.push(0);
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

    /// Reproducible noise: a symmetric jitter of up to `jitter` (relative), and
    /// with probability `preempt` a preemption adding `1..=10` times `slice` (ns)
    /// (one-sided: a loaded machine never makes a context faster).
    struct Noise {
        state: u64,
        jitter: f64,
        preempt: f64,
        slice: f64,
    }

    impl Noise {
        fn quiet(seed: u64) -> Noise {
            Noise {
                state: seed,
                jitter: 0.02,
                preempt: 0.02,
                slice: 1_000_000.0,
            }
        }
        /// Two busy processes per core: a third of the contexts preempted by
        /// time slices of 1 to 10 ms (kernels take 20 to 660 us).
        fn loaded(seed: u64) -> Noise {
            Noise {
                state: seed,
                jitter: 0.05,
                preempt: 0.33,
                slice: 1_000_000.0,
            }
        }
        fn unit(&mut self) -> f64 {
            self.state = self
                .state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.state >> 11) as f64 / (1u64 << 53) as f64
        }
        fn apply(&mut self, cost: f64) -> f64 {
            let mut t = cost * (1.0 + self.jitter * (2.0 * self.unit() - 1.0));
            if self.unit() < self.preempt {
                t += self.slice * (1.0 + (9.0 * self.unit()).floor());
            }
            t
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

    /// What a run of `contexts` contexts of a one-axis problem cost beyond the
    /// best (regret, in the noiseless costs `f`), the contexts to convergence
    /// and the value settled on, for kprof's search and for a naive grid (every
    /// value 3 times, round-robin, then the lowest median).
    struct Outcome {
        regret: f64,
        converged_at: usize,
        settled: usize,
    }

    fn kprof_run(f: &[f64], default: usize, contexts: usize, noise: &mut Noise) -> Outcome {
        let best = f.iter().copied().fold(f64::INFINITY, f64::min);
        let mut s = Search::new(vec![f.len()], vec![default], 1);
        let mut regret = 0.0;
        let mut converged_at = contexts;
        for i in 0..contexts {
            if s.is_converged() && converged_at == contexts {
                converged_at = i;
            }
            let c = s.next();
            let v = s.candidates()[c].point[0];
            regret += f[v] - best;
            s.record(c, noise.apply(f[v]));
        }
        assert!(s.is_converged(), "no convergence in {contexts} contexts");
        Outcome {
            regret,
            converged_at,
            settled: s.candidates()[s.best()].point[0],
        }
    }

    fn grid_run(f: &[f64], contexts: usize, noise: &mut Noise) -> Outcome {
        let best = f.iter().copied().fold(f64::INFINITY, f64::min);
        let n = f.len();
        let mut samples = vec![Vec::new(); n];
        let mut regret = 0.0;
        for i in 0..3 * n {
            let v = i % n;
            regret += f[v] - best;
            samples[v].push(noise.apply(f[v]));
        }
        let settled = (0..n)
            .min_by(|&a, &b| median(&samples[a]).total_cmp(&median(&samples[b])))
            .unwrap();
        regret += (contexts - 3 * n) as f64 * (f[settled] - best);
        Outcome {
            regret,
            converged_at: 3 * n,
            settled,
        }
    }

    /// 9 values {1, 2, 4, ..., 256}: 20 us at index `best`, 5 times that at its
    /// neighbours, more beyond (in ns).
    fn nine(best: usize) -> Vec<f64> {
        (0..9)
            .map(|i| 20_000.0 * (1.0 + 4.0 * (i as f64 - best as f64).abs()))
            .collect()
    }

    /// The search's state, for a failing assertion's message.
    fn dump(s: &Search) -> String {
        let mut out = format!("{:?}, default beaten {}\n", s.noise(), s.default_beaten);
        for c in s.candidates().iter().filter(|c| !c.samples.is_empty()) {
            let v: Vec<String> = c.samples.iter().map(|x| format!("{x:.0}")).collect();
            out.push_str(&format!("  {:?}: {}\n", c.point, v.join(" ")));
        }
        out
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_infinite());
    }

    #[test]
    fn small_set_is_raced_exhaustively_from_the_default() {
        // {1,2,4,...,128}, default 16 (index 4), minimum at 4 (index 2).
        let mut s = Search::new(vec![8], vec![4], 1);
        assert_eq!(s.strategy(), Strategy::Exhaustive);
        assert_eq!(s.candidates()[s.next()].point, vec![4], "default first");
        let mut noise = Noise::quiet(7);
        let at = drive(&mut s, 500, |p| {
            let x = p[0] as f64 - 2.0;
            noise.apply(20_000.0 * (1.0 + 4.0 * x * x))
        })
        .expect("converges");
        assert_eq!(s.candidates()[s.best()].point, vec![2]);
        assert_eq!(s.candidates().len(), 8, "every value tried");
        // Two rounds of 8 when nothing is preempted; a preempted measurement
        // costs its candidate a round more.
        assert!((16..=24).contains(&at), "{at} contexts");
        assert_eq!(s.searching(), at as u64);
        // Exploits from then on.
        for _ in 0..10 {
            assert_eq!(s.next(), s.best());
        }
    }

    #[test]
    fn noiseless_race_measures_each_value_twice() {
        let f = nine(5);
        let mut s = Search::new(vec![9], vec![3], 1);
        let at = drive(&mut s, 100, |p| f[p[0]]).expect("converges");
        assert_eq!(at, 18);
        assert_eq!(s.candidates()[s.best()].point, vec![5]);
        assert!(s.candidates().iter().all(|c| c.samples.len() == 2));
    }

    /// The targets on a quiet machine: the best value, with less regret than a
    /// naive grid of 3 measurements per value, seed after seed; in fewer contexts
    /// in all (a preempted measurement can cost a round more).
    #[test]
    fn quiet_machine_regret_at_most_the_grid() {
        let (mut kprof, mut grid) = (0, 0);
        for (best, default) in [(5, 3), (2, 6), (0, 8), (4, 4)] {
            let f = nine(best);
            for seed in 1..=20 {
                let k = kprof_run(&f, default, 200, &mut Noise::quiet(seed));
                let g = grid_run(&f, 200, &mut Noise::quiet(seed));
                if std::env::var_os("DEBUG_SEARCH").is_some() {
                    let mut s = Search::new(vec![9], vec![default], 1);
                    let mut n = Noise::quiet(seed);
                    drive(&mut s, 300, |p| n.apply(f[p[0]]));
                    eprintln!(
                        "best {best} seed {seed} {} vs {}\n{}",
                        k.regret,
                        g.regret,
                        dump(&s)
                    );
                }
                assert_eq!(k.settled, best, "best {best} seed {seed}");
                assert!(
                    k.regret <= g.regret,
                    "best {best} seed {seed}: regret {} > grid {}",
                    k.regret,
                    g.regret
                );
                kprof += k.converged_at;
                grid += g.converged_at;
            }
        }
        eprintln!("quiet: {kprof} contexts to convergence, grid {grid}");
        assert!(
            kprof <= grid,
            "{kprof} contexts to convergence, grid {grid}"
        );
    }

    /// A loaded machine (a third of the contexts preempted for milliseconds):
    /// never a value slower than the default; the right one nearly always; less
    /// regret than the grid, which the preemptions mislead.
    #[test]
    fn loaded_machine_never_settles_worse_than_the_default() {
        let (mut kprof, mut grid, mut right, mut runs) = (0.0, 0.0, 0, 0);
        for (best, default) in [(5, 3), (2, 6), (0, 8), (4, 4)] {
            let f = nine(best);
            for seed in 1..=50 {
                let k = kprof_run(&f, default, 300, &mut Noise::loaded(seed));
                let g = grid_run(&f, 300, &mut Noise::loaded(seed));
                assert!(
                    f[k.settled] <= f[default],
                    "best {best} seed {seed}: settled {} slower than the default {default}",
                    k.settled
                );
                kprof += k.regret;
                grid += g.regret;
                right += usize::from(k.settled == best);
                if k.settled != best && std::env::var_os("DEBUG_SEARCH").is_some() {
                    let mut s = Search::new(vec![9], vec![default], 1);
                    let mut n = Noise::loaded(seed);
                    drive(&mut s, 300, |p| n.apply(f[p[0]]));
                    eprintln!("best {best} default {default} seed {seed}: {:?}", s.noise());
                    for c in s.candidates() {
                        eprintln!("  {:?} {:?}", c.point, c.samples);
                    }
                }
                runs += 1;
            }
        }
        eprintln!("loaded: regret {kprof} grid {grid}; {right} of {runs} right");
        assert!(right * 100 >= runs * 95, "{right} of {runs} right");
        assert!(kprof <= grid, "regret {kprof} > grid {grid}");
    }

    #[test]
    fn flat_objective_keeps_the_default() {
        for seed in 1..=10 {
            let mut s = Search::new(vec![5], vec![3], 1);
            let mut noise = Noise::quiet(seed);
            drive(&mut s, 500, |_| noise.apply(100_000.0)).expect("converges");
            assert_eq!(
                s.best(),
                0,
                "seed {seed}: no measurable gain: the default stays\n{}",
                dump(&s)
            );
        }
    }

    #[test]
    fn a_gain_within_the_noise_keeps_the_default() {
        // Index 1 is 1% faster than the default (index 0), with 5% jitter.
        for seed in 1..=10 {
            let mut s = Search::new(vec![3], vec![0], 1);
            let mut noise = Noise::loaded(seed);
            let f = [100_000.0, 99_000.0, 300_000.0];
            drive(&mut s, 500, |p| noise.apply(f[p[0]])).expect("converges");
            assert_eq!(s.best(), 0, "seed {seed}");
        }
    }

    #[test]
    fn noise_is_read_from_the_two_lowest_measurements() {
        let mut s = Search::new(vec![5], vec![0], 1);
        assert_eq!(s.noise().spread, MAX_SPREAD, "nothing measured twice");
        for (c, v) in [(0, 100.0), (1, 200.0), (2, 300.0), (3, 400.0), (4, 500.0)] {
            s.candidates[c].samples.push(v);
            s.candidates[c].samples.push(v * 1.03);
        }
        s.candidates[1].samples[1] = 208.0;
        s.candidates[4].samples[1] = 5000.0;
        s.candidates[4].samples.push(5003.0);
        // gaps 3%, 4%, 3%, 3% (x 3: two measurements), 900% (x 4): the median.
        let n = s.noise();
        assert!((n.spread - 0.09).abs() < 1e-9, "{n:?}");
        // 2 of 11 measurements beyond 2 spreads, counting 1 in 2 more.
        assert!((n.preempted - 3.0 / 13.0).abs() < 1e-9, "{n:?}");
        // Twice measured: all preempted with a chance of 5%: too likely; three
        // times: 1.2%, below 2%.
        assert_eq!(s.candidates[0].lower(&n), f64::NEG_INFINITY);
        let lower = |c: &Candidate| c.estimate() * (1.0 - MARGIN * 0.09);
        assert!((s.candidates[4].lower(&n) - lower(&s.candidates[4])).abs() < 1e-9);
        s.candidates[0].samples.push(101.0);
        assert!((s.candidates[0].lower(&n) - lower(&s.candidates[0])).abs() < 1e-9);
        assert!((s.candidates[0].upper(&n) - 100.0 * (1.0 + MARGIN * 0.09)).abs() < 1e-9);
    }

    #[test]
    fn large_two_dimensional_lattice_converges_near_the_minimum() {
        // 19 x 19 (Kokkos 3.4's team-size tuner has such ranges), default at the
        // corner, minimum at (13, 5); noisy with preemptions.
        for seed in 1..=8 {
            let mut s = Search::new(vec![19, 19], vec![0, 0], seed);
            assert_eq!(s.strategy(), Strategy::Sampled);
            let mut noise = Noise::quiet(seed * 31);
            let f = |p: &[usize]| {
                let (x, y) = (p[0] as f64 - 13.0, p[1] as f64 - 5.0);
                100_000.0 * (1.0 + 0.02 * (x * x + y * y))
            };
            let at = drive(&mut s, 5000, |p| noise.apply(f(p)))
                .unwrap_or_else(|| panic!("seed {seed}: no convergence"));
            let best = s.candidates()[s.best()].point.clone();
            assert!(
                f(&best) <= 100_000.0 * 1.1,
                "seed {seed}: converged to {best:?} (cost {})\n{}",
                f(&best),
                dump(&s)
            );
            assert!(at < 1500, "seed {seed}: {at} contexts");
        }
    }

    #[test]
    fn continuous_axis_is_refined() {
        // A 512-point axis (a range [1, 512]), minimum at index 299, default 127;
        // 20 us at the minimum, 1.25 us more per step away from it.
        for seed in 1..=10 {
            let f = |i: usize| 20_000.0 * (1.0 + (i as f64 - 299.0).abs() / 16.0);
            for noise in [Noise::quiet(seed), Noise::loaded(seed)] {
                let mut noise = noise;
                let mut s = Search::new(vec![512], vec![127], seed);
                drive(&mut s, 5000, |p| noise.apply(f(p[0]))).expect("converges");
                let best = s.candidates()[s.best()].point[0];
                assert!(
                    f(best) <= f(127),
                    "seed {seed}: {best} slower than the default"
                );
                assert!(
                    (290..=308).contains(&best),
                    "seed {seed}: best {best}\n{}",
                    dump(&s)
                );
            }
        }
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
