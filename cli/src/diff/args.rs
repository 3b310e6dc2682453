//! The options of `kprof diff` and their values: a leaf that the command and
//! its inputs read.

use std::path::PathBuf;

/// Arguments of `kprof diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// A, the baseline: run directories (kprof output directories or profile.json
    /// files), directories holding run directories, or quoted patterns ('base-*',
    /// expanded by kprof). Without --, exactly two arguments: A, then B.
    #[arg(value_name = "A", required = true, num_args = 1..)]
    pub paths: Vec<PathBuf>,
    /// B, the runs compared with A, after --: as A.
    #[arg(last = true, value_name = "B")]
    pub new: Vec<PathBuf>,
    /// Changes of the time per call below PCT percent are noise.
    #[arg(long, value_name = "PCT", default_value_t = 5.0, value_parser = non_negative)]
    pub threshold: f64,
    /// Changes of a call path's time per run below TIME are noise (1ms, 250us,
    /// 0.5s; a bare number is in ms).
    #[arg(long, value_name = "TIME", default_value = "1ms", value_parser = parse_time)]
    pub min_time: f64,
    /// Significance level of the rank test (two runs or more on each side).
    #[arg(long, value_name = "P", default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    /// Exit with status 1 when a call path's time per call grew by more than PCT
    /// percent beyond the noise, for regression checks in CI.
    #[arg(long, value_name = "PCT", value_parser = non_negative)]
    pub fail_above: Option<f64>,
    /// Call paths taking less than PCT percent of the run on both sides are noise.
    #[arg(long, value_name = "PCT", default_value_t = 0.5, value_parser = non_negative)]
    pub min_share: f64,
    /// Compare inclusive (total) or exclusive (self) time.
    #[arg(long, value_enum, default_value = "total")]
    pub metric: Metric,
    /// Jobs' merged profiles (kprof merge, the MPI plugin): compare each call
    /// path's mean over the ranks or its slowest rank.
    #[arg(long, value_enum, default_value = "mean")]
    pub ranks: RankStat,
    /// Rows to show.
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub top: usize,
    /// Show the noise too.
    #[arg(long)]
    pub all: bool,
}

/// Which time `diff` compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Metric {
    /// Inclusive time.
    Total,
    /// Exclusive time.
    #[value(name = "self")]
    SelfTime,
}

/// Which value over a job's ranks `diff` compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RankStat {
    /// The mean over the ranks (a rank without the call path counts as 0).
    Mean,
    /// The largest value of a rank (time and count each).
    Max,
}

/// A number, 0 or more.
pub fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("{s:?} is not a number >= 0")),
    }
}

/// A probability strictly between 0 and 1.
pub fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("{s:?} is not a probability between 0 and 1")),
    }
}

/// A duration in ns from `1ms`, `250us`, `0.5s`, `800ns` or a bare number of ms.
pub fn parse_time(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| t.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((t, 1e6));
    match num.trim().parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v * scale),
        _ => Err(format!(
            "{s:?} is not a duration (such as 1ms, 250us, 0.5s; a bare number is in ms)"
        )),
    }
}
