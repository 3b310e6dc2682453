//! Reading kprof's timeline traces back and checking them the way the Perfetto
//! trace processor would import them.
//!
//! - `trace.pftrace` is decoded with Perfetto's OWN schema: the official `.proto`
//!   files shipped in the `perfetto_protos` crate's source (fetched, never built),
//!   compiled once per test process by `protoc` into a descriptor set and used
//!   through `prost-reflect`. `compressed_packets` are inflated (zlib or raw deflate)
//!   and decoded recursively.
//! - `trace.json` is parsed line by line (kprof writes one event per line, whole
//!   rounds at a time; the closing `]` is absent after SIGKILL).
//!
//! Both become the same [`Model`]: tracks, slices with begin/end in ns, names,
//! categories and arguments, instants, counter series and flows. Building the model
//! re-applies the trace processor's rules and fails (with [`Model::errors`] listing
//! every violation) where the processor would skip, misplace or drop data:
//! incremental state and interning per sequence, incremental timestamps, nesting per
//! track, flow endpoints, track descriptors.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value as PValue};
use serde_json::{Map, Value};

/// Which file a model was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `trace.pftrace`.
    Perfetto,
    /// `trace.json`.
    Json,
}

/// What a track is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrackKind {
    /// A process track.
    Process {
        /// Process id.
        pid: i64,
    },
    /// A thread track.
    Thread {
        /// Process id.
        pid: i64,
        /// Thread id.
        tid: i64,
    },
    /// A counter track.
    Counter,
    /// Any other track (async slices, e.g. sections).
    Other,
}

/// A track (Perfetto: a `TrackDescriptor`; JSON: a thread, the process, an async id
/// or a counter name).
#[derive(Debug, Clone)]
pub struct Track {
    /// Perfetto uuid, or a synthetic key for JSON.
    pub uuid: u64,
    /// Parent track uuid, if any.
    pub parent: Option<u64>,
    /// Name (thread, process or counter name; may be empty).
    pub name: String,
    /// What it is.
    pub kind: TrackKind,
}

/// A slice (a begin/end pair, or a JSON `X`, `B`/`E`, `b`/`e`).
#[derive(Debug, Clone)]
pub struct Slice {
    /// Track uuid.
    pub track: u64,
    /// Name.
    pub name: String,
    /// Category (categories joined by `,`).
    pub category: String,
    /// Begin, ns (Perfetto: in the trace clock; JSON: since kprof's start).
    pub begin_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Nesting depth on its track (0: top level).
    pub depth: usize,
    /// Index of the enclosing slice on the same track.
    pub parent: Option<usize>,
    /// Arguments (Perfetto debug annotations, JSON `args`).
    pub args: Map<String, Value>,
}

/// An instant event.
#[derive(Debug, Clone)]
pub struct Instant {
    /// Track uuid.
    pub track: u64,
    /// Name.
    pub name: String,
    /// Category.
    pub category: String,
    /// Timestamp, ns.
    pub ts_ns: u64,
    /// Arguments.
    pub args: Map<String, Value>,
}

/// The content of a trace, after the trace processor's rules.
#[derive(Debug, Clone)]
pub struct Model {
    /// Which file it came from.
    pub format: Format,
    /// Tracks by uuid.
    pub tracks: BTreeMap<u64, Track>,
    /// Every slice, in begin order per track (index = slice id).
    pub slices: Vec<Slice>,
    /// Every instant.
    pub instants: Vec<Instant>,
    /// Counter series by counter track name: (ns, value) in file order.
    pub counters: BTreeMap<String, Vec<(u64, f64)>>,
    /// Flows as (source slice, destination slice) indices into `slices`.
    pub flows: Vec<(usize, usize)>,
    /// Packets (Perfetto, after decompression) or events (JSON).
    pub packets: usize,
    /// JSON: whether the closing `]` was present. Perfetto: always true.
    pub complete: bool,
    /// Slices still open at the end of the file (their `end_ns` is `u64::MAX`):
    /// an error in a complete trace, expected in one cut by SIGKILL.
    pub open_at_end: Vec<usize>,
    /// Every violation of the trace processor's rules found while reading.
    pub errors: Vec<String>,
}

