//! Perfetto's native protobuf trace (`trace.pftrace`), for ui.perfetto.dev and the
//! trace processor.
//!
//! The file is a serialized `Trace`: a stream of `TracePacket`s. Each writer round
//! (`KPROF_FLUSH_MS`) is encoded, zlib-compressed and appended as ONE packet whose
//! `compressed_packets` field holds the round's packets (as Perfetto's own service
//! does), with one `write` call: a killed process leaves every complete round.
//! Memory is bounded by [`SEGMENT_BYTES`]: a round larger than that is compressed
//! and written in several packets as it fills (each a complete packet, so a killed
//! process still leaves a readable file).
//!
//! Layout, following what the official SDK writes:
//! - one packet sequence (`trusted_packet_sequence_id`) per OS thread, plus one for
//!   the process-level tracks (memory counters and instants, sections);
//! - every sequence starts with `SEQ_INCREMENTAL_STATE_CLEARED`, a `ClockSnapshot`
//!   pairing CLOCK_MONOTONIC with the sequence-scoped incremental clock
//!   [`INCREMENTAL_CLOCK_ID`], and defaults naming that clock and the sequence's
//!   track; later packets carry `SEQ_NEEDS_INCREMENTAL_STATE` and nanosecond deltas.
//!   The first snapshot of the trace declares CLOCK_MONOTONIC the trace's clock, so
//!   times read as CLOCK_MONOTONIC, like `start_ns` in profile.json;
//! - event names, categories, argument names and device names are interned per
//!   sequence (`InternedData`, sent in the packet that first uses them);
//! - track descriptors are written on first use: the process (pid, executable, MPI
//!   rank as a label), each thread (pid, OS tid, name), a bytes counter per memory
//!   space and a track per profile section, all children of the process track;
//! - slices are `TYPE_SLICE_BEGIN`/`END` on the thread tracks (categories by source,
//!   deep copies named `dst <- src`, device and copy details as debug annotations);
//!   markers and dual-view activity are instants on the thread; allocations and
//!   frees are instants on the process track with the space's counter updated.
//!
//! Device activities (GPU kernels, copies) are slices on one track per device
//! stream (`"CUDA:0 stream 7"`; synchronizations on a track of their own),
//! children of the process track. They arrive late and in any order, so each
//! round's are sorted and written with absolute CLOCK_MONOTONIC times on a
//! sequence of their own, names not interned. A flow (id: the GPU API call's GUID
//! with [`DEVICE_FLOW`] set) goes from a `launch` mark at the call's begin, on its
//! thread's track, to the device slice it launched: the mark is written with the
//! activity, since the call's own begin went out before anyone knew whether it
//! would launch anything.
//!
//! Flows are star-shaped: a slice linked to a parent (see [`Slice::flow_parent`])
//! ends the flow whose id is its own GUID (`terminating_flow_ids`), and the parent's
//! `SLICE_BEGIN` starts every such flow (`flow_ids`). Threads' events reach the
//! writer in any order across threads, so the parent's begin may be (a) in this
//! round's buffer: its packet is patched at the round's end; (b) not seen yet: the
//! ids wait for it; (c) written in an earlier round: the ids go on the parent's
//! `SLICE_END` instead, if it is still open.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use flate2::write::ZlibEncoder;
use flate2::Compression;
use kprof_abi::Kind;
use prost::encoding::{decode_varint, encode_key, encode_varint, encoded_len_varint, WireType};
use prost::Message;
use rustc_hash::FxHashMap;

use crate::base::devices::Device;
use crate::base::process::ProcessInfo;
use crate::consume::concurrency::{Category, Point, CATEGORIES};
use crate::consume::profile::memory::Space;
use crate::consume::system::{Metric, Unit};
use crate::consume::trace::perfetto_proto::{
    debug_annotation::Value, trace_packet::Data, Clock, ClockSnapshot, CounterDescriptor,
    DebugAnnotation, InternedBytes, InternedData, InternedString, ProcessDescriptor,
    ThreadDescriptor, TracePacket, TracePacketDefaults, TrackDescriptor, TrackEvent,
    TrackEventDefaults, BUILTIN_CLOCK_MONOTONIC, COMPRESSED_PACKETS_FIELD, FLOW_IDS_FIELD,
    INCREMENTAL_CLOCK_ID, SEQUENCE_FLAGS_FIELD, SEQUENCE_ID_FIELD, SEQ_INCREMENTAL_STATE_CLEARED,
    SEQ_NEEDS_INCREMENTAL_STATE, TERMINATING_FLOW_IDS_FIELD, TIMESTAMP_FIELD, TRACE_PACKET_FIELD,
    TRACK_EVENT_FIELD, TYPE_COUNTER, TYPE_FIELD, TYPE_INSTANT, TYPE_SLICE_BEGIN, TYPE_SLICE_END,
    UNIT_SIZE_BYTES,
};
use crate::consume::trace::writer::{thread_label, TraceWriter};
use crate::hot::counters::{Values, MAX_COUNTERS};
use crate::hot::nesting::{Consumer, DeviceActivity, Event, Global, Slice};
use crate::hot::open::GUID_SEQ_BITS;
use crate::hot::runtime::Runtime;
use crate::output::{create_file, OutputError};

/// Uncompressed bytes after which a round's packets are compressed and written
/// early, so a busy or long round (a large `KPROF_FLUSH_MS`) stays within a few MiB
/// of memory beyond the event buffers.
pub const SEGMENT_BYTES: usize = 4 << 20;
/// zlib level. These packets are so repetitive that every level is far below
/// the size target; 2 takes a quarter of level 6's CPU time for 40% more bytes
/// (1M kernels with random durations: 5.6 vs 3.9 bytes per slice).
const ZLIB_LEVEL: u32 = 2;
/// Flows waiting for a parent's end, per open parent: past this a slice with
/// thousands of children gets no more arrows (they would be unreadable anyway).
const MAX_END_FLOWS: usize = 1 << 16;
/// Flows waiting for parents whose begin has not been seen yet, in all.
const MAX_PENDING_FLOWS: usize = 1 << 20;
/// The process-level sequence.
const PROCESS_SEQ: u32 = 1;
/// The first sequence of device activities (thread sequences count up from 2):
/// each round's activities, sorted, get the next one.
const DEVICE_SEQ: u32 = 0x4000_0000;
/// Device activity sequences before the ids are used again.
const DEVICE_SEQS: u32 = 0x3fff_0000;
/// The sequence of the system metrics' samples (`KPROF_SAMPLE_MS`): their own,
/// so that the process sequence's times (memory events, which a round may bring
/// from before the last sample) never have to go back.
const SYSTEM_SEQ: u32 = 0x7fff_fff0;
/// The sequence of the concurrency counters (after the device sequences): absolute
/// times, so they never clamp against the process sequence's.
const CONCURRENCY_SEQ: u32 = DEVICE_SEQ + DEVICE_SEQS;
/// GPU API calls remembered as sources of flows to device activities: the device
/// reports a launch's work within a few buffers, far fewer launches later.
const MAX_LAUNCHES: usize = 1 << 17;
/// Device activities held for sorting before they are written (within a round).
const MAX_DEVICE_PENDING: usize = 1 << 16;
/// Marks the flow id of a launch -> device activity arrow, apart from the
/// parent -> child flows (whose ids are GUIDs).
const DEVICE_FLOW: u64 = 1 << 63;

/// Where the writer gets times, names, threads and devices: the runtime in
/// production, a table in the unit tests.
pub trait Source: Send {
    /// CLOCK_MONOTONIC nanoseconds of raw time `raw`.
    fn ns(&self, raw: u64) -> u64;
    /// Raw time the run started.
    fn start(&self) -> u64;
    /// Raw time the run ended (now, if it has not).
    fn end(&self) -> u64;
    /// Text of name id `id`.
    fn name(&self, id: u32) -> String;
    /// The device with index `index` (0: none).
    fn device(&self, index: u16) -> Option<Device>;
    /// OS tid and name of the thread with index `index`.
    fn thread(&self, index: u32) -> Option<(i32, String)>;
    /// Name id of profile section `id`.
    fn section(&self, id: u32) -> Option<u32>;
    /// The measured process.
    fn process(&self) -> &ProcessInfo;
    /// Names of the counters read on counted slices (`KPROF_COUNTERS`), in the
    /// order of their values.
    fn counter_names(&self) -> &[String] {
        &[]
    }
}

impl Source for &'static Runtime {
    fn ns(&self, raw: u64) -> u64 {
        self.clock.to_ns(raw)
    }
    fn start(&self) -> u64 {
        self.start_raw
    }
    fn end(&self) -> u64 {
        Runtime::end(self)
    }
    fn name(&self, id: u32) -> String {
        self.names.text(id)
    }
    fn device(&self, index: u16) -> Option<Device> {
        self.devices.get(index)
    }
    fn thread(&self, index: u32) -> Option<(i32, String)> {
        self.threads
            .snapshot()
            .into_iter()
            .find(|s| s.index == index)
            .map(|s| (s.tid, s.name()))
    }
    fn section(&self, id: u32) -> Option<u32> {
        let sections = self.sections.lock().ok()?;
        sections.get((id as usize).checked_sub(1)?).copied()
    }
    fn process(&self) -> &ProcessInfo {
        &self.process
    }
    fn counter_names(&self) -> &[String] {
        self.counters.as_ref().map_or(&[], |c| &c.names)
    }
}

/// An interned event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum NameKey {
    /// A name id of the runtime.
    Id(u32),
    /// A deep copy: destination and source label ids.
    Copy(u32, u32),
    /// A name of the writer's own.
    Static(&'static str),
}

/// Argument (debug annotation) names, interned per sequence by index.
#[derive(Debug, Clone, Copy)]
enum Arg {
    Device,
    DeviceIndex,
    Instance,
    Bytes,
    DstSpace,
    DstLabel,
    SrcSpace,
    SrcLabel,
    Label,
    Space,
    Address,
    Pointer,
    ToDevice,
    OnDevice,
    Direction,
}

/// Texts of [`Arg`], the same keys as the JSON trace's `args`.
const ARG_NAMES: [&str; 15] = [
    "device",
    "device_index",
    "instance",
    "bytes",
    "dst_space",
    "dst_label",
    "src_space",
    "src_label",
    "label",
    "space",
    "address",
    "pointer",
    "to_device",
    "on_device",
    "direction",
];

/// Category slots: [`Kind`] discriminants (1..=10), then the writer's own.
// Category slots: one per kind (by discriminant, 1-based), then the process-level
// categories after the last kind, so new kinds never collide with them.
const CAT_MEMORY: usize = Kind::ALL.len() + 1;
const CAT_SECTION: usize = Kind::ALL.len() + 2;
const CATS: usize = Kind::ALL.len() + 3;

