//! `profile.cali`: the call-path tree in Caliper's own `.cali` format, as
//! Caliper's `hatchet-region-profile` writes it, so that LLNL's readers load it
//! as they load Caliper's files: `caliperreader.CaliperReader`,
//! `hatchet.GraphFrame.from_caliperreader` and
//! `thicket.Thicket.from_caliperreader([...])` (many runs, with their metadata).
//!
//! A `.cali` file is lines of comma-separated `key=value` entries (`,`, `=` and
//! `\` escaped with `\`). `__rec=node` lines build a tree of (attribute, value)
//! nodes: the attributes themselves (a name under a property under a type, the
//! reader's bootstrap nodes 0 to 11), one node per call path (the nested
//! attribute `region` under its parent's node: the reader expands it into the
//! record's `path`), and the run's metadata. `__rec=ctx` lines are the records:
//! a call path's node and its kind's node by reference, the metrics as
//! immediate values. One `__rec=globals` line refers to the chain of metadata
//! nodes.
//!
//! Metrics follow `hatchet-region-profile`'s names, which Hatchet turns into its
//! columns (seconds, as Caliper's `time.duration`): `inclusive#sum#time.duration`
//! ("time (inc)"), `sum#time.duration` ("time"), with the aliases `count`,
//! `min (inc)` and `max (inc)` of `tasktree.json` for the instances' count and
//! extremes; `mpi.rank` when the process has one, as Caliper's per-rank profiles.
//!
//! Call-stack samples (`KPROF_SAMPLE_HZ`) come as Caliper's sampler writes them
//! (its `sampler` and `symbollookup` services, aggregated by its
//! `hatchet-sample-profile` query `select *,count() group by prop:nested,...`):
//! per call path and sampled function one record of the function's self samples
//! (as `profile.json`'s `stack_samples.functions`), with the function's name in
//! `source.function#cali.sampler.pc`. Their count is `sum#count` (alias
//! `samples`), the name `cali-query`'s `sum(count)` gives Caliper's per-sample
//! `count` when records are added up: `count` itself is taken by the regions'
//! alias of `sum#region.count`. The function is also the last entry of the
//! record's `path`, a node under its call path's: Hatchet's reader puts a
//! sampler record (one with `module#cali.sampler.pc`) in place of its path's
//! innermost region, and any other record at its path, so that the function
//! is the child of its construct in Hatchet and Thicket. `module#cali.sampler.pc`
//! is left out (kprof keeps no module per function; with it, Hatchet would put
//! the function beside its construct), and `sourceloc#cali.sampler.pc` too
//! (Hatchet would add a function's lines up into its one node; the lines stay
//! in `profile.json`). A file without samples is the same as before them.
//!
//! Written node by node as the tree is walked: no copy of the tree is built.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use crate::hot::clock::monotonic_ns;
use crate::output::call_path::{CallPath, Walk};
use crate::output::calltree::CallTree;
use crate::output::files::{write_whole, OutputError};
use crate::output::report::Report;

/// Caliper's type nodes (the reader's bootstrap nodes), by type name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaliType {
    /// Signed integer.
    Int,
    /// Unsigned integer.
    Uint,
    /// Text.
    String,
    /// Floating point.
    Double,
}

impl CaliType {
    /// The id of the type's bootstrap node.
    fn node(self) -> u64 {
        match self {
            CaliType::Int => 1,
            CaliType::Uint => 2,
            CaliType::String => 3,
            CaliType::Double => 5,
        }
    }
}

/// The bootstrap node of the attribute `cali.attribute.name`.
const NAME: u64 = 8;
/// The bootstrap node of the attribute `cali.attribute.prop`.
const PROP: u64 = 10;
/// The first node id not taken by the reader's bootstrap nodes.
const FIRST_ID: u64 = 12;

/// Attribute properties, as Caliper's `cali_attr_properties`.
mod prop {
    /// Stored as an immediate value in the records (a metric).
    pub const AS_VALUE: u64 = 1;
    /// Not an event trigger.
    pub const SKIP_EVENTS: u64 = 64;
    /// Nested begin/end regions: the reader builds `path` from them.
    pub const NESTED: u64 = 256;
    /// Run metadata.
    pub const GLOBAL: u64 = 512;
    /// Process scope.
    pub const PROCESS: u64 = 12;
}