impl Model {
    fn new(format: Format) -> Model {
        Model {
            format,
            tracks: BTreeMap::new(),
            slices: Vec::new(),
            instants: Vec::new(),
            counters: BTreeMap::new(),
            flows: Vec::new(),
            packets: 0,
            complete: true,
            open_at_end: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Panics listing [`Model::errors`] (at most 30) when there are any, or when a
    /// slice is still open at the end of the file.
    pub fn assert_valid(&self) -> &Model {
        self.assert_valid_truncated();
        let open: Vec<String> = self
            .open_at_end
            .iter()
            .map(|&i| format!("{:?} (track {})", self.slices[i].name, self.slices[i].track))
            .collect();
        assert!(
            open.is_empty(),
            "{:?} trace: slices never ended: {open:?}",
            self.format
        );
        self
    }

    /// Like [`Model::assert_valid`], but slices may still be open at the end of the
    /// file (a trace cut by SIGKILL: everything up to the last flush).
    pub fn assert_valid_truncated(&self) -> &Model {
        if !self.errors.is_empty() {
            let shown: Vec<&str> = self.errors.iter().take(30).map(String::as_str).collect();
            panic!(
                "{:?} trace violates {} rule(s) of the trace processor:\n{}",
                self.format,
                self.errors.len(),
                shown.join("\n")
            );
        }
        self
    }

    /// The thread id of track `uuid`, when it is a thread track.
    pub fn tid_of(&self, uuid: u64) -> Option<i64> {
        match self.tracks.get(&uuid)?.kind {
            TrackKind::Thread { tid, .. } => Some(tid),
            _ => None,
        }
    }

    /// Slices on thread tracks, grouped by thread id.
    pub fn slices_by_tid(&self) -> BTreeMap<i64, Vec<&Slice>> {
        let mut out: BTreeMap<i64, Vec<&Slice>> = BTreeMap::new();
        for s in &self.slices {
            if let Some(tid) = self.tid_of(s.track) {
                out.entry(tid).or_default().push(s);
            }
        }
        out
    }

    /// Slices named `name`.
    pub fn named(&self, name: &str) -> Vec<&Slice> {
        self.slices.iter().filter(|s| s.name == name).collect()
    }

    /// The path of names from the track's top-level slice down to slice `i`.
    pub fn path(&self, i: usize) -> Vec<&str> {
        let mut p = vec![self.slices[i].name.as_str()];
        let mut cur = self.slices[i].parent;
        while let Some(j) = cur {
            p.push(self.slices[j].name.as_str());
            cur = self.slices[j].parent;
        }
        p.reverse();
        p
    }

    /// Count of slices by (path joined by " / ", category), over all thread tracks.
    pub fn shape(&self) -> BTreeMap<(String, String), usize> {
        let mut out = BTreeMap::new();
        for (i, s) in self.slices.iter().enumerate() {
            if self.tid_of(s.track).is_none() {
                continue;
            }
            *out.entry((self.path(i).join(" / "), s.category.clone()))
                .or_insert(0) += 1;
        }
        out
    }

    /// The counter series whose track name contains the word `word` (e.g. a memory
    /// space), panicking when there is none or several.
    pub fn counter(&self, word: &str) -> &[(u64, f64)] {
        let found: Vec<(&String, &Vec<(u64, f64)>)> = self
            .counters
            .iter()
            .filter(|(name, _)| name.split_whitespace().any(|w| w == word))
            .collect();
        match found.as_slice() {
            [(_, series)] => series,
            _ => panic!(
                "{:?}: expected one counter track naming {word:?}, found {}; counters: {:?}",
                self.format,
                found.len(),
                self.counters.keys().collect::<Vec<_>>()
            ),
        }
    }

    /// Flows as (source name, destination name) pairs, sorted.
    pub fn flow_names(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .flows
            .iter()
            .map(|&(a, b)| (self.slices[a].name.clone(), self.slices[b].name.clone()))
            .collect();
        v.sort();
        v
    }
}

// ------------------------------------------------------------------ Perfetto

/// Where `perfetto_protos`' official `.proto` files are: the crate's source
/// directory in cargo's registry (fetched with `cargo fetch` if missing).
fn perfetto_protos_dir() -> Result<PathBuf, String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let find = || -> Option<PathBuf> {
        let src = home.join("registry").join("src");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&src)
            .ok()?
            .flatten()
            .flat_map(|reg| {
                std::fs::read_dir(reg.path())
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("perfetto_protos-"))
                    && p.join("protos/perfetto/trace/trace.proto").is_file()
            })
            .collect();
        found.sort();
        found.pop()
    };
    if let Some(p) = find() {
        return Ok(p);
    }
    // Fetch (download only, no build) through a throwaway manifest.
    let dir = crate::target_dir().join("perfetto-protos-fetch");
    std::fs::create_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"perfetto-protos-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n[workspace]\n[dependencies]\nperfetto_protos = \"=0.51.1\"\n",
    )
    .map_err(|e| e.to_string())?;
    std::fs::write(dir.join("src/lib.rs"), "").map_err(|e| e.to_string())?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .arg("fetch")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .output()
        .map_err(|e| format!("cargo fetch: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo fetch of perfetto_protos failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    find().ok_or_else(|| "perfetto_protos fetched but its protos/ are not found".into())
}

/// Perfetto's schema (`perfetto.protos.Trace` and everything it imports), compiled
/// once per process. `None` when `protoc` is not installed (the caller skips);
/// panics on any other failure.
pub fn perfetto_schema() -> Option<&'static DescriptorPool> {
    static POOL: OnceLock<Option<DescriptorPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let protoc_ok = Command::new("protoc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !protoc_ok {
            return None;
        }
        let root = perfetto_protos_dir().unwrap_or_else(|e| panic!("Perfetto's protos: {e}"));
        let out = crate::target_dir().join("perfetto-trace.desc");
        let res = Command::new("protoc")
            .arg("--include_imports")
            .arg(format!("--descriptor_set_out={}", out.display()))
            .arg("-I")
            .arg(&root)
            .arg("protos/perfetto/trace/trace.proto")
            .output()
            .expect("run protoc");
        assert!(
            res.status.success(),
            "protoc failed on {}:\n{}",
            root.display(),
            String::from_utf8_lossy(&res.stderr)
        );
        let bytes = std::fs::read(&out).expect("read the descriptor set");
        Some(DescriptorPool::decode(bytes.as_slice()).expect("decode the descriptor set"))
    })
    .as_ref()
}

fn message(pool: &DescriptorPool, name: &str) -> MessageDescriptor {
    pool.get_message_by_name(name)
        .unwrap_or_else(|| panic!("{name} not in Perfetto's schema"))
}

/// The value of field `name` when it is set.
fn get(m: &DynamicMessage, name: &str) -> Option<PValue> {
    m.has_field_by_name(name)
        .then(|| m.get_field_by_name(name).map(|v| v.into_owned()))
        .flatten()
}

fn get_u64(m: &DynamicMessage, name: &str) -> Option<u64> {
    match get(m, name)? {
        PValue::U64(v) => Some(v),
        PValue::U32(v) => Some(v.into()),
        PValue::I64(v) => Some(v as u64),
        PValue::I32(v) => Some(v as u64),
        PValue::EnumNumber(v) => Some(v as u64),
        PValue::Bool(b) => Some(b.into()),
        _ => None,
    }
}

fn get_i64(m: &DynamicMessage, name: &str) -> Option<i64> {
    match get(m, name)? {
        PValue::I64(v) => Some(v),
        PValue::I32(v) => Some(v.into()),
        PValue::U64(v) => Some(v as i64),
        PValue::U32(v) => Some(v.into()),
        _ => None,
    }
}

fn get_str(m: &DynamicMessage, name: &str) -> Option<String> {
    match get(m, name)? {
        PValue::String(s) => Some(s),
        _ => None,
    }
}

fn get_msg(m: &DynamicMessage, name: &str) -> Option<DynamicMessage> {
    match get(m, name)? {
        PValue::Message(v) => Some(v),
        _ => None,
    }
}

fn get_list(m: &DynamicMessage, name: &str) -> Vec<PValue> {
    match get(m, name) {
        Some(PValue::List(v)) => v,
        _ => Vec::new(),
    }
}

fn get_msgs(m: &DynamicMessage, name: &str) -> Vec<DynamicMessage> {
    get_list(m, name)
        .into_iter()
        .filter_map(|v| match v {
            PValue::Message(m) => Some(m),
            _ => None,
        })
        .collect()
}

fn get_u64s(m: &DynamicMessage, name: &str) -> Vec<u64> {
    get_list(m, name)
        .into_iter()
        .filter_map(|v| match v {
            PValue::U64(x) => Some(x),
            PValue::U32(x) => Some(x.into()),
            _ => None,
        })
        .collect()
}

/// Inflates `bytes`: zlib first, raw deflate otherwise.
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    if flate2::read::ZlibDecoder::new(bytes)
        .read_to_end(&mut out)
        .is_ok()
    {
        return Ok(out);
    }
    out.clear();
    flate2::read::DeflateDecoder::new(bytes)
        .read_to_end(&mut out)
        .map(|_| out)
        .map_err(|e| format!("neither zlib nor raw deflate: {e}"))
}

