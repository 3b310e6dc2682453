//! The options of `kprof report` and the order of rows they ask for: a leaf
//! that the report's views read.

use std::path::PathBuf;

use crate::sort_key::SortKey;

/// Arguments of `kprof report`.
#[derive(clap::Args)]
pub struct ReportArgs {
    /// A kprof output directory (or its profile.json; a merged profile works too).
    pub dir: PathBuf,
    /// Rows per table (default 20; the tree shows every node unless given).
    #[arg(long, value_name = "N")]
    pub top: Option<usize>,
    /// Show the call-path tree instead of the flat table.
    #[arg(long)]
    pub tree: bool,
    /// Order of rows (default self), or of siblings in the tree (default total).
    #[arg(long, value_enum)]
    pub sort: Option<SortKey>,
    /// Only nodes whose name matches this regular expression (in the tree: and their ancestors).
    #[arg(long, value_name = "REGEX")]
    pub filter: Option<String>,
    /// Machine-readable rows as CSV on stdout (times in ns).
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Machine-readable rows as JSON on stdout (times in ns).
    #[arg(long)]
    pub json: bool,
    /// Show names whole (by default a name is cut at 60 characters, as in the
    /// summary; control characters are always shown escaped).
    #[arg(long)]
    pub wide: bool,
    /// Show the threads and how each team's work spread over its threads
    /// (min/mean/max per thread, imbalance = max/mean).
    #[arg(long, conflicts_with_all = ["tree", "csv", "json"])]
    pub threads: bool,
    /// Kernels and regions by name over all their call paths and kinds: total
    /// time, calls and time per call, as kokkos-tools' kernel-timer shows them
    /// (with `--csv` or `--json`: those rows, machine-readable).
    #[arg(long, conflicts_with_all = ["tree", "threads"])]
    pub flat: bool,
    /// The call-stack samples (`kprof run --sample-hz N`) of each kernel, region
    /// and call: self samples by function and by line, and the program's call
    /// paths below the construct (`--top`: the constructs shown, default 10).
    #[arg(long, conflicts_with_all = ["tree", "threads", "flat", "csv", "json"])]
    pub samples: bool,
}

/// The value rows are ordered by under `key`.
pub fn sort_value(key: SortKey, total: u64, self_ns: u64, count: u64) -> u64 {
    match key {
        SortKey::SelfTime => self_ns,
        SortKey::Total => total,
        SortKey::Count => count,
    }
}

/// `key` in words, for a table's title.
pub fn sort_name(key: SortKey) -> &'static str {
    match key {
        SortKey::SelfTime => "self time",
        SortKey::Total => "total time",
        SortKey::Count => "count",
    }
}

/// The order of rows: `--sort`, else self time.
pub fn sort_of(args: &ReportArgs) -> SortKey {
    args.sort.unwrap_or(SortKey::SelfTime)
}
