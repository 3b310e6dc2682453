//! The statistics of `kprof diff`: medians and the Mann-Whitney U rank test.

use std::collections::HashMap;

/// The median of `v` (the mean of the two middle values when their number is
/// even); `None` when `v` is empty.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// The smallest and largest of `v` (`(0, 0)` when empty).
pub fn min_max(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        })
}

/// Up to this many values in all, the test's p-value is exact (the whole
/// distribution of the rank sum is counted); beyond, the normal approximation.
pub const EXACT_MAX: usize = 40;

/// The smallest two-sided p-value the test can give with `n1` and `n2` values
/// (no ties): both extreme orders out of all `C(n1 + n2, n1)`.
pub fn smallest_p(n1: usize, n2: usize) -> f64 {
    let (n, k) = (n1 + n2, n1.min(n2));
    let mut c = 1.0f64;
    for i in 0..k {
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

/// The two-sided Mann-Whitney U test (Wilcoxon rank-sum test), with the exact
/// distributions of rank sums without ties kept by sample sizes (one per pair of
/// sizes in a diff).
#[derive(Default)]
pub struct RankTest {
    /// Per (n1, n2): the number of ways each doubled rank sum of the first
    /// sample arises, when there are no ties.
    plain: HashMap<(usize, usize), Vec<f64>>,
}

impl RankTest {
    /// The two-sided p-value of the hypothesis that `x` and `y` come from the
    /// same distribution, against one of them tending to larger values. Ties get
    /// midranks; the p-value is exact for up to [`EXACT_MAX`] values together
    /// (ties included: the permutation distribution of the midranks), else from
    /// the normal approximation with tie and continuity corrections. 1 when
    /// either sample is empty.
    pub fn p_value(&mut self, x: &[f64], y: &[f64]) -> f64 {
        self.p_value_up_to(x, y, EXACT_MAX)
    }

    /// [`RankTest::p_value`], exact for up to `exact_max` values.
    fn p_value_up_to(&mut self, x: &[f64], y: &[f64], exact_max: usize) -> f64 {
        let (n1, n2) = (x.len(), y.len());
        if n1 == 0 || n2 == 0 {
            return 1.0;
        }
        let n = n1 + n2;
        let mut all: Vec<(f64, bool)> = x
            .iter()
            .map(|&v| (v, true))
            .chain(y.iter().map(|&v| (v, false)))
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Ranks doubled, so that midranks stay integers.
        let mut ranks2 = vec![0usize; n];
        let mut ties = 0.0f64;
        let mut i = 0;
        while i < n {
            let mut j = i;
            while j + 1 < n && all[j + 1].0 == all[i].0 {
                j += 1;
            }
            for r in &mut ranks2[i..=j] {
                *r = i + j + 2;
            }
            let t = (j - i + 1) as f64;
            ties += t * t * t - t;
            i = j + 1;
        }
        let w2: usize = ranks2
            .iter()
            .zip(&all)
            .filter(|(_, a)| a.1)
            .map(|(r, _)| r)
            .sum();
        if n > exact_max {
            return normal_p(n1, n2, w2 as f64 / 2.0, ties);
        }
        let ways = if ties == 0.0 {
            self.plain
                .entry((n1, n2))
                .or_insert_with(|| sum_ways(&ranks2, n1))
                .clone()
        } else {
            sum_ways(&ranks2, n1)
        };
        let total: f64 = ways.iter().sum();
        let below: f64 = ways[..=w2.min(ways.len() - 1)].iter().sum();
        let above: f64 = ways[w2.min(ways.len())..].iter().sum();
        (2.0 * below.min(above) / total).min(1.0)
    }
}

/// For each sum `s`, the number of ways `k` of the (doubled) `ranks` add up to
/// `s`.
fn sum_ways(ranks: &[usize], k: usize) -> Vec<f64> {
    let max: usize = ranks.iter().sum();
    let mut ways = vec![vec![0.0f64; max + 1]; k + 1];
    ways[0][0] = 1.0;
    let mut reach = 0;
    for (taken, &r) in ranks.iter().enumerate() {
        reach += r;
        for j in (1..=k.min(taken + 1)).rev() {
            let (lo, hi) = ways.split_at_mut(j);
            let (from, to) = (&lo[j - 1], &mut hi[0]);
            for s in (r..=reach).rev() {
                to[s] += from[s - r];
            }
        }
    }
    ways.swap_remove(k)
}

/// The normal approximation of the two-sided p-value for a rank sum `w` of the
/// first of two samples, `ties` the sum of `t^3 - t` over groups of ties.
fn normal_p(n1: usize, n2: usize, w: f64, ties: f64) -> f64 {
    let (a, b) = (n1 as f64, n2 as f64);
    let n = a + b;
    let u = w - a * (a + 1.0) / 2.0;
    let mean = a * b / 2.0;
    let var = a * b / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The complementary error function, to a relative error below 1.2e-7
/// (Chebyshev fit; Press et al., Numerical Recipes, 6.2).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// How a diff tells a change from noise, by the runs it has.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Two runs or more per side, enough for the rank test to reach `--alpha`:
    /// p < alpha, and the floors.
    Rank,
    /// Otherwise: every run of one side beyond every run of the other (with
    /// one run per side, always), and the floors.
    Apart,
}

impl Mode {
    /// The mode for `na` and `nb` runs per side at significance `alpha`.
    pub fn of(na: usize, nb: usize, alpha: f64) -> Mode {
        if na >= 2 && nb >= 2 && smallest_p(na, nb) < alpha {
            Mode::Rank
        } else {
            Mode::Apart
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(min_max(&[4.0, 1.0, 3.0]), (1.0, 4.0));
    }

    #[test]
    fn exact_p_values() {
        let mut t = RankTest::default();
        // Complete separation of 4 and 4: 2 of the C(8, 4) = 70 orders.
        let p = t.p_value(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!(close(p, 2.0 / 70.0), "{p}");
        assert!(close(smallest_p(4, 4), 2.0 / 70.0));
        assert!(close(smallest_p(3, 3), 0.1));
        assert!(close(smallest_p(5, 5), 2.0 / 252.0));
        // The other way round: the same.
        let q = t.p_value(&[5.0, 6.0, 7.0, 8.0], &[1.0, 2.0, 3.0, 4.0]);
        assert!(close(q, p));
        // 3 and 3, one swap (U = 1): 2 * 2/20.
        let p = t.p_value(&[1.0, 2.0, 4.0], &[3.0, 5.0, 6.0]);
        assert!(close(p, 0.2), "{p}");
        // Interleaved: no evidence at all.
        let p = t.p_value(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]);
        assert!(close(p, 1.0), "{p}");
        // All tied: 1.
        assert!(close(t.p_value(&[2.0, 2.0], &[2.0, 2.0, 2.0]), 1.0));
        // Ties across the samples: 1 1 | 1 2 -> ranks (2,2 | 2,4): sums of two of
        // {2,2,2,4} (doubled 4,4,4,8): 8 three ways, 12 three ways; x's sum is 8,
        // the lowest: P(<=) = 1/2, two-sided 1.
        assert!(close(t.p_value(&[1.0, 1.0], &[1.0, 2.0]), 1.0));
    }

    #[test]
    fn normal_approximation_and_exact_count_beyond_exact_max() {
        // 20 and 21 values overlapping on most of their range: beyond EXACT_MAX the
        // normal approximation (with continuity correction), and the exact count
        // when asked for; both as computed independently (Python, big integers).
        let x: Vec<f64> = (0..20).map(f64::from).collect();
        let y: Vec<f64> = (5..26).map(|v| f64::from(v) + 0.5).collect();
        let mut t = RankTest::default();
        let approx = t.p_value(&x, &y);
        let exact = t.p_value_up_to(&x, &y, 64);
        assert!(
            (approx / 0.006_419_021_853_513_674 - 1.0).abs() < 1e-6,
            "{approx}"
        );
        assert!(
            (exact / 0.005_510_619_947_893_837 - 1.0).abs() < 1e-9,
            "{exact}"
        );
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207_050_285).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_792_949_715).abs() < 1e-7);
    }
}
