//! A construct's call-stack samples (`KPROF_SAMPLE_HZ`) as frames of the flame
//! graph: the program's call paths below the construct (its `paths`), each a
//! frame of kind `sample` nested under the construct's frame, as wide as its
//! samples' share of the construct's exclusive width.

use kprof_core::output::stack_samples::{NodeStackSamples, SamplePath};

use super::figures::PlotNode;

/// The kind the sample frames are drawn as (coloured and listed as one).
pub const SAMPLE_KIND: &str = "sample";

/// What one sample is worth on a graph: `ns` of width, `of` said after the
/// samples' count in each frame's title.
#[derive(Clone, Copy)]
pub struct Scale<'a> {
    /// Width of one sample (ns).
    pub ns: f64,
    /// What the counts are (`""` for one process's; a job's: summed over its ranks).
    pub of: &'a str,
}

impl Scale<'_> {
    /// One process's samples at `hz` in a construct of a `team` of threads: a
    /// sample stands for `1/hz` s of one thread's CPU time, so `n` samples are
    /// `n / hz / team` s per thread. None without a rate.
    pub fn process(hz: u64, team: u32) -> Option<Scale<'static>> {
        (hz > 0).then(|| Scale {
            ns: 1e9 / hz as f64 / f64::from(team.max(1)),
            of: "",
        })
    }

    /// A job's samples at `hz`, summed over its `ranks`, on a graph whose widths
    /// are means over the ranks (summed over each rank's threads): `n` samples
    /// are `n / hz / ranks` s. None without a rate or ranks.
    pub fn job(hz: u64, ranks: usize, of: &str) -> Option<Scale<'_>> {
        (hz > 0 && ranks > 0).then(|| Scale {
            ns: 1e9 / hz as f64 / ranks as f64,
            of,
        })
    }
}

/// The frames of `s`'s call paths, taking their width out of `own` (the
/// construct's exclusive width), each sample `scale.ns` wide; where that is
/// wider than `own` (a rate above the kernel's tick counted in overruns,
/// rounding), the samples share `own` in proportion. Each frame's width is the
/// samples in and below it times that width per sample, rounded once on the
/// running count (depth first) so that the frames add up to the width taken.
/// Returns the frames and the width they take.
pub fn sample_frames(s: &NodeStackSamples, scale: Scale, own: u64) -> (Vec<PlotNode>, u64) {
    if scale.ns <= 0.0 || s.samples == 0 || own == 0 || s.paths.is_empty() {
        return (Vec::new(), 0);
    }
    let per_sample = scale.ns.min(own as f64 / s.samples as f64);
    let mut walk = Walk {
        per_sample,
        at: 0,
        all: s.samples,
        of: scale.of,
    };
    let frames: Vec<PlotNode> = s.paths.iter().map(|p| walk.frame(p)).collect();
    let taken = walk.width(walk.at).min(own);
    (frames, taken)
}

/// The name of the frame that holds the samples taken outside every construct.
pub const OUTSIDE_NAME: &str = "outside every construct";

/// The samples `s` taken outside every construct (the threads' own code, and
/// the threads kprof gets no event from) as one frame at the graph's top level,
/// their call paths below it, each sample `scale.ns` wide (their CPU time: no
/// construct's time bounds them). None where there are none.
pub fn outside_frame(s: &NodeStackSamples, scale: Scale) -> Option<PlotNode> {
    let width = (s.samples as f64 * scale.ns).round() as u64;
    let (children, taken) = sample_frames(s, scale, width);
    (taken > 0).then(|| PlotNode {
        name: OUTSIDE_NAME.into(),
        kind: SAMPLE_KIND.into(),
        own: width - taken,
        details: format!(
            "{} call-stack samples{} outside every construct (the threads' own code, threads kprof gets no event from among them): their CPU time, 1/hz s a sample",
            s.samples, scale.of
        ),
        children,
    })
}

/// The running count of the walk over the paths.
struct Walk<'a> {
    per_sample: f64,
    /// Self samples laid out so far.
    at: u64,
    /// The construct's samples (for the shares in the titles).
    all: u64,
    /// What the counts are, for the titles.
    of: &'a str,
}

impl Walk<'_> {
    /// The width of the first `samples` self samples, rounded.
    fn width(&self, samples: u64) -> u64 {
        (samples as f64 * self.per_sample).round() as u64
    }

    /// `p` and its children as frames; its own width is its self samples'.
    fn frame(&mut self, p: &SamplePath) -> PlotNode {
        let children = p.children.iter().map(|c| self.frame(c)).collect();
        let from = self.width(self.at);
        self.at += p.self_samples;
        let own = self.width(self.at) - from;
        PlotNode {
            name: p.name.clone(),
            kind: SAMPLE_KIND.into(),
            own,
            details: format!(
                "{} call-stack samples in and below it{} = {:.1}% of its construct's, {} in it alone",
                p.samples,
                self.of,
                100.0 * p.samples as f64 / self.all.max(1) as f64,
                p.self_samples
            ),
            children,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(name: &str, self_samples: u64, children: Vec<SamplePath>) -> SamplePath {
        let samples = self_samples + children.iter().map(|c| c.samples).sum::<u64>();
        SamplePath {
            name: name.into(),
            samples,
            self_samples,
            children,
        }
    }

    fn subtree(n: &PlotNode) -> u64 {
        n.own + n.children.iter().map(subtree).sum::<u64>()
    }

    #[test]
    fn widths_follow_the_samples_and_fit_the_construct() {
        let s = NodeStackSamples {
            samples: 10,
            paths: vec![path(
                "outer",
                2,
                vec![path("middle", 3, vec![path("inner", 5, vec![])])],
            )],
            ..NodeStackSamples::default()
        };
        // 100 Hz, one thread: 10 ms a sample; the construct has 1 s of its own.
        let one = |team| Scale::process(100, team).unwrap();
        let (f, taken) = sample_frames(&s, one(1), 1_000_000_000);
        assert_eq!(taken, 100_000_000);
        assert_eq!(subtree(&f[0]), 100_000_000);
        assert_eq!(f[0].own, 20_000_000);
        assert_eq!(f[0].children[0].own, 30_000_000);
        assert_eq!(f[0].children[0].children[0].own, 50_000_000);
        assert_eq!(f[0].kind, SAMPLE_KIND);
        // A team of 2: per thread, half.
        let (_, taken) = sample_frames(&s, one(2), 1_000_000_000);
        assert_eq!(taken, 50_000_000);
        // A job of 4 ranks, samples summed over them: the mean rank's.
        let (f, taken) = sample_frames(
            &s,
            Scale::job(100, 4, " over 4 ranks").unwrap(),
            1_000_000_000,
        );
        assert_eq!(taken, 25_000_000);
        assert!(f[0]
            .details
            .starts_with("10 call-stack samples in and below it over 4 ranks = 100.0%"));
        // Narrower than the samples' CPU time: they share the construct's width.
        let (f, taken) = sample_frames(&s, one(1), 7);
        assert_eq!(taken, 7);
        assert_eq!(subtree(&f[0]), 7);
        // No rate: no scale.
        assert!(Scale::process(0, 1).is_none() && Scale::job(0, 2, "").is_none());
    }
}