fn category_text(slot: usize) -> &'static str {
    match slot {
        CAT_MEMORY => "kokkos.memory",
        CAT_SECTION => "kokkos.section",
        _ => Kind::from_u8(slot as u8).map_or("kprof", Kind::category),
    }
}

/// One packet sequence: its incremental clock and interning tables.
struct Seq {
    id: u32,
    /// Absolute time of the previous packet (the base of the next delta).
    last: u64,
    names: FxHashMap<NameKey, u64>,
    /// Device index -> iid of its back end's name (an interned string value).
    devices: FxHashMap<u16, u64>,
    cats: [u64; CATS],
    args: [u64; ARG_NAMES.len()],
    /// Encoded begin events (without flows) by name id, kind and device: the
    /// same slice again is a copy of these bytes (iids never change).
    begins: FxHashMap<(u32, u8, u16), Vec<u8>>,
    next_name: u64,
    next_cat: u64,
    next_arg: u64,
    next_string: u64,
}

impl Seq {
    fn new(id: u32, start: u64) -> Seq {
        Seq {
            id,
            last: start,
            names: FxHashMap::default(),
            devices: FxHashMap::default(),
            cats: [0; CATS],
            args: [0; ARG_NAMES.len()],
            begins: FxHashMap::default(),
            next_name: 1,
            next_cat: 1,
            next_arg: 1,
            next_string: 1,
        }
    }

    /// The delta to absolute time `ns`, clamped so the sequence never goes back.
    fn advance(&mut self, ns: u64) -> u64 {
        let ns = ns.max(self.last);
        let delta = ns - self.last;
        self.last = ns;
        delta
    }

    fn name(&mut self, new: &mut InternedData, key: NameKey, text: impl FnOnce() -> String) -> u64 {
        if let Some(&iid) = self.names.get(&key) {
            return iid;
        }
        let iid = self.next_name;
        self.next_name += 1;
        self.names.insert(key, iid);
        new.event_names.push(InternedString {
            iid: Some(iid),
            name: Some(text()),
        });
        iid
    }

    fn cat(&mut self, new: &mut InternedData, slot: usize) -> u64 {
        let slot = slot.min(CATS - 1);
        if self.cats[slot] == 0 {
            self.cats[slot] = self.next_cat;
            self.next_cat += 1;
            new.event_categories.push(InternedString {
                iid: Some(self.cats[slot]),
                name: Some(category_text(slot).to_string()),
            });
        }
        self.cats[slot]
    }

    fn arg(&mut self, new: &mut InternedData, arg: Arg) -> u64 {
        let i = arg as usize;
        if self.args[i] == 0 {
            self.args[i] = self.next_arg;
            self.next_arg += 1;
            new.debug_annotation_names.push(InternedString {
                iid: Some(self.args[i]),
                name: Some(ARG_NAMES[i].to_string()),
            });
        }
        self.args[i]
    }

    fn device(&mut self, new: &mut InternedData, index: u16, backend: &str) -> u64 {
        if let Some(&iid) = self.devices.get(&index) {
            return iid;
        }
        let iid = self.next_string;
        self.next_string += 1;
        self.devices.insert(index, iid);
        new.debug_annotation_string_values.push(InternedBytes {
            iid: Some(iid),
            str: Some(backend.as_bytes().to_vec()),
        });
        iid
    }
}

/// A slice whose begin packet is in the segment being built.
#[derive(Clone, Copy)]
struct BeginAt {
    guid: u64,
    /// Offset of the packet in the segment.
    off: u32,
    /// Length of the packet's fields before its `track_event`.
    head: u32,
}

/// An open slice of a thread.
struct Open {
    guid: u64,
    /// Flows to start at its end (its begin was written in an earlier segment).
    end_flows: Vec<u64>,
}

/// A thread: its sequence and what flows need of it.
struct Thread {
    seq: Seq,
    open: Vec<Open>,
    /// Begins in the current segment, in GUID order.
    begins: Vec<BeginAt>,
    /// GUID of the latest begin seen (a thread's GUIDs grow with its begins).
    last_begun: u64,
    /// Counter readings at the begins of the open counted slices, innermost last.
    counted: Vec<Values>,
}

impl Thread {
    /// Notes slice `guid` as open, its begin packet at `at`.
    fn opened(&mut self, guid: u64, mut at: BeginAt) {
        at.guid = guid;
        if guid > self.last_begun {
            self.last_begun = guid;
            self.begins.push(at);
        }
        self.open.push(Open {
            guid,
            end_flows: Vec::new(),
        });
    }
}

/// Flow ids to add to a begin packet of the current segment.
struct Patch {
    head: u32,
    flows: Vec<u64>,
}

/// A profile section's track.
struct Section {
    uuid: u64,
    open: u32,
}

/// The round's packets and the scratch messages they are built in.
struct Encoder {
    /// Packets of the segment being built, as a serialized `Trace`.
    buf: Vec<u8>,
    /// Compressed segments of this round, as outer packets, written at flush.
    out: Vec<u8>,
    patches: FxHashMap<u32, Patch>,
    /// The event being built (reused: no allocation per event).
    te: TrackEvent,
    /// Interned entries the packet being built introduces.
    new: InternedData,
    /// Bytes of the track event being built on the fast path.
    scratch: Vec<u8>,
    /// A compression failure, reported at the next flush.
    error: Option<std::io::Error>,
}

impl Encoder {
    fn reset_event(&mut self, kind: i32) {
        let te = &mut self.te;
        te.category_iids.clear();
        te.debug_annotations.clear();
        te.r#type = Some(kind);
        te.name_iid = None;
        te.track_uuid = None;
        te.counter_value = None;
        te.double_counter_value = None;
        te.flow_ids.clear();
        te.terminating_flow_ids.clear();
    }

    fn annotate(&mut self, seq: &mut Seq, arg: Arg, value: Value) {
        let iid = seq.arg(&mut self.new, arg);
        self.te.debug_annotations.push(DebugAnnotation {
            name_iid: Some(iid),
            name: None,
            value: Some(value),
        });
    }

    /// Appends the event built in `te` on `seq` at absolute time `ns`, with the
    /// interned entries it introduced. Returns where the packet is.
    fn event(&mut self, seq: &mut Seq, ns: u64) -> BeginAt {
        let interned = if self.new.is_empty() {
            None
        } else {
            Some(std::mem::take(&mut self.new))
        };
        let head = TracePacket {
            timestamp: Some(seq.advance(ns)),
            trusted_packet_sequence_id: Some(seq.id),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            interned_data: interned,
            ..Default::default()
        };
        let at = frame(&mut self.buf, &head, Some(&self.te));
        if let Some(mut i) = head.interned_data {
            // Keep the tables' capacity for the next packet.
            i.clear();
            self.new = i;
        }
        at
    }

    /// Appends a packet without a track event.
    fn packet(&mut self, p: &TracePacket) {
        frame(&mut self.buf, p, None);
    }

