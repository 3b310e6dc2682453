//! `kprof run`'s arguments. The flags of the models and of the settings are
//! made from kprof's tables ([`kprof_tables`]): one per model, one per setting
//! the registry gives a `kprof run` flag.

use std::ffi::OsString;

use clap::{Arg, ArgAction, ArgMatches, Command};
use kprof_tables::models::{Loader, Model, ModelId, MODELS};
use kprof_tables::settings::{self, Setting};

/// Arguments of `kprof run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The models asked for.
    #[command(flatten)]
    pub models: ModelFlags,
    /// The settings given as flags.
    #[command(flatten)]
    pub settings: SettingFlags,
    /// Output directory (KPROF_OUTPUT_DIR, which is honoured when -o is not given).
    /// Default: kprof-<program>-<pid of the program>, or a new name (.1, .2, ...).
    /// A DIR that exists is refused (exit 2) unless --force; %p, %r, %h, %e
    /// patterns expand per process (no existence check). Under an MPI launcher
    /// DIR is the job's profile and each rank writes DIR-rank<N>.
    #[arg(short, long, value_name = "DIR", visible_alias = "output-dir")]
    pub output: Option<String>,
    /// Replace an existing -o DIR (its old files are removed; kprof says so).
    #[arg(long)]
    pub force: bool,
    /// Print what is set and why, then run.
    #[arg(short, long)]
    pub verbose: bool,
    /// Print nothing of kprof run's own (the program and the runtime still print).
    #[arg(short, long)]
    pub quiet: bool,
    /// The program and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, value_name = "PROGRAM")]
    pub command: Vec<OsString>,
}

/// The models asked for with `--kokkos`, `--openmp`, ...: one flag per entry of
/// the model table.
#[derive(Debug, Default, Clone)]
pub struct ModelFlags(pub Vec<ModelId>);

/// How the runtime loads the plugin, for the help.
fn through(loader: &Loader) -> String {
    match loader {
        Loader::Preload => "preloaded (LD_PRELOAD)".into(),
        _ => format!("loaded through {}", loader.vars().join(" or ")),
    }
}

/// When detection finds the model by the libraries the program links, for the
/// help.
fn detected_when(m: &Model) -> String {
    let libs: Vec<&str> = m
        .detect
        .links
        .iter()
        .map(|l| l.trim_end_matches('.'))
        .collect();
    if libs.is_empty() {
        return String::new();
    }
    format!(" Detected when the program links {}.", libs.join(" or "))
}

impl clap::FromArgMatches for ModelFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(ModelFlags(
            MODELS
                .iter()
                .filter(|x| m.get_flag(x.name))
                .map(|x| x.id)
                .collect(),
        ))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for ModelFlags {
    fn augment_args(cmd: Command) -> Command {
        MODELS.iter().fold(cmd, |cmd, m| {
            cmd.arg(
                Arg::new(m.name)
                    .long(m.name)
                    .action(ArgAction::SetTrue)
                    .help(format!(
                        "{}. Plugin {}, {}.{} See {}.",
                        m.help,
                        m.library,
                        through(&m.loader),
                        detected_when(m),
                        m.doc
                    )),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// The settings given as flags (`--trace`, `--buffer-mb`, ...), in the
/// registry's order, with their values as given.
#[derive(Debug, Default, Clone)]
pub struct SettingFlags(pub Vec<(&'static Setting, String)>);

/// The settings that are `kprof run` flags.
pub fn flag_settings() -> impl Iterator<Item = &'static Setting> {
    settings::all().filter(|s| s.run_flag)
}

impl clap::FromArgMatches for SettingFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Ok(SettingFlags(
            flag_settings()
                .filter_map(|s| Some((s, m.get_one::<String>(s.name)?.clone())))
                .collect(),
        ))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for SettingFlags {
    fn augment_args(cmd: Command) -> Command {
        flag_settings().fold(cmd, |cmd, s| {
            cmd.arg(
                Arg::new(s.name)
                    .long(s.name)
                    .value_name(s.meta)
                    .help(format!("{} ({}; default {})", s.doc, s.var, s.default)),
            )
        })
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}
