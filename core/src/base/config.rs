//! Settings: `KPROF_*` environment variables, overridable by plugin arguments
//! (`--output-dir=x` or `KPROF_OUTPUT_DIR=x`). One table describes every option, so
//! the environment, the argument parser and the help text cannot disagree.

use std::fmt::Write as _;

/// Why an option was not applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// No option of that name.
    #[error("unknown option '{0}' (see --kokkos-tools-help or the README)")]
    Unknown(String),
    /// The value does not parse.
    #[error("{name}={value} is invalid ({expected}); using {default}")]
    Invalid {
        /// The option as given.
        name: String,
        /// The value as given.
        value: String,
        /// What would have been valid.
        expected: &'static str,
        /// What is used instead.
        default: String,
    },
    /// Not of the form `name=value`.
    #[error("'{0}' is not of the form --name=value")]
    Malformed(String),
}

/// The effective settings of this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Output directory pattern (`%p`, `%h`, `%e`, `%r`).
    pub output_dir: String,
    /// Event buffer budget in MiB.
    pub buffer_mb: u64,
    /// MiB of buffers the writer faults in at start, before they are needed.
    pub prefault_mb: u64,
    /// Print the summary on stderr.
    pub summary: bool,
    /// Rows per summary table.
    pub summary_top: usize,
    /// Flush on SIGINT/SIGTERM/SIGHUP and crash signals.
    pub signals: bool,
    /// Record anything at all.
    pub enable: bool,
    /// Keep Kokkos' global fences around kernels and regions.
    pub kokkos_fences: bool,
    /// A forked child measures itself (from the fork on) into its own directory.
    pub fork: bool,
    /// Milliseconds between the writer's processing rounds when a trace streams.
    pub flush_ms: u64,
    /// Trace formats to write (none: no trace).
    pub trace: Vec<TraceFormat>,
    /// Deepest call path the profile keeps.
    pub max_depth: u64,
    /// MiB after which a trace file stops (0: no limit).
    pub trace_max_mb: u64,
    /// Without a trace, each thread aggregates its own events where they happen
    /// (0: through records and the writer, as with a trace).
    pub in_place: bool,
    /// PAPI events read at the begin and end of counted instances (comma list;
    /// empty: none).
    pub counters: String,
    /// Kinds of instances counted (comma list of words, see
    /// [`crate::base::counter_kinds::parse_kinds`]).
    pub counter_kinds: String,
    /// Milliseconds between samples of the process and the node (CPU, memory,
    /// faults, I/O, load, power) taken by the writer thread; 0: no sampling.
    pub sample_ms: u64,
    /// In an MPI job reduced at `MPI_Finalize`: keep every rank's own files too.
    pub per_rank: bool,
    /// Directory pattern of the job's merged profile (written by MPI rank 0).
    pub job_output_dir: String,
    /// Instances kept per call path for scatterplots (a uniform sample); 0: none.
    pub samples: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            output_dir: "kprof-%e-%p".into(),
            buffer_mb: 64,
            prefault_mb: 0,
            summary: true,
            summary_top: 20,
            signals: true,
            enable: true,
            kokkos_fences: false,
            fork: true,
            flush_ms: 1000,
            trace: Vec::new(),
            max_depth: 256,
            trace_max_mb: 2048,
            in_place: true,
            counters: String::new(),
            counter_kinds: crate::base::counter_kinds::DEFAULT_KINDS.into(),
            sample_ms: 0,
            per_rank: false,
            job_output_dir: "kprof-%e-job".into(),
            samples: 1000,
        }
    }
}

/// How an option's value is parsed.
#[derive(Clone, Copy)]
enum Value {
    Text,
    Flag,
    Count { min: u64, max: u64 },
    Formats,
}

/// One option: its argument name, its environment variable, and its help.
struct Spec {
    arg: &'static str,
    env: &'static str,
    value: Value,
    help: &'static str,
}

