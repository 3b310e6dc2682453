//! Hardware and software counters (PAPI) read at the begin and end of the
//! instances of the kinds the user selects (`KPROF_COUNTERS`,
//! `KPROF_COUNTER_KINDS`). Each thread gets its own PAPI event set at its first
//! event; the hot path's only added cost is `PAPI_read` itself, into a fixed array
//! (no lock, no allocation). The values go where the instance goes: the thread's
//! in-place profile, or a [`crate::hot::record::Op::Counters`] record before the
//! begin or end record.

mod papi;
mod papi_sys;
mod values;

use kprof_abi::Anomaly;

use crate::base::counter_kinds::{kind_words, parse_kinds};

use crate::base::anomaly::Anomalies;

use papi::{EventSet, Papi};

// Defined in a leaf that `papi` uses too; kept at their old paths here.
pub use values::{Values, MAX_COUNTERS};

/// The counters of the process: which events, on which kinds, and what could
/// not be had.
pub struct Counters {
    papi: Papi,
    /// Events counted, in the order of every [`Values`].
    pub names: Vec<String>,
    /// Kinds whose instances are counted, by discriminant bit.
    pub kinds: u64,
    /// Whether the event sets are multiplexed (values are estimates: each event
    /// was counted part of the time, and scaled).
    pub multiplexed: bool,
    /// One line per event asked for and not counted, and per other problem.
    pub problems: Vec<String>,
}

/// What the setup found: the counters, if any can be read, and the lines to
/// tell the user either way.
pub struct Setup {
    /// The counters, when at least one event can be counted.
    pub counters: Option<Counters>,
    /// Every problem, one line each.
    pub problems: Vec<String>,
}

impl Counters {
    /// Loads PAPI and finds which of `events` (a comma list) can be counted
    /// together on this machine, on a probe event set of the calling thread.
    pub fn setup(events: &str, kinds: &str, library: Option<&str>) -> Setup {
        let mut problems = Vec::new();
        let mut wanted: Vec<String> = Vec::new();
        for e in events.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if !wanted.iter().any(|w| w == e) {
                wanted.push(e.to_string());
            }
        }
        let (kinds, unknown_kinds) = parse_kinds(kinds);
        for w in unknown_kinds {
            problems.push(format!(
                "KPROF_COUNTER_KINDS: '{w}' is not one of {}; ignored",
                kind_words()
            ));
        }
        let fail = |mut problems: Vec<String>, line: String| {
            problems.push(line);
            Setup {
                counters: None,
                problems,
            }
        };
        if wanted.is_empty() {
            return Setup {
                counters: None,
                problems,
            };
        }
        if kinds == 0 {
            return fail(
                problems,
                "KPROF_COUNTER_KINDS selects no kind: no counters".into(),
            );
        }
        let papi = match Papi::load(library) {
            Ok(p) => p,
            Err(e) => return fail(problems, format!("counters off: {e}")),
        };
        if wanted.len() > MAX_COUNTERS {
            for e in wanted.drain(MAX_COUNTERS..) {
                problems.push(format!(
                    "counter {e}: not counted, at most {MAX_COUNTERS} events at once"
                ));
            }
        }
        let (names, multiplexed) = probe(&papi, &wanted, &mut problems);
        if names.is_empty() {
            return fail(
                problems,
                "counters off: none of the events can be counted".into(),
            );
        }
        Setup {
            counters: Some(Counters {
                papi,
                names,
                kinds,
                multiplexed,
                problems: problems.clone(),
            }),
            problems,
        }
    }

    /// The PAPI version in use.
    pub fn version(&self) -> &str {
        &self.papi.version
    }

    /// The calling thread's event set, started (on its first event; cold). `None`
    /// (said once per problem by the caller) when PAPI refuses.
    pub fn for_thread(
        &'static self,
        anomalies: &'static Anomalies,
    ) -> Result<ThreadCounters, String> {
        let set = build(&self.papi, &self.names, self.multiplexed)?;
        Ok(ThreadCounters {
            counters: self,
            set,
            kinds: self.kinds,
            anomalies,
        })
    }
}