fn read_varint(b: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Splits a serialized `Trace` into its packets' bytes (field 1, length-delimited),
/// reporting a truncated or foreign field as an error.
fn split_packets<'a>(b: &'a [u8], what: &str, errors: &mut Vec<String>) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let start = pos;
        let Some(tag) = read_varint(b, &mut pos) else {
            errors.push(format!("{what}: truncated tag at byte {start}"));
            break;
        };
        if tag != (1 << 3 | 2) {
            errors.push(format!(
                "{what}: byte {start}: field {} wire type {} is not Trace.packet",
                tag >> 3,
                tag & 7
            ));
            break;
        }
        let Some(len) = read_varint(b, &mut pos) else {
            errors.push(format!("{what}: truncated length at byte {start}"));
            break;
        };
        let end = pos.saturating_add(len as usize);
        if end > b.len() {
            errors.push(format!(
                "{what}: packet at byte {start} claims {len} bytes, only {} left (truncated)",
                b.len() - pos
            ));
            break;
        }
        out.push(&b[pos..end]);
        pos = end;
    }
    out
}

/// Per-sequence incremental state, as the trace processor keeps it.
#[derive(Default)]
struct SeqState {
    /// Seen SEQ_INCREMENTAL_STATE_CLEARED.
    valid: bool,
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    annotation_names: HashMap<u64, String>,
    annotation_strings: HashMap<u64, String>,
    default_clock: Option<u32>,
    default_track: Option<u64>,
    /// Sequence-scoped clocks from the sequence's ClockSnapshot.
    clocks: HashMap<u32, IncClock>,
    /// Last TrackEvent timestamp (monotonic per sequence).
    last_ts: Option<u64>,
}

/// A sequence-scoped clock: its last value, its value and the builtin clock's value
/// at the snapshot, its unit.
#[derive(Clone, Copy)]
struct IncClock {
    last: u64,
    snap_value: u64,
    real_value: u64,
    unit_ns: u64,
    incremental: bool,
}

/// An event with flow ids, for the flow pass (sorted by timestamp, as the trace
/// processor sorts before parsing).
struct FlowEvent {
    ts: u64,
    order: usize,
    slice: usize,
    flow_ids: Vec<u64>,
    terminating: Vec<u64>,
}

struct PerfettoReader<'p> {
    pool: &'p DescriptorPool,
    packet_desc: MessageDescriptor,
    m: Model,
    seqs: HashMap<u64, SeqState>,
    /// Open slice indices per track.
    open: HashMap<u64, Vec<usize>>,
    used_tracks: BTreeMap<u64, &'static str>,
    flow_events: Vec<FlowEvent>,
    real_clocks: BTreeSet<u32>,
    counter_tracks: HashMap<u64, Vec<(u64, f64)>>,
}

const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;

impl<'p> PerfettoReader<'p> {
    fn err(&mut self, e: String) {
        self.m.errors.push(e);
    }

    fn trace_bytes(&mut self, bytes: &[u8], what: &str, depth: usize) {
        let mut errs = Vec::new();
        let packets = split_packets(bytes, what, &mut errs);
        self.m.errors.extend(errs);
        for (i, p) in packets.into_iter().enumerate() {
            let where_ = format!("{what} packet {i}");
            match DynamicMessage::decode(self.packet_desc.clone(), p) {
                Ok(pkt) => self.packet(&pkt, &where_, depth),
                Err(e) => self.err(format!("{where_}: not a TracePacket: {e}")),
            }
        }
    }

    fn packet(&mut self, p: &DynamicMessage, at: &str, depth: usize) {
        if let Some(PValue::Bytes(b)) = get(p, "compressed_packets") {
            if depth > 0 {
                self.err(format!("{at}: nested compressed_packets"));
            }
            match inflate(&b) {
                Ok(raw) => self.trace_bytes(&raw, &format!("{at} (compressed)"), depth + 1),
                Err(e) => self.err(format!("{at}: compressed_packets: {e}")),
            }
            return;
        }
        self.m.packets += 1;
        let seq_id = get_u64(p, "trusted_packet_sequence_id").unwrap_or(0);
        let flags = get_u64(p, "sequence_flags").unwrap_or(0);
        let cleared = flags & SEQ_INCREMENTAL_STATE_CLEARED != 0
            || get(p, "incremental_state_cleared") == Some(PValue::Bool(true));
        if cleared {
            if seq_id == 0 {
                self.err(format!("{at}: incremental state cleared on sequence 0"));
            }
            self.seqs.insert(
                seq_id,
                SeqState {
                    valid: true,
                    ..SeqState::default()
                },
            );
        }
        let needs = flags & SEQ_NEEDS_INCREMENTAL_STATE != 0;
        let valid = self.seqs.get(&seq_id).is_some_and(|s| s.valid);
        if needs && !valid {
            // The trace processor skips the packet.
            self.err(format!(
                "{at}: SEQ_NEEDS_INCREMENTAL_STATE on sequence {seq_id} before \
                 SEQ_INCREMENTAL_STATE_CLEARED (the trace processor skips it)"
            ));
            return;
        }
        // Packets that rely on incremental state must be in a valid sequence and
        // say so.
        let uses_state = |reader: &mut Self, what: &str| {
            if !valid {
                reader.err(format!(
                    "{at}: uses {what} on sequence {seq_id} before SEQ_INCREMENTAL_STATE_CLEARED"
                ));
                false
            } else if !needs && !cleared {
                reader.err(format!(
                    "{at}: uses {what} without SEQ_NEEDS_INCREMENTAL_STATE"
                ));
                true
            } else {
                true
            }
        };

        // Interned data and defaults first: they apply to this packet too.
        if let Some(d) = get_msg(p, "interned_data") {
            if uses_state(self, "interned_data") {
                let st = self.seqs.entry(seq_id).or_default();
                for (field, map, key) in [
                    ("event_names", 0, "name"),
                    ("event_categories", 1, "name"),
                    ("debug_annotation_names", 2, "name"),
                    ("debug_annotation_string_values", 3, "str"),
                ] {
                    for e in get_msgs(&d, field) {
                        let iid = get_u64(&e, "iid").unwrap_or(0);
                        let text = match key {
                            "str" => match get(&e, "str") {
                                Some(PValue::Bytes(b)) => String::from_utf8_lossy(&b).into_owned(),
                                _ => String::new(),
                            },
                            _ => get_str(&e, "name").unwrap_or_default(),
                        };
                        let m = match map {
                            0 => &mut st.names,
                            1 => &mut st.categories,
                            2 => &mut st.annotation_names,
                            _ => &mut st.annotation_strings,
                        };
                        m.insert(iid, text);
                    }
                }
            }
        }
        if let Some(d) = get_msg(p, "trace_packet_defaults") {
            if uses_state(self, "trace_packet_defaults") {
                let st = self.seqs.entry(seq_id).or_default();
                st.default_clock = get_u64(&d, "timestamp_clock_id").map(|v| v as u32);
                st.default_track =
                    get_msg(&d, "track_event_defaults").and_then(|t| get_u64(&t, "track_uuid"));
            }
        }
        if let Some(cs) = get_msg(p, "clock_snapshot") {
            let clocks = get_msgs(&cs, "clocks");
            let real = clocks.iter().find_map(|c| {
                let id = get_u64(c, "clock_id")? as u32;
                (id < 64).then(|| (id, get_u64(c, "timestamp").unwrap_or(0)))
            });
            for c in &clocks {
                let id = get_u64(c, "clock_id").unwrap_or(0) as u32;
                if !(64..128).contains(&id) {
                    continue;
                }
                let Some((real_clock, real_value)) = real else {
                    self.err(format!(
                        "{at}: ClockSnapshot has sequence clock {id} but no builtin clock"
                    ));
                    continue;
                };
                if !valid {
                    self.err(format!(
                        "{at}: sequence-scoped clock {id} defined before \
                         SEQ_INCREMENTAL_STATE_CLEARED"
                    ));
                }
                let v = get_u64(c, "timestamp").unwrap_or(0);
                self.real_clocks.insert(real_clock);
                self.seqs.entry(seq_id).or_default().clocks.insert(
                    id,
                    IncClock {
                        last: v,
                        snap_value: v,
                        real_value,
                        unit_ns: get_u64(c, "unit_multiplier_ns").unwrap_or(1).max(1),
                        incremental: get(c, "is_incremental") == Some(PValue::Bool(true)),
                    },
                );
            }
        }

        if let Some(td) = get_msg(p, "track_descriptor") {
            self.track_descriptor(&td, at);
        }
        if let Some(te) = get_msg(p, "track_event") {
            self.track_event(p, &te, seq_id, at, &uses_state);
        }
    }

