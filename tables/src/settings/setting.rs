//! What one setting is: its variable, its values and their check, and the group
//! of one part's settings. A leaf: the parts' files and the registry read it.

/// What values a setting takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// 0 or 1 (also off/on, no/yes, false/true).
    Flag,
    /// A whole number from `min` to `max`; with `off`, 0 too (off).
    Count {
        /// The least value (besides 0 with `off`).
        min: u64,
        /// The greatest value.
        max: u64,
        /// 0 is accepted and turns the feature off.
        off: bool,
        /// The valid values, in words.
        expected: &'static str,
    },
    /// A number of seconds, 0 or more, with a fraction.
    Seconds,
    /// Any text but the empty one.
    Text,
    /// A comma list, possibly empty.
    List,
    /// A comma list of these words (any case), possibly empty.
    Words {
        /// The words (names and their synonyms).
        words: &'static [&'static str],
        /// The valid values, in words.
        expected: &'static str,
    },
    /// A file's path.
    Path,
}

impl Kind {
    /// `Ok` when `value` is valid, else what would be.
    pub fn check(&self, value: &str) -> Result<(), &'static str> {
        let v = value.trim();
        match *self {
            Kind::Flag => parse_flag(v).map(|_| ()).ok_or("expected 0 or 1"),
            Kind::Count {
                min,
                max,
                off,
                expected,
            } => v
                .parse::<u64>()
                .ok()
                .filter(|&n| (min..=max).contains(&n) || (off && n == 0))
                .map(|_| ())
                .ok_or(expected),
            Kind::Seconds => v
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .map(|_| ())
                .ok_or("seconds, 0 or more"),
            Kind::Text | Kind::Path => {
                if value.is_empty() {
                    Err("must not be empty")
                } else {
                    Ok(())
                }
            }
            Kind::List => Ok(()),
            Kind::Words { words, expected } => v
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .all(|w| words.iter().any(|k| k.eq_ignore_ascii_case(w)))
                .then_some(())
                .ok_or(expected),
        }
    }
}

/// `1`, `on`, `yes`, `true` or `0`, `off`, `no`, `false` (any case).
pub fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "yes" | "true" => Some(true),
        "0" | "off" | "no" | "false" => Some(false),
        _ => None,
    }
}

/// One setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// Its name: `--<name>=value` in `--kokkos-tools-args`, and the `kprof run`
    /// flag when [`Setting::run_flag`].
    pub name: &'static str,
    /// Its environment variable.
    pub var: &'static str,
    /// `kprof run --<name> VALUE` sets it.
    pub run_flag: bool,
    /// Its values.
    pub kind: Kind,
    /// The value's name in help (`MIB`, `0|1`).
    pub meta: &'static str,
    /// The default, as written in the docs.
    pub default: &'static str,
    /// One line of documentation.
    pub doc: &'static str,
}

impl Setting {
    /// The variable's value, when it is set.
    pub fn get(&self) -> Option<String> {
        std::env::var(self.var).ok()
    }

    /// The variable's value as a number, when it is set and is a valid one
    /// (else `None`: the caller's default; the runtime said why at start).
    pub fn count(&self) -> Option<u64> {
        self.get()
            .filter(|v| self.kind.check(v).is_ok())
            .and_then(|v| v.trim().parse().ok())
    }

    /// The variable as a flag: `Some` when it is set to a valid one.
    pub fn flag(&self) -> Option<bool> {
        self.get().and_then(|v| parse_flag(&v))
    }

    /// The variable as a path: `Some` when it is set and not empty.
    pub fn path(&self) -> Option<std::ffi::OsString> {
        std::env::var_os(self.var).filter(|p| !p.is_empty())
    }

    /// `Ok`, or one line: `<given>=<value> is invalid (<expected>)`.
    pub fn check(&self, given: &str, value: &str) -> Result<(), String> {
        self.kind
            .check(value)
            .map_err(|expected| format!("{given}={value} is invalid ({expected})"))
    }
}

/// The settings of one part of kprof.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// The part: `core`, or a plugin's model name.
    pub part: &'static str,
    /// Its settings.
    pub settings: &'static [Setting],
}