    /// Compresses the segment into one `compressed_packets` packet of `out`,
    /// adding the flow ids of `patches` to their begin packets first.
    fn seal(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let patched;
        let data: &[u8] = if self.patches.is_empty() {
            &self.buf
        } else {
            patched = apply_patches(&self.buf, &self.patches);
            &patched
        };
        let mut z = ZlibEncoder::new(
            Vec::with_capacity(data.len() / 4 + 64),
            Compression::new(ZLIB_LEVEL),
        );
        let compressed = z.write_all(data).and_then(|()| z.finish());
        match compressed {
            Ok(c) => {
                let field = encoded_len_varint(u64::from(COMPRESSED_PACKETS_FIELD << 3))
                    + encoded_len_varint(c.len() as u64)
                    + c.len();
                encode_key(TRACE_PACKET_FIELD, WireType::LengthDelimited, &mut self.out);
                encode_varint(field as u64, &mut self.out);
                encode_key(
                    COMPRESSED_PACKETS_FIELD,
                    WireType::LengthDelimited,
                    &mut self.out,
                );
                encode_varint(c.len() as u64, &mut self.out);
                self.out.extend_from_slice(&c);
            }
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
        self.buf.clear();
        self.patches.clear();
    }
}

/// Appends a `TrackEvent.debug_annotations` (field 4) entry `{name: name, uint_value:
/// value}` with the name as a plain string (argument keys are not interned).
fn put_uint_annotation(out: &mut Vec<u8>, name: &str, value: u64) {
    const DEBUG_ANNOTATIONS: u64 = 4;
    const NAME: u64 = 10;
    const UINT_VALUE: u64 = 3;
    let mut ann = Vec::with_capacity(name.len() + 16);
    put_varint(&mut ann, NAME << 3 | 2);
    put_varint(&mut ann, name.len() as u64);
    ann.extend_from_slice(name.as_bytes());
    put_varint(&mut ann, UINT_VALUE << 3);
    put_varint(&mut ann, value);
    put_varint(out, DEBUG_ANNOTATIONS << 3 | 2);
    put_varint(out, ann.len() as u64);
    out.extend_from_slice(&ann);
}

/// Appends `head` (and `te` as its `track_event`, last) as a `Trace.packet` field.
/// The track event goes last so that flow ids can be appended to it later.
fn frame(buf: &mut Vec<u8>, head: &TracePacket, te: Option<&TrackEvent>) -> BeginAt {
    let off = buf.len();
    let head_len = head.encoded_len();
    let te_len = te.map(Message::encoded_len);
    let body = head_len
        + te_len.map_or(0, |l| {
            encoded_len_varint(u64::from(TRACK_EVENT_FIELD << 3)) + encoded_len_varint(l as u64) + l
        });
    encode_key(TRACE_PACKET_FIELD, WireType::LengthDelimited, buf);
    encode_varint(body as u64, buf);
    // Encoding into a Vec cannot run out of space.
    let _ = head.encode(buf);
    if let (Some(te), Some(len)) = (te, te_len) {
        encode_key(TRACK_EVENT_FIELD, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        let _ = te.encode(buf);
    }
    BeginAt {
        guid: 0,
        off: off as u32,
        head: head_len as u32,
    }
}

/// The head of a device activity packet: absolute CLOCK_MONOTONIC time `ns` on
/// sequence `seq`, no incremental state.
fn device_packet(ns: u64, seq: u32) -> TracePacket {
    TracePacket {
        timestamp: Some(ns),
        timestamp_clock_id: Some(BUILTIN_CLOCK_MONOTONIC),
        trusted_packet_sequence_id: Some(seq),
        ..Default::default()
    }
}

/// Appends a track event packet from its encoded bytes `te`: the same fields as
/// [`Encoder::event`] without interned data, with less work per event.
fn raw_event(buf: &mut Vec<u8>, seq: u32, delta: u64, te: &[u8]) -> BeginAt {
    let off = buf.len();
    let head = 1 + encoded_len_varint(delta) + 1 + encoded_len_varint(u64::from(seq)) + 2;
    let body = head + 1 + encoded_len_varint(te.len() as u64) + te.len();
    buf.reserve(body + 8);
    put_varint(buf, u64::from(TRACE_PACKET_FIELD << 3 | 2));
    put_varint(buf, body as u64);
    put_varint(buf, u64::from(TIMESTAMP_FIELD << 3));
    put_varint(buf, delta);
    put_varint(buf, u64::from(SEQUENCE_ID_FIELD << 3));
    put_varint(buf, u64::from(seq));
    put_varint(buf, u64::from(SEQUENCE_FLAGS_FIELD << 3));
    put_varint(buf, u64::from(SEQ_NEEDS_INCREMENTAL_STATE));
    put_varint(buf, u64::from(TRACK_EVENT_FIELD << 3 | 2));
    put_varint(buf, te.len() as u64);
    buf.extend_from_slice(te);
    BeginAt {
        guid: 0,
        off: off as u32,
        head: head as u32,
    }
}

/// Appends `ids` as the repeated fixed64 field `field` (unpacked, as in proto2).
fn put_flows(buf: &mut Vec<u8>, field: u32, ids: &[u64]) {
    for &id in ids {
        put_varint(buf, u64::from(field << 3 | 1));
        buf.extend_from_slice(&id.to_le_bytes());
    }
}

/// Appends `v` as a varint (prost's generic encoder is slower on a Vec).
#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// `buf` with the flow ids of `patches` appended to the track events of the
/// packets they name. A packet that does not parse as expected is copied as is.
fn apply_patches(buf: &[u8], patches: &FxHashMap<u32, Patch>) -> Vec<u8> {
    let extra: usize = patches.values().map(|p| p.flows.len() * 10 + 8).sum();
    let mut out = Vec::with_capacity(buf.len() + extra);
    let mut offs: Vec<u32> = patches.keys().copied().collect();
    offs.sort_unstable();
    let mut pos = 0;
    for off in offs {
        let Some(p) = patches.get(&off) else {
            continue;
        };
        let off = off as usize;
        if off < pos {
            continue;
        }
        if let Some(end) = patch_packet(buf, off, p, &mut out, pos) {
            pos = end;
        }
    }
    out.extend_from_slice(buf.get(pos..).unwrap_or_default());
    out
}

/// Copies `buf[pos..off]` then the packet at `off` with `p`'s flow ids to `out`;
/// returns the end of the packet in `buf`, or None (nothing copied) when the
/// packet is not what the encoder wrote.
fn patch_packet(buf: &[u8], off: usize, p: &Patch, out: &mut Vec<u8>, pos: usize) -> Option<usize> {
    let mut cur = buf.get(off + 1..)?;
    let body_len = usize::try_from(decode_varint(&mut cur).ok()?).ok()?;
    let body_start = off + 1 + encoded_len_varint(body_len as u64);
    let body_end = body_start.checked_add(body_len)?;
    let head_end = body_start + p.head as usize;
    let mut cur = buf.get(head_end + 1..body_end)?;
    let te_len = usize::try_from(decode_varint(&mut cur).ok()?).ok()?;
    let te_start = head_end + 1 + encoded_len_varint(te_len as u64);
    let packet_key = (TRACE_PACKET_FIELD << 3 | 2) as u8;
    let event_key = (TRACK_EVENT_FIELD << 3 | 2) as u8;
    if te_start + te_len != body_end
        || buf.get(off) != Some(&packet_key)
        || buf.get(head_end) != Some(&event_key)
    {
        return None;
    }
    let key_len = encoded_len_varint(u64::from(FLOW_IDS_FIELD << 3));
    let new_te = te_len + p.flows.len() * (key_len + 8);
    let new_body = p.head as usize
        + encoded_len_varint(u64::from(TRACK_EVENT_FIELD << 3))
        + encoded_len_varint(new_te as u64)
        + new_te;
    out.extend_from_slice(buf.get(pos..off)?);
    encode_key(TRACE_PACKET_FIELD, WireType::LengthDelimited, out);
    encode_varint(new_body as u64, out);
    out.extend_from_slice(buf.get(body_start..head_end)?);
    encode_key(TRACK_EVENT_FIELD, WireType::LengthDelimited, out);
    encode_varint(new_te as u64, out);
    out.extend_from_slice(buf.get(te_start..body_end)?);
    put_flows(out, FLOW_IDS_FIELD, &p.flows);
    Some(body_end)
}

/// A 64-bit mix (splitmix64's finaliser), for track uuids unique across processes.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Track kinds, mixed into uuids.
const TRACK_PROCESS: u64 = 0;
const TRACK_THREAD: u64 = 1;
const TRACK_COUNTER: u64 = 2;
const TRACK_SECTION: u64 = 3;
const TRACK_USER_COUNTER: u64 = 4;
const TRACK_DEVICE: u64 = 5;
const TRACK_SYSTEM: u64 = 6;
const TRACK_HW_COUNTER: u64 = 7;
const TRACK_CONCURRENCY: u64 = 8;

/// The Perfetto trace writer.
pub struct PerfettoWriter<S: Source = &'static Runtime> {
    src: S,
    path: PathBuf,
    file: File,
    pid: i32,
    /// Mixed into every track uuid (from the pid).
    salt: u64,
    enc: Encoder,
    process: Seq,
    threads: FxHashMap<u32, Thread>,
    /// Flows whose parent's begin has not been seen: parent GUID -> child GUIDs.
    pending: FxHashMap<u64, Vec<u64>>,
    pending_len: usize,
    devices: FxHashMap<u16, Device>,
    /// Memory in use and counter track per space name id.
    spaces: FxHashMap<u32, (Space, u64)>,
    /// User counter name id -> its counter track.
    counters: FxHashMap<u32, u64>,
    /// (thread, counter index) -> its counter track (`KPROF_COUNTERS`).
    counter_tracks: FxHashMap<(u32, u8), u64>,
    sections: FxHashMap<u32, Section>,
    /// GPU API calls by GUID -> (thread track, begin ns), for the flows to the
    /// device work they launched; the oldest are forgotten past [`MAX_LAUNCHES`].
    launches: FxHashMap<u64, (u64, u64)>,
    launch_order: std::collections::VecDeque<u64>,
    /// Device activities taken since they were last written.
    device_pending: Vec<DeviceActivity>,
    /// Device activity sequences used (each round's has its own).
    device_rounds: u32,
    /// (device (stream) index, whether synchronizations) -> its track.
    device_tracks: FxHashMap<(u16, bool), u64>,
    /// [`SEGMENT_BYTES`] (smaller in tests).
    segment_bytes: usize,
    /// The system metrics' sequence (from the first sample) and counter tracks.
    system: Option<Seq>,
    system_tracks: Vec<u64>,
    /// Per category: its counter track (0: not written yet) and last value.
    concurrency: [(u64, u32); CATEGORIES],
}

impl PerfettoWriter<&'static Runtime> {
    /// Creates `path` for the runtime's events.
    pub fn create(
        path: &Path,
        rt: &'static Runtime,
    ) -> Result<PerfettoWriter<&'static Runtime>, OutputError> {
        PerfettoWriter::with_source(path, rt)
    }
}

impl<S: Source> PerfettoWriter<S> {
    /// Creates `path` for the events of `src`; the process track and the clock
    /// are written at the first flush.
    pub fn with_source(path: &Path, src: S) -> Result<PerfettoWriter<S>, OutputError> {
        let file = create_file(path)?
            .into_inner()
            .map_err(|e| OutputError::File {
                path: path.display().to_string(),
                source: e.into_error(),
            })?;
        let p = src.process();
        let pid = p.pid as i32;
        let salt = mix(u64::from(p.pid) ^ 0x6b70_726f_6600_0000);
        let start = src.ns(src.start());
        let mut w = PerfettoWriter {
            path: path.to_path_buf(),
            file,
            pid,
            salt,
            enc: Encoder {
                buf: Vec::with_capacity(1 << 16),
                out: Vec::new(),
                patches: FxHashMap::default(),
                te: TrackEvent::default(),
                new: InternedData::default(),
                scratch: Vec::with_capacity(256),
                error: None,
            },
            process: Seq::new(PROCESS_SEQ, start),
            threads: FxHashMap::default(),
            pending: FxHashMap::default(),
            pending_len: 0,
            devices: FxHashMap::default(),
            spaces: FxHashMap::default(),
            counters: FxHashMap::default(),
            counter_tracks: FxHashMap::default(),
            sections: FxHashMap::default(),
            launches: FxHashMap::default(),
            launch_order: std::collections::VecDeque::new(),
            device_pending: Vec::new(),
            device_rounds: 0,
            device_tracks: FxHashMap::default(),
            segment_bytes: SEGMENT_BYTES,
            system: None,
            system_tracks: Vec::new(),
            concurrency: [(0, 0); CATEGORIES],
            src,
        };
        let uuid = w.uuid(TRACK_PROCESS, 0);
        // First packet of the trace: it also makes CLOCK_MONOTONIC the trace clock.
        w.enc.packet(&start_packet(PROCESS_SEQ, start, uuid, true));
        let p = w.src.process();
        let desc = TrackDescriptor {
            uuid: Some(uuid),
            process: Some(ProcessDescriptor {
                pid: Some(pid),
                process_name: Some(p.executable.clone()),
                process_labels: p.rank.map(|r| format!("rank {r}")).into_iter().collect(),
            }),
            ..Default::default()
        };
        w.enc.packet(&descriptor_packet(PROCESS_SEQ, desc));
        Ok(w)
    }

    fn uuid(&self, kind: u64, id: u64) -> u64 {
        mix(self.salt ^ mix((kind << 56) ^ id)).max(1)
    }

