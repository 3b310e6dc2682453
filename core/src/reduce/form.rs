//! The reducible form of profiles: what is kept of each process so that any number
//! of them fold into one whose size is bounded by the union of their call paths,
//! not by their number. Every field is a sum, a minimum or a maximum (with who
//! holds it), so folding is associative and commutative: ranks may be folded in
//! any order and along any tree, and give the same result.
//!
//! Encoded with protobuf (prost, already the Perfetto writer's): compact
//! (varints), and decoded without trusting the bytes (a malformed form is an
//! error, never a crash).

/// Statistics of one unsigned value over processes: a process that has no value
/// (no such node) counts as 0 when rendered against the number of processes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Stat {
    /// Processes that had the value.
    #[prost(uint64, tag = "1")]
    pub ranks: u64,
    /// Smallest value among them.
    #[prost(uint64, tag = "2")]
    pub min: u64,
    /// Largest value among them.
    #[prost(uint64, tag = "3")]
    pub max: u64,
    /// Their sum (saturating).
    #[prost(uint64, tag = "4")]
    pub sum: u64,
    /// Sum of their squares, low 64 bits (the whole is 128 bits: exact).
    #[prost(uint64, tag = "5")]
    pub sumsq_lo: u64,
    /// Sum of their squares, high 64 bits.
    #[prost(uint64, tag = "6")]
    pub sumsq_hi: u64,
    /// Which process has the minimum (the smallest such on ties).
    #[prost(uint32, tag = "7")]
    pub min_who: u32,
    /// Which process has the maximum (the smallest such on ties).
    #[prost(uint32, tag = "8")]
    pub max_who: u32,
    /// Per process (only when kept by rank): who ...
    #[prost(uint32, repeated, tag = "9")]
    pub by_who: Vec<u32>,
    /// ... and the value.
    #[prost(uint64, repeated, tag = "10")]
    pub by_value: Vec<u64>,
}

impl Stat {
    /// The value `v` of process `who`; kept by process when `by_rank`.
    pub fn one(v: u64, who: u32, by_rank: bool) -> Stat {
        let sq = u128::from(v) * u128::from(v);
        Stat {
            ranks: 1,
            min: v,
            max: v,
            sum: v,
            sumsq_lo: sq as u64,
            sumsq_hi: (sq >> 64) as u64,
            min_who: who,
            max_who: who,
            by_who: if by_rank { vec![who] } else { Vec::new() },
            by_value: if by_rank { vec![v] } else { Vec::new() },
        }
    }

    /// Sum of squares.
    pub fn sumsq(&self) -> u128 {
        (u128::from(self.sumsq_hi) << 64) | u128::from(self.sumsq_lo)
    }

    /// Folds `o` (other processes) into this.
    pub fn fold(&mut self, o: Stat) {
        if o.ranks == 0 {
            return;
        }
        if self.ranks == 0 {
            *self = o;
            return;
        }
        if o.min < self.min || (o.min == self.min && o.min_who < self.min_who) {
            (self.min, self.min_who) = (o.min, o.min_who);
        }
        if o.max > self.max || (o.max == self.max && o.max_who < self.max_who) {
            (self.max, self.max_who) = (o.max, o.max_who);
        }
        self.ranks += o.ranks;
        self.sum = self.sum.saturating_add(o.sum);
        let sq = self.sumsq().saturating_add(o.sumsq());
        (self.sumsq_lo, self.sumsq_hi) = (sq as u64, (sq >> 64) as u64);
        self.by_who.extend(o.by_who);
        self.by_value.extend(o.by_value);
    }
}

/// Statistics of one floating-point value over processes (a mean of samples, a
/// share): range, sum, and per process when kept by rank.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FloatStat {
    /// Processes that had the value.
    #[prost(uint64, tag = "1")]
    pub ranks: u64,
    /// Their sum.
    #[prost(double, tag = "2")]
    pub sum: f64,
    /// Per process (only when kept by rank): who ...
    #[prost(uint32, repeated, tag = "3")]
    pub by_who: Vec<u32>,
    /// ... and the value.
    #[prost(double, repeated, tag = "4")]
    pub by_value: Vec<f64>,
}

impl FloatStat {
    /// The value `v` of process `who`.
    pub fn one(v: f64, who: u32, by_rank: bool) -> FloatStat {
        FloatStat {
            ranks: 1,
            sum: v,
            by_who: if by_rank { vec![who] } else { Vec::new() },
            by_value: if by_rank { vec![v] } else { Vec::new() },
        }
    }

    /// Folds `o` into this.
    pub fn fold(&mut self, o: FloatStat) {
        self.ranks += o.ranks;
        self.sum += o.sum;
        self.by_who.extend(o.by_who);
        self.by_value.extend(o.by_value);
    }
}

