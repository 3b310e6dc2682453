//! What samples of the process and the node become: the metrics' names and
//! units (shared by every trace writer, which draws one counter track per
//! metric), and their range over the run for the profile's `system` section.
//! The samples themselves are taken by [`crate::collect::sampler`].

use crate::output::report::{System, SystemMetric};

/// The unit of a metric's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// Bytes per second.
    BytesPerSecond,
    /// CPU time per elapsed time: 1.0 is one core busy all the time.
    Cores,
    /// Percent.
    Percent,
    /// Events per second.
    PerSecond,
    /// A plain number (threads, load average).
    Count,
    /// Watts.
    Watts,
}

impl Unit {
    /// The unit as written in the profile and the traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::BytesPerSecond => "bytes/s",
            Unit::Cores => "cores",
            Unit::Percent => "%",
            Unit::PerSecond => "/s",
            Unit::Count => "count",
            Unit::Watts => "W",
        }
    }
}

/// One sampled metric: what a trace names its track.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Name (`rss`, `power package-0`).
    pub name: String,
    /// What its values measure.
    pub unit: Unit,
    /// One line saying what it is (OTF2's metric description).
    pub description: &'static str,
}

impl Metric {
    /// The name of its counter track in a trace: with the unit, which Chrome
    /// JSON has no other place for (`rss (bytes)`).
    pub fn track_name(&self) -> String {
        format!("{} ({})", self.name, self.unit.as_str())
    }
}

/// Each metric's count, smallest, largest and sum over the samples.
#[derive(Debug, Clone)]
pub struct Ranges {
    period_ms: u64,
    samples: u64,
    per_metric: Vec<Range>,
}

#[derive(Debug, Clone, Copy)]
struct Range {
    count: u64,
    min: f64,
    max: f64,
    sum: f64,
}

impl Ranges {
    /// No sample yet of `metrics` metrics, sampled every `period_ms`.
    pub fn new(period_ms: u64, metrics: usize) -> Ranges {
        Ranges {
            period_ms,
            samples: 0,
            per_metric: vec![
                Range {
                    count: 0,
                    min: f64::INFINITY,
                    max: f64::NEG_INFINITY,
                    sum: 0.0,
                };
                metrics
            ],
        }
    }

    /// Samples added so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Adds one sample: `values[i]` is metric `i`'s value, NaN where it had none
    /// this time.
    pub fn add(&mut self, values: &[f64]) {
        self.samples += 1;
        for (r, &v) in self.per_metric.iter_mut().zip(values) {
            if v.is_finite() {
                r.count += 1;
                r.min = r.min.min(v);
                r.max = r.max.max(v);
                r.sum += v;
            }
        }
    }

    /// The profile's section; `unavailable`: what this node could not show.
    pub fn report(&self, metrics: &[Metric], unavailable: Vec<String>) -> System {
        System {
            period_ms: self.period_ms,
            samples: self.samples,
            metrics: metrics
                .iter()
                .zip(&self.per_metric)
                .map(|(m, r)| SystemMetric {
                    name: m.name.clone(),
                    unit: m.unit.as_str().into(),
                    samples: r.count,
                    min: if r.count > 0 { r.min } else { 0.0 },
                    // A sum of equal values divided back can miss them by an ulp.
                    mean: if r.count > 0 {
                        (r.sum / r.count as f64).clamp(r.min, r.max)
                    } else {
                        0.0
                    },
                    max: if r.count > 0 { r.max } else { 0.0 },
                })
                .collect(),
            unavailable,
            // The sampler knows its own cost.
            sampler_cpu_ns: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_skip_missing_values() {
        let metrics = vec![
            Metric {
                name: "rss".into(),
                unit: Unit::Bytes,
                description: "",
            },
            Metric {
                name: "power".into(),
                unit: Unit::Watts,
                description: "",
            },
        ];
        let mut r = Ranges::new(20, 2);
        r.add(&[100.0, f64::NAN]);
        r.add(&[300.0, 12.0]);
        r.add(&[200.0, 14.0]);
        let s = r.report(&metrics, vec!["x".into()]);
        assert_eq!((s.period_ms, s.samples), (20, 3));
        let rss = &s.metrics[0];
        assert_eq!((rss.name.as_str(), rss.unit.as_str()), ("rss", "bytes"));
        assert_eq!(
            (rss.samples, rss.min, rss.mean, rss.max),
            (3, 100.0, 200.0, 300.0)
        );
        let p = &s.metrics[1];
        assert_eq!((p.samples, p.min, p.mean, p.max), (2, 12.0, 13.0, 14.0));
        assert_eq!(s.unavailable, ["x"]);
        // The mean of equal values is that value, never an ulp beside it.
        let mut r = Ranges::new(20, 1);
        for _ in 0..75 {
            r.add(&[4.4]);
        }
        let m = &r.report(&metrics[..1], Vec::new()).metrics[0];
        assert_eq!((m.min, m.mean, m.max), (4.4, 4.4, 4.4));
    }
}
