//! The profile as written: the `profile.json` schema (`kprof-profile/1`) as types.
//! The summary, `profile.json` and `profile.csv` are all rendered from one [`Report`],
//! so they never disagree.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Schema identifier written in every profile.
pub const SCHEMA: &str = "kprof-profile/1";

/// The whole profile of one process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: String,
    /// Version of kprof that wrote it.
    pub kprof_version: String,
    /// The measured process.
    pub program: Program,
    /// The clock of all times.
    pub clock: ClockInfo,
    /// Plugins attached, in order.
    pub plugins: Vec<String>,
    /// Threads that recorded.
    pub threads: Vec<ThreadInfo>,
    /// Roots of the call-path tree. The runtime writes it last, from its merged
    /// tree, node by node (see `output::calltree`); empty here then.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tree: Vec<TreeNode>,
    /// Sections.
    pub sections: Vec<Section>,
    /// Marker events.
    pub events: Vec<EventCount>,
    /// Memory copies.
    pub deep_copies: Vec<DeepCopy>,
    /// Memory per space.
    pub memory: Vec<MemorySpace>,
    /// Dual-view activity per label.
    pub dual_views: Vec<DualView>,
    /// Metadata (later values of a repeated key win).
    pub metadata: BTreeMap<String, String>,
    /// Anomaly counters by key.
    pub anomalies: BTreeMap<String, u64>,
    /// What the first few anomalies that have more to say were, in words (a
    /// mismatched region end names both regions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomaly_notes: Vec<String>,
    /// Records dropped because the buffers were full.
    pub dropped_records: u64,
    /// Dependence edges between tasks, by task name.
    #[serde(default)]
    pub task_graph: TaskGraph,
    /// User counters (`kprof_counter`).
    #[serde(default)]
    pub counters: Vec<Counter>,
    /// What measuring cost kprof itself.
    #[serde(default)]
    pub kprof: SelfCost,
    /// GPU activity (absent when no device activity was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Gpu>,
    /// Messages this process sent and received, per channel (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<MessageChannel>,
    /// Hardware counters (absent when `KPROF_COUNTERS` was not set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_counters: Option<HardwareCounters>,
    /// Samples of the process and the node (`KPROF_SAMPLE_MS`; absent when off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    /// Call-stack samples (`KPROF_SAMPLE_HZ`; absent when off): how they were
    /// taken, and those taken outside every instance. Each call path's own are
    /// in its node's `stack_samples`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_samples: Option<crate::output::stack_samples::StackSamplesInfo>,
    /// How the threads' time divides into kinds of work, waiting and idle
    /// (absent when no thread opened an instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<Concurrency>,
    /// The run over time in at most 512 buckets of equal width: threads per
    /// kind of work, bytes in use per memory space (absent when neither was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_time: Option<OverTime>,
    /// Blocks plugins computed themselves, by name (the Kokkos tuner's
    /// `tuning`); absent when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, serde_json::Value>,
    /// The summary lines of those blocks, in arrival order (`kprof report`
    /// prints them as the exit summary did).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extension_summaries: Vec<String>,
}

/// The run over time: bucket `i` covers `[clock.start_ns + i * bucket_ns,
/// clock.start_ns + (i + 1) * bucket_ns)`, the last one ending at the run's end.
/// The width doubles (neighbours combined) whenever the run outlasts the
/// buckets, so there are between 256 and 512 of them after the first 0.5 ms.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OverTime {
    /// Width of a bucket, in ns.
    pub bucket_ns: u64,
    /// Buckets (the length of every series).
    pub buckets: u32,
    /// Per category of the concurrency view that had any time: the mean number
    /// of threads in it per bucket (time-weighted).
    #[serde(default)]
    pub threads: Vec<ThreadsOverTime>,
    /// Per memory space: the most bytes in use at once per bucket.
    #[serde(default)]
    pub memory: Vec<MemoryOverTime>,
}

/// Threads in one category over time.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ThreadsOverTime {
    /// Category (`"kernel"`, ..., `"idle"`).
    pub category: String,
    /// Mean threads in it per bucket.
    pub mean: Vec<f64>,
}

/// Bytes in use in one memory space over time.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MemoryOverTime {
    /// Space (`"Host"`, `"Cuda"`).
    pub space: String,
    /// Most bytes in use at once per bucket.
    pub max_bytes: Vec<u64>,
}

