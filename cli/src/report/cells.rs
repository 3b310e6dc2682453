//! Pieces every view of `kprof report` writes the same way: the header, a
//! name as a cell, indentation, the base of every share, a path's names in
//! machine-readable rows. A leaf that the views read.

use std::fmt::Write as _;

use kprof_core::output::report::Report;

use super::args::ReportArgs;
use crate::fmt::dur;
use crate::path_text::show;

/// Levels of the tree view that are indented: deeper ones are indented as
/// this one, their depth written out, so that a line's length does not grow
/// with its depth (a tree 100,000 deep prints lines as short as one 32 deep).
pub const INDENT_LEVELS: usize = 32;

/// `text` indented for `depth` (two spaces a level, up to [`INDENT_LEVELS`]).
pub fn indented(depth: usize, text: &str) -> String {
    if depth <= INDENT_LEVELS {
        format!("{}{text}", "  ".repeat(depth))
    } else {
        format!("{}[depth {depth}] {text}", "  ".repeat(INDENT_LEVELS))
    }
}

/// A name as a table cell: escaped, and cut unless `--wide`.
pub fn cell(name: &str, args: &ReportArgs) -> String {
    kprof_core::output::readable::table_name(name, (!args.wide).then_some(NAME_WIDTH))
}

/// Longest name in a table without `--wide`, as in the exit summary.
pub const NAME_WIDTH: usize = 60;

/// The base of every share: `2 threads x 1.20 s`.
pub fn thread_time(r: &Report) -> String {
    let n = r.threads.len().max(1);
    format!(
        "{n} thread{} x {}",
        if n == 1 { "" } else { "s" },
        dur(r.clock.duration_ns)
    )
}

/// The first lines of every view: the profile, the program, the run.
pub fn header(r: &Report, path: &std::path::Path) -> String {
    let mut s = String::new();
    let p = &r.program;
    let rank = p.rank.map(|r| format!(", rank {r}")).unwrap_or_default();
    let _ = writeln!(s, "kprof report: {}", show(path));
    let _ = writeln!(
        s,
        "program: {} (pid {}, host {}{rank})",
        p.executable, p.pid, p.host
    );
    let plugins = if r.plugins.is_empty() {
        "none (annotations only)".to_string()
    } else {
        r.plugins.join(", ")
    };
    let _ = writeln!(
        s,
        "run: {} (clock {}), {} thread{}, plugins: {plugins}",
        kprof_core::output::summary::run_time(&r.clock),
        r.clock.source,
        r.threads.len(),
        if r.threads.len() == 1 { "" } else { "s" }
    );
    s
}

/// The names of a path as its machine-readable rows give them: whole up to
/// `csv::PATH_NAMES`, else the first and last ones around `...`.
pub fn bounded_path<'a>(names: &[&'a str]) -> Vec<&'a str> {
    let (first, last) = kprof_core::output::csv::path_parts(names.len());
    let mut out: Vec<&str> = names[first].to_vec();
    if !last.is_empty() {
        out.push(kprof_core::output::csv::PATH_GAP);
        out.extend_from_slice(&names[last]);
    }
    out
}