    fn track_descriptor(&mut self, td: &DynamicMessage, at: &str) {
        let Some(uuid) = get_u64(td, "uuid") else {
            self.err(format!("{at}: TrackDescriptor without uuid"));
            return;
        };
        let parent = get_u64(td, "parent_uuid");
        let mut name = get_str(td, "name")
            .or_else(|| get_str(td, "static_name"))
            .unwrap_or_default();
        let kind = if let Some(t) = get_msg(td, "thread") {
            let (pid, tid) = (get_i64(&t, "pid"), get_i64(&t, "tid"));
            if pid.is_none() || tid.is_none() {
                self.err(format!(
                    "{at}: ThreadDescriptor of track {uuid} lacks pid or tid"
                ));
            }
            if name.is_empty() {
                name = get_str(&t, "thread_name").unwrap_or_default();
            }
            TrackKind::Thread {
                pid: pid.unwrap_or(0),
                tid: tid.unwrap_or(0),
            }
        } else if let Some(pr) = get_msg(td, "process") {
            if name.is_empty() {
                name = get_str(&pr, "process_name").unwrap_or_default();
            }
            TrackKind::Process {
                pid: get_i64(&pr, "pid").unwrap_or_else(|| {
                    self.m
                        .errors
                        .push(format!("{at}: ProcessDescriptor of track {uuid} lacks pid"));
                    0
                }),
            }
        } else if get(td, "counter").is_some() {
            TrackKind::Counter
        } else {
            TrackKind::Other
        };
        if let Some(old) = self.m.tracks.get(&uuid) {
            if old.kind != kind {
                self.err(format!(
                    "{at}: track {uuid} described again as {kind:?} (was {:?})",
                    old.kind
                ));
            }
        }
        self.m.tracks.insert(
            uuid,
            Track {
                uuid,
                parent,
                name,
                kind,
            },
        );
    }

    /// The packet's timestamp in ns of the real clock, applying defaults and
    /// incremental clocks.
    fn timestamp(
        &mut self,
        p: &DynamicMessage,
        seq_id: u64,
        at: &str,
        uses_state: &dyn Fn(&mut Self, &str) -> bool,
    ) -> Option<u64> {
        let raw = get_u64(p, "timestamp");
        let explicit_clock = get_u64(p, "timestamp_clock_id").map(|v| v as u32);
        let clock = match explicit_clock {
            Some(c) => Some(c),
            None => {
                let d = self.seqs.get(&seq_id).and_then(|s| s.default_clock);
                if d.is_some() && !uses_state(self, "TracePacketDefaults.timestamp_clock_id") {
                    return None;
                }
                d
            }
        };
        let Some(raw) = raw else {
            self.err(format!("{at}: TrackEvent packet without timestamp"));
            return None;
        };
        let ts = match clock {
            None | Some(0..=63) => {
                if let Some(c) = clock {
                    self.real_clocks.insert(c);
                } else {
                    self.real_clocks.insert(6);
                }
                raw
            }
            Some(id) => {
                if (64..128).contains(&id) && !uses_state(self, "a sequence-scoped clock") {
                    return None;
                }
                let Some(c) = self
                    .seqs
                    .get_mut(&seq_id)
                    .and_then(|s| s.clocks.get_mut(&id))
                else {
                    self.err(format!(
                        "{at}: timestamp in clock {id}, which no ClockSnapshot of sequence \
                         {seq_id} defines"
                    ));
                    return None;
                };
                let value = if c.incremental {
                    c.last = c.last.wrapping_add(raw);
                    c.last
                } else {
                    raw
                };
                let delta = value.wrapping_sub(c.snap_value) as i64;
                c.real_value
                    .wrapping_add((delta.wrapping_mul(c.unit_ns as i64)) as u64)
            }
        };
        let st = self.seqs.entry(seq_id).or_default();
        if let Some(last) = st.last_ts {
            if ts < last {
                let msg = format!(
                    "{at}: timestamp {ts} goes back {} ns on sequence {seq_id}",
                    last - ts
                );
                self.err(msg);
            }
        }
        self.seqs.entry(seq_id).or_default().last_ts = Some(ts);
        Some(ts)
    }

    fn interned(
        &mut self,
        seq_id: u64,
        table: usize,
        iid: u64,
        at: &str,
        uses_state: &dyn Fn(&mut Self, &str) -> bool,
    ) -> String {
        let what = [
            "event name",
            "category",
            "debug annotation name",
            "string value",
        ][table];
        if !uses_state(self, what) {
            return String::new();
        }
        let st = self.seqs.get(&seq_id);
        let found = st.and_then(|s| {
            match table {
                0 => &s.names,
                1 => &s.categories,
                2 => &s.annotation_names,
                _ => &s.annotation_strings,
            }
            .get(&iid)
            .cloned()
        });
        found.unwrap_or_else(|| {
            self.err(format!(
                "{at}: interned {what} iid {iid} unknown on sequence {seq_id}"
            ));
            String::new()
        })
    }