/// What the system sampler saw: per metric, its range over the samples.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct System {
    /// Milliseconds between samples (`KPROF_SAMPLE_MS`).
    pub period_ms: u64,
    /// Samples taken (the last one at the end of the run).
    pub samples: u64,
    /// Each metric, in a fixed order (process, then node, then power).
    pub metrics: Vec<SystemMetric>,
    /// CPU time the writer thread spent taking the samples, in ns.
    #[serde(default)]
    pub sampler_cpu_ns: u64,
    /// Figures that could not be read on this node, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unavailable: Vec<String>,
}

/// One sampled metric over the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SystemMetric {
    /// Name (`rss`, `cpu_cores`, `power package-0`, ...).
    pub name: String,
    /// Unit of the values (`bytes`, `cores`, `%`, `/s`, `bytes/s`, `W`, ...).
    pub unit: String,
    /// Samples that had a value.
    pub samples: u64,
    /// Smallest value.
    pub min: f64,
    /// Mean over the samples.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
}

/// The concurrency view: each thread's observed span (first begin to last end)
/// divided by the category of its innermost open instance (exclusive time by
/// kind), the rest idle. Categories: `kernel`, `parallel`, `task`, `wait`,
/// `data`, `region`, `runtime`, `idle` (see `kprof_core::consume::concurrency`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Concurrency {
    /// Threads that opened an instance.
    pub threads: u32,
    /// The run's wall time (`clock.duration_ns`).
    pub wall_ns: u64,
    /// The threads' spans added up: the base of the shares.
    pub thread_ns: u64,
    /// Every category, idle included, over all threads.
    pub categories: Vec<CategoryTime>,
    /// The same per thread.
    pub per_thread: Vec<ThreadConcurrency>,
}

/// Time in one category.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CategoryTime {
    /// Category (`"wait"`).
    pub category: String,
    /// Time, summed over threads.
    pub ns: u64,
    /// Share of the threads' spans (percent).
    pub pct: f64,
}

/// One thread's concurrency view.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ThreadConcurrency {
    /// kprof's thread index (as in `threads`).
    pub index: u32,
    /// OS thread name.
    pub name: String,
    /// From its first begin to its last end.
    pub span_ns: u64,
    /// Every category, idle included; shares of `span_ns`.
    pub categories: Vec<CategoryTime>,
}

/// What the GPUs did: kernels by device time, copies by direction, and per
/// device its busy time and memory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Gpu {
    /// Kernels by name and device, longest total device time first.
    pub kernels: Vec<GpuKernel>,
    /// Copies by device and direction.
    pub copies: Vec<GpuCopy>,
    /// Each device.
    pub devices: Vec<GpuDevice>,
}

/// One kernel (by name) on one device, over all its launches.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GpuKernel {
    /// Demangled name.
    pub name: String,
    /// Device (`"CUDA:0"`).
    pub device: String,
    /// Launches.
    pub count: u64,
    /// Device time.
    pub total_ns: u64,
    /// Mean device time.
    pub mean_ns: f64,
    /// Shortest.
    pub min_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Share of the device's busy time (percent).
    pub busy_pct: f64,
}

/// Copies of one direction on one device.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GpuCopy {
    /// Device (`"CUDA:0"`).
    pub device: String,
    /// `"HtoD"`, `"DtoH"`, `"DtoD"`, `"peer"` or `"other"`.
    pub direction: String,
    /// Copies.
    pub count: u64,
    /// Bytes copied.
    pub bytes: u64,
    /// Device time copying.
    pub total_ns: u64,
    /// Achieved bandwidth: bytes over device time, in GB/s (10^9 bytes).
    pub gb_per_s: f64,
}

/// One device over the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GpuDevice {
    /// Device (`"CUDA:0"`).
    pub device: String,
    /// Activities (kernels, copies, sets, synchronizations).
    pub activities: u64,
    /// Time with at least one activity running.
    pub busy_ns: u64,
    /// Share of the run with none running (percent).
    pub idle_pct: f64,
    /// Highest device memory in use (bytes; from the memory space of the same name).
    pub memory_high_water_bytes: u64,
    /// Device memory never freed: bytes.
    pub leaked_bytes: u64,
    /// Device memory never freed: allocations.
    pub leaked_allocations: u64,
}