    /// Starts the sequence of thread `index` (at `ns`) and writes its track, on
    /// first sight.
    fn ensure_thread(&mut self, index: u32, ns: u64) {
        if self.threads.contains_key(&index) {
            return;
        }
        let uuid = self.uuid(TRACK_THREAD, u64::from(index));
        let id = index.wrapping_add(PROCESS_SEQ + 1).max(PROCESS_SEQ + 1);
        let (tid, name) = self
            .src
            .thread(index)
            .unwrap_or_else(|| (index as i32, String::new()));
        let name = thread_label(&name, index);
        self.enc.packet(&start_packet(id, ns, uuid, false));
        let desc = TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(self.uuid(TRACK_PROCESS, 0)),
            thread: Some(ThreadDescriptor {
                pid: Some(self.pid),
                tid: Some(tid),
                thread_name: Some(name),
            }),
            ..Default::default()
        };
        self.enc.packet(&descriptor_packet(id, desc));
        self.threads.insert(
            index,
            Thread {
                seq: Seq::new(id, ns),
                open: Vec::new(),
                begins: Vec::new(),
                last_begun: 0,
                counted: Vec::new(),
            },
        );
    }

    fn device(&mut self, index: u16) -> Option<Device> {
        if index == 0 {
            return None;
        }
        if let Some(d) = self.devices.get(&index) {
            return Some(d.clone());
        }
        // A device index, once given, never changes: cache it.
        let d = self.src.device(index)?;
        self.devices.insert(index, d.clone());
        Some(d)
    }

    /// Makes `child` the end of a flow from `parent`; false when the parent's side
    /// can no longer be written (the child then names no flow).
    fn link(&mut self, parent: u64, child: u64) -> bool {
        let index = (parent >> GUID_SEQ_BITS) as u32;
        if let Some(t) = self.threads.get_mut(&index) {
            if parent <= t.last_begun {
                if let Ok(i) = t.begins.binary_search_by_key(&parent, |b| b.guid) {
                    let b = t.begins[i];
                    let patch = self.enc.patches.entry(b.off).or_insert_with(|| Patch {
                        head: b.head,
                        flows: Vec::new(),
                    });
                    patch.flows.push(child);
                    return true;
                }
                if let Some(o) = t.open.iter_mut().rev().find(|o| o.guid == parent) {
                    if o.end_flows.len() < MAX_END_FLOWS {
                        o.end_flows.push(child);
                        return true;
                    }
                }
                // Began and ended in an earlier round: nothing left to attach to.
                return false;
            }
        }
        if self.pending_len >= MAX_PENDING_FLOWS {
            return false;
        }
        self.pending.entry(parent).or_default().push(child);
        self.pending_len += 1;
        true
    }

    fn begin(&mut self, s: &Slice) {
        let ns = self.src.ns(s.begin);
        self.ensure_thread(s.thread, ns);
        // The flow from the parent ends here; its id is this slice's GUID.
        let terminating = s
            .flow_parent()
            .filter(|&p| self.link(p, s.guid))
            .map(|_| s.guid);
        let flows = if self.pending.is_empty() {
            Vec::new()
        } else {
            self.pending.remove(&s.guid).unwrap_or_default()
        };
        self.pending_len = self.pending_len.saturating_sub(flows.len());
        if s.kind == Kind::GpuApi {
            // Where the arrow to the device work this call launches (if any)
            // will start.
            self.remember_launch(s.guid, s.thread, ns);
        }
        // Fast path: a slice like one written before on this thread (same name,
        // kind and device, not a copy) reuses that event's bytes.
        let key = (s.name, s.kind as u8, s.dev);
        if s.copy.is_none() && s.transfer.is_none() {
            let Some(t) = self.threads.get_mut(&s.thread) else {
                return;
            };
            if let Some(te) = t.seq.begins.get(&key) {
                let enc = &mut self.enc;
                enc.scratch.clear();
                enc.scratch.extend_from_slice(te);
                put_flows(&mut enc.scratch, FLOW_IDS_FIELD, &flows);
                put_flows(
                    &mut enc.scratch,
                    TERMINATING_FLOW_IDS_FIELD,
                    terminating.as_slice(),
                );
                let delta = t.seq.advance(ns);
                let at = raw_event(&mut enc.buf, t.seq.id, delta, &enc.scratch);
                t.opened(s.guid, at);
                self.begin_counters(s, ns);
                return;
            }
        }
        let device = self.device(s.dev);
        let src = &self.src;
        let Some(t) = self.threads.get_mut(&s.thread) else {
            return;
        };
        let (enc, seq) = (&mut self.enc, &mut t.seq);
        enc.reset_event(TYPE_SLICE_BEGIN);
        let name_key = match s.copy {
            Some(c) => NameKey::Copy(s.name, c.src_label),
            None => NameKey::Id(s.name),
        };
        let name = seq.name(&mut enc.new, name_key, || match s.copy {
            Some(c) => format!("{} <- {}", src.name(s.name), src.name(c.src_label)),
            None => src.name(s.name),
        });
        enc.te.name_iid = Some(name);
        let cat = seq.cat(&mut enc.new, s.kind as usize);
        enc.te.category_iids.push(cat);
        if let Some(d) = device {
            let backend = seq.device(&mut enc.new, s.dev, &d.backend);
            enc.annotate(seq, Arg::Device, Value::StringValueIid(backend));
            enc.annotate(seq, Arg::DeviceIndex, Value::UintValue(u64::from(d.index)));
            enc.annotate(seq, Arg::Instance, Value::UintValue(u64::from(d.instance)));
        }
        if let Some(tr) = s.transfer {
            enc.annotate(seq, Arg::Bytes, Value::UintValue(tr.bytes));
            let direction = ["alloc", "to_device", "from_device", "delete"]
                .get(tr.direction as usize)
                .copied()
                .unwrap_or("other");
            enc.annotate(seq, Arg::Direction, Value::StringValue(direction.into()));
        }
        if let Some(c) = s.copy {
            enc.annotate(seq, Arg::Bytes, Value::UintValue(c.bytes));
            for (arg, id) in [
                (Arg::DstSpace, c.dst_space),
                (Arg::DstLabel, s.name),
                (Arg::SrcSpace, c.src_space),
                (Arg::SrcLabel, c.src_label),
            ] {
                enc.annotate(seq, arg, Value::StringValue(src.name(id)));
            }
        } else if s.transfer.is_none() {
            // Everything but the flows is the same for the next such slice.
            seq.begins.insert(key, enc.te.encode_to_vec());
        }
        enc.te.terminating_flow_ids.extend(terminating);
        enc.te.flow_ids.extend_from_slice(&flows);
        let at = enc.event(seq, ns);
        t.opened(s.guid, at);
        self.begin_counters(s, ns);
    }

    /// A counted slice began: the thread's counter tracks take the readings.
    fn begin_counters(&mut self, s: &Slice, ns: u64) {
        let Some(v) = s.counters else { return };
        if let Some(t) = self.threads.get_mut(&s.thread) {
            t.counted.push(v);
        }
        self.counter_values(s.thread, ns, &v);
    }

    /// The thread's counter readings `values` at `ns`, on a counter track per
    /// event under the thread's track.
    fn counter_values(&mut self, thread: u32, ns: u64, values: &Values) {
        let n = self.src.counter_names().len().min(MAX_COUNTERS);
        for (k, &value) in values.iter().enumerate().take(n) {
            let key = (thread, k as u8);
            let track = match self.counter_tracks.get(&key) {
                Some(&t) => t,
                None => {
                    let uuid = self.uuid(TRACK_HW_COUNTER, u64::from(thread) << 8 | k as u64);
                    let desc = TrackDescriptor {
                        uuid: Some(uuid),
                        parent_uuid: Some(self.uuid(TRACK_THREAD, u64::from(thread))),
                        // Named per thread too: one track per (event, thread).
                        name: Some(format!(
                            "{} [{}]",
                            self.src.counter_names()[k],
                            self.src.thread(thread).map_or_else(
                                || format!("thread {thread}"),
                                |(_, name)| thread_label(&name, thread)
                            )
                        )),
                        counter: Some(CounterDescriptor {
                            unit: None,
                            unit_name: None,
                        }),
                        ..Default::default()
                    };
                    self.enc.packet(&descriptor_packet(PROCESS_SEQ, desc));
                    self.counter_tracks.insert(key, uuid);
                    uuid
                }
            };
            let Some(t) = self.threads.get_mut(&thread) else {
                return;
            };
            let (enc, seq) = (&mut self.enc, &mut t.seq);
            enc.reset_event(TYPE_COUNTER);
            enc.te.track_uuid = Some(track);
            enc.te.counter_value = Some(i64::try_from(value).unwrap_or(i64::MAX));
            enc.event(seq, ns);
        }
    }

    fn end(&mut self, s: &Slice, end: u64) {
        let ns = self.src.ns(end);
        self.ensure_thread(s.thread, ns);
        let Some(t) = self.threads.get_mut(&s.thread) else {
            return;
        };
        // Ends nest: the slice is the innermost open one.
        let open = match t.open.last() {
            Some(o) if o.guid == s.guid => t.open.pop(),
            _ => t
                .open
                .iter()
                .rposition(|o| o.guid == s.guid)
                .map(|i| t.open.remove(i)),
        };
        let enc = &mut self.enc;
        enc.scratch.clear();
        // `type: TYPE_SLICE_END`; name and category are the begin's.
        put_varint(&mut enc.scratch, u64::from(TYPE_FIELD << 3));
        put_varint(&mut enc.scratch, TYPE_SLICE_END as u64);
        if let Some(o) = open {
            put_flows(&mut enc.scratch, FLOW_IDS_FIELD, &o.end_flows);
        }
        // Arguments attached while the slice was open: debug annotations of the
        // end event, which the trace processor merges into the slice's arguments.
        for &(key, value) in s.args() {
            put_uint_annotation(&mut enc.scratch, &self.src.name(key), value);
        }
        if s.end_lost {
            // Drawn up to where recording resumed: the real end is unknown.
            put_uint_annotation(&mut enc.scratch, "end_lost", 1);
        }
        // What a counted slice counted, as its arguments; the counter tracks
        // take the reading at its end.
        let begun = if s.counters.is_some() {
            t.counted.pop()
        } else {
            None
        };
        let names = self.src.counter_names();
        let at_end = s.counted().zip(begun).map(|(counted, begun)| {
            let mut end = [0; MAX_COUNTERS];
            for (k, name) in names.iter().enumerate().take(MAX_COUNTERS) {
                put_uint_annotation(&mut enc.scratch, name, counted[k]);
                end[k] = begun[k].saturating_add(counted[k]);
            }
            end
        });
        let delta = t.seq.advance(ns);
        raw_event(&mut enc.buf, t.seq.id, delta, &enc.scratch);
        if let Some(v) = at_end {
            self.counter_values(s.thread, ns, &v);
        }
    }

    fn instant(&mut self, thread: u32, kind: Kind, name: u32, a: u64, b: u64, ts: u64) {
        let ns = self.src.ns(ts);
        if kind == Kind::UserCounter {
            self.user_counter(ns, name, f64::from_bits(a));
            return;
        }
        self.ensure_thread(thread, ns);
        let src = &self.src;
        let Some(t) = self.threads.get_mut(&thread) else {
            return;
        };
        let (enc, seq) = (&mut self.enc, &mut t.seq);
        enc.reset_event(TYPE_INSTANT);
        enc.te.name_iid = Some(seq.name(&mut enc.new, NameKey::Id(name), || src.name(name)));
        let cat = seq.cat(&mut enc.new, kind as usize);
        enc.te.category_iids.push(cat);
        match kind {
            Kind::DualViewSync | Kind::DualViewModify => {
                enc.annotate(seq, Arg::Pointer, Value::PointerValue(a));
                let arg = if kind == Kind::DualViewSync {
                    Arg::ToDevice
                } else {
                    Arg::OnDevice
                };
                enc.annotate(seq, arg, Value::BoolValue(b != 0));
            }
            _ => {}
        }
        enc.event(seq, ns);
    }

    fn memory(&mut self, ns: u64, ev: &Global) {
        let (Global::Alloc {
            space,
            label,
            ptr,
            bytes,
        }
        | Global::Free {
            space,
            label,
            ptr,
            bytes,
        }) = *ev
        else {
            return;
        };
        let alloc = matches!(ev, Global::Alloc { .. });
        if !self.spaces.contains_key(&space) {
            let uuid = self.uuid(TRACK_COUNTER, u64::from(space));
            let desc = TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(self.uuid(TRACK_PROCESS, 0)),
                name: Some(format!("memory {}", self.src.name(space))),
                counter: Some(CounterDescriptor {
                    unit: Some(UNIT_SIZE_BYTES),
                    unit_name: None,
                }),
                ..Default::default()
            };
            self.enc.packet(&descriptor_packet(PROCESS_SEQ, desc));
            self.spaces.insert(space, (Space::default(), uuid));
        }
        let Some((s, counter)) = self.spaces.get_mut(&space) else {
            return;
        };
        if alloc {
            s.alloc(ns, label, ptr, bytes);
        } else {
            s.free(ptr);
        }
        let (current, counter) = (s.current, *counter);
        let (enc, seq, src) = (&mut self.enc, &mut self.process, &self.src);
        enc.reset_event(TYPE_INSTANT);
        let what = if alloc { "allocate" } else { "deallocate" };
        enc.te.name_iid = Some(seq.name(&mut enc.new, NameKey::Static(what), || what.to_string()));
        let cat = seq.cat(&mut enc.new, CAT_MEMORY);
        enc.te.category_iids.push(cat);
        enc.annotate(seq, Arg::Label, Value::StringValue(src.name(label)));
        enc.annotate(seq, Arg::Bytes, Value::UintValue(bytes));
        enc.annotate(seq, Arg::Space, Value::StringValue(src.name(space)));
        enc.annotate(seq, Arg::Address, Value::PointerValue(ptr));
        enc.event(seq, ns);
        enc.reset_event(TYPE_COUNTER);
        enc.te.track_uuid = Some(counter);
        enc.te.counter_value = Some(i64::try_from(current).unwrap_or(i64::MAX));
        enc.event(seq, ns);
    }

    /// Threads per category of work from `p.ts` on: one counter track per
    /// category (`"threads wait"`), made at its first non-zero value; only the
    /// values that changed are written.
    fn concurrency_point(&mut self, p: &Point) {
        let ns = self.src.ns(p.ts);
        for c in Category::ALL {
            let i = c as usize;
            let (track, last) = self.concurrency[i];
            let value = p.counts[i];
            if value == last {
                continue;
            }
            let track = if track != 0 {
                track
            } else {
                let uuid = self.uuid(TRACK_CONCURRENCY, i as u64);
                let desc = TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(self.uuid(TRACK_PROCESS, 0)),
                    name: Some(c.track_name()),
                    counter: Some(CounterDescriptor {
                        unit: None,
                        unit_name: None,
                    }),
                    ..Default::default()
                };
                self.enc.packet(&descriptor_packet(PROCESS_SEQ, desc));
                uuid
            };
            self.concurrency[i] = (track, value);
            let te = TrackEvent {
                r#type: Some(TYPE_COUNTER),
                track_uuid: Some(track),
                counter_value: Some(i64::from(value)),
                ..Default::default()
            };
            frame(
                &mut self.enc.buf,
                &device_packet(ns, CONCURRENCY_SEQ),
                Some(&te),
            );
        }
        self.check_size();
    }

    /// A value of a user counter, on its own counter track (process-level).
    fn user_counter(&mut self, ns: u64, name: u32, value: f64) {
        let track = match self.counters.get(&name) {
            Some(&t) => t,
            None => {
                let uuid = self.uuid(TRACK_USER_COUNTER, u64::from(name));
                let desc = TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(self.uuid(TRACK_PROCESS, 0)),
                    name: Some(self.src.name(name)),
                    counter: Some(CounterDescriptor {
                        unit: None,
                        unit_name: None,
                    }),
                    ..Default::default()
                };
                self.enc.packet(&descriptor_packet(PROCESS_SEQ, desc));
                self.counters.insert(name, uuid);
                uuid
            }
        };
        let (enc, seq) = (&mut self.enc, &mut self.process);
        enc.reset_event(TYPE_COUNTER);
        enc.te.track_uuid = Some(track);
        enc.te.double_counter_value = Some(value);
        enc.event(seq, ns);
    }

    fn section(&mut self, ns: u64, id: u32, start: bool) {
        let Some(name) = self.src.section(id) else {
            return;
        };
        if !self.sections.contains_key(&id) {
            let uuid = self.uuid(TRACK_SECTION, u64::from(id));
            let desc = TrackDescriptor {
                uuid: Some(uuid),
                parent_uuid: Some(self.uuid(TRACK_PROCESS, 0)),
                name: Some(self.src.name(name)),
                ..Default::default()
            };
            self.enc.packet(&descriptor_packet(PROCESS_SEQ, desc));
            self.sections.insert(id, Section { uuid, open: 0 });
        }
        let Some(sec) = self.sections.get_mut(&id) else {
            return;
        };
        let (enc, seq, src) = (&mut self.enc, &mut self.process, &self.src);
        if start {
            sec.open += 1;
            enc.reset_event(TYPE_SLICE_BEGIN);
            enc.te.name_iid = Some(seq.name(&mut enc.new, NameKey::Id(name), || src.name(name)));
            let cat = seq.cat(&mut enc.new, CAT_SECTION);
            enc.te.category_iids.push(cat);
        } else if sec.open > 0 {
            sec.open -= 1;
            enc.reset_event(TYPE_SLICE_END);
        } else {
            // A stop without a start (counted by the profile): no slice to end.
            return;
        }
        enc.te.track_uuid = Some(sec.uuid);
        enc.event(seq, ns);
    }

    /// The track of device stream `dev` (of its synchronizations with `sync`:
    /// one lasts from the host's call to the end of the stream's work, so it
    /// overlaps that work), written on first use.
    fn device_track(&mut self, dev: u16, sync: bool) -> u64 {
        if let Some(&t) = self.device_tracks.get(&(dev, sync)) {
            return t;
        }
        let uuid = self.uuid(TRACK_DEVICE, u64::from(dev) | u64::from(sync) << 16);
        let name = crate::base::devices::track_name(self.src.device(dev), dev, sync);
        let desc = TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(self.uuid(TRACK_PROCESS, 0)),
            name: Some(name),
            ..Default::default()
        };
        self.enc.packet(&descriptor_packet(PROCESS_SEQ, desc));
        self.device_tracks.insert((dev, sync), uuid);
        uuid
    }

    /// Notes GPU API call `guid` of thread `thread`, begun at `ns`.
    fn remember_launch(&mut self, guid: u64, thread: u32, ns: u64) {
        if self.launch_order.len() >= MAX_LAUNCHES {
            if let Some(old) = self.launch_order.pop_front() {
                self.launches.remove(&old);
            }
        }
        let track = self.uuid(TRACK_THREAD, u64::from(thread));
        self.launches.insert(guid, (track, ns));
        self.launch_order.push_back(guid);
    }

    /// Writes the device activities taken since the last call, in time order, on
    /// a sequence of their own: times on a sequence never go back, and activities
    /// arrive in any order (whole buffers late, buffers out of order).
    fn write_devices(&mut self) {
        if self.device_pending.is_empty() {
            return;
        }
        let mut acts = std::mem::take(&mut self.device_pending);
        // (time, what, activity): ends first at the same time (0), then the
        // launch marks that start flows (1), then begins (2), then the ends of
        // activities of no duration (3).
        let mut events: Vec<(u64, u8, usize)> = Vec::with_capacity(3 * acts.len());
        let mut flows: Vec<Option<(u64, u64)>> = Vec::with_capacity(acts.len());
        for (i, a) in acts.iter().enumerate() {
            let begin = a.begin_ns;
            events.push((begin, 2, i));
            // An activity of no duration ends after its own begin.
            events.push((begin + a.dur_ns, if a.dur_ns == 0 { 3 } else { 0 }, i));
            // The arrow starts at a mark at the launching call's begin (on its
            // thread's track), if the call is known; never after the work's
            // begin (a vendor clock calibrated a little off), which it ends at.
            let launch = self
                .launches
                .get(&a.flow_from)
                .filter(|_| a.flow_from != 0)
                .map(|&(track, at)| (track, at.min(begin)));
            if let Some((_, at)) = launch {
                events.push((at, 1, i));
            }
            flows.push(launch);
        }
        events.sort_unstable_by_key(|&(ns, what, i)| (ns, what, i));
        let seq = DEVICE_SEQ + self.device_rounds;
        self.device_rounds = self.device_rounds.wrapping_add(1) % DEVICE_SEQS;
        for (ns, what, i) in events {
            let a = &acts[i];
            let flow = flows[i].map(|_| a.flow_from | DEVICE_FLOW);
            let te = match what {
                0 | 3 => TrackEvent {
                    r#type: Some(TYPE_SLICE_END),
                    track_uuid: Some(self.device_track(a.dev, a.kind == Kind::GpuSync)),
                    ..Default::default()
                },
                1 => {
                    // A mark of no duration: a slice (flows on instants are not
                    // drawn by every reader), begun and ended at once.
                    let track = flows[i].map(|(track, _)| track);
                    let mark = TrackEvent {
                        r#type: Some(TYPE_SLICE_BEGIN),
                        track_uuid: track,
                        name: Some("launch".into()),
                        categories: vec![Kind::GpuApi.category().to_string()],
                        flow_ids: flow.into_iter().collect(),
                        ..Default::default()
                    };
                    frame(&mut self.enc.buf, &device_packet(ns, seq), Some(&mark));
                    TrackEvent {
                        r#type: Some(TYPE_SLICE_END),
                        track_uuid: track,
                        ..Default::default()
                    }
                }
                _ => {
                    let track = self.device_track(a.dev, a.kind == Kind::GpuSync);
                    let mut te = self.device_begin(a, track);
                    te.terminating_flow_ids = flow.into_iter().collect();
                    te
                }
            };
            frame(&mut self.enc.buf, &device_packet(ns, seq), Some(&te));
        }
        acts.clear();
        self.device_pending = acts;
    }

    /// The begin of device activity `a`'s slice on `track`: names not interned
    /// (its sequence lasts one round).
    fn device_begin(&self, a: &DeviceActivity, track: u64) -> TrackEvent {
        let named = |name: &str, value: Value| DebugAnnotation {
            name_iid: None,
            name: Some(name.to_string()),
            value: Some(value),
        };
        let mut args = Vec::with_capacity(2 + a.args().len());
        if a.bytes > 0 || a.kind == Kind::GpuMemcpy {
            args.push(named(
                ARG_NAMES[Arg::Bytes as usize],
                Value::UintValue(a.bytes),
            ));
        }
        if a.kind == Kind::GpuMemcpy {
            let direction = match a.direction {
                kprof_abi::direction::TO_DEVICE => "to_device",
                kprof_abi::direction::FROM_DEVICE => "from_device",
                kprof_abi::direction::DEVICE_TO_DEVICE => "device_to_device",
                kprof_abi::direction::PEER => "peer",
                _ => "other",
            };
            let key = ARG_NAMES[Arg::Direction as usize];
            args.push(named(key, Value::StringValue(direction.into())));
        }
        for &(key, value) in a.args() {
            args.push(named(&self.src.name(key), Value::UintValue(value)));
        }
        TrackEvent {
            r#type: Some(TYPE_SLICE_BEGIN),
            track_uuid: Some(track),
            name: Some(self.src.name(a.name)),
            categories: vec![a.kind.category().to_string()],
            debug_annotations: args,
            ..Default::default()
        }
    }

    /// Compresses the segment being built; its begins can no longer be patched.
    fn seal(&mut self) {
        self.enc.seal();
        for t in self.threads.values_mut() {
            t.begins.clear();
        }
        // Parents that began without taking their pending flows never will.
        let threads = &self.threads;
        self.pending
            .retain(|&p, _| match threads.get(&((p >> GUID_SEQ_BITS) as u32)) {
                Some(t) => p > t.last_begun,
                None => true,
            });
        self.pending_len = self.pending.values().map(Vec::len).sum();
    }

    fn check_size(&mut self) {
        if self.enc.buf.len() >= self.segment_bytes {
            self.seal();
            // A write error here is reported by the next flush.
            if let Err(e) = self.file.write_all(&self.enc.out) {
                self.enc.error.get_or_insert(e);
            }
            self.enc.out.clear();
        }
    }
}

