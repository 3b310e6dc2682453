//! What the GPU plugins' tests share: the log a stand-in vendor library writes of
//! what it did (`tests/harness/cupti_standin.c`, `rocprofiler_standin.c`: the
//! ground truth a profile is compared with), the anomalies check, and where a
//! flow into device work starts in a decoded trace.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::trace_check::{Model, Slice};
use crate::u;

/// One line of a stand-in's log: its first word(s) and its key=value fields.
#[derive(Debug, Clone)]
pub struct Entry {
    /// "record", "drop", "request", "complete", "api", ...
    pub tag: String,
    /// For "record": the record's type ("kernel", "memcpy", ...); for "api":
    /// "enter" or "exit"; else empty.
    pub sub: String,
    /// The key=value fields.
    pub fields: BTreeMap<String, String>,
}

impl Entry {
    /// Field `k` (panics when absent).
    pub fn get(&self, k: &str) -> &str {
        self.fields
            .get(k)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no {k} in {self:?}"))
    }

    /// Field `k` as a number.
    pub fn num(&self, k: &str) -> u64 {
        self.get(k)
            .parse()
            .unwrap_or_else(|e| panic!("{k} in {self:?}: {e}"))
    }
}

/// A stand-in's log.
#[derive(Debug, Default)]
pub struct Log {
    /// Its lines, in order.
    pub entries: Vec<Entry>,
}

impl Log {
    /// Reads the log's text.
    pub fn parse(text: &str) -> Log {
        let entries = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let mut words = l.split(' ');
                let tag = words.next().unwrap_or_default().to_string();
                let mut sub = String::new();
                let mut fields = BTreeMap::new();
                for w in words {
                    match w.split_once('=') {
                        Some((k, v)) => {
                            fields.insert(k.to_string(), v.to_string());
                        }
                        None if sub.is_empty() => sub = w.to_string(),
                        None => {}
                    }
                }
                Entry { tag, sub, fields }
            })
            .collect();
        Log { entries }
    }

    /// The records written, of type `sub` ("kernel", "memcpy", ...).
    pub fn records(&self, sub: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .filter(|e| e.tag == "record" && e.sub == sub)
            .collect()
    }

    /// Lines tagged `tag`.
    pub fn count(&self, tag: &str) -> usize {
        self.entries.iter().filter(|e| e.tag == tag).count()
    }

    /// [enter, exit] (CLOCK_MONOTONIC ns) of the call of API function `function`
    /// with correlation id `corr` (a runtime call and the driver call inside it
    /// may share the id).
    pub fn api_span(&self, function: &str, corr: u64) -> (u64, u64) {
        let t = |site: &str| {
            self.entries
                .iter()
                .find(|e| {
                    e.tag == "api"
                        && e.sub == site
                        && e.get("fn") == function
                        && e.num("corr") == corr
                })
                .unwrap_or_else(|| {
                    panic!("no {site} of {function} (corr {corr}) in the stand-in's log")
                })
                .num("t")
        };
        (t("enter"), t("exit"))
    }
}

/// Anomalies: exactly `nonzero`, every other one 0, and no kprof record dropped.
pub fn assert_anomalies(p: &Value, nonzero: &[(&str, u64)], what: &str) {
    let a = p["anomalies"].as_object().expect("anomalies");
    for (k, n) in nonzero {
        assert_eq!(
            a.get(*k),
            Some(&json!(n)),
            "{what}: anomaly {k}: {}",
            p["anomalies"]
        );
    }
    for (k, v) in a {
        if !nonzero.iter().any(|(n, _)| n == k) {
            assert_eq!(u(v), 0, "{what}: anomaly {k}: {}", p["anomalies"]);
        }
    }
    assert_eq!(u(&p["dropped_records"]), 0, "{what}");
}

/// The API call a flow into device work starts from: the flow's source is a
/// `launch` mark of no duration at the call's begin on the calling thread's track
/// (inside the call's slice), or before the call when the work's reported begin is
/// earlier than the call's (the mark is never after the work it points to; the
/// replays start work a few us after the time taken before the call, which a
/// thread's first call can take longer than to begin): then the first call after
/// it.
pub fn launching_call(m: &Model, source: usize) -> &Slice {
    let mark = &m.slices[source];
    assert_eq!(
        (
            mark.name.as_str(),
            mark.category.as_str(),
            mark.end_ns - mark.begin_ns
        ),
        ("launch", "gpu.api", 0),
        "flow source"
    );
    if let Some(p) = mark.parent.map(|p| &m.slices[p]) {
        if p.category == "gpu.api" {
            return p;
        }
    }
    m.slices
        .iter()
        .filter(|s| {
            s.track == mark.track
                && s.category == "gpu.api"
                && s.name != "launch"
                && s.begin_ns >= mark.begin_ns
        })
        .min_by_key(|s| s.begin_ns)
        .unwrap_or_else(|| panic!("no API call at the launch mark at {}", mark.begin_ns))
}