/// kprof's own cost in this process: the memory its event buffers took (and the
/// time the kernel took to provide it, which on a virtual machine can exceed the
/// cost of recording), and the CPU time of its writer thread.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SelfCost {
    /// Records processed: events, and the code-slot definitions some begins need.
    pub records: u64,
    /// Bytes of those records (8 to 64 per event).
    #[serde(default)]
    pub record_bytes: u64,
    /// Bytes of event buffers mapped (never more than the budget).
    pub buffer_bytes: u64,
    /// The buffer budget in bytes (`KPROF_BUFFER_MB`).
    pub buffer_budget_bytes: u64,
    /// 2 MiB buffer blocks asked to be backed by a huge page.
    pub huge_page_blocks: u64,
    /// 2 MiB buffer blocks of 4 KiB pages.
    pub small_page_blocks: u64,
    /// Time spent mapping and faulting in buffer memory, in ns (mostly on the
    /// writer thread, ahead of need).
    pub buffer_fault_ns: u64,
    /// CPU time of the writer thread until the report, in ns (faulting buffer
    /// memory, processing records, writing traces, merging the threads' profiles).
    pub writer_cpu_ns: u64,
    /// CPU time of the writer thread while the program ran (before the end), in
    /// ns: with the profile aggregated in place, only stocking buffers for the
    /// few records left (memory, sections).
    #[serde(default)]
    pub writer_run_cpu_ns: u64,
    /// Events the threads aggregated in place (no records: no trace).
    #[serde(default)]
    pub events_in_place: u64,
    /// Call paths over all threads' profiles while the program ran (each thread
    /// keeps its own tree).
    #[serde(default)]
    pub call_paths: u64,
    /// Memory of those per-thread profiles, in bytes: bounded by the call paths,
    /// not by the number of events.
    #[serde(default)]
    pub profile_bytes: u64,
    /// The GPU tool library's own overhead (CUPTI's overhead records), in ns.
    #[serde(default)]
    pub device_tool_ns: u64,
    /// kprof's own work on the program's threads while instances were open
    /// (adding a call path or a name, growing its tables), in ns: taken out of
    /// those instances' times, so no region is charged for it (profile in
    /// place; with records the writer does that work).
    #[serde(default)]
    pub own_ns: u64,
}

impl SelfCost {
    /// Adds another process's cost (merging ranks).
    pub fn add(&mut self, o: &SelfCost) {
        self.records += o.records;
        self.record_bytes += o.record_bytes;
        self.events_in_place += o.events_in_place;
        self.writer_run_cpu_ns += o.writer_run_cpu_ns;
        self.call_paths += o.call_paths;
        self.profile_bytes += o.profile_bytes;
        self.device_tool_ns += o.device_tool_ns;
        self.own_ns += o.own_ns;
        self.buffer_bytes += o.buffer_bytes;
        self.buffer_budget_bytes += o.buffer_budget_bytes;
        self.huge_page_blocks += o.huge_page_blocks;
        self.small_page_blocks += o.small_page_blocks;
        self.buffer_fault_ns += o.buffer_fault_ns;
        self.writer_cpu_ns += o.writer_cpu_ns;
    }
}

/// The values a user counter took.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Counter {
    /// Name.
    pub name: String,
    /// Values recorded.
    pub count: u64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Mean value.
    pub mean: f64,
    /// Last value.
    pub last: f64,
}

/// Dependence edges between explicit tasks, aggregated by task name (creation site).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TaskGraph {
    /// Task instances seen.
    pub tasks: u64,
    /// Edges by (from, to) task names.
    pub edges: Vec<TaskEdge>,
    /// Edges with an end that was never seen as a task.
    pub unresolved_edges: u64,
}

/// One aggregated dependence edge.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskEdge {
    /// The task depended on.
    pub from: String,
    /// The dependent task.
    pub to: String,
    /// Instances of this edge.
    pub count: u64,
}

/// The measured process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Program {
    /// Executable name.
    pub executable: String,
    /// Process id.
    pub pid: u32,
    /// Host name.
    pub host: String,
    /// MPI rank, if launched by MPI.
    pub rank: Option<u64>,
}