/// One process of the job.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RankInfo {
    /// Who it is in the fold (the order `kprof merge` was given, or the rank in
    /// `MPI_COMM_WORLD`).
    #[prost(uint32, tag = "1")]
    pub who: u32,
    /// Its MPI rank, when it had one.
    #[prost(uint64, optional, tag = "2")]
    pub rank: Option<u64>,
    /// Its output directory, when it has one.
    #[prost(string, optional, tag = "3")]
    pub dir: Option<String>,
    /// Executable.
    #[prost(string, tag = "4")]
    pub executable: String,
    /// Process id.
    #[prost(uint32, tag = "5")]
    pub pid: u32,
    /// Host.
    #[prost(string, tag = "6")]
    pub host: String,
    /// Run time (ns).
    #[prost(uint64, tag = "7")]
    pub duration_ns: u64,
    /// Start on its clock (ns).
    #[prost(uint64, tag = "8")]
    pub start_ns: u64,
    /// Threads that recorded.
    #[prost(uint64, tag = "9")]
    pub threads: u64,
    /// Records it dropped.
    #[prost(uint64, tag = "10")]
    pub dropped_records: u64,
    /// Its clock's offset to rank 0's (ns, signed; measured at `MPI_Init`).
    #[prost(int64, optional, tag = "11")]
    pub clock_offset_ns: Option<i64>,
    /// Half the round trip of the measurement that gave the offset: its error bound (ns).
    #[prost(uint64, optional, tag = "12")]
    pub clock_error_ns: Option<u64>,
}

/// A node of the job's call-path tree.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Node {
    /// 0 for a root, else 1 + the index of the parent (which comes earlier).
    #[prost(uint32, tag = "1")]
    pub parent: u32,
    /// Name (index into the strings).
    #[prost(uint32, tag = "2")]
    pub name: u32,
    /// Kind (index into the strings).
    #[prost(uint32, tag = "3")]
    pub kind: u32,
    /// Device label (index into the strings).
    #[prost(uint32, optional, tag = "4")]
    pub device: Option<u32>,
    /// Device index.
    #[prost(uint32, optional, tag = "5")]
    pub device_index: Option<u32>,
    /// Instance.
    #[prost(uint32, optional, tag = "6")]
    pub instance: Option<u32>,
    /// Calls per process.
    #[prost(message, required, tag = "7")]
    pub count: Stat,
    /// Inclusive time per process.
    #[prost(message, required, tag = "8")]
    pub total: Stat,
    /// Exclusive time per process.
    #[prost(message, required, tag = "9")]
    pub self_ns: Stat,
    /// Shortest instance anywhere.
    #[prost(uint64, optional, tag = "10")]
    pub min_ns: Option<u64>,
    /// Longest instance anywhere.
    #[prost(uint64, tag = "11")]
    pub max_ns: u64,
    /// Counter events.
    #[prost(message, repeated, tag = "12")]
    pub counters: Vec<NodeCounter>,
    /// Call-stack samples (`KPROF_SAMPLE_HZ`), where some process had them.
    #[prost(message, optional, tag = "13")]
    pub stack_samples: Option<NodeSamples>,
}

/// The call-stack samples of one node (or of a process outside every node):
/// its self samples in all, by function and by source line, each per process;
/// and the program's call paths below it, unified by their name path and
/// summed (bounded by the union of the processes' paths, as the nodes are).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeSamples {
    /// Samples per process.
    #[prost(message, required, tag = "1")]
    pub samples: Stat,
    /// Self samples by function.
    #[prost(message, repeated, tag = "2")]
    pub functions: Vec<SampledFunction>,
    /// Self samples by source line.
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<SampledLine>,
    /// The program's call paths below the node, parents before children,
    /// each process's from the outermost frame of its `context` down.
    #[prost(message, repeated, tag = "4")]
    pub paths: Vec<SampledPath>,
}

/// One function of the program's call paths below a node: its samples summed
/// over the processes (only sums: a range per rank of every frame of every
/// stack would cost more than the graph it draws).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SampledPath {
    /// 0 for a path's first function, else 1 + the index of its caller (which
    /// comes earlier in the node's list).
    #[prost(uint32, tag = "1")]
    pub parent: u32,
    /// The function (index into the strings).
    #[prost(uint32, tag = "2")]
    pub name: u32,
    /// Samples in it and below it, summed over the processes.
    #[prost(uint64, tag = "3")]
    pub samples: u64,
    /// Samples in it alone, summed over the processes.
    #[prost(uint64, tag = "4")]
    pub self_samples: u64,
}