const SPECS: &[Spec] = &[
    Spec {
        arg: "output-dir",
        env: "KPROF_OUTPUT_DIR",
        value: Value::Text,
        help: "directory of this process's files; %p pid, %h host, %e executable, %r MPI rank (default kprof-%e-%p)",
    },
    Spec {
        arg: "buffer-mb",
        env: "KPROF_BUFFER_MB",
        value: Value::Count { min: 1, max: 65536 },
        help: "MiB of event buffers; beyond it records are dropped and counted (default 64)",
    },
    Spec {
        arg: "prefault-mb",
        env: "KPROF_PREFAULT_MB",
        value: Value::Count { min: 0, max: 65536 },
        help: "MiB of those buffers faulted in by the writer at start, in the background, so that a measured phase after a setup phase records into ready memory (default 0)",
    },
    Spec {
        arg: "trace",
        env: "KPROF_TRACE",
        value: Value::Formats,
        help: "comma list of trace formats: perfetto (trace.pftrace), json (trace.json), otf2 (otf2/traces.otf2, needs the OTF2 library); empty: none (default)",
    },
    Spec {
        arg: "trace-max-mb",
        env: "KPROF_TRACE_MAX_MB",
        value: Value::Count { min: 0, max: 1 << 30 },
        help: "MiB after which a trace file (or OTF2 archive) stops growing: it is completed there, with one line saying so; checked at each flush; 0: no limit (default 2048)",
    },
    Spec {
        arg: "flush-ms",
        env: "KPROF_FLUSH_MS",
        value: Value::Count {
            min: 10,
            max: 3_600_000,
        },
        help: "ms between trace flushes (the writer's processing rounds); without a trace, records wait until half the buffer budget holds them, or exit (default 1000)",
    },
    Spec {
        arg: "sample-ms",
        env: "KPROF_SAMPLE_MS",
        value: Value::Count { min: 0, max: 60_000 },
        help: "ms between samples of the process and the node (CPU use, RSS, page faults, context switches, I/O, load, free memory, RAPL and NVML power), taken by the writer thread: counter tracks in traces, min/mean/max in profile.json's system section; 10 to 60000, 0: off (default 0)",
    },
    Spec {
        arg: "samples",
        env: "KPROF_SAMPLES",
        value: Value::Count { min: 0, max: 100_000 },
        help: "instances per call path kept as (start, duration) samples for scatterplots (a uniform random sample over the run, whatever its length); profile.json holds them for the longest call paths; 0: none (default 1000)",
    },
    Spec {
        arg: "max-depth",
        env: "KPROF_MAX_DEPTH",
        value: Value::Count { min: 1, max: 100_000 },
        help: "deepest call path the profile keeps; deeper instances are counted (anomaly beyond_max_depth) and their time stays in the node at this depth (default 256)",
    },
    Spec {
        arg: "summary",
        env: "KPROF_SUMMARY",
        value: Value::Flag,
        help: "print the summary on stderr at exit (default 1)",
    },
    Spec {
        arg: "summary-top",
        env: "KPROF_SUMMARY_TOP",
        value: Value::Count { min: 1, max: 100_000 },
        help: "rows per summary table (default 20)",
    },
    Spec {
        arg: "signals",
        env: "KPROF_SIGNALS",
        value: Value::Flag,
        help: "write complete output on SIGINT/SIGTERM/SIGHUP and on a crash (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL), say which signal, then let the signal act; only where the program left the default disposition (default 1)",
    },
    Spec {
        arg: "enable",
        env: "KPROF_ENABLE",
        value: Value::Flag,
        help: "0 loads kprof but records nothing (default 1)",
    },
    Spec {
        arg: "kokkos-fences",
        env: "KPROF_KOKKOS_FENCES",
        value: Value::Flag,
        help: "1 keeps Kokkos' global fences around kernels and regions (default 0)",
    },
    Spec {
        arg: "in-place",
        env: "KPROF_IN_PLACE",
        value: Value::Flag,
        help: "without a trace, each thread adds its events to its own profile as they happen: no records, no background work; 0: records processed by the writer thread, as with a trace (default 1)",
    },
    Spec {
        arg: "counters",
        env: "KPROF_COUNTERS",
        value: Value::Text,
        help: "comma list of PAPI events read at the begin and end of counted instances (PAPI_TOT_INS, perf::PAGE-FAULTS, sde:::lib::counter, ...; at most 8; needs libpapi at run time, or KPROF_PAPI_LIB); empty: none (default)",
    },
    Spec {
        arg: "counter-kinds",
        env: "KPROF_COUNTER_KINDS",
        value: Value::Text,
        help: "which instances get counters: comma list of regions, kernels, parallel, loops, tasks, sync, data, target, gpu_api, mpi, actor, all (default regions,kernels,parallel)",
    },
    Spec {
        arg: "fork",
        env: "KPROF_FORK",
        value: Value::Flag,
        help: "a forked child measures itself from the fork on, into its own directory (%p is its pid); 0: it records nothing and says so once (default 1)",
    },
    Spec {
        arg: "per-rank",
        env: "KPROF_PER_RANK",
        value: Value::Flag,
        help: "MPI: keep each rank's own directory besides the job's merged profile (default 0)",
    },
    Spec {
        arg: "job-output-dir",
        env: "KPROF_JOB_OUTPUT_DIR",
        value: Value::Text,
        help: "MPI: directory of the job's merged profile, written by rank 0 at MPI_Finalize; patterns as --output-dir (default kprof-%e-job)",
    },
];