/// The clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClockInfo {
    /// `tsc` or `clock_monotonic`.
    pub source: String,
    /// Always `CLOCK_MONOTONIC`: every `*_ns` time point is in this domain.
    pub domain: String,
    /// kprof's start: its first attach (a plugin's init, or the program's first
    /// annotation), the earliest time anything could be recorded.
    pub start_ns: u64,
    /// The end of the run (kprof's shutdown).
    pub end_ns: u64,
    /// `end_ns - start_ns`: the span kprof measured, the base of every share.
    pub duration_ns: u64,
    /// When the process started (its fork), from the kernel's start time of the
    /// process: earlier than the true start by less than one clock tick (10 ms
    /// at 100 ticks per second). Absent where it could not be read, and in
    /// profiles written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_start_ns: Option<u64>,
    /// `end_ns - process_start_ns`: the program's run time, what the summary's
    /// header shows (absent with `process_start_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_run_ns: Option<u64>,
}

impl ClockInfo {
    /// The program's run time: from the process's start when known, else the
    /// span kprof measured.
    pub fn run_ns(&self) -> u64 {
        self.process_run_ns.unwrap_or(self.duration_ns)
    }
}

/// A thread.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadInfo {
    /// Registration order (1-based).
    pub index: u32,
    /// OS thread id.
    pub tid: i32,
    /// OS thread name.
    pub name: String,
    /// Events it recorded: records the writer processed, or events it aggregated
    /// in place.
    pub records: u64,
}

/// A node of the call-path tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TreeNode {
    /// Name (borrowed from the runtime's names where it reads as stored: a
    /// streamed tree makes a node per visit, a million per file).
    pub name: Cow<'static, str>,
    /// Kind (`parallel_for`, `region`, ...).
    #[serde(deserialize_with = "known_kind")]
    pub kind: Cow<'static, str>,
    /// Back end label, `null` for no device.
    pub device: Option<String>,
    /// Device number.
    pub device_index: Option<u32>,
    /// Execution-space instance.
    pub instance: Option<u32>,
    /// Instances.
    pub count: u64,
    /// Inclusive time.
    pub total_ns: u64,
    /// Exclusive time.
    pub self_ns: u64,
    /// Shortest instance.
    pub min_ns: u64,
    /// Longest instance.
    pub max_ns: u64,
    /// Mean instance.
    pub mean_ns: f64,
    /// Standard deviation.
    pub stddev_ns: f64,
    /// How the inclusive time spread over threads (OpenMP kinds only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub threads: Option<Box<ThreadSpread>>,
    /// Ranges of the numeric arguments its instances carried (team sizes, gangs).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub args: BTreeMap<String, ArgRange>,
    /// Hardware and software counters (`KPROF_COUNTERS`) by event name, when its
    /// kind is counted.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub counters: Option<Box<NodeCounters>>,
    /// A uniform sample of its instances as `[start ns since the run began,
    /// duration ns]`, by start (`KPROF_SAMPLES`; only the longest call paths).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub samples: Option<Box<Vec<[u64; 2]>>>,
    /// The call-stack samples taken while this was the thread's innermost
    /// instance (`KPROF_SAMPLE_HZ`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stack_samples: Option<Box<crate::output::stack_samples::NodeStackSamples>>,
    /// Nested nodes.
    pub children: Vec<TreeNode>,
}

/// The messages of one channel (a communicator, a conveyor, a layer of one) one
/// way: this process's row of the channel's matrix.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessageChannel {
    /// The channel's name, as the plugin gave it.
    pub channel: String,
    /// `send` (to each peer) or `receive` (from each peer).
    pub direction: String,
    /// Messages over all peers.
    pub count: u64,
    /// Bytes over all peers.
    pub bytes: u64,
    /// Per peer, by peer number.
    pub peers: Vec<MessagePeer>,
}

/// Messages with one peer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagePeer {
    /// The peer's number (rank, PE).
    pub peer: u32,
    /// Messages.
    pub count: u64,
    /// Bytes.
    pub bytes: u64,
}

/// What a node's counted instances counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeCounters {
    /// Instances whose counters were read at both ends.
    pub instances: u64,
    /// Per event.
    pub events: BTreeMap<String, CounterTotal>,
    /// Instructions per cycle (inclusive), when both `PAPI_TOT_INS` and
    /// `PAPI_TOT_CYC` are counted.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ipc: Option<f64>,
}

/// One event's totals on a node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterTotal {
    /// Counted inside its instances (nested counted instances included).
    pub inclusive: u64,
    /// Counted inside its instances outside the counted instances nested in them
    /// on the same thread.
    pub exclusive: u64,
    /// Inclusive count per second of the node's inclusive time.
    pub per_second: f64,
}