/// Self samples of one function in a node.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SampledFunction {
    /// The function (index into the strings).
    #[prost(uint32, tag = "1")]
    pub name: u32,
    /// Samples per process.
    #[prost(message, required, tag = "2")]
    pub samples: Stat,
}

/// Self samples of one source line in a node.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SampledLine {
    /// The function the line is in (index into the strings).
    #[prost(uint32, tag = "1")]
    pub function: u32,
    /// Source file (index into the strings).
    #[prost(uint32, tag = "2")]
    pub file: u32,
    /// Line.
    #[prost(uint32, tag = "3")]
    pub line: u32,
    /// Samples per process.
    #[prost(message, required, tag = "4")]
    pub samples: Stat,
}

/// How the processes that sampled their call stacks did it, summed.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sampling {
    /// The sampling rate per process that sampled (its `ranks` are those
    /// processes; a minimum unlike the maximum: they differ).
    #[prost(message, required, tag = "1")]
    pub hz: Stat,
    /// Threads sampled.
    #[prost(uint64, tag = "2")]
    pub threads: u64,
    /// Samples taken.
    #[prost(uint64, tag = "3")]
    pub samples: u64,
    /// Signals handled.
    #[prost(uint64, tag = "4")]
    pub signals: u64,
    /// Samples lost.
    #[prost(uint64, tag = "5")]
    pub lost: u64,
    /// Samples whose unwind stopped early.
    #[prost(uint64, tag = "6")]
    pub truncated: u64,
    /// Samples outside every node.
    #[prost(message, required, tag = "7")]
    pub outside: NodeSamples,
}

/// One counter event of a node.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeCounter {
    /// Event name (index into the strings).
    #[prost(uint32, tag = "1")]
    pub event: u32,
    /// Inclusive counts per process.
    #[prost(message, required, tag = "2")]
    pub inclusive: Stat,
    /// Exclusive counts per process.
    #[prost(message, required, tag = "3")]
    pub exclusive: Stat,
}

/// A name listed in process order (plugins, categories, counter setups): who
/// listed it first, and where in that process's list.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Ordered {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The first process that has it.
    #[prost(uint32, tag = "2")]
    pub who: u32,
    /// Its position in that process's list.
    #[prost(uint32, tag = "3")]
    pub pos: u32,
    /// That process's MPI rank (`u64::MAX`: none): processes are ordered by
    /// rank, then by who.
    #[prost(uint64, tag = "4")]
    pub rank: u64,
}

/// A key and a sum (anomalies, kprof's cost).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    /// Key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Sum over processes.
    #[prost(uint64, tag = "2")]
    pub value: u64,
}

/// Deep copies between two views.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CopyRow {
    /// Destination space, label, source space, label.
    #[prost(string, repeated, tag = "1")]
    pub key: Vec<String>,
    /// Copies.
    #[prost(uint64, tag = "2")]
    pub count: u64,
    /// Bytes.
    #[prost(uint64, tag = "3")]
    pub bytes: u64,
    /// Time per process.
    #[prost(message, required, tag = "4")]
    pub total: Stat,
}

/// Memory of one space.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MemoryRow {
    /// Space.
    #[prost(string, tag = "1")]
    pub space: String,
    /// Allocations.
    #[prost(uint64, tag = "2")]
    pub allocations: u64,
    /// Deallocations.
    #[prost(uint64, tag = "3")]
    pub deallocations: u64,
    /// High-water mark per process.
    #[prost(message, required, tag = "4")]
    pub high_water: Stat,
    /// Allocations never freed.
    #[prost(uint64, tag = "5")]
    pub leaks: u64,
    /// Their bytes.
    #[prost(uint64, tag = "6")]
    pub leaked_bytes: u64,
}

/// A GPU kernel by name and device.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KernelRow {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Device.
    #[prost(string, tag = "2")]
    pub device: String,
    /// Launches.
    #[prost(uint64, tag = "3")]
    pub count: u64,
    /// Device time per process.
    #[prost(message, required, tag = "4")]
    pub total: Stat,
}

/// GPU copies by device and direction.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GpuCopyRow {
    /// Device.
    #[prost(string, tag = "1")]
    pub device: String,
    /// Direction.
    #[prost(string, tag = "2")]
    pub direction: String,
    /// Copies.
    #[prost(uint64, tag = "3")]
    pub count: u64,
    /// Bytes.
    #[prost(uint64, tag = "4")]
    pub bytes: u64,
    /// Time (ns).
    #[prost(uint64, tag = "5")]
    pub total_ns: u64,
}