/// The `kprof.kind` of the records of sampled functions (and the `[kind]` a
/// function's path entry takes where a sibling region has its name).
pub const SAMPLED_KIND: &str = "function";

/// The attributes of the sampled functions' records, defined at the first.
struct SampleAttrs {
    /// `=id` of `sum#count`, then `=id` of `mpi.rank` with ranks.
    attrs: String,
    /// `source.function#cali.sampler.pc`.
    function: u64,
    /// Its node of each function's name.
    functions: HashMap<String, u64>,
}

/// One global (run metadata) entry: its attribute's name, type and value.
pub type Global = (String, CaliType, String);

/// Node ids and the lines that define them.
struct Nodes<W: Write> {
    out: W,
    next: u64,
    /// The ids of the meta-attributes `attribute.alias` and `attribute.unit`.
    alias: u64,
    unit: u64,
}

impl<W: Write> Nodes<W> {
    fn new(out: W) -> std::io::Result<Self> {
        let mut n = Nodes {
            out,
            next: FIRST_ID,
            alias: 0,
            unit: 0,
        };
        let p = n.node(
            PROP,
            &(prop::SKIP_EVENTS).to_string(),
            Some(CaliType::String.node()),
        )?;
        n.alias = n.node(NAME, "attribute.alias", Some(p))?;
        n.unit = n.node(NAME, "attribute.unit", Some(p))?;
        Ok(n)
    }

    /// Writes one node (`attr`, `data`) under `parent`; its id.
    fn node(&mut self, attr: u64, data: &str, parent: Option<u64>) -> std::io::Result<u64> {
        let id = self.next;
        self.next += 1;
        let mut line = format!("__rec=node,id={id},attr={attr},data=");
        escape(&mut line, data);
        match parent {
            Some(p) => line.push_str(&format!(",parent={p}")),
            // The reader strips white space at the end of a line: data that ends
            // with some comes before `attr` (the reader takes the fields by name).
            None if data.ends_with(char::is_whitespace) => {
                line = format!("__rec=node,id={id},data=");
                escape(&mut line, data);
                line.push_str(&format!(",attr={attr}"));
            }
            None => {}
        }
        line.push('\n');
        self.out.write_all(line.as_bytes())?;
        Ok(id)
    }

    /// Defines an attribute; its id.
    fn attribute(
        &mut self,
        name: &str,
        ty: CaliType,
        properties: u64,
        alias: Option<&str>,
        unit: Option<&str>,
    ) -> std::io::Result<u64> {
        let mut parent = ty.node();
        if let Some(u) = unit {
            parent = self.node(self.unit, u, Some(parent))?;
        }
        if let Some(a) = alias {
            parent = self.node(self.alias, a, Some(parent))?;
        }
        let p = self.node(PROP, &properties.to_string(), Some(parent))?;
        self.node(NAME, name, Some(p))
    }
}

/// Appends `data` to `line` with `\`, `,` and `=` escaped and a newline as `\n`.
/// A carriage return would end the line for Python's reader (universal
/// newlines), which has no escape for it: it becomes a space.
fn escape(line: &mut String, data: &str) {
    for c in data.chars() {
        match c {
            '\\' | ',' | '=' => {
                line.push('\\');
                line.push(c);
            }
            '\n' => line.push_str("\\n"),
            '\r' => line.push(' '),
            c => line.push(c),
        }
    }
}

