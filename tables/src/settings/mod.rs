//! Every setting kprof reads from a `KPROF_*` variable. Each part of kprof (the
//! core, each plugin) declares its own in a file of this folder, and
//! [`REGISTRY`] lists them all: the runtime checks the environment against it
//! at start, `kprof run` before the program starts, and the docs are tested
//! against it.

pub mod actor;
pub mod core;
pub mod cuda;
pub mod kokkos;
pub mod mpi;
pub mod raja;
pub mod rocm;
mod setting;

pub use setting::{parse_flag, Group, Kind, Setting};

/// Every part's settings.
pub const REGISTRY: &[Group] = &[
    core::GROUP,
    kokkos::GROUP,
    raja::GROUP,
    cuda::GROUP,
    rocm::GROUP,
    mpi::GROUP,
    actor::GROUP,
];

/// Every setting.
pub fn all() -> impl Iterator<Item = &'static Setting> {
    REGISTRY.iter().flat_map(|g| g.settings.iter())
}

/// The setting read from `var`.
pub fn by_var(var: &str) -> Option<&'static Setting> {
    all().find(|s| s.var == var)
}

/// Set by `kprof run` for the program: what started it ([`KPROF_RUN`]), so the
/// runtime leaves to it what it does already.
pub const LAUNCHER: &str = "KPROF_LAUNCHER";

/// [`LAUNCHER`]'s value under `kprof run`.
pub const KPROF_RUN: &str = "kprof run";

/// Set by `kprof run` for the program: its own pid, so the program tells a
/// signal it forwards from one sent directly.
pub const RUN_PID: &str = "KPROF_RUN_PID";

/// Variables kprof sets for the programs it runs, not settings.
pub const INTERNAL: &[&str] = &[LAUNCHER, RUN_PID];

/// Variables of kprof's own test suite and benchmarks (not read by kprof).
pub const TEST_VARS: &[&str] = &["KPROF_DEPS_DIR", "KPROF_REQUIRE_ALL_TESTS"];

/// Beginnings of the names of more variables of the test suite and benchmarks.
pub const TEST_PREFIXES: &[&str] = &["KPROF_BENCH_", "KPROF_TEST_"];

/// Whether `var` is a variable kprof knows.
pub fn known(var: &str) -> bool {
    by_var(var).is_some()
        || INTERNAL.contains(&var)
        || TEST_VARS.contains(&var)
        || TEST_PREFIXES.iter().any(|p| var.starts_with(p))
}

/// One line for a `KPROF_*` variable that kprof does not know, naming the
/// nearest setting; `None` for a known one or another prefix.
pub fn unknown_line(var: &str) -> Option<String> {
    if !var.starts_with("KPROF_") || known(var) {
        return None;
    }
    let near = crate::nearest::nearest(var, all().map(|s| s.var)).unwrap_or("KPROF_TRACE");
    Some(format!(
        "{var} is not a kprof setting (did you mean {near}?); ignored"
    ))
}

/// The problems of this environment's `KPROF_*` variables, one line each:
/// unknown names (with the nearest known) and invalid values. `core_values`:
/// check the core's values too (the runtime checks them as it reads them).
pub fn check_environment(core_values: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .filter(|(k, _)| k.starts_with("KPROF_"))
        .collect();
    vars.sort();
    for (var, value) in vars {
        if let Some(line) = unknown_line(&var) {
            lines.push(line);
        } else if let Some(s) = by_var(&var) {
            let core = core::GROUP.settings.contains(s);
            if core_values || !core {
                if let Err(e) = s.check(&var, &value) {
                    lines.push(e);
                }
            }
        }
    }
    lines
}

/// The help text: every setting, part by part.
pub fn help_text() -> String {
    let mut s = String::from(
        "kprof settings (environment variable, or --name=value in --kokkos-tools-args for the core's):\n",
    );
    for g in REGISTRY {
        if g.part != "core" {
            s.push_str(&format!("{}:\n", g.part));
        }
        for x in g.settings {
            s.push_str(&format!(
                "  --{:<15} {:<22} {} (default {})\n",
                x.name, x.var, x.doc, x.default
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_variables_are_unique_and_spelt_alike() {
        let all: Vec<&Setting> = all().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.var, b.var);
                assert_ne!(a.name, b.name);
            }
            assert_eq!(
                a.var,
                format!("KPROF_{}", a.name.to_ascii_uppercase().replace('-', "_")),
                "{} and {}",
                a.name,
                a.var
            );
            assert!(!a.doc.is_empty() && !a.doc.contains('\n'), "{}", a.var);
            assert!(
                !a.doc.contains("(default"),
                "{}: the default is its own field",
                a.var
            );
        }
        assert!(all.len() >= 30, "{}", all.len());
    }

    #[test]
    fn defaults_are_valid_values() {
        for s in all() {
            // A default in words ("none", "1 with a trace ...") is for the docs.
            if !s.default.contains(' ') && s.default != "none" && s.kind != Kind::Path {
                assert_eq!(s.check(s.var, s.default), Ok(()), "{}", s.var);
            }
        }
    }

    #[test]
    fn kinds_check_values() {
        let count = Kind::Count {
            min: 10,
            max: 100,
            off: true,
            expected: "10 to 100, or 0",
        };
        assert_eq!(count.check("0"), Ok(()));
        assert_eq!(count.check(" 50 "), Ok(()));
        assert_eq!(count.check("5"), Err("10 to 100, or 0"));
        assert_eq!(count.check("101"), Err("10 to 100, or 0"));
        assert_eq!(count.check("x"), Err("10 to 100, or 0"));
        assert_eq!(Kind::Flag.check("yes"), Ok(()));
        assert_eq!(Kind::Flag.check("2"), Err("expected 0 or 1"));
        assert_eq!(Kind::Seconds.check("0.5"), Ok(()));
        assert!(Kind::Seconds.check("-1").is_err());
        assert!(Kind::Seconds.check("inf").is_err());
        assert!(Kind::Text.check("").is_err());
        let trace = by_var("KPROF_TRACE").unwrap();
        assert_eq!(trace.check("KPROF_TRACE", "perfetto, JSON"), Ok(()));
        assert_eq!(trace.check("KPROF_TRACE", ""), Ok(()));
        assert_eq!(
            trace.check("KPROF_TRACE", "perfeto"),
            Err("KPROF_TRACE=perfeto is invalid (a comma list of perfetto, json, otf2)".into())
        );
    }

    #[test]
    fn unknown_variables_name_the_nearest() {
        assert_eq!(
            unknown_line("KPROF_TRAC").as_deref(),
            Some("KPROF_TRAC is not a kprof setting (did you mean KPROF_TRACE?); ignored")
        );
        assert_eq!(
            unknown_line("KPROF_ACTOR_PEER_MS").as_deref(),
            Some("KPROF_ACTOR_PEER_MS is not a kprof setting (did you mean KPROF_ACTOR_PEER_US?); ignored")
        );
        assert_eq!(unknown_line("KPROF_TRACE"), None);
        assert_eq!(unknown_line("KPROF_TUNE"), None);
        assert_eq!(unknown_line("KPROF_LAUNCHER"), None);
        assert_eq!(unknown_line("KPROF_BENCH_ROUNDS"), None);
        assert_eq!(unknown_line("OMP_NUM_THREADS"), None);
    }

    #[test]
    fn help_names_every_setting() {
        let h = help_text();
        for s in all() {
            assert!(
                h.contains(s.var) && h.contains(&format!("--{}", s.name)),
                "{}",
                s.var
            );
        }
    }
}
