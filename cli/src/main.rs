//! The `kprof` command: `run` a program under kprof, `report` its profile,
//! `diff` two sets of runs, `merge` the profiles and traces of several processes.
//!
//! Exit status: `run` returns the program's; the other commands 0 on success, 1 when
//! `diff --fail-above` finds a regression, 2 on bad input (one line on stderr).

// The options' doc comments are clap's help text, plain text: `kprof-<program>`
// there is a name, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

mod detect;
mod diff;
mod fmt;
#[cfg(test)]
mod inputs_mutated;
mod load;
mod merge;
mod out_dir;
mod outcome;
mod path_text;
mod pftrace;
mod plot;
mod reader_stack;
mod report;
mod run;
mod sort_key;
mod timebase;
mod trace_packets;
mod version;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use outcome::Failure;
use reader_stack::on_reader_stack;

/// kprof: profile HPC programs (Kokkos, OpenMP, OpenACC, RAJA, CUDA, HIP, MPI,
/// OpenSHMEM, annotations) and read the results.
#[derive(Parser)]
#[command(name = "kprof", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Runs a program with the kprof plugins for the runtimes it uses.
    ///
    /// Without a model's flag (--kokkos, --openmp, ...), the models are detected
    /// from the program's ELF file (the libraries it links, runtimes built in).
    /// The program keeps its stdin, stdout, stderr and exit status.
    #[command(
        after_help = "Example: kprof run --trace perfetto -o run1 -- ./app input.txt\n         MPI: mpirun -np 4 kprof run -- ./app   (one directory per rank: kprof-app-rank<N>)\n\nAn -o DIR that exists is refused (exit 2): give --force to replace it, or a new name.\nWithout -o, KPROF_OUTPUT_DIR is honoured, else a new kprof-<program>-<pid>."
    )]
    Run(run::RunArgs),
    /// Prints readable tables from a profile (a kprof output directory or profile.json).
    Report(report::ReportArgs),
    /// Compares runs call path by call path, largest change first, telling changes
    /// from run-to-run noise.
    ///
    /// Each side is one run or several. A change of a call path's time per call counts
    /// when it exceeds --threshold percent, moves the time per run by more than
    /// --min-time, and is beyond the run-to-run spread: with four runs or more per side
    /// (at --alpha 0.05), a Mann-Whitney U rank test over the runs gives p < --alpha;
    /// with fewer, every run of one side is beyond every run of the other; with one run
    /// per side the spread is unknown, and only the two floors apply.
    #[command(
        override_usage = "kprof diff [OPTIONS] A B\n       kprof diff [OPTIONS] A... -- B...",
        after_help = "Examples:\n  kprof diff run0 run1 --fail-above 10\n  kprof diff 'base-*' 'new-*' --fail-above 10   (quoted: kprof expands the patterns)\n  kprof diff base new                           (directories holding run directories)\n  kprof diff --fail-above 10 base-* -- new-*    (the shell expands; options before --)\n\nGive four runs per side or more: with three and three, the rank test's smallest p is 0.10."
    )]
    Diff(diff::DiffArgs),
    /// Merges the outputs of several processes (MPI ranks) into one directory.
    Merge(merge::MergeArgs),
    /// Draws a profile: one offline HTML page and an SVG file per figure.
    #[command(after_help = "Example: kprof plot run1 -o run1.html   (then open run1.html)")]
    Plot(plot::PlotArgs),
}

/// The command line, parsed; an option no command has is one line naming the
/// nearest one, exit status 2 (before `--`, a word starting with `-` is an
/// option, never the program).
fn parse() -> Result<Cli, Failure> {
    Cli::try_parse().map_err(|e| {
        use clap::error::{ContextKind, ContextValue, ErrorKind};
        // --version (-V) anywhere clap takes it: the build and what this
        // install finds now (version.rs), not clap's one line.
        if e.kind() == ErrorKind::DisplayVersion {
            print!("{}", version::text());
            std::process::exit(0);
        }
        if e.kind() != ErrorKind::UnknownArgument {
            e.exit();
        }
        let given = match e.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(s)) => s.clone(),
            _ => e.exit(),
        };
        let option = given.split('=').next().unwrap_or(&given).to_string();
        let line = match nearest_option(&option) {
            Some(near) => format!("unknown option {option} (the nearest is --{near})"),
            None => format!("unknown option {option}"),
        };
        Failure(line)
    })
}

/// The long option of the command named on the command line nearest to `given`.
fn nearest_option(given: &str) -> Option<String> {
    let cli = Cli::command();
    let sub = std::env::args()
        .skip(1)
        .find_map(|a| cli.find_subcommand(&a).cloned());
    let cmd = sub.as_ref().unwrap_or(&cli);
    let longs: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .chain(["help".to_string()])
        .collect();
    kprof_tables::nearest::nearest(
        given.trim_start_matches('-'),
        longs.iter().map(String::as_str),
    )
    .map(str::to_string)
}

fn main() -> ExitCode {
    let cli = match parse() {
        Ok(cli) => cli,
        Err(Failure(msg)) => {
            eprintln!("kprof: {msg}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        // On the main thread: signals are forwarded from there.
        Command::Run(a) => run::main(a),
        Command::Report(a) => on_reader_stack(move || report::main(a)),
        Command::Diff(a) => on_reader_stack(move || diff::main(a)),
        Command::Merge(a) => on_reader_stack(move || merge::main(a)),
        Command::Plot(a) => on_reader_stack(move || plot::main(a)),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure(msg)) => {
            eprintln!("kprof: {msg}");
            ExitCode::from(2)
        }
    }
}