    fn annotation(
        &mut self,
        a: &DynamicMessage,
        seq_id: u64,
        at: &str,
        uses_state: &dyn Fn(&mut Self, &str) -> bool,
    ) -> (String, Value) {
        let name = match get_u64(a, "name_iid") {
            Some(iid) => self.interned(seq_id, 2, iid, at, uses_state),
            None => get_str(a, "name").unwrap_or_default(),
        };
        let value = if let Some(PValue::Bool(b)) = get(a, "bool_value") {
            Value::from(b)
        } else if let Some(v) = get_u64(a, "uint_value") {
            Value::from(v)
        } else if let Some(v) = get_i64(a, "int_value") {
            Value::from(v)
        } else if let Some(PValue::F64(v)) = get(a, "double_value") {
            Value::from(v)
        } else if let Some(v) = get_u64(a, "pointer_value") {
            Value::from(format!("{v:#x}"))
        } else if let Some(s) = get_str(a, "string_value") {
            Value::from(s)
        } else if let Some(iid) = get_u64(a, "string_value_iid") {
            Value::from(self.interned(seq_id, 3, iid, at, uses_state))
        } else if let Some(s) = get_str(a, "legacy_json_value") {
            serde_json::from_str(&s).unwrap_or(Value::from(s))
        } else if a.has_field_by_name("dict_entries") {
            let mut m = Map::new();
            for e in get_msgs(a, "dict_entries") {
                let (k, v) = self.annotation(&e, seq_id, at, uses_state);
                m.insert(k, v);
            }
            Value::Object(m)
        } else if a.has_field_by_name("array_values") {
            let v: Vec<Value> = get_msgs(a, "array_values")
                .iter()
                .map(|e| self.annotation(e, seq_id, at, uses_state).1)
                .collect();
            Value::Array(v)
        } else if let Some(n) = get_msg(a, "nested_value") {
            serde_json::to_value(&n).unwrap_or(Value::Null)
        } else {
            Value::Null
        };
        (name, value)
    }

    fn track_event(
        &mut self,
        p: &DynamicMessage,
        te: &DynamicMessage,
        seq_id: u64,
        at: &str,
        uses_state: &dyn Fn(&mut Self, &str) -> bool,
    ) {
        let Some(ts) = self.timestamp(p, seq_id, at, uses_state) else {
            return;
        };
        let track = match get_u64(te, "track_uuid") {
            Some(t) => Some(t),
            None => {
                let d = self.seqs.get(&seq_id).and_then(|s| s.default_track);
                if d.is_some() && !uses_state(self, "TrackEventDefaults.track_uuid") {
                    return;
                }
                d
            }
        };
        let Some(track) = track else {
            self.err(format!(
                "{at}: TrackEvent without track_uuid (no default either)"
            ));
            return;
        };
        let ty = get_u64(te, "type").unwrap_or(0);
        let name = match get_u64(te, "name_iid") {
            Some(iid) => self.interned(seq_id, 0, iid, at, uses_state),
            None => get_str(te, "name").unwrap_or_default(),
        };
        let mut cats: Vec<String> = get_u64s(te, "category_iids")
            .into_iter()
            .map(|iid| self.interned(seq_id, 1, iid, at, uses_state))
            .collect();
        cats.extend(
            get_list(te, "categories")
                .into_iter()
                .filter_map(|v| match v {
                    PValue::String(s) => Some(s),
                    _ => None,
                }),
        );
        let category = cats.join(",");
        let mut args = Map::new();
        for a in get_msgs(te, "debug_annotations") {
            let (k, v) = self.annotation(&a, seq_id, at, uses_state);
            if args.insert(k.clone(), v).is_some() {
                self.err(format!("{at}: debug annotation {k:?} twice"));
            }
        }
        let flow_ids = get_u64s(te, "flow_ids");
        let terminating = get_u64s(te, "terminating_flow_ids");
        for old in ["flow_ids_old", "terminating_flow_ids_old"] {
            if te.has_field_by_name(old) {
                self.err(format!("{at}: deprecated {old}"));
            }
        }
        if te.has_field_by_name("extra_counter_values")
            || te.has_field_by_name("extra_double_counter_values")
        {
            self.err(format!("{at}: extra counter values are not checked here"));
        }
        let order = self.flow_events.len() + self.m.slices.len() + self.m.instants.len();
        match ty {
            // TYPE_SLICE_BEGIN
            1 => {
                self.used_tracks.insert(track, "slice");
                let stack = self.open.entry(track).or_default();
                let parent = stack.last().copied();
                let depth = stack.len();
                let idx = self.m.slices.len();
                stack.push(idx);
                self.m.slices.push(Slice {
                    track,
                    name,
                    category,
                    begin_ns: ts,
                    end_ns: u64::MAX,
                    depth,
                    parent,
                    args,
                });
                if !flow_ids.is_empty() || !terminating.is_empty() {
                    self.flow_events.push(FlowEvent {
                        ts,
                        order,
                        slice: idx,
                        flow_ids,
                        terminating,
                    });
                }
            }
            // TYPE_SLICE_END
            2 => {
                let Some(idx) = self.open.entry(track).or_default().pop() else {
                    self.err(format!(
                        "{at}: SLICE_END on track {track} with nothing open"
                    ));
                    return;
                };
                let s = &mut self.m.slices[idx];
                s.end_ns = ts;
                if ts < s.begin_ns {
                    let msg = format!(
                        "{at}: slice {:?} ends {} ns before it begins",
                        s.name,
                        s.begin_ns - ts
                    );
                    self.err(msg);
                }
                if !name.is_empty() && name != self.m.slices[idx].name {
                    let msg = format!(
                        "{at}: SLICE_END named {name:?} closes {:?}",
                        self.m.slices[idx].name
                    );
                    self.err(msg);
                }
                for (k, v) in args {
                    self.m.slices[idx].args.insert(k, v);
                }
                if !flow_ids.is_empty() || !terminating.is_empty() {
                    self.flow_events.push(FlowEvent {
                        ts,
                        order,
                        slice: idx,
                        flow_ids,
                        terminating,
                    });
                }
            }
            // TYPE_INSTANT
            3 => {
                self.used_tracks.insert(track, "instant");
                if !flow_ids.is_empty() || !terminating.is_empty() {
                    self.err(format!(
                        "{at}: flows on an instant (kprof never writes them)"
                    ));
                }
                self.m.instants.push(Instant {
                    track,
                    name,
                    category,
                    ts_ns: ts,
                    args,
                });
            }
            // TYPE_COUNTER
            4 => {
                self.used_tracks.insert(track, "counter");
                let v = if let Some(v) = get_i64(te, "counter_value") {
                    v as f64
                } else if let Some(PValue::F64(v)) = get(te, "double_counter_value") {
                    v
                } else {
                    self.err(format!("{at}: COUNTER event without a value"));
                    return;
                };
                self.counter_tracks.entry(track).or_default().push((ts, v));
            }
            other => self.err(format!(
                "{at}: TrackEvent type {other} (unspecified/unknown)"
            )),
        }
    }