/// Seconds from ns, exactly (nine decimals).
fn seconds(ns: f64) -> String {
    let ns = if ns.is_finite() && ns > 0.0 {
        ns.round() as u64
    } else {
        0
    };
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// One metric of the records.
pub struct Metric {
    /// Caliper's name (`hatchet-region-profile`'s where it has one).
    pub name: &'static str,
    /// The column Hatchet and Thicket name it by (`attribute.alias`).
    pub alias: &'static str,
    /// Its type.
    pub ty: CaliType,
    /// Its unit (`sec` for times).
    pub unit: Option<&'static str>,
    /// The [`CallPath`] metric it comes from (`None`: the instance count).
    pub from: Option<&'static str>,
}

/// The metrics of one process's record, in seconds where a time.
pub const METRICS: [Metric; 5] = [
    Metric {
        name: "inclusive#sum#time.duration",
        alias: "time (inc)",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("time (inc)"),
    },
    Metric {
        name: "sum#time.duration",
        alias: "time",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("time"),
    },
    Metric {
        name: "sum#region.count",
        alias: "count",
        ty: CaliType::Uint,
        unit: None,
        from: None,
    },
    Metric {
        name: "min#time.duration",
        alias: "min (inc)",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("min (inc)"),
    },
    Metric {
        name: "max#time.duration",
        alias: "max (inc)",
        ty: CaliType::Double,
        unit: Some("sec"),
        from: Some("max (inc)"),
    },
];

/// Writes the tree `walk` meets to `path` (completely or not at all), each node
/// one record, with `rank` (the process's MPI rank) on every record when given,
/// and `globals` as the run's metadata (names as given, each once).
pub fn write(
    path: &Path,
    walk: Walk,
    rank: Option<u64>,
    globals: &[Global],
) -> Result<(), OutputError> {
    let file = |source| OutputError::File {
        path: path.display().to_string(),
        source,
    };
    write_whole(path, |f| write_to(f, walk, rank, globals).map_err(file)).map(drop)
}

/// [`write()`] into `out`.
pub fn write_to<W: Write>(
    out: &mut W,
    walk: Walk,
    rank: Option<u64>,
    globals: &[Global],
) -> std::io::Result<()> {
    let mut w = Writer::new(out, rank.is_some(), false)?;
    w.tree(walk, rank.unwrap_or(0))?;
    w.finish(globals).map(drop)
}

/// Stands for "no parent" among the call paths' nodes.
const ROOT: u64 = u64::MAX;

/// An open node of a tree being written: its id, the names its children took
/// (one tree) and how many of its children had each (name, kind) so far.
type Open = (u64, HashSet<u64>, HashMap<(String, String), u32>);

/// Call-path nodes kept across trees (a job's ranks): each path is one node
/// however many ranks have it.
#[derive(Default)]
struct Shared {
    /// The node of a path: (parent node, name, kind, how many siblings of that
    /// name and kind came before it in its own tree).
    paths: HashMap<(u64, String, String, u32), u64>,
    /// The names taken under each parent node (see [`unique`]).
    taken: HashMap<u64, HashSet<u64>>,
}

/// A `.cali` stream of one process's tree or of many (a job's ranks, each
/// record with its `mpi.rank`): the attributes first, then per tree its call
/// paths' nodes (each defined once, before its first record) and records, and
/// last the run's metadata ([`Writer::finish`]).
pub struct Writer<W: Write> {
    nodes: Nodes<W>,
    /// `=id=id...` of the records' immediate attributes.
    attrs: String,
    with_rank: bool,
    region: u64,
    kind_attr: u64,
    kinds: HashMap<String, u64>,
    /// Across trees (`None`: one tree, whose paths are all new).
    shared: Option<Shared>,
    /// The metrics of each record.
    metrics: &'static [Metric],
    /// The attribute `mpi.rank` (with ranks).
    rank_attr: Option<u64>,
    /// The sampled functions' attributes, once a tree has samples.
    samples: Option<SampleAttrs>,
}

impl<W: Write> Writer<W> {
    /// Starts the stream: the attributes. `with_rank`: records carry
    /// `mpi.rank`; `many`: more than one tree comes ([`Writer::tree`]).
    pub fn new(out: W, with_rank: bool, many: bool) -> std::io::Result<Self> {
        Self::with_metrics(out, &METRICS, with_rank, many)
    }

    /// [`Writer::new`] with records of `metrics` (a job's statistics over its
    /// ranks, say) instead of one process's [`METRICS`].
    pub fn with_metrics(
        out: W,
        metrics: &'static [Metric],
        with_rank: bool,
        many: bool,
    ) -> std::io::Result<Self> {
        let mut nodes = Nodes::new(out)?;
        let value = prop::AS_VALUE | prop::SKIP_EVENTS;
        let mut attrs = String::new();
        for m in metrics {
            let id = nodes.attribute(m.name, m.ty, value, Some(m.alias), m.unit)?;
            attrs.push_str(&format!("={id}"));
        }
        let mut rank_attr = None;
        if with_rank {
            let id =
                nodes.attribute("mpi.rank", CaliType::Int, value | prop::PROCESS, None, None)?;
            attrs.push_str(&format!("={id}"));
            rank_attr = Some(id);
        }
        let region = nodes.attribute(
            "region",
            CaliType::String,
            prop::NESTED | prop::PROCESS,
            None,
            None,
        )?;
        let kind_attr = nodes.attribute(
            "kprof.kind",
            CaliType::String,
            prop::SKIP_EVENTS | prop::PROCESS,
            None,
            None,
        )?;
        Ok(Writer {
            nodes,
            attrs,
            with_rank,
            region,
            kind_attr,
            kinds: HashMap::new(),
            shared: many.then(Shared::default),
            metrics,
            rank_attr,
            samples: None,
        })
    }

    /// One process's tree, each node one record (with `rank` when the stream
    /// has ranks), and each of its sampled functions one.
    pub fn tree(&mut self, walk: Walk, rank: u64) -> std::io::Result<()> {
        // The open path: per depth, the node's id, the names its children took
        // (one tree) and how many of its children had each (name, kind) so far;
        // beside it, the node's sampled functions, written when its subtree
        // ends, so that its children keep their names (a function of a child's
        // name takes `[function]`, not the child).
        let mut open: Vec<Open> = Vec::new();
        let mut sampled: Vec<Vec<(String, u64)>> = Vec::new();
        let mut roots: Open = (ROOT, HashSet::new(), HashMap::new());
        let mut failed = None;
        walk(&mut |depth, n: &dyn CallPath| {
            if failed.is_some() {
                return;
            }
            if let Err(e) = self.close(&mut open, &mut sampled, depth, rank) {
                failed = Some(e);
                return;
            }
            let parent = open.last_mut().unwrap_or(&mut roots);
            let id = match self.path_node(parent, n.name(), n.kind()) {
                Ok(id) => id,
                Err(e) => {
                    failed = Some(e);
                    return;
                }
            };
            if let Err(e) = self.record(id, n, rank) {
                failed = Some(e);
                return;
            }
            open.push((id, HashSet::new(), HashMap::new()));
            let mut functions = Vec::new();
            n.sampled_functions(&mut |f, count| functions.push((f.to_string(), count)));
            sampled.push(functions);
        });
        match failed {
            Some(e) => Err(e),
            None => self.close(&mut open, &mut sampled, 0, rank),
        }
    }

    /// Ends the open nodes deeper than `depth`, innermost first: the records
    /// of their sampled functions.
    fn close(
        &mut self,
        open: &mut Vec<Open>,
        sampled: &mut Vec<Vec<(String, u64)>>,
        depth: usize,
        rank: u64,
    ) -> std::io::Result<()> {
        while open.len() > depth {
            let (Some(mut node), Some(functions)) = (open.pop(), sampled.pop()) else {
                break;
            };
            for (f, count) in functions {
                let id = self.path_node(&mut node, &f, SAMPLED_KIND)?;
                self.sample_record(id, &f, count, rank)?;
            }
        }
        Ok(())
    }

    /// The node of the call path `name` of `kind` under `parent`, written
    /// when new.
    fn path_node(&mut self, parent: &mut Open, name: &str, kind: &str) -> std::io::Result<u64> {
        let (pid, taken, seen) = parent;
        let above = (*pid != ROOT).then_some(*pid);
        let Some(shared) = self.shared.as_mut() else {
            let name = unique(taken, name, kind);
            return self.nodes.node(self.region, &name, above);
        };
        let k = seen
            .entry((name.to_string(), kind.to_string()))
            .or_insert(0);
        let key = (*pid, name.to_string(), kind.to_string(), *k);
        *k += 1;
        if let Some(&id) = shared.paths.get(&key) {
            return Ok(id);
        }
        let name = unique(shared.taken.entry(*pid).or_default(), name, kind);
        let id = self.nodes.node(self.region, &name, above)?;
        shared.paths.insert(key, id);
        Ok(id)
    }

    /// The node of `kind` (`kprof.kind`), written when new.
    fn kind_node(&mut self, kind: &str) -> std::io::Result<u64> {
        if let Some(&k) = self.kinds.get(kind) {
            return Ok(k);
        }
        let k = self.nodes.node(self.kind_attr, kind, None)?;
        self.kinds.insert(kind.to_string(), k);
        Ok(k)
    }

    /// The record of `count` self samples of function `f`, whose path's node
    /// (under its call path's) is `id`.
    fn sample_record(&mut self, id: u64, f: &str, count: u64, rank: u64) -> std::io::Result<()> {
        if self.samples.is_none() {
            let value = prop::AS_VALUE | prop::SKIP_EVENTS;
            let count_attr =
                self.nodes
                    .attribute("sum#count", CaliType::Uint, value, Some("samples"), None)?;
            let mut attrs = format!("={count_attr}");
            if let Some(r) = self.rank_attr {
                attrs.push_str(&format!("={r}"));
            }
            let function = self.nodes.attribute(
                "source.function#cali.sampler.pc",
                CaliType::String,
                prop::SKIP_EVENTS | prop::PROCESS,
                None,
                None,
            )?;
            self.samples = Some(SampleAttrs {
                attrs,
                function,
                functions: HashMap::new(),
            });
        }
        let kind = self.kind_node(SAMPLED_KIND)?;
        let Some(s) = self.samples.as_mut() else {
            return Ok(());
        };
        let fnode = match s.functions.get(f) {
            Some(&n) => n,
            None => {
                let n = self.nodes.node(s.function, f, None)?;
                s.functions.insert(f.to_string(), n);
                n
            }
        };
        let mut data = format!("={count}");
        if self.with_rank {
            data.push_str(&format!("={rank}"));
        }
        writeln!(
            self.nodes.out,
            "__rec=ctx,ref={id}={kind}={fnode},attr{},data{data}",
            s.attrs
        )
    }

    /// The record of node `n`, whose call path's node is `id`.
    fn record(&mut self, id: u64, n: &dyn CallPath, rank: u64) -> std::io::Result<()> {
        let kind = self.kind_node(n.kind())?;
        let metrics = self.metrics;
        let mut found = vec![f64::NAN; metrics.len()];
        n.metrics(&mut |k, v| {
            if let Some(i) = metrics.iter().position(|m| m.from == Some(k)) {
                found[i] = v;
            }
        });
        let mut data = String::new();
        for (i, m) in metrics.iter().enumerate() {
            data.push('=');
            match m.from {
                None => data.push_str(&n.count().to_string()),
                Some("time (inc)") if found[i].is_nan() => {
                    data.push_str(&seconds(n.total_ns() as f64))
                }
                Some(_) => data.push_str(&seconds(found[i])),
            }
        }
        if self.with_rank {
            data.push_str(&format!("={rank}"));
        }
        writeln!(
            self.nodes.out,
            "__rec=ctx,ref={id}={kind},attr{},data{data}",
            self.attrs
        )
    }

    /// Ends the stream with `globals`, the run's metadata (names as given, each
    /// once); the writer.
    pub fn finish(mut self, globals: &[Global]) -> std::io::Result<W> {
        // One chain of nodes, each global's value under the previous.
        let global = prop::GLOBAL | prop::SKIP_EVENTS | prop::PROCESS;
        let mut seen = HashSet::new();
        let mut last = None;
        for (name, ty, v) in globals {
            if !seen.insert(name.as_str()) {
                continue;
            }
            let attr = self.nodes.attribute(name, *ty, global, None, None)?;
            last = Some(self.nodes.node(attr, v, last)?);
        }
        if let Some(last) = last {
            writeln!(self.nodes.out, "__rec=globals,ref={last}")?;
        }
        Ok(self.nodes.out)
    }
}

/// The name a node takes among its siblings, whose names taken are `taken`
/// (hashes: a million siblings take 16 MB, not their names' bytes): its own,
/// or, where a sibling of another kind or device took it already (Caliper's
/// path holds names only, and Hatchet would add the two nodes up),
/// `name [kind]` and then a number. (Two names of one hash, one in 2^64, would
/// take the second form needlessly.)
fn unique(taken: &mut HashSet<u64>, name: &str, kind: &str) -> String {
    if taken.insert(hash(name)) {
        return name.to_string();
    }
    let mut candidate = format!("{name} [{kind}]");
    let mut k = 2;
    while !taken.insert(hash(&candidate)) {
        candidate = format!("{name} [{kind}] {k}");
        k += 1;
    }
    candidate
}

/// A name's hash, the same in every run.
fn hash(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}

/// The run's metadata for one process's `profile.cali`, under the names Caliper
/// and Adiak give them where they have one (`user`, `launchdate`, `executable`,
/// `executablepath`, `cmdline`, `hostname`, `cluster`, `jobsize`,
/// `mpi.world.size`), then kprof's own (`kprof.version`, `kprof.pid`,
/// `kprof.plugins`, each `KPROF_*` setting set, under its variable's name). The
/// program's own pairs (`kprof_metadata`, the plugins') come first and so win
/// over a name kprof would give as well. Read in the measured process, at the
/// end of its run (the user, the command line, the settings are its own).
pub fn report_globals(report: &Report) -> Vec<Global> {
    let mut g: Vec<Global> = report
        .metadata
        .iter()
        .map(|(k, v)| string(k, v.clone()))
        .collect();
    if let Some(user) = user() {
        g.push(string("user", user));
    }
    if let Some(date) = launch_date(report) {
        g.push(int("launchdate", date));
    }
    g.push(string("executable", report.program.executable.clone()));
    own_command(&mut g);
    let size = report.metadata.get(MPI_SIZE).and_then(|v| v.parse().ok());
    host_and_job(&mut g, report, size);
    g.push(int("kprof.pid", u64::from(report.program.pid)));
    own_settings(&mut g);
    g
}

/// This process's `executablepath` and `cmdline` (Adiak's names).
pub fn own_command(g: &mut Vec<Global>) {
    if let Ok(exe) = std::env::current_exe() {
        g.push(string("executablepath", exe.display().to_string()));
    }
    if let Ok(cmdline) = std::fs::read("/proc/self/cmdline") {
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        // Adiak's form of a list, which Hatchet reads back as one.
        g.push(string("cmdline", format!("[{}]", args.join(","))));
    }
}

/// Every `KPROF_*` setting this process has, under its variable's name.
pub fn own_settings(g: &mut Vec<Global>) {
    for setting in kprof_tables::settings::all() {
        if let Some(v) = setting.get() {
            g.push(string(setting.var, v));
        }
    }
}

/// The metadata of a job's `profile.cali` (`kprof merge`), from the report of
/// its lowest rank `first` and the number of ranks merged, `ranks`: that rank's
/// pairs (but its `MPI rank`), its executable and host, the job's size
/// (`jobsize`, `mpi.world.size`: the ranks' `MPI size`, else `ranks`), kprof's
/// version and plugins. What only the measured process knew (its user, start,
/// command line, settings) is not in a rank's profile, and is left out.
pub fn job_globals(first: &Report, ranks: u64) -> Vec<Global> {
    let mut g: Vec<Global> = first
        .metadata
        .iter()
        .filter(|(k, _)| k.as_str() != "MPI rank")
        .map(|(k, v)| string(k, v.clone()))
        .collect();
    g.push(string("executable", first.program.executable.clone()));
    let size = first.metadata.get(MPI_SIZE).and_then(|v| v.parse().ok());
    host_and_job(&mut g, first, Some(size.unwrap_or(ranks)));
    g
}

/// The MPI plugin's metadata key of the job's size.
const MPI_SIZE: &str = "MPI size";

/// A text global.
pub fn string(k: &str, v: String) -> Global {
    (k.to_string(), CaliType::String, v)
}

/// A whole-number global.
pub fn int(k: &str, v: u64) -> Global {
    (k.to_string(), CaliType::Int, v.to_string())
}

/// The globals every `profile.cali` has: `hostname`, `cluster`, `jobsize` (1
/// without MPI), `mpi.world.size` (`size`, with MPI), `kprof.version`,
/// `kprof.plugins`.
fn host_and_job(g: &mut Vec<Global>, report: &Report, size: Option<u64>) {
    host_globals(
        g,
        &report.program.host,
        size,
        &report.kprof_version,
        &report.plugins,
    );
}

/// `hostname`, `cluster`, `jobsize` (1 without MPI), `mpi.world.size` (`size`,
/// with MPI), `kprof.version`, `kprof.plugins`.
pub fn host_globals(
    g: &mut Vec<Global>,
    host: &str,
    size: Option<u64>,
    version: &str,
    plugins: &[String],
) {
    g.push(string("hostname", host.to_string()));
    // Adiak's cluster: the host name without its node number.
    let cluster = host.split('.').next().unwrap_or_default();
    g.push(string(
        "cluster",
        cluster
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .to_string(),
    ));
    g.push(int("jobsize", size.unwrap_or(1)));
    if let Some(size) = size {
        g.push(int("mpi.world.size", size));
    }
    g.push(string("kprof.version", version.to_string()));
    g.push(string("kprof.plugins", format!("[{}]", plugins.join(","))));
}

/// The user running the program: the password database's name of the real
/// user id, as Adiak gives it, else `USER`.
pub fn user() -> Option<String> {
    let mut pwd = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut buf = vec![0u8; 4096];
    let mut found = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes into `pwd` and `buf`, both ours and of the sizes
    // given; `found` points at `pwd` only on success.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            pwd.as_mut_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if rc == 0 && !found.is_null() {
        // SAFETY: on success `pw_name` is a NUL-terminated string inside `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr((*found).pw_name) };
        return Some(name.to_string_lossy().into_owned());
    }
    std::env::var("USER").ok().filter(|u| !u.is_empty())
}

