//! Settings: `KPROF_*` environment variables, overridable by plugin arguments
//! (`--output-dir=x` or `KPROF_OUTPUT_DIR=x`). One table describes every option, so
//! the environment, the argument parser and the help text cannot disagree.

use kprof_tables::settings::{self, Kind, Setting};

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
    /// A problem of the environment's `KPROF_*` variables (an unknown name, a
    /// plugin's setting with an invalid value), as one line.
    #[error("{0}")]
    Environment(String),
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
    /// Call-stack samples per second of each thread's CPU time; 0: none.
    pub sample_hz: u64,
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
            sample_hz: 0,
        }
    }
}

/// The core's settings (name, variable, values, default, doc), declared with
/// every plugin's in `kprof_tables::settings`.
fn specs() -> impl Iterator<Item = &'static Setting> {
    settings::core::GROUP
        .settings
        .iter()
        // Library paths are read where the library is loaded.
        .filter(|s| s.kind != Kind::Path)
}

/// Whether the environment asks for measurement: one of the core's settings
/// ([`specs`]) is set (`kprof run` always sets `KPROF_OUTPUT_DIR`). Without it,
/// the annotation API of a program that no runtime loaded a kprof plugin into
/// stays inert.
pub fn asked_in_env() -> bool {
    specs().any(|s| std::env::var_os(s.var).is_some())
}

impl Config {
    /// The defaults overridden by the environment; invalid values are reported
    /// through `warn` and replaced by the default.
    pub fn from_env(mut warn: impl FnMut(&ConfigError)) -> Config {
        let mut cfg = Config::default();
        for spec in specs() {
            if let Ok(value) = std::env::var(spec.var) {
                if let Err(e) = cfg.set(spec, spec.var, &value) {
                    warn(&e);
                }
            }
        }
        // `kprof run` checked the environment before the program started.
        if std::env::var(settings::LAUNCHER).map_or(true, |l| l != settings::KPROF_RUN) {
            for line in settings::check_environment(false) {
                warn(&ConfigError::Environment(line));
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
        let spec = specs()
            .find(|s| s.name == key || s.var == key)
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
            // Whether call-stack samples are asked for (then the MPI plugin
            // opens each call, so that a sample taken inside it lands under it).
            "stack-samples" => self.sample_hz > 0,
            _ => return None,
        })
    }

    fn set(&mut self, spec: &Setting, given: &str, value: &str) -> Result<(), ConfigError> {
        let invalid = |expected: &'static str, default: String| ConfigError::Invalid {
            name: given.into(),
            value: value.into(),
            expected,
            default,
        };
        let defaults = Config::default();
        match spec.kind {
            Kind::Text | Kind::List | Kind::Path => {
                let default = match spec.name {
                    "counters" => defaults.counters,
                    "job-output-dir" => defaults.job_output_dir,
                    "counter-kinds" => defaults.counter_kinds,
                    _ => defaults.output_dir,
                };
                let checked = if spec.name == "counter-kinds" {
                    value.trim()
                } else {
                    value
                };
                spec.kind.check(checked).map_err(|e| invalid(e, default))?;
                match spec.name {
                    "counters" => self.counters = value.trim().into(),
                    "job-output-dir" => self.job_output_dir = value.into(),
                    "counter-kinds" => self.counter_kinds = value.trim().into(),
                    _ => self.output_dir = value.into(),
                }
            }
            Kind::Words { expected, .. } => {
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
                        expected,
                        if kept.is_empty() {
                            "no trace".into()
                        } else {
                            kept
                        },
                    ));
                }
            }
            Kind::Flag => {
                let v = settings::parse_flag(value).ok_or_else(|| {
                    let d = defaults.flag(spec.name).unwrap_or(false);
                    invalid("expected 0 or 1", u8::from(d).to_string())
                })?;
                match spec.name {
                    "summary" => self.summary = v,
                    "signals" => self.signals = v,
                    "enable" => self.enable = v,
                    "fork" => self.fork = v,
                    "in-place" => self.in_place = v,
                    "per-rank" => self.per_rank = v,
                    _ => self.kokkos_fences = v,
                }
            }
            Kind::Count { .. } | Kind::Seconds => {
                let default = match spec.name {
                    "buffer-mb" => defaults.buffer_mb,
                    "prefault-mb" => defaults.prefault_mb,
                    "flush-ms" => defaults.flush_ms,
                    "max-depth" => defaults.max_depth,
                    "sample-ms" => defaults.sample_ms,
                    "samples" => defaults.samples,
                    "sample-hz" => defaults.sample_hz,
                    "trace-max-mb" => defaults.trace_max_mb,
                    _ => defaults.summary_top as u64,
                };
                spec.kind
                    .check(value)
                    .map_err(|e| invalid(e, default.to_string()))?;
                let v = value.trim().parse::<u64>().unwrap_or(default);
                match spec.name {
                    "buffer-mb" => self.buffer_mb = v,
                    "prefault-mb" => self.prefault_mb = v,
                    "flush-ms" => self.flush_ms = v,
                    "max-depth" => self.max_depth = v,
                    "trace-max-mb" => self.trace_max_mb = v,
                    "sample-ms" => self.sample_ms = v,
                    "samples" => self.samples = v,
                    "sample-hz" => self.sample_hz = v,
                    _ => self.summary_top = v as usize,
                }
            }
        }
        Ok(())
    }
}

/// The help text: every setting of every part, with its variable and default.
pub fn help_text() -> String {
    settings::help_text()
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
        for s in specs() {
            assert!(h.contains(s.var) && h.contains(s.name));
        }
    }

    /// The table's defaults are the configuration's: each applied to a fresh
    /// configuration changes nothing, and a configuration of every other value
    /// is changed back by them.
    #[test]
    fn the_tables_defaults_are_the_configurations() {
        let mut c = Config::default();
        for s in specs() {
            let d = if s.default == "none" { "" } else { s.default };
            c.apply_arg(&format!("--{}={d}", s.name))
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        assert_eq!(c, Config::default());
        for w in settings::core::TRACE_WORDS {
            assert!(TraceFormat::parse(w).is_some(), "{w}");
        }
        for f in [TraceFormat::Perfetto, TraceFormat::Json, TraceFormat::Otf2] {
            assert!(settings::core::TRACE_WORDS.contains(&f.name()));
        }
    }

    /// Every setting of the table is applied to the configuration: a value other
    /// than the default changes it.
    #[test]
    fn every_setting_reaches_the_configuration() {
        for s in specs() {
            let other = match s.kind {
                Kind::Flag => {
                    if s.default == "1" {
                        "0"
                    } else {
                        "1"
                    }
                }
                Kind::Count { max, .. } => {
                    if max >= 30 {
                        "30"
                    } else {
                        "1"
                    }
                }
                Kind::Words { .. } => "json",
                _ => "mpi,all",
            };
            let mut c = Config::default();
            c.apply_arg(&format!("{}={other}", s.var))
                .unwrap_or_else(|e| panic!("{}: {e}", s.var));
            assert_ne!(
                c,
                Config::default(),
                "{} did not change the configuration",
                s.var
            );
        }
    }
}