/// The first packet of a sequence: clears its incremental state, pairs the
/// incremental clock with CLOCK_MONOTONIC at `ns`, and names the clock and track
/// later packets use by default. `primary` also makes CLOCK_MONOTONIC the trace's
/// clock (once, in the trace's first packet).
fn start_packet(seq: u32, ns: u64, track: u64, primary: bool) -> TracePacket {
    TracePacket {
        timestamp: Some(ns),
        timestamp_clock_id: Some(BUILTIN_CLOCK_MONOTONIC),
        trusted_packet_sequence_id: Some(seq),
        sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
        trace_packet_defaults: Some(TracePacketDefaults {
            timestamp_clock_id: Some(INCREMENTAL_CLOCK_ID),
            track_event_defaults: Some(TrackEventDefaults {
                track_uuid: Some(track),
            }),
        }),
        data: Some(Data::ClockSnapshot(ClockSnapshot {
            clocks: vec![
                Clock {
                    clock_id: Some(BUILTIN_CLOCK_MONOTONIC),
                    timestamp: Some(ns),
                    ..Default::default()
                },
                Clock {
                    clock_id: Some(INCREMENTAL_CLOCK_ID),
                    timestamp: Some(ns),
                    is_incremental: Some(true),
                    unit_multiplier_ns: Some(1),
                },
            ],
            primary_trace_clock: primary.then_some(BUILTIN_CLOCK_MONOTONIC as i32),
        })),
        ..Default::default()
    }
}