/// Whether the environment asks for measurement: one of the settings above is set
/// (`kprof run` always sets `KPROF_OUTPUT_DIR`). Without it, the annotation API of a
/// program that no runtime loaded a kprof plugin into stays inert.
pub fn asked_in_env() -> bool {
    SPECS.iter().any(|s| std::env::var_os(s.env).is_some())
}

impl Config {
    /// The defaults overridden by the environment; invalid values are reported
    /// through `warn` and replaced by the default.
    pub fn from_env(mut warn: impl FnMut(&ConfigError)) -> Config {
        let mut cfg = Config::default();
        for spec in SPECS {
            if let Ok(value) = std::env::var(spec.env) {
                if let Err(e) = cfg.set(spec, spec.env, &value) {
                    warn(&e);
                }
            }
        }
        cfg
    }

    /// Applies `--name=value`, `name=value` or `KPROF_NAME=value`.
    pub fn apply_arg(&mut self, arg: &str) -> Result<(), ConfigError> {
        let (name, value) = arg
            .split_once('=')
            .ok_or_else(|| ConfigError::Malformed(arg.into()))?;
        let key = name.trim_start_matches('-');
        let spec = SPECS
            .iter()
            .find(|s| s.arg == key || s.env == key)
            .ok_or_else(|| ConfigError::Unknown(name.into()))?;
        self.set(spec, name, value)
    }

    /// The value of a boolean option by argument name.
    pub fn flag(&self, arg: &str) -> Option<bool> {
        Some(match arg {
            "summary" => self.summary,
            "signals" => self.signals,
            "enable" => self.enable,
            "kokkos-fences" => self.kokkos_fences,
            "fork" => self.fork,
            "in-place" => self.in_place,
            "per-rank" => self.per_rank,
            // Whether MPI calls get hardware counters (then the MPI plugin opens
            // and closes each call instead of recording it whole).
            "mpi-counters" => {
                let (kinds, _) = crate::base::counter_kinds::parse_kinds(&self.counter_kinds);
                !self.counters.is_empty() && kinds >> (kprof_abi::Kind::Mpi as u8 & 63) & 1 == 1
            }
            _ => return None,
        })
    }