    /// Parents and depths as the trace processor gives them: it sorts every
    /// event by time before parsing, so a slice written later in the file (a
    /// sequence whose events arrived late, such as device activities and the
    /// launch marks of their flows) still nests in the slice open at its time on
    /// its track. File order matched begins with ends; time order decides nesting
    /// (at equal begins the longer slice, then the earlier in the file, encloses).
    fn nest_by_time(&mut self) {
        let mut per_track: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
        for (i, s) in self.m.slices.iter().enumerate() {
            per_track.entry(s.track).or_default().push(i);
        }
        for (_, mut list) in per_track {
            let slices = &self.m.slices;
            list.sort_by(|&a, &b| {
                let (x, y) = (&slices[a], &slices[b]);
                x.begin_ns
                    .cmp(&y.begin_ns)
                    .then(y.end_ns.cmp(&x.end_ns))
                    .then(a.cmp(&b))
            });
            let mut stack: Vec<usize> = Vec::new();
            for i in list {
                let begin = self.m.slices[i].begin_ns;
                while let Some(&top) = stack.last() {
                    let t = &self.m.slices[top];
                    // A slice of no duration encloses nothing.
                    if begin >= t.end_ns && !(begin == t.begin_ns && t.end_ns > t.begin_ns) {
                        stack.pop();
                    } else {
                        break;
                    }
                }
                let s = &mut self.m.slices[i];
                s.parent = stack.last().copied();
                s.depth = stack.len();
                stack.push(i);
            }
        }
    }

    fn finish(mut self) -> Model {
        // What is left open (see Model::open_at_end).
        for stack in self.open.values() {
            self.m.open_at_end.extend(stack.iter().copied());
        }
        self.nest_by_time();
        self.m.open_at_end.sort_unstable();
        // Every track used is described; thread tracks belong to a described process.
        for (&uuid, &what) in &self.used_tracks {
            match self.m.tracks.get(&uuid) {
                None => self.m.errors.push(format!(
                    "{what} on track {uuid}, which has no TrackDescriptor"
                )),
                Some(t) => {
                    if what == "counter" && t.kind != TrackKind::Counter {
                        self.m
                            .errors
                            .push(format!("counter value on non-counter track {uuid}"));
                    }
                    if what != "counter" && t.kind == TrackKind::Counter {
                        self.m
                            .errors
                            .push(format!("{what} on counter track {uuid}"));
                    }
                }
            }
        }
        let processes: BTreeSet<i64> = self
            .m
            .tracks
            .values()
            .filter_map(|t| match t.kind {
                TrackKind::Process { pid } => Some(pid),
                _ => None,
            })
            .collect();
        for t in self.m.tracks.values() {
            if let TrackKind::Thread { pid, .. } = t.kind {
                if !processes.contains(&pid) {
                    self.m.errors.push(format!(
                        "thread track {} ({:?}) of pid {pid}, which has no process track",
                        t.uuid, t.name
                    ));
                }
            }
            if let Some(p) = t.parent {
                if !self.m.tracks.contains_key(&p) {
                    self.m.errors.push(format!(
                        "track {} ({:?}) has parent {p}, which has no TrackDescriptor",
                        t.uuid, t.name
                    ));
                }
            }
        }
        if self.real_clocks.len() > 1 {
            self.m.errors.push(format!(
                "timestamps in several clock domains {:?} (no conversion between them)",
                self.real_clocks
            ));
        }
        // Counters by track name. Several processes in one trace (ranks merged by
        // `kprof merge`) may each have a counter of the same name (the trace
        // processor keeps them apart under their processes): such a name is
        // qualified by the process, `"threads idle [pid 42]"`.
        let counter_tracks = std::mem::take(&mut self.counter_tracks);
        let named = |uuid: u64| -> (String, Option<i64>) {
            let t = self.m.tracks.get(&uuid);
            let name = t
                .map(|t| t.name.clone())
                .unwrap_or_else(|| format!("track {uuid}"));
            let pid = t
                .and_then(|t| t.parent)
                .and_then(|p| self.m.tracks.get(&p))
                .and_then(|p| match p.kind {
                    TrackKind::Process { pid } => Some(pid),
                    _ => None,
                });
            (name, pid)
        };
        let mut processes: HashMap<String, BTreeSet<Option<i64>>> = HashMap::new();
        for &uuid in counter_tracks.keys() {
            let (name, pid) = named(uuid);
            processes.entry(name).or_default().insert(pid);
        }
        let keys: Vec<(u64, String)> = counter_tracks
            .keys()
            .map(|&uuid| {
                let (name, pid) = named(uuid);
                match pid {
                    Some(pid) if processes[&name].len() > 1 => {
                        (uuid, format!("{name} [pid {pid}]"))
                    }
                    _ => (uuid, name),
                }
            })
            .collect();
        let mut counter_tracks = counter_tracks;
        for (uuid, name) in keys {
            let series = counter_tracks.remove(&uuid).unwrap_or_default();
            if self.m.counters.insert(name.clone(), series).is_some() {
                self.m
                    .errors
                    .push(format!("two counter tracks named {name:?}"));
            }
        }
        // Flows, in timestamp order as the trace processor parses them.
        let mut evs = std::mem::take(&mut self.flow_events);
        evs.sort_by_key(|e| (e.ts, e.order));
        let mut active: HashMap<u64, usize> = HashMap::new();
        let mut connected: BTreeSet<u64> = BTreeSet::new();
        for e in &evs {
            for &id in &e.terminating {
                match active.remove(&id) {
                    Some(src) => {
                        self.m.flows.push((src, e.slice));
                        connected.insert(id);
                    }
                    None => self.m.errors.push(format!(
                        "terminating flow id {id:#x} on {:?} has no source",
                        self.m.slices[e.slice].name
                    )),
                }
            }
            for &id in &e.flow_ids {
                if let Some(src) = active.insert(id, e.slice) {
                    self.m.flows.push((src, e.slice));
                    connected.insert(id);
                }
            }
        }
        for (id, src) in active {
            if !connected.contains(&id) {
                self.m.errors.push(format!(
                    "flow id {id:#x} from {:?} has no destination",
                    self.m.slices[src].name
                ));
            }
        }
        let _ = self.pool;
        self.m
    }
}

/// Reads `trace.pftrace` bytes into a [`Model`] (see the module documentation).
/// `None` when `protoc` is missing (the caller skips with
/// `skip_unless(false, "protoc")`).
pub fn read_perfetto_bytes(bytes: &[u8]) -> Option<Model> {
    let pool = perfetto_schema()?;
    let mut r = PerfettoReader {
        pool,
        packet_desc: message(pool, "perfetto.protos.TracePacket"),
        m: Model::new(Format::Perfetto),
        seqs: HashMap::new(),
        open: HashMap::new(),
        used_tracks: BTreeMap::new(),
        flow_events: Vec::new(),
        real_clocks: BTreeSet::new(),
        counter_tracks: HashMap::new(),
    };
    // The whole file must also decode as a perfetto.protos.Trace.
    if let Err(e) = DynamicMessage::decode(message(pool, "perfetto.protos.Trace"), bytes) {
        r.err(format!("the file is not a perfetto.protos.Trace: {e}"));
    }
    r.trace_bytes(bytes, "trace", 0);
    if r.m.packets == 0 {
        r.err("no packets".into());
    }
    Some(r.finish())
}

/// Reads `<dir>/trace.pftrace` (see [`read_perfetto_bytes`]); panics when the file
/// cannot be read.
pub fn read_perfetto(dir: &Path) -> Option<Model> {
    let path = dir.join("trace.pftrace");
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    read_perfetto_bytes(&bytes)
}