/// The counters of the run (`KPROF_COUNTERS`): what was asked, what is counted,
/// and why the rest is not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareCounters {
    /// Where the values come from (`PAPI 7.0.1`; empty when PAPI could not be used).
    pub source: String,
    /// Events counted, in order.
    pub events: Vec<String>,
    /// Kinds of instances counted (`KPROF_COUNTER_KINDS`).
    pub kinds: String,
    /// The events share counters in turns: values are scaled estimates.
    pub multiplexed: bool,
    /// One line per event not counted, or other problem.
    pub problems: Vec<String>,
}

/// The smallest and largest value an argument took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgRange {
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
}

/// Per-thread totals of a node run by a team of threads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadSpread {
    /// Threads that ran it.
    pub threads: u32,
    /// Smallest per-thread total.
    pub min_ns: u64,
    /// Largest per-thread total.
    pub max_ns: u64,
    /// Mean per-thread total.
    pub mean_ns: f64,
    /// `max_ns / mean_ns`: 1.0 is perfect balance.
    pub imbalance: f64,
}

/// A section's totals.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Section {
    /// Section id.
    pub id: u32,
    /// Name.
    pub name: String,
    /// Start/stop pairs.
    pub count: u64,
    /// Summed time.
    pub total_ns: u64,
    /// Shortest pair.
    pub min_ns: u64,
    /// Longest pair.
    pub max_ns: u64,
}

/// A marker's count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EventCount {
    /// Name.
    pub name: String,
    /// Occurrences.
    pub count: u64,
}

/// Copies between one pair of labelled spaces.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeepCopy {
    /// Destination space.
    pub dst_space: String,
    /// Destination label.
    pub dst_label: String,
    /// Source space.
    pub src_space: String,
    /// Source label.
    pub src_label: String,
    /// Copies.
    pub count: u64,
    /// Bytes copied in all.
    pub bytes: u64,
    /// Time in all.
    pub total_ns: u64,
}

/// Memory use of one space.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemorySpace {
    /// Space name.
    pub space: String,
    /// Allocations.
    pub allocations: u64,
    /// Deallocations.
    pub deallocations: u64,
    /// Bytes in use at the end.
    pub current_bytes: u64,
    /// Most bytes in use at once.
    pub high_water_bytes: u64,
    /// When the high-water mark was reached, ns since start.
    pub high_water_ns: u64,
    /// Largest allocations.
    pub largest: Vec<Allocation>,
    /// Allocations never freed.
    pub leaks: Vec<Allocation>,
}

/// One allocation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Allocation {
    /// Label.
    pub label: String,
    /// Size.
    pub bytes: u64,
    /// Address (leaks only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub address: Option<String>,
}

/// Dual-view activity of one label.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DualView {
    /// Label.
    pub label: String,
    /// Syncs toward the device.
    pub sync_to_device: u64,
    /// Syncs toward the host.
    pub sync_to_host: u64,
    /// Modifications marked on the device.
    pub modify_on_device: u64,
    /// Modifications marked on the host.
    pub modify_on_host: u64,
}

#[cfg(test)]
impl TreeNode {
    /// A user region of `count` equal instances lasting `total_ns` together, for
    /// unit tests.
    pub(crate) fn user_region(
        name: &str,
        total_ns: u64,
        self_ns: u64,
        count: u64,
        children: Vec<TreeNode>,
    ) -> TreeNode {
        TreeNode {
            name: name.to_string().into(),
            kind: "user_region".into(),
            device: None,
            device_index: None,
            instance: None,
            count,
            total_ns,
            self_ns,
            min_ns: total_ns / count,
            max_ns: total_ns / count,
            mean_ns: total_ns as f64 / count as f64,
            stddev_ns: 0.0,
            threads: None,
            args: BTreeMap::new(),
            counters: None,
            samples: None,
            stack_samples: None,
            children,
        }
    }
}

/// Reads a node's kind, as the runtime's own text when it is one of its kinds: a
/// profile of a million nodes read back then holds no copy of those few words.
fn known_kind<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Cow<'static, str>, D::Error> {
    struct KindText;
    impl serde::de::Visitor<'_> for KindText {
        type Value = Cow<'static, str>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a kind")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(
                match kprof_abi::Kind::ALL.iter().find(|k| k.as_str() == v) {
                    Some(k) => Cow::Borrowed(k.as_str()),
                    None => Cow::Owned(v.to_string()),
                },
            )
        }
    }
    d.deserialize_str(KindText)
}