/// A track descriptor on sequence `seq` (no timestamp: it does not move the
/// sequence's clock).
fn descriptor_packet(seq: u32, desc: TrackDescriptor) -> TracePacket {
    TracePacket {
        trusted_packet_sequence_id: Some(seq),
        data: Some(Data::TrackDescriptor(desc)),
        ..Default::default()
    }
}

impl<S: Source> Consumer for PerfettoWriter<S> {
    fn event(&mut self, ev: &Event<'_>) {
        match *ev {
            Event::Begin(s) => self.begin(s),
            Event::End(s, end) => self.end(s, end),
            // Messages are aggregated into the profile's matrices, not drawn.
            Event::Instant {
                kind: Kind::Message,
                ..
            } => {}
            Event::Instant {
                thread,
                kind,
                name,
                a,
                b,
                ts,
            } => self.instant(thread, kind, name, a, b, ts),
            // Dependence edges are in the profile's task graph; creation ->
            // execution arrows come from explicit parents.
            Event::Edge { .. } | Event::Site { .. } => {}
            Event::Activity(a) => {
                self.device_pending.push(*a);
                if self.device_pending.len() >= MAX_DEVICE_PENDING {
                    self.write_devices();
                }
            }
        }
        self.check_size();
    }

    fn global(&mut self, ts: u64, ev: &Global) {
        let ns = self.src.ns(ts);
        match *ev {
            Global::Alloc { .. } | Global::Free { .. } => self.memory(ns, ev),
            Global::SectionStart(id) => self.section(ns, id, true),
            Global::SectionStop(id) => self.section(ns, id, false),
        }
        self.check_size();
    }
}

impl<S: Source> TraceWriter for PerfettoWriter<S> {
    fn path(&self) -> &Path {
        &self.path
    }

    fn sample(&mut self, ts: u64, metrics: &[Metric], values: &[f64]) {
        let ns = self.src.ns(ts);
        if self.system.is_none() {
            let process = self.uuid(TRACK_PROCESS, 0);
            self.enc
                .packet(&start_packet(SYSTEM_SEQ, ns, process, false));
            for (i, m) in metrics.iter().enumerate() {
                let uuid = self.uuid(TRACK_SYSTEM, i as u64);
                let bytes = m.unit == Unit::Bytes;
                let desc = TrackDescriptor {
                    uuid: Some(uuid),
                    parent_uuid: Some(process),
                    name: Some(m.track_name()),
                    counter: Some(CounterDescriptor {
                        unit: bytes.then_some(UNIT_SIZE_BYTES),
                        unit_name: (!bytes).then(|| m.unit.as_str().into()),
                    }),
                    ..Default::default()
                };
                self.enc.packet(&descriptor_packet(SYSTEM_SEQ, desc));
                self.system_tracks.push(uuid);
            }
            self.system = Some(Seq::new(SYSTEM_SEQ, ns));
        }
        let (enc, Some(seq)) = (&mut self.enc, self.system.as_mut()) else {
            return;
        };
        for (&track, &value) in self.system_tracks.iter().zip(values) {
            if value.is_finite() {
                enc.reset_event(TYPE_COUNTER);
                enc.te.track_uuid = Some(track);
                enc.te.double_counter_value = Some(value);
                enc.event(seq, ns);
            }
        }
    }

    fn concurrency(&mut self, p: &Point) {
        self.concurrency_point(p);
    }