    fn set(&mut self, spec: &Spec, given: &str, value: &str) -> Result<(), ConfigError> {
        let invalid = |expected: &'static str, default: String| ConfigError::Invalid {
            name: given.into(),
            value: value.into(),
            expected,
            default,
        };
        let defaults = Config::default();
        match spec.value {
            Value::Text => match spec.arg {
                "counters" => self.counters = value.trim().into(),
                "job-output-dir" => {
                    if value.is_empty() {
                        return Err(invalid("must not be empty", defaults.job_output_dir));
                    }
                    self.job_output_dir = value.into();
                }
                "counter-kinds" => {
                    if value.trim().is_empty() {
                        return Err(invalid("must not be empty", defaults.counter_kinds));
                    }
                    self.counter_kinds = value.trim().into();
                }
                _ => {
                    if value.is_empty() {
                        return Err(invalid("must not be empty", defaults.output_dir));
                    }
                    self.output_dir = value.into();
                }
            },
            Value::Formats => {
                // The known formats are kept, so that one misspelt word does not
                // lose the traces that were spelt right.
                let mut formats = Vec::new();
                let mut unknown = Vec::new();
                for word in value.split(',').map(str::trim).filter(|w| !w.is_empty()) {
                    match TraceFormat::parse(word) {
                        Some(f) if !formats.contains(&f) => formats.push(f),
                        Some(_) => {}
                        None => unknown.push(word),
                    }
                }
                let kept = formats
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(",");
                self.trace = formats;
                if !unknown.is_empty() {
                    return Err(invalid(
                        "a comma list of perfetto, json, otf2",
                        if kept.is_empty() {
                            "no trace".into()
                        } else {
                            kept
                        },
                    ));
                }
            }
            Value::Flag => {
                let v = parse_flag(value).ok_or_else(|| {
                    let d = defaults.flag(spec.arg).unwrap_or(false);
                    invalid("expected 0 or 1", u8::from(d).to_string())
                })?;
                match spec.arg {
                    "summary" => self.summary = v,
                    "signals" => self.signals = v,
                    "enable" => self.enable = v,
                    "fork" => self.fork = v,
                    "in-place" => self.in_place = v,
                    "per-rank" => self.per_rank = v,
                    _ => self.kokkos_fences = v,
                }
            }
            Value::Count { min, max } => {
                let (default, expected) = match spec.arg {
                    "buffer-mb" => (defaults.buffer_mb, "a whole number of MiB, 1 to 65536"),
                    "prefault-mb" => (defaults.prefault_mb, "a whole number of MiB, 0 to 65536"),
                    "flush-ms" => (defaults.flush_ms, "milliseconds, 10 to 3600000"),
                    "max-depth" => (defaults.max_depth, "a whole number, 1 to 100000"),
                    "sample-ms" => (defaults.sample_ms, "milliseconds, 10 to 60000, or 0 (off)"),
                    "samples" => (defaults.samples, "a whole number, 0 (off) to 100000"),
                    "trace-max-mb" => (
                        defaults.trace_max_mb,
                        "a whole number of MiB, 0 (no limit) to 1073741824",
                    ),
                    _ => (defaults.summary_top as u64, "a whole number, 1 to 100000"),
                };
                let v = value
                    .trim()
                    .parse::<u64>()
                    .ok()
                    .filter(|v| (min..=max).contains(v))
                    // Sampling faster than every 10 ms would cost more than it shows.
                    .filter(|&v| spec.arg != "sample-ms" || v == 0 || v >= 10)
                    .ok_or_else(|| invalid(expected, default.to_string()))?;
                match spec.arg {
                    "buffer-mb" => self.buffer_mb = v,
                    "prefault-mb" => self.prefault_mb = v,
                    "flush-ms" => self.flush_ms = v,
                    "max-depth" => self.max_depth = v,
                    "trace-max-mb" => self.trace_max_mb = v,
                    "sample-ms" => self.sample_ms = v,
                    "samples" => self.samples = v,
                    _ => self.summary_top = v as usize,
                }
            }
        }
        Ok(())
    }
}

fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "yes" | "true" => Some(true),
        "0" | "off" | "no" | "false" => Some(false),
        _ => None,
    }
}

/// The help text: every option with its variable and default.
pub fn help_text() -> String {
    let mut s = String::from(
        "kprof options (environment variable, or --name=value in --kokkos-tools-args):\n",
    );
    for spec in SPECS {
        let _ = writeln!(s, "  --{:<15} {:<22} {}", spec.arg, spec.env, spec.help);
    }
    s.push_str(
        "  KPROF_CORE_LIB      path of libkprof_core.so when it is not next to the plugin\n",
    );
    s
}

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Perfetto's native protobuf, `trace.pftrace`.
    Perfetto,
    /// Chrome / Trace Event Format JSON, `trace.json`.
    Json,
    /// OTF2 archive (Vampir, Score-P tools), `otf2/traces.otf2`; needs the OTF2
    /// library at run time.
    Otf2,
}