/// A GPU device.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DeviceRow {
    /// Device.
    #[prost(string, tag = "1")]
    pub device: String,
    /// Activities.
    #[prost(uint64, tag = "2")]
    pub activities: u64,
    /// Busy time per process.
    #[prost(message, required, tag = "3")]
    pub busy: Stat,
}

/// One row of a message matrix: what process `who` sent to or received from `peer`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MessageRow {
    /// Channel.
    #[prost(string, tag = "1")]
    pub channel: String,
    /// Direction.
    #[prost(string, tag = "2")]
    pub direction: String,
    /// The process.
    #[prost(uint32, tag = "3")]
    pub who: u32,
    /// The row's position in that process's rows.
    #[prost(uint32, tag = "4")]
    pub seq: u32,
    /// Peer.
    #[prost(uint32, tag = "5")]
    pub peer: u32,
    /// Messages.
    #[prost(uint64, tag = "6")]
    pub count: u64,
    /// Bytes.
    #[prost(uint64, tag = "7")]
    pub bytes: u64,
}

/// A system metric.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SystemRow {
    /// Name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Unit.
    #[prost(string, tag = "2")]
    pub unit: String,
    /// Smallest sample anywhere.
    #[prost(double, tag = "3")]
    pub min: f64,
    /// Largest sample anywhere.
    #[prost(double, tag = "4")]
    pub max: f64,
    /// Each process's mean.
    #[prost(message, required, tag = "5")]
    pub mean: FloatStat,
}

/// A category of the concurrency view.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CategoryRow {
    /// Category and where it was first listed.
    #[prost(message, required, tag = "1")]
    pub category: Ordered,
    /// Time summed over processes (ns).
    #[prost(uint64, tag = "2")]
    pub ns: u64,
    /// Each process's share (%).
    #[prost(message, required, tag = "3")]
    pub pct: FloatStat,
}

/// Profiles of processes, folded.
#[derive(Clone, PartialEq, prost::Message)]
pub struct JobProfile {
    /// Whether per-process values are kept (`kprof merge --by-rank`).
    #[prost(bool, tag = "1")]
    pub by_rank: bool,
    /// The processes.
    #[prost(message, repeated, tag = "2")]
    pub ranks: Vec<RankInfo>,
    /// Names and kinds of the nodes.
    #[prost(string, repeated, tag = "3")]
    pub strings: Vec<String>,
    /// The call-path tree, parents before children.
    #[prost(message, repeated, tag = "4")]
    pub nodes: Vec<Node>,
    /// Plugins.
    #[prost(message, repeated, tag = "5")]
    pub plugins: Vec<Ordered>,
    /// Run time per process.
    #[prost(message, required, tag = "6")]
    pub duration: Stat,
    /// Deep copies.
    #[prost(message, repeated, tag = "7")]
    pub deep_copies: Vec<CopyRow>,
    /// Memory.
    #[prost(message, repeated, tag = "8")]
    pub memory: Vec<MemoryRow>,
    /// Whether any process had a GPU section.
    #[prost(bool, tag = "9")]
    pub gpu: bool,
    /// GPU kernels.
    #[prost(message, repeated, tag = "10")]
    pub kernels: Vec<KernelRow>,
    /// GPU copies.
    #[prost(message, repeated, tag = "11")]
    pub gpu_copies: Vec<GpuCopyRow>,
    /// GPU devices.
    #[prost(message, repeated, tag = "12")]
    pub devices: Vec<DeviceRow>,
    /// Message matrices' rows.
    #[prost(message, repeated, tag = "13")]
    pub messages: Vec<MessageRow>,
    /// System metrics.
    #[prost(message, repeated, tag = "14")]
    pub system: Vec<SystemRow>,
    /// Whether any process had a concurrency view.
    #[prost(bool, tag = "15")]
    pub concurrency: bool,
    /// Threads' time summed over processes (ns).
    #[prost(uint64, tag = "16")]
    pub thread_ns: u64,
    /// Concurrency categories.
    #[prost(message, repeated, tag = "17")]
    pub categories: Vec<CategoryRow>,
    /// Distinct hardware-counter setups (JSON).
    #[prost(message, repeated, tag = "18")]
    pub counter_setups: Vec<Ordered>,
    /// Anomalies.
    #[prost(message, repeated, tag = "19")]
    pub anomalies: Vec<Sum>,
    /// Records dropped.
    #[prost(uint64, tag = "20")]
    pub dropped_records: u64,
    /// kprof's own cost, by field.
    #[prost(message, repeated, tag = "21")]
    pub cost: Vec<Sum>,
    /// Call-stack sampling, where some process sampled.
    #[prost(message, optional, tag = "22")]
    pub stack_sampling: Option<Sampling>,
}