/// Tries the events one by one on a probe set: unknown ones, ones that exist
/// but cannot be counted here, and ones that conflict are left out with a line
/// each; a conflict first retries the lot multiplexed.
fn probe(papi: &Papi, wanted: &[String], problems: &mut Vec<String>) -> (Vec<String>, bool) {
    let mut multiplexed = false;
    loop {
        let set = match papi.create() {
            Ok(s) => s,
            Err(e) => {
                problems.push(format!("counters off: cannot create a PAPI event set: {e}"));
                return (Vec::new(), false);
            }
        };
        if multiplexed {
            if let Err(e) = papi.multiplex(set) {
                problems.push(format!("counters: multiplexing refused: {e}"));
                papi.release(set, false);
                // Fall back to the events that fit without it.
                return probe_plain(papi, wanted, problems);
            }
        }
        let mut kept = Vec::new();
        let mut lines = Vec::new();
        let mut conflict = false;
        for e in wanted {
            match papi.add(set, e) {
                Ok(()) => kept.push(e.clone()),
                Err(code) if !papi.knows(e) => lines.push(format!(
                    "counter {e}: no such event here ({}); check `papi_native_avail`",
                    papi.strerror(code)
                )),
                Err(code) if papi::is_conflict(code) => {
                    conflict = true;
                    lines.push(format!(
                        "counter {e}: cannot be counted together with {}: {}",
                        kept.join(", "),
                        papi.strerror(code)
                    ));
                }
                Err(code) => lines.push(format!(
                    "counter {e}: exists but cannot be counted on this machine: {}",
                    papi.strerror(code)
                )),
            }
        }
        if conflict && !multiplexed {
            papi.release(set, false);
            multiplexed = true;
            continue;
        }
        if !kept.is_empty() {
            if let Err(e) = papi.start(set) {
                problems.extend(lines);
                problems.push(format!(
                    "counters off: PAPI cannot start {}: {e}",
                    kept.join(", ")
                ));
                papi.release(set, false);
                return (Vec::new(), false);
            }
        }
        papi.release(set, false);
        problems.extend(lines);
        if multiplexed && !kept.is_empty() {
            problems.push(format!(
                "counters multiplexed: {} share the hardware counters; values are scaled estimates",
                kept.join(", ")
            ));
        }
        return (kept, multiplexed);
    }
}

/// [`probe`] without multiplexing (PAPI refused it).
fn probe_plain(papi: &Papi, wanted: &[String], problems: &mut Vec<String>) -> (Vec<String>, bool) {
    let Ok(set) = papi.create() else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    for e in wanted {
        match papi.add(set, e) {
            Ok(()) => kept.push(e.clone()),
            Err(code) => problems.push(format!("counter {e}: {}", papi.strerror(code))),
        }
    }
    papi.release(set, false);
    (kept, false)
}

/// A started event set of the calling thread with `names`.
fn build(papi: &Papi, names: &[String], multiplexed: bool) -> Result<EventSet, String> {
    let set = papi.create()?;
    if multiplexed {
        papi.multiplex(set)?;
    }
    for n in names {
        if let Err(code) = papi.add(set, n) {
            papi.release(set, false);
            return Err(format!("counter {n}: {}", papi.strerror(code)));
        }
    }
    if let Err(e) = papi.start(set) {
        papi.release(set, false);
        return Err(e);
    }
    Ok(set)
}

/// One thread's counters: its started event set.
pub struct ThreadCounters {
    counters: &'static Counters,
    set: EventSet,
    /// Kinds counted (a copy, so the hot path looks at this thread's state only).
    kinds: u64,
    anomalies: &'static Anomalies,
}

impl ThreadCounters {
    /// The counters now, when instances of `kind` are counted (and PAPI read).
    #[inline(always)]
    pub fn read_if(&self, kind: u8) -> Option<Values> {
        if self.kinds >> (kind & 63) & 1 == 0 {
            return None;
        }
        self.read()
    }

    #[inline(always)]
    fn read(&self) -> Option<Values> {
        let mut v = [0u64; MAX_COUNTERS];
        if !self.counters.papi.read(self.set, &mut v) {
            self.anomalies.count(Anomaly::CounterReadFailed);
            return None;
        }
        Some(v)
    }

    /// Stops the set and frees PAPI's record of the thread (it is exiting).
    pub fn release(self) {
        self.counters.papi.release(self.set, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::counter_kinds::DEFAULT_KINDS;

    #[test]
    fn no_events_no_papi() {
        let s = Counters::setup(" , ", DEFAULT_KINDS, Some("/nonexistent/libpapi.so"));
        assert!(s.counters.is_none() && s.problems.is_empty());
        let s = Counters::setup(
            "PAPI_TOT_INS",
            DEFAULT_KINDS,
            Some("/nonexistent/libpapi.so"),
        );
        assert!(s.counters.is_none());
        assert_eq!(s.problems.len(), 1);
        assert!(
            s.problems[0].contains("cannot load PAPI"),
            "{:?}",
            s.problems
        );
    }
}