impl TraceFormat {
    /// The name that `KPROF_TRACE` takes.
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Perfetto => "perfetto",
            TraceFormat::Json => "json",
            TraceFormat::Otf2 => "otf2",
        }
    }

    /// The format named `word` (`perfetto`, `json`, `otf2`).
    pub fn parse(word: &str) -> Option<TraceFormat> {
        match word.to_ascii_lowercase().as_str() {
            "perfetto" | "pftrace" | "protobuf" => Some(TraceFormat::Perfetto),
            "json" | "chrome" => Some(TraceFormat::Json),
            "otf2" => Some(TraceFormat::Otf2),
            _ => None,
        }
    }

    /// File name inside the output directory (for OTF2 the archive's anchor file,
    /// in its own directory).
    pub fn file_name(self) -> &'static str {
        match self {
            TraceFormat::Perfetto => "trace.pftrace",
            TraceFormat::Json => "trace.json",
            TraceFormat::Otf2 => "otf2/traces.otf2",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_in_both_spellings() {
        let mut c = Config::default();
        c.apply_arg("--output-dir=out/%p").unwrap();
        c.apply_arg("KPROF_BUFFER_MB=8").unwrap();
        c.apply_arg("summary-top=3").unwrap();
        c.apply_arg("--kokkos-fences=yes").unwrap();
        c.apply_arg("KPROF_PREFAULT_MB=24").unwrap();
        c.apply_arg("--max-depth=1000").unwrap();
        assert_eq!(c.max_depth, 1000);
        c.apply_arg("KPROF_FORK=off").unwrap();
        assert!(!c.fork);
        assert_eq!(c.output_dir, "out/%p");
        assert_eq!(c.buffer_mb, 8);
        assert_eq!(c.prefault_mb, 24);
        assert_eq!(c.summary_top, 3);
        assert!(c.kokkos_fences);
    }

    #[test]
    fn invalid_values_keep_the_default_and_say_so() {
        let mut c = Config::default();
        let e = c.apply_arg("KPROF_BUFFER_MB=abc").unwrap_err();
        assert_eq!(c.buffer_mb, 64);
        assert_eq!(
            e.to_string(),
            "KPROF_BUFFER_MB=abc is invalid (a whole number of MiB, 1 to 65536); using 64"
        );
        assert!(c.apply_arg("--buffer-mb=0").is_err());
        assert!(c.apply_arg("--prefault-mb=-1").is_err());
        assert!(c.apply_arg("--summary=maybe").is_err());
        assert!(matches!(
            c.apply_arg("--nope=1"),
            Err(ConfigError::Unknown(_))
        ));
        assert!(matches!(
            c.apply_arg("--summary"),
            Err(ConfigError::Malformed(_))
        ));
        assert_eq!(c, Config::default());
    }

    #[test]
    fn sample_period() {
        let mut c = Config::default();
        assert_eq!(c.sample_ms, 0);
        c.apply_arg("KPROF_SAMPLE_MS=20").unwrap();
        assert_eq!(c.sample_ms, 20);
        c.apply_arg("--sample-ms=60000").unwrap();
        assert_eq!(c.sample_ms, 60000);
        c.apply_arg("--sample-ms=0").unwrap();
        assert_eq!(c.sample_ms, 0);
        for bad in ["5", "60001", "abc", "-1"] {
            let e = c.apply_arg(&format!("KPROF_SAMPLE_MS={bad}")).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "KPROF_SAMPLE_MS={bad} is invalid (milliseconds, 10 to 60000, or 0 (off)); using 0"
                )
            );
            assert_eq!(c.sample_ms, 0);
        }
    }

    #[test]
    fn trace_formats() {
        let mut c = Config::default();
        c.apply_arg("KPROF_TRACE=perfetto, json,perfetto").unwrap();
        assert_eq!(c.trace, [TraceFormat::Perfetto, TraceFormat::Json]);
        c.apply_arg("--trace=").unwrap();
        assert!(c.trace.is_empty());
        let e = c.apply_arg("--trace=perfetto,vtune").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--trace=perfetto,vtune is invalid (a comma list of perfetto, json, otf2); using perfetto"
        );
        assert_eq!(c.trace, [TraceFormat::Perfetto]);
        c.apply_arg("KPROF_TRACE=OTF2").unwrap();
        assert_eq!(c.trace, [TraceFormat::Otf2]);
    }

    #[test]
    fn help_lists_every_option() {
        let h = help_text();
        for s in SPECS {
            assert!(h.contains(s.env) && h.contains(s.arg));
        }
    }
}