    fn flush(&mut self) -> Result<(), OutputError> {
        self.write_devices();
        self.seal();
        let err = |source| OutputError::File {
            path: self.path.display().to_string(),
            source,
        };
        if let Some(e) = self.enc.error.take() {
            return Err(err(e));
        }
        if self.enc.out.is_empty() {
            return Ok(());
        }
        // One write per round (or segment): a killed process leaves whole packets.
        self.file.write_all(&self.enc.out).map_err(err)?;
        self.enc.out.clear();
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<PathBuf, OutputError> {
        // Sections still running end with the run.
        let end = self.src.ns(self.src.end());
        let mut open: Vec<(u32, u32)> = self
            .sections
            .iter()
            .filter(|(_, s)| s.open > 0)
            .map(|(&id, s)| (id, s.open))
            .collect();
        open.sort_unstable();
        for (id, n) in open {
            for _ in 0..n {
                self.section(end, id, false);
            }
        }
        self.flush()?;
        Ok(self.path.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::sync::atomic::{AtomicU32, Ordering};

    use flate2::read::ZlibDecoder;

    use super::*;

    #[test]
    fn every_kind_has_its_own_category_slot() {
        for k in Kind::ALL {
            assert_eq!(category_text(k as usize), k.category(), "{k:?}");
        }
        assert_eq!(category_text(CAT_MEMORY), "kokkos.memory");
        assert_eq!(category_text(CAT_SECTION), "kokkos.section");
        assert!(CAT_MEMORY > Kind::ALL.len() && CAT_SECTION < CATS);
    }
    use crate::consume::trace::perfetto_proto::Trace;
    use crate::hot::nesting::CopyInfo;

    /// Names 1.. are `NAMES`; raw times are nanoseconds already.
    struct Table {
        process: ProcessInfo,
    }

    const NAMES: [&str; 8] = ["", "axpy", "outer", "Host", "x", "y", "marker", "phase"];
    const BASE: u64 = 1_000_000_000;

    impl Source for Table {
        fn ns(&self, raw: u64) -> u64 {
            BASE + raw
        }
        fn start(&self) -> u64 {
            0
        }
        fn end(&self) -> u64 {
            10_000
        }
        fn name(&self, id: u32) -> String {
            NAMES.get(id as usize).unwrap_or(&"?").to_string()
        }
        fn device(&self, index: u16) -> Option<Device> {
            (index == 1).then(|| Device {
                backend: "OpenMP".into(),
                index: 0,
                instance: 1,
            })
        }
        fn thread(&self, index: u32) -> Option<(i32, String)> {
            Some((1000 + index as i32, format!("worker{index}")))
        }
        fn section(&self, id: u32) -> Option<u32> {
            (id == 1).then_some(7)
        }
        fn process(&self) -> &ProcessInfo {
            &self.process
        }
    }

    fn writer(test: &str) -> (PerfettoWriter<Table>, PathBuf) {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "kprof-perfetto-{test}-{}-{}.pftrace",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&path);
        let table = Table {
            process: ProcessInfo {
                executable: "app".into(),
                pid: 4242,
                host: "h".into(),
                rank: Some(3),
                start_ns: None,
            },
        };
        (PerfettoWriter::with_source(&path, table).unwrap(), path)
    }

    /// The packet sequence of thread `index`.
    fn seq_of(index: u32) -> u32 {
        index + PROCESS_SEQ + 1
    }

    fn guid(thread: u32, seq: u64) -> u64 {
        u64::from(thread) << GUID_SEQ_BITS | seq
    }

    fn slice(thread: u32, seq: u64, kind: Kind, name: u32, begin: u64) -> Slice {
        Slice::plain(thread, guid(thread, seq), kind, name, begin)
    }

    /// One event as the trace processor would see it.
    #[derive(Debug, Clone)]
    struct Ev {
        seq: u32,
        ts: u64,
        ty: i32,
        track: u64,
        name: String,
        cat: String,
        args: Vec<(String, String)>,
        flows: Vec<u64>,
        terminating: Vec<u64>,
        counter: Option<i64>,
        value: Option<f64>,
    }

    /// The decoded file: outer packets must each hold one compressed round.
    struct Decoded {
        rounds: usize,
        packets: Vec<TracePacket>,
        events: Vec<Ev>,
        tracks: Vec<TrackDescriptor>,
    }

    #[derive(Default)]
    struct SeqState {
        cleared: bool,
        last: u64,
        track: u64,
        names: FxHashMap<u64, String>,
        cats: FxHashMap<u64, String>,
        args: FxHashMap<u64, String>,
        strings: FxHashMap<u64, String>,
    }

    /// Decodes `path` with our own types, applying the trace processor's rules:
    /// incremental state per sequence, interning, sequence-scoped delta clock.
    fn decode(path: &Path) -> Decoded {
        let bytes = std::fs::read(path).unwrap();
        let outer = Trace::decode(bytes.as_slice()).unwrap();
        let mut packets = Vec::new();
        for p in &outer.packet {
            let Some(Data::CompressedPackets(z)) = &p.data else {
                panic!("an outer packet that is not compressed: {p:?}");
            };
            // zlib (RFC 1950): a header, deflate data, then an Adler-32 checksum.
            assert_eq!(z[0] & 0x0f, 8, "zlib header");
            assert_eq!((u16::from(z[0]) << 8 | u16::from(z[1])) % 31, 0);
            let mut raw = Vec::new();
            ZlibDecoder::new(z.as_slice())
                .read_to_end(&mut raw)
                .unwrap();
            packets.extend(Trace::decode(raw.as_slice()).unwrap().packet);
        }
        let mut seqs: FxHashMap<u32, SeqState> = FxHashMap::default();
        let (mut events, mut tracks) = (Vec::new(), Vec::new());
        for p in &packets {
            let id = p.trusted_packet_sequence_id.expect("sequence id");
            let st = seqs.entry(id).or_default();
            let flags = p.sequence_flags.unwrap_or(0);
            if flags & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
                *st = SeqState {
                    cleared: true,
                    ..Default::default()
                };
                let d = p.trace_packet_defaults.as_ref().expect("defaults");
                assert_eq!(d.timestamp_clock_id, Some(INCREMENTAL_CLOCK_ID));
                st.track = d.track_event_defaults.as_ref().unwrap().track_uuid.unwrap();
                let Some(Data::ClockSnapshot(c)) = &p.data else {
                    panic!("no clock snapshot in the first packet");
                };
                assert_eq!(c.clocks[0].clock_id, Some(BUILTIN_CLOCK_MONOTONIC));
                assert_eq!(c.clocks[1].clock_id, Some(INCREMENTAL_CLOCK_ID));
                assert_eq!(c.clocks[1].is_incremental, Some(true));
                assert_eq!(c.clocks[0].timestamp, c.clocks[1].timestamp);
                assert_eq!(p.timestamp_clock_id, Some(BUILTIN_CLOCK_MONOTONIC));
                st.last = c.clocks[1].timestamp.unwrap();
                continue;
            }
            if flags & SEQ_NEEDS_INCREMENTAL_STATE != 0 {
                assert!(st.cleared, "packet before its sequence's state: {p:?}");
            }
            if let Some(i) = &p.interned_data {
                for e in &i.event_names {
                    st.names.insert(e.iid.unwrap(), e.name.clone().unwrap());
                }
                for e in &i.event_categories {
                    st.cats.insert(e.iid.unwrap(), e.name.clone().unwrap());
                }
                for e in &i.debug_annotation_names {
                    st.args.insert(e.iid.unwrap(), e.name.clone().unwrap());
                }
                for e in &i.debug_annotation_string_values {
                    let s = String::from_utf8(e.str.clone().unwrap()).unwrap();
                    st.strings.insert(e.iid.unwrap(), s);
                }
            }
            match &p.data {
                Some(Data::TrackDescriptor(d)) => {
                    assert!(p.timestamp.is_none());
                    tracks.push(d.clone());
                }
                Some(Data::TrackEvent(te)) => {
                    assert_eq!(flags, SEQ_NEEDS_INCREMENTAL_STATE);
                    st.last += p.timestamp.expect("timestamp delta");
                    let name = te.name_iid.map(|i| st.names[&i].clone());
                    let args = te
                        .debug_annotations
                        .iter()
                        .map(|a| {
                            let v = match a.value.clone().unwrap() {
                                Value::BoolValue(b) => b.to_string(),
                                Value::UintValue(u) => u.to_string(),
                                Value::IntValue(i) => i.to_string(),
                                Value::StringValue(s) => s,
                                Value::PointerValue(p) => format!("{p:#x}"),
                                Value::StringValueIid(i) => st.strings[&i].clone(),
                            };
                            (st.args[&a.name_iid.unwrap()].clone(), v)
                        })
                        .collect();
                    events.push(Ev {
                        seq: id,
                        ts: st.last,
                        ty: te.r#type.unwrap(),
                        track: te.track_uuid.unwrap_or(st.track),
                        name: name.unwrap_or_default(),
                        cat: te
                            .category_iids
                            .iter()
                            .map(|i| st.cats[i].clone())
                            .collect::<Vec<_>>()
                            .join(","),
                        args,
                        flows: te.flow_ids.clone(),
                        terminating: te.terminating_flow_ids.clone(),
                        counter: te.counter_value,
                        value: te.double_counter_value,
                    });
                }
                other => panic!("unexpected packet {other:?}"),
            }
        }
        Decoded {
            rounds: outer.packet.len(),
            packets,
            events,
            tracks,
        }
    }

    fn arg<'a>(e: &'a Ev, key: &str) -> Option<&'a str> {
        e.args
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    #[test]
    fn system_samples_on_counter_tracks_of_their_own_sequence() {
        let (mut w, path) = writer("system");
        let metrics = [
            Metric {
                name: "rss".into(),
                unit: Unit::Bytes,
                description: "",
            },
            Metric {
                name: "cpu_cores".into(),
                unit: Unit::Cores,
                description: "",
            },
        ];
        // A memory event at 300 on the process sequence, then samples at 200 and
        // 400: each sequence's times grow on their own.
        w.global(
            300,
            &Global::Alloc {
                space: 3,
                label: 4,
                ptr: 0x10,
                bytes: 8,
            },
        );
        w.sample(200, &metrics, &[1000.0, f64::NAN]);
        w.flush().unwrap();
        w.sample(400, &metrics, &[2000.0, 0.5]);
        Box::new(w).finish().unwrap();
        let d = decode(&path);
        let _ = std::fs::remove_file(&path);
        let process = d.tracks.iter().find(|t| t.process.is_some()).unwrap();
        let track = |name: &str| {
            d.tracks
                .iter()
                .find(|t| t.name.as_deref() == Some(name))
                .unwrap_or_else(|| panic!("no track {name}: {:?}", d.tracks))
        };
        let (rss, cpu) = (track("rss (bytes)"), track("cpu_cores (cores)"));
        for t in [rss, cpu] {
            assert_eq!(t.parent_uuid, process.uuid);
        }
        let unit = |t: &TrackDescriptor| {
            let c = t.counter.clone().unwrap();
            (c.unit, c.unit_name)
        };
        assert_eq!(unit(rss), (Some(UNIT_SIZE_BYTES), None));
        assert_eq!(unit(cpu), (None, Some("cores".into())));
        let series = |t: &TrackDescriptor| {
            d.events
                .iter()
                .filter(|e| Some(e.track) == t.uuid)
                .map(|e| (e.seq, e.ty, e.ts - BASE, e.value))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            series(rss),
            [
                (SYSTEM_SEQ, TYPE_COUNTER, 200, Some(1000.0)),
                (SYSTEM_SEQ, TYPE_COUNTER, 400, Some(2000.0))
            ]
        );
        // No value (NaN): no event.
        assert_eq!(series(cpu), [(SYSTEM_SEQ, TYPE_COUNTER, 400, Some(0.5))]);
        let memory = d.events.iter().find(|e| e.counter == Some(8)).unwrap();
        assert_eq!((memory.seq, memory.ts - BASE), (PROCESS_SEQ, 300));
    }