/// When the process started, in seconds since the epoch (Adiak's `launchdate`):
/// the wall clock now, less the CLOCK_MONOTONIC time since the process's start.
fn launch_date(report: &Report) -> Option<u64> {
    let since_start = monotonic_ns().checked_sub(report.clock.process_start_ns?)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(now.as_nanos().checked_sub(u128::from(since_start))? as u64 / 1_000_000_000)
}

/// Writes `profile.cali` of one process's report into `dir`: the tree `tree`,
/// the process's rank on every record, [`report_globals`].
pub fn write_report(dir: &Path, report: &Report, tree: &dyn CallTree) -> Result<(), OutputError> {
    write(
        &dir.join("profile.cali"),
        &|visit| tree.walk_without_samples(&mut |depth, n| visit(depth, n)),
        report.program.rank,
        &report_globals(report),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::call_path::walk_tree;
    use crate::output::report::TreeNode;

    /// The file of `tree` with one global, as text.
    fn cali(tree: &[TreeNode], rank: Option<u64>) -> String {
        let mut out = Vec::new();
        let globals = [("user".to_string(), CaliType::String, "a,b=c\\".to_string())];
        write_to(&mut out, &|v| walk_tree(tree, v), rank, &globals).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_record_per_node_under_its_parents_node() {
        let tree = vec![TreeNode::user_region(
            "main",
            1_500_000_000,
            400,
            1,
            vec![TreeNode::user_region("solve, step=1", 600, 600, 3, vec![])],
        )];
        let text = cali(&tree, Some(3));
        let ctx: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("__rec=ctx"))
            .collect();
        assert_eq!(ctx.len(), 2, "{text}");
        // Inclusive and exclusive seconds, the count, min and max, the rank.
        assert!(
            ctx[0].ends_with(",data=1.500000000=0.000000400=1=1.500000000=1.500000000=3"),
            "{}",
            ctx[0]
        );
        let main = text.lines().find(|l| l.ends_with(",data=main")).unwrap();
        let id = main.split(',').nth(1).unwrap().trim_start_matches("id=");
        let solve = text
            .lines()
            .find(|l| l.contains(r"data=solve\, step\=1,parent="))
            .unwrap();
        assert!(solve.ends_with(&format!(",parent={id}")), "{solve}");
        assert!(text.contains(r"data=a\,b\=c\\"), "{text}");
        assert!(
            text.ends_with("\n")
                && text
                    .lines()
                    .last()
                    .unwrap()
                    .starts_with("__rec=globals,ref=")
        );
    }

    #[test]
    fn a_jobs_ranks_share_their_call_paths_nodes() {
        let rank0 = vec![TreeNode::user_region(
            "main",
            10,
            5,
            1,
            vec![TreeNode::user_region("solve", 5, 5, 1, vec![])],
        )];
        let mut rank1 = rank0.clone();
        rank1[0]
            .children
            .push(TreeNode::user_region("io", 1, 1, 1, vec![]));
        let mut w = Writer::new(Vec::new(), true, true).unwrap();
        w.tree(&|v| walk_tree(&rank1, v), 1).unwrap();
        w.tree(&|v| walk_tree(&rank0, v), 0).unwrap();
        let text = String::from_utf8(w.finish(&[]).unwrap()).unwrap();
        let region_nodes = |name: &str| {
            text.lines()
                .filter(|l| l.contains(&format!(",data={name}")))
                .count()
        };
        // One node per call path, a record per rank that has it.
        assert_eq!(
            [
                region_nodes("main"),
                region_nodes("solve"),
                region_nodes("io")
            ],
            [1, 1, 1],
            "{text}"
        );
        let ranks: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("__rec=ctx"))
            .map(|l| l.rsplit('=').next().unwrap())
            .collect();
        assert_eq!(ranks, ["1", "1", "1", "0", "0"], "{text}");
        assert!(!text.contains("__rec=globals"));
    }

    #[test]
    fn sampled_functions_are_records_under_their_call_path() {
        use crate::output::stack_samples::{FunctionSamples, NodeStackSamples};
        let mut main = TreeNode::user_region(
            "main",
            10,
            5,
            1,
            vec![TreeNode::user_region("solve", 5, 5, 1, vec![])],
        );
        let functions = [("solve", 5), ("kernel, fast", 3)]
            .map(|(name, samples)| FunctionSamples {
                name: name.to_string(),
                samples,
            })
            .to_vec();
        main.stack_samples = Some(Box::new(NodeStackSamples {
            samples: 8,
            functions,
            ..Default::default()
        }));
        let text = cali(&[main], Some(2));
        let id = |line: &str| line.split(',').nth(1).unwrap().to_string();
        let main_id = id(text.lines().find(|l| l.ends_with(",data=main")).unwrap());
        // The region keeps its name; the function of its name takes `[function]`.
        let solve = text
            .lines()
            .find(|l| l.contains(",data=solve,parent="))
            .unwrap();
        let f_solve = text
            .lines()
            .find(|l| l.contains(",data=solve [function],parent="))
            .unwrap();
        assert!(
            solve.ends_with(&format!("parent={}", &main_id[3..])),
            "{text}"
        );
        assert!(
            f_solve.ends_with(&format!("parent={}", &main_id[3..])),
            "{text}"
        );
        assert!(text.contains(r"data=kernel\, fast,parent="), "{text}");
        let ctx: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("__rec=ctx"))
            .collect();
        // main, solve, then main's two functions: samples and the rank.
        assert_eq!(ctx.len(), 4, "{text}");
        assert!(
            ctx[2].starts_with(&format!("__rec=ctx,ref={}=", &id(f_solve)[3..])),
            "{text}"
        );
        assert!(ctx[2].ends_with(",data=5=2"), "{text}");
        assert!(ctx[3].ends_with(",data=3=2"), "{text}");
        for attr in [
            "data=sum#count",
            "data=source.function#cali.sampler.pc",
            "data=samples",
        ] {
            assert!(text.contains(attr), "{attr}: {text}");
        }
        // No samples: none of their attributes.
        let plain = cali(&[TreeNode::user_region("main", 1, 1, 1, vec![])], None);
        assert!(
            !plain.contains("sampler") && !plain.contains("sum#count"),
            "{plain}"
        );
    }

    #[test]
    fn siblings_of_one_name_stay_apart() {
        let mut taken = HashSet::new();
        assert_eq!(unique(&mut taken, "x", "region"), "x");
        assert_eq!(unique(&mut taken, "x", "parallel_for"), "x [parallel_for]");
        assert_eq!(
            unique(&mut taken, "x", "parallel_for"),
            "x [parallel_for] 2"
        );
    }

    #[test]
    fn a_root_name_ending_in_a_space_keeps_it() {
        let text = cali(&[TreeNode::user_region("pad ", 1, 1, 1, vec![])], None);
        assert!(text.contains(",data=pad ,attr="), "{text}");
        assert!(!text.contains("mpi.rank"));
    }
}