// ---------------------------------------------------------------------- JSON

/// Reads `<dir>/trace.json` into a [`Model`]; panics when the file cannot be read.
pub fn read_json(dir: &Path) -> Model {
    let path = dir.join("trace.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    read_json_text(&text)
}

const PROCESS_KEY: u64 = 1 << 40;
const ASYNC_KEY: u64 = 2 << 40;

/// Parses a Trace Event Format JSON array (possibly without its closing `]`, each
/// event on its own line) into a [`Model`].
pub fn read_json_text(text: &str) -> Model {
    let mut m = Model::new(Format::Json);
    let body = text.trim_end();
    let Some(rest) = body.strip_prefix('[') else {
        m.errors.push("the file does not start with '['".into());
        return m;
    };
    let (rest, complete) = match rest.strip_suffix(']') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    m.complete = complete;
    // The whole file is JSON (with the `]` a reader adds when it is missing).
    let whole = if complete {
        body.to_string()
    } else {
        format!("{body}\n]")
    };
    if let Err(e) = serde_json::from_str::<Value>(&whole) {
        m.errors.push(format!("the file is not a JSON array: {e}"));
    }
    let mut events = Vec::new();
    for (i, line) in rest.lines().enumerate() {
        let l = line.trim();
        let l = l.strip_suffix(',').unwrap_or(l);
        if l.is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(l) {
            Ok(Value::Object(o)) => events.push(o),
            Ok(v) => m.errors.push(format!("line {}: not an object: {v}", i + 2)),
            Err(e) => m.errors.push(format!("line {}: {e}: {l}", i + 2)),
        }
    }
    m.packets = events.len();
    json_model(&mut m, events);
    m
}

/// The key of the JSON thread track of `tid`, created on first sight.
fn thread_track(m: &mut Model, pid: i64, tid: i64) -> u64 {
    let key = tid as u64;
    m.tracks.entry(key).or_insert(Track {
        uuid: key,
        parent: Some(PROCESS_KEY | pid as u64),
        name: String::new(),
        kind: TrackKind::Thread { pid, tid },
    });
    key
}

fn ns(v: &Value) -> Option<u64> {
    let f = v.as_f64()?;
    (f >= 0.0).then(|| (f * 1000.0).round() as u64)
}

struct JsonSlice {
    begin: u64,
    end: u64,
    order: usize,
    name: String,
    cat: String,
    args: Map<String, Value>,
    bind: Option<Bind>,
}

/// A JSON v2 flow binding: (`bind_id`, `flow_in`, `flow_out`).
type Bind = (String, bool, bool);

fn json_model(m: &mut Model, events: Vec<Map<String, Value>>) {
    let mut per_track: BTreeMap<u64, Vec<JsonSlice>> = BTreeMap::new();
    let mut open_be: HashMap<u64, Vec<JsonSlice>> = HashMap::new();
    let mut async_keys: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut counters: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    let pid_of = |e: &Map<String, Value>| e.get("pid").and_then(Value::as_i64);
    for (order, e) in events.into_iter().enumerate() {
        let at = format!("event {order}");
        let ph = e
            .get("ph")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let cat = e
            .get("cat")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let args = e
            .get("args")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let pid = pid_of(&e);
        let tid = e.get("tid").and_then(Value::as_i64);
        let ts = e.get("ts").and_then(ns);
        if ph != "M" && ts.is_none() {
            m.errors
                .push(format!("{at}: {ph} event without a valid ts"));
            continue;
        }
        let ts = ts.unwrap_or(0);
        let Some(pid) = pid else {
            m.errors.push(format!("{at}: event without pid"));
            continue;
        };
        match ph.as_str() {
            "M" => {
                let label = args.get("name").and_then(Value::as_str).unwrap_or("");
                match name.as_str() {
                    "process_name" => {
                        let key = PROCESS_KEY | pid as u64;
                        m.tracks.insert(
                            key,
                            Track {
                                uuid: key,
                                parent: None,
                                name: label.to_string(),
                                kind: TrackKind::Process { pid },
                            },
                        );
                    }
                    "thread_name" => {
                        let Some(tid) = tid else {
                            m.errors.push(format!("{at}: thread_name without tid"));
                            continue;
                        };
                        let k = thread_track(m, pid, tid);
                        if let Some(t) = m.tracks.get_mut(&k) {
                            t.name = label.to_string();
                        }
                    }
                    _ => {}
                }
            }
            "X" | "B" | "E" => {
                let Some(tid) = tid else {
                    m.errors.push(format!("{at}: {ph} without tid"));
                    continue;
                };
                let track = thread_track(m, pid, tid);
                let bind = e.get("bind_id").map(|b| {
                    let id = b.as_str().map_or_else(|| b.to_string(), str::to_string);
                    let t = |k: &str| e.get(k).and_then(Value::as_bool).unwrap_or(false);
                    (id, t("flow_in"), t("flow_out"))
                });
                match ph.as_str() {
                    "X" => {
                        let Some(dur) = e.get("dur").and_then(ns) else {
                            m.errors.push(format!("{at}: X event without a valid dur"));
                            continue;
                        };
                        per_track.entry(track).or_default().push(JsonSlice {
                            begin: ts,
                            end: ts + dur,
                            order,
                            name,
                            cat,
                            args,
                            bind,
                        });
                    }
                    "B" => open_be.entry(track).or_default().push(JsonSlice {
                        begin: ts,
                        end: u64::MAX,
                        order,
                        name,
                        cat,
                        args,
                        bind,
                    }),
                    _ => match open_be.entry(track).or_default().pop() {
                        Some(mut s) => {
                            s.end = ts;
                            per_track.entry(track).or_default().push(s);
                        }
                        None => m.errors.push(format!("{at}: E with nothing open on {tid}")),
                    },
                }
            }
            "i" | "I" => {
                let scope = e.get("s").and_then(Value::as_str).unwrap_or("t");
                let track = match (scope, tid) {
                    ("t", Some(tid)) => thread_track(m, pid, tid),
                    ("t", None) => {
                        m.errors.push(format!("{at}: thread instant without tid"));
                        continue;
                    }
                    _ => PROCESS_KEY | pid as u64,
                };
                m.instants.push(Instant {
                    track,
                    name,
                    category: cat,
                    ts_ns: ts,
                    args,
                });
            }
            "C" => {
                if args.is_empty() {
                    m.errors
                        .push(format!("{at}: counter {name:?} without values"));
                }
                for (k, v) in &args {
                    match v.as_f64() {
                        Some(x) => counters
                            .entry(format!("{name} {k}"))
                            .or_default()
                            .push((ts, x)),
                        None => m
                            .errors
                            .push(format!("{at}: counter {name:?} value {k} is not a number")),
                    }
                }
            }
            "b" | "e" => {
                let id = e
                    .get("id")
                    .or_else(|| e.get("id2"))
                    .map(|v| v.to_string())
                    .unwrap_or_default();
                if id.is_empty() {
                    m.errors.push(format!("{at}: async event without id"));
                    continue;
                }
                let n = async_keys.len() as u64;
                let key = *async_keys
                    .entry((cat.clone(), id.clone()))
                    .or_insert(ASYNC_KEY + n);
                m.tracks.entry(key).or_insert(Track {
                    uuid: key,
                    parent: Some(PROCESS_KEY | pid as u64),
                    name: format!("{cat} {id}"),
                    kind: TrackKind::Other,
                });
                if ph == "b" {
                    open_be.entry(key).or_default().push(JsonSlice {
                        begin: ts,
                        end: u64::MAX,
                        order,
                        name,
                        cat,
                        args,
                        bind: None,
                    });
                } else {
                    match open_be.entry(key).or_default().pop() {
                        Some(mut s) => {
                            if s.name != name {
                                m.errors
                                    .push(format!("{at}: async end {name:?} closes {:?}", s.name));
                            }
                            s.end = ts;
                            per_track.entry(key).or_default().push(s);
                        }
                        None => m
                            .errors
                            .push(format!("{at}: async end {name:?} with nothing open")),
                    }
                }
            }
            other => m.errors.push(format!("{at}: unexpected phase {other:?}")),
        }
    }
    for (track, open) in open_be {
        for s in open {
            m.errors
                .push(format!("{:?} on track {track} never ended", s.name));
        }
    }
    m.counters = counters;

    // Nesting per track: sorted by begin (longer first), each slice inside the
    // innermost enclosing one or after it. ts and dur are rounded separately to ns,
    // so an end may exceed its parent's by 1 ns.
    let mut flow_events: Vec<(u64, usize, usize, Bind)> = Vec::new();
    for (track, mut list) in per_track {
        list.sort_by(|a, b| {
            a.begin
                .cmp(&b.begin)
                .then(b.end.cmp(&a.end))
                .then(a.order.cmp(&b.order))
        });
        let mut stack: Vec<usize> = Vec::new();
        for s in list {
            while let Some(&top) = stack.last() {
                if s.begin >= m.slices[top].end_ns {
                    stack.pop();
                } else {
                    break;
                }
            }
            if let Some(&top) = stack.last() {
                let p = &m.slices[top];
                if s.end > p.end_ns + 1 {
                    m.errors.push(format!(
                        "{:?} [{}, {}] overlaps {:?} [{}, {}] on track {track} without nesting",
                        s.name, s.begin, s.end, p.name, p.begin_ns, p.end_ns
                    ));
                }
            }
            let idx = m.slices.len();
            if let Some(b) = s.bind.clone() {
                flow_events.push((s.begin, s.order, idx, b));
            }
            m.slices.push(Slice {
                track,
                name: s.name,
                category: s.cat,
                begin_ns: s.begin,
                end_ns: s.end,
                depth: stack.len(),
                parent: stack.last().copied(),
                args: s.args,
            });
            stack.push(idx);
        }
    }
    // Flows v2, in timestamp order as the trace processor parses them: flow_out
    // begins (or steps), flow_in ends at the slice without closing the flow.
    flow_events.sort_by_key(|e| (e.0, e.1));
    let mut active: HashMap<String, usize> = HashMap::new();
    let mut connected: BTreeSet<String> = BTreeSet::new();
    for (_, _, idx, (id, flow_in, flow_out)) in flow_events {
        match (flow_in, flow_out) {
            (false, false) => m.errors.push(format!(
                "{:?}: bind_id {id} without flow_in or flow_out",
                m.slices[idx].name
            )),
            (_, true) => {
                if let Some(src) = active.insert(id.clone(), idx) {
                    if flow_in {
                        m.flows.push((src, idx));
                        connected.insert(id);
                    } else {
                        m.errors.push(format!(
                            "bind_id {id}: second flow_out source {:?}",
                            m.slices[idx].name
                        ));
                    }
                }
            }
            (true, false) => match active.get(&id) {
                Some(&src) => {
                    m.flows.push((src, idx));
                    connected.insert(id);
                }
                None => m.errors.push(format!(
                    "bind_id {id}: flow_in on {:?} with no earlier flow_out",
                    m.slices[idx].name
                )),
            },
        }
    }
    for (id, src) in active {
        if !connected.contains(&id) {
            m.errors.push(format!(
                "bind_id {id} from {:?} has no flow_in destination",
                m.slices[src].name
            ));
        }
    }
    // Every thread has a name and its process a process_name.
    for t in m.tracks.values() {
        if let TrackKind::Thread { pid, tid } = t.kind {
            if t.name.is_empty() {
                m.errors
                    .push(format!("thread {tid} has no thread_name metadata"));
            }
            if !m.tracks.contains_key(&(PROCESS_KEY | pid as u64)) {
                m.errors
                    .push(format!("pid {pid} has no process_name metadata"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = r#"[
{"ph":"M","name":"process_name","pid":1,"args":{"name":"p"}},
{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"t"}},"#;

    #[test]
    fn json_nesting_flows_and_truncation() {
        let ok = format!(
            "{HEAD}\n{}\n{}\n{}",
            r#"{"ph":"X","name":"a","cat":"c","ts":1.000,"dur":10.000,"pid":1,"tid":2,"bind_id":"0x1","flow_out":true,"args":{}},"#,
            r#"{"ph":"X","name":"b","cat":"c","ts":2.000,"dur":1.000,"pid":1,"tid":2,"bind_id":"0x1","flow_in":true,"args":{"x":1}},"#,
            r#"{"ph":"C","name":"memory Host","ts":3.5,"pid":1,"args":{"bytes":8}}"#
        );
        let m = read_json_text(&ok);
        m.assert_valid();
        assert!(!m.complete);
        assert_eq!(m.flow_names(), [("a".to_string(), "b".to_string())]);
        assert_eq!(m.slices[1].parent, Some(0));
        assert_eq!(m.counter("Host"), [(3500, 8.0)]);
        assert!(read_json_text(&format!("{ok}\n]\n")).complete);

        let overlap = format!(
            "{HEAD}\n{}\n{}\n]",
            r#"{"ph":"X","name":"a","ts":1,"dur":10,"pid":1,"tid":2},"#,
            r#"{"ph":"X","name":"b","ts":5,"dur":10,"pid":1,"tid":2}"#
        );
        assert!(read_json_text(&overlap)
            .errors
            .iter()
            .any(|e| e.contains("overlaps")));

        let dangling = format!(
            "{HEAD}\n{}\n]",
            r#"{"ph":"X","name":"b","ts":5,"dur":1,"pid":1,"tid":2,"bind_id":"0x9","flow_in":true}"#
        );
        assert!(read_json_text(&dangling)
            .errors
            .iter()
            .any(|e| e.contains("no earlier flow_out")));

        let partial = format!("{HEAD}\n{}", r#"{"ph":"X","name":"b","ts":5,"#);
        assert!(!read_json_text(&partial).errors.is_empty());
    }
}