    #[test]
    fn round_trip_of_slices_instants_memory_and_sections() {
        let (mut w, path) = writer("round-trip");
        let region = slice(1, 1, Kind::Region, 2, 100);
        let mut k1 = slice(1, 2, Kind::ParallelFor, 1, 150);
        k1.dev = 1;
        k1.enclosing = Some((region.guid, Kind::Region));
        w.event(&Event::Begin(&region));
        w.event(&Event::Begin(&k1));
        w.event(&Event::End(&k1, 180));
        w.global(
            190,
            &Global::Alloc {
                space: 3,
                label: 4,
                ptr: 0x1000,
                bytes: 800,
            },
        );
        w.global(195, &Global::SectionStart(1));
        // Second round: the same kernel again (the fast path), a copy, instants.
        w.flush().unwrap();
        let mut k2 = k1;
        k2.guid = guid(1, 3);
        k2.begin = 200;
        w.event(&Event::Begin(&k2));
        w.event(&Event::End(&k2, 260));
        let mut copy = slice(1, 4, Kind::DeepCopy, 4, 270);
        copy.copy = Some(CopyInfo {
            bytes: 64,
            src_label: 5,
            dst_space: 3,
            src_space: 3,
        });
        w.event(&Event::Begin(&copy));
        w.event(&Event::End(&copy, 280));
        w.event(&Event::Instant {
            thread: 1,
            kind: Kind::Marker,
            name: 6,
            a: 0,
            b: 0,
            ts: 285,
        });
        w.event(&Event::Instant {
            thread: 2,
            kind: Kind::DualViewSync,
            name: 4,
            a: 0xbeef,
            b: 1,
            ts: 50,
        });
        w.event(&Event::End(&region, 300));
        w.global(
            310,
            &Global::Free {
                space: 3,
                label: 4,
                ptr: 0x1000,
                bytes: 800,
            },
        );
        // A time that went back on the process sequence is clamped.
        w.global(305, &Global::SectionStop(1));
        Box::new(w).finish().unwrap();

        let d = decode(&path);
        assert_eq!(d.rounds, 2);
        let process = d
            .tracks
            .iter()
            .find(|t| t.process.is_some())
            .expect("process track");
        let p = process.process.as_ref().unwrap();
        assert_eq!(p.pid, Some(4242));
        assert_eq!(p.process_name.as_deref(), Some("app"));
        assert_eq!(p.process_labels, ["rank 3"]);
        let threads: Vec<_> = d.tracks.iter().filter_map(|t| t.thread.clone()).collect();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0].tid, Some(1001));
        assert_eq!(threads[0].thread_name.as_deref(), Some("worker1 (1)"));
        let counter = d.tracks.iter().find(|t| t.counter.is_some()).unwrap();
        assert_eq!(counter.name.as_deref(), Some("memory Host"));
        assert_eq!(counter.parent_uuid, process.uuid);
        let section = d.tracks.iter().find(|t| t.name.as_deref() == Some("phase"));
        assert_eq!(section.unwrap().parent_uuid, process.uuid);

        let t1: Vec<&Ev> = d.events.iter().filter(|e| e.seq == seq_of(1)).collect();
        let summary: Vec<(i32, &str, u64)> = t1
            .iter()
            .map(|e| (e.ty, e.name.as_str(), e.ts - BASE))
            .collect();
        assert_eq!(
            summary,
            [
                (TYPE_SLICE_BEGIN, "outer", 100),
                (TYPE_SLICE_BEGIN, "axpy", 150),
                (TYPE_SLICE_END, "", 180),
                (TYPE_SLICE_BEGIN, "axpy", 200),
                (TYPE_SLICE_END, "", 260),
                (TYPE_SLICE_BEGIN, "x <- y", 270),
                (TYPE_SLICE_END, "", 280),
                (TYPE_INSTANT, "marker", 285),
                (TYPE_SLICE_END, "", 300),
            ]
        );
        let thread1 = d.tracks.iter().find(|t| t.thread.is_some()).unwrap().uuid;
        assert!(t1.iter().all(|e| Some(e.track) == thread1));
        assert_eq!(t1[0].cat, "kokkos.region");
        for k in [t1[1], t1[3]] {
            assert_eq!(k.cat, "kokkos.parallel_for");
            assert_eq!(arg(k, "device"), Some("OpenMP"));
            assert_eq!(arg(k, "device_index"), Some("0"));
            assert_eq!(arg(k, "instance"), Some("1"));
        }
        let c = t1[5];
        assert_eq!(c.cat, "kokkos.deep_copy");
        assert_eq!(arg(c, "bytes"), Some("64"));
        assert_eq!(arg(c, "dst_space"), Some("Host"));
        assert_eq!(arg(c, "dst_label"), Some("x"));
        assert_eq!(arg(c, "src_space"), Some("Host"));
        assert_eq!(arg(c, "src_label"), Some("y"));
        assert_eq!(t1[7].cat, "kokkos.event");

        let t2: Vec<&Ev> = d.events.iter().filter(|e| e.seq == seq_of(2)).collect();
        assert_eq!(t2.len(), 1);
        assert_eq!((t2[0].ts - BASE, t2[0].name.as_str()), (50, "x"));
        assert_eq!(arg(t2[0], "pointer"), Some("0xbeef"));
        assert_eq!(arg(t2[0], "to_device"), Some("true"));

        let pr: Vec<&Ev> = d.events.iter().filter(|e| e.seq == PROCESS_SEQ).collect();
        let summary: Vec<(i32, &str, u64, Option<i64>)> = pr
            .iter()
            .map(|e| (e.ty, e.name.as_str(), e.ts - BASE, e.counter))
            .collect();
        assert_eq!(
            summary,
            [
                (TYPE_INSTANT, "allocate", 190, None),
                (TYPE_COUNTER, "", 190, Some(800)),
                (TYPE_SLICE_BEGIN, "phase", 195, None),
                (TYPE_INSTANT, "deallocate", 310, None),
                (TYPE_COUNTER, "", 310, Some(0)),
                (TYPE_SLICE_END, "", 310, None),
            ]
        );
        assert_eq!(pr[0].track, process.uuid.unwrap());
        assert_eq!(Some(pr[1].track), counter.uuid);
        assert_eq!(arg(pr[0], "label"), Some("x"));
        assert_eq!(arg(pr[0], "bytes"), Some("800"));
        assert_eq!(arg(pr[0], "space"), Some("Host"));
        assert_eq!(arg(pr[0], "address"), Some("0x1000"));

        // Interning: each name, category and argument name is sent once per
        // sequence, and only the trace's first packet sets the trace clock.
        let mut seen = FxHashMap::default();
        for p in &d.packets {
            for n in p.interned_data.iter().flat_map(|i| &i.event_names) {
                let key = (p.trusted_packet_sequence_id, n.name.clone());
                assert!(seen.insert(key, ()).is_none(), "{n:?} interned twice");
            }
        }
        let primaries = d
            .packets
            .iter()
            .filter(|p| {
                matches!(&p.data, Some(Data::ClockSnapshot(c)) if c.primary_trace_clock.is_some())
            })
            .count();
        assert_eq!(primaries, 1);
        assert!(matches!(&d.packets[0].data, Some(Data::ClockSnapshot(_))));
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn flows_reach_the_parents_begin_or_end() {
        let (mut w, path) = writer("flows");
        // Thread 1: a user region; Kokkos kernels inside it are flow children.
        let region = slice(1, 1, Kind::UserRegion, 2, 100);
        let child = |seq, begin| {
            let mut k = slice(1, seq, Kind::ParallelFor, 1, begin);
            k.enclosing = Some((region.guid, Kind::UserRegion));
            k
        };
        // (a) A child on another thread, processed before its parent's begin.
        let mut remote = slice(2, 1, Kind::ParallelFor, 1, 120);
        remote.parent = guid(1, 3);
        w.event(&Event::Begin(&remote));
        w.event(&Event::End(&remote, 130));
        w.event(&Event::Begin(&region));
        // (b) A child whose parent's begin is in this round: patched at flush.
        let k2 = child(2, 110);
        w.event(&Event::Begin(&k2));
        w.event(&Event::End(&k2, 115));
        let k3 = child(3, 118);
        w.event(&Event::Begin(&k3));
        w.event(&Event::End(&k3, 140));
        w.flush().unwrap();
        // (c) A child in a later round: its flow starts at the parent's end.
        let k4 = child(4, 150);
        w.event(&Event::Begin(&k4));
        w.event(&Event::End(&k4, 160));
        w.event(&Event::End(&region, 200));
        // A child of a parent that ended rounds ago gets no flow at all.
        w.flush().unwrap();
        let mut late = slice(2, 2, Kind::ParallelFor, 1, 210);
        late.parent = guid(1, 2);
        w.event(&Event::Begin(&late));
        w.event(&Event::End(&late, 220));
        Box::new(w).finish().unwrap();

        let d = decode(&path);
        let find = |thread: u32, ty: i32, ts: u64| {
            let seq = seq_of(thread);
            d.events
                .iter()
                .find(|e| e.seq == seq && e.ty == ty && e.ts == BASE + ts)
                .unwrap_or_else(|| panic!("no event {seq} {ty} {ts}"))
        };
        let begin = find(1, TYPE_SLICE_BEGIN, 100);
        assert_eq!(begin.flows, [guid(1, 2), guid(1, 3)]);
        let k3_begin = find(1, TYPE_SLICE_BEGIN, 118);
        assert_eq!(k3_begin.flows, [remote.guid]);
        assert_eq!(k3_begin.terminating, [guid(1, 3)]);
        assert_eq!(k3_begin.name, "axpy");
        assert_eq!(find(1, TYPE_SLICE_BEGIN, 110).terminating, [guid(1, 2)]);
        assert_eq!(find(2, TYPE_SLICE_BEGIN, 120).terminating, [remote.guid]);
        assert_eq!(find(1, TYPE_SLICE_BEGIN, 150).terminating, [guid(1, 4)]);
        assert_eq!(find(1, TYPE_SLICE_END, 200).flows, [guid(1, 4)]);
        assert!(find(2, TYPE_SLICE_BEGIN, 210).terminating.is_empty());
        // Every flow that ends somewhere starts somewhere, once.
        let mut starts: Vec<u64> = d.events.iter().flat_map(|e| e.flows.clone()).collect();
        let mut ends: Vec<u64> = d
            .events
            .iter()
            .flat_map(|e| e.terminating.clone())
            .collect();
        starts.sort_unstable();
        ends.sort_unstable();
        assert_eq!(starts, ends);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn pending_flows_of_parents_that_never_begin_are_dropped() {
        let (mut w, path) = writer("pending");
        let a = slice(1, 5, Kind::Region, 2, 10);
        let mut b = slice(2, 1, Kind::ParallelFor, 1, 20);
        // A parent on thread 1 whose begin was lost (GUID 3 < 5, never seen).
        b.parent = guid(1, 3);
        w.event(&Event::Begin(&b));
        assert_eq!(w.pending_len, 1);
        w.event(&Event::Begin(&a));
        w.flush().unwrap();
        assert_eq!((w.pending.len(), w.pending_len), (0, 0));
        w.event(&Event::End(&b, 30));
        w.event(&Event::End(&a, 40));
        assert!(w.threads.values().all(|t| t.open.is_empty()));
        Box::new(w).finish().unwrap();
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn large_rounds_are_split_and_every_round_is_whole() {
        let (mut w, path) = writer("segments");
        w.segment_bytes = 64 << 10;
        let region = slice(1, 1, Kind::UserRegion, 2, 0);
        w.event(&Event::Begin(&region));
        let n = 20_000u64;
        for i in 0..n {
            let mut s = slice(1, i + 2, Kind::ParallelFor, 1 + (i % 2) as u32, i * 10 + 1);
            s.dev = 1;
            s.enclosing = Some((region.guid, Kind::UserRegion));
            w.event(&Event::Begin(&s));
            w.event(&Event::End(&s, i * 10 + 5));
        }
        w.event(&Event::End(&region, n * 10));
        w.flush().unwrap();
        let d = decode(&path);
        assert!(d.rounds >= 10, "{} compressed packets", d.rounds);
        let ends: Vec<u64> = d
            .events
            .iter()
            .filter(|e| e.ty == TYPE_SLICE_END)
            .map(|e| e.ts - BASE)
            .collect();
        assert_eq!(ends.len() as u64, n + 1);
        assert!(ends[..n as usize]
            .iter()
            .enumerate()
            .all(|(i, &t)| t == i as u64 * 10 + 5));
        // The region's flows: to the children of its begin's segment from the
        // begin, to all later ones from its end; each child ends exactly one.
        let starts: usize = d.events.iter().map(|e| e.flows.len()).sum();
        let ends: usize = d.events.iter().map(|e| e.terminating.len()).sum();
        assert_eq!((starts, ends), (n as usize, n as usize));
        let begin = &d.events[0];
        assert!(!begin.flows.is_empty() && begin.flows.len() < n as usize);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_million_kernels_stay_far_below_twelve_bytes_per_slice() {
        let (mut w, path) = writer("size");
        let n = 1_000_000u64;
        let (mut t, mut r) = (0u64, 0x2545_f491_4f6c_dd1du64);
        for i in 0..n {
            // Durations and gaps of 0..4 µs, pseudo-random.
            r ^= r << 13;
            r ^= r >> 7;
            r ^= r << 17;
            let mut s = slice(1, i + 1, Kind::ParallelFor, 1 + (i % 4) as u32, t);
            s.dev = 1;
            t += r % 4096;
            w.event(&Event::Begin(&s));
            w.event(&Event::End(&s, t));
            t += (r >> 12) % 4096;
            if i % 250_000 == 0 {
                w.flush().unwrap();
            }
        }
        Box::new(w).finish().unwrap();
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < n * 12, "{size} bytes for {n} slices");
        let _ = std::fs::remove_file(path);
    }
}
