//! The subset of Perfetto's trace protos that kprof writes, as prost messages.
//!
//! Written by hand from the field numbers and types of Perfetto's `.proto` files
//! (`protos/perfetto/trace/...`), so the writer needs no code generator and no
//! `protoc`. Only the fields kprof sets are declared: a decoder of the full schema
//! reads what these encode, and these decode kprof's own output (the unit tests).
//!
//! The protos are proto2: repeated scalars are NOT packed (`packed = "false"`),
//! which Perfetto's decoder requires, and optional scalars are `Option`s so that
//! zero values are still written when set. Oneofs of the schema that kprof fills
//! with one member only are plain optional fields here (same wire format).

/// `Trace` (trace.proto): a trace file is one serialized `Trace`, i.e. a stream of
/// `packet` fields, so files and rounds can simply be concatenated.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Trace {
    /// `repeated TracePacket packet = 1`.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}

/// `TracePacket` (trace_packet.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TracePacket {
    /// `optional uint64 timestamp = 8`: in the clock of `timestamp_clock_id`, or of
    /// the sequence's defaults; a delta for incremental clocks.
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// `optional uint32 timestamp_clock_id = 58`.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// `oneof data`: what the packet carries.
    #[prost(oneof = "trace_packet::Data", tags = "6, 11, 50, 60")]
    pub data: Option<trace_packet::Data>,
    /// `uint32 trusted_packet_sequence_id = 10` (in a oneof of one member).
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// `optional InternedData interned_data = 12`.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// `optional uint32 sequence_flags = 13` ([`SEQ_INCREMENTAL_STATE_CLEARED`],
    /// [`SEQ_NEEDS_INCREMENTAL_STATE`]).
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// `optional TracePacketDefaults trace_packet_defaults = 59`.
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
}

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`: interned data and
/// defaults of the sequence start over with this packet.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`: the packet uses the
/// sequence's interned data, defaults or incremental clock.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// Members of `TracePacket.data`.
pub mod trace_packet {
    /// `oneof data` of `TracePacket` (the members kprof writes).
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Data {
        /// `ClockSnapshot clock_snapshot = 6`.
        #[prost(message, tag = "6")]
        ClockSnapshot(super::ClockSnapshot),
        /// `TrackEvent track_event = 11`.
        #[prost(message, tag = "11")]
        TrackEvent(super::TrackEvent),
        /// `bytes compressed_packets = 50`: a zlib stream of a serialized `Trace`.
        #[prost(bytes = "vec", tag = "50")]
        CompressedPackets(Vec<u8>),
        /// `TrackDescriptor track_descriptor = 60`.
        #[prost(message, tag = "60")]
        TrackDescriptor(super::TrackDescriptor),
    }
}

/// `TracePacket.timestamp`'s field number, for the writer's hand-made framing.
pub const TIMESTAMP_FIELD: u32 = 8;
/// `TracePacket.trusted_packet_sequence_id`'s field number.
pub const SEQUENCE_ID_FIELD: u32 = 10;
/// `TracePacket.sequence_flags`' field number.
pub const SEQUENCE_FLAGS_FIELD: u32 = 13;
/// `TracePacket.track_event`'s field number.
pub const TRACK_EVENT_FIELD: u32 = 11;
/// `TracePacket.compressed_packets`' field number.
pub const COMPRESSED_PACKETS_FIELD: u32 = 50;
/// `Trace.packet`'s field number.
pub const TRACE_PACKET_FIELD: u32 = 1;
/// `TrackEvent.type`'s field number.
pub const TYPE_FIELD: u32 = 9;
/// `TrackEvent.flow_ids`' field number (repeated fixed64).
pub const FLOW_IDS_FIELD: u32 = 47;
/// `TrackEvent.terminating_flow_ids`' field number (repeated fixed64).
pub const TERMINATING_FLOW_IDS_FIELD: u32 = 48;

/// `ClockSnapshot` (clock_snapshot.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ClockSnapshot {
    /// `repeated Clock clocks = 1`: readings of several clocks at one instant.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// `optional BuiltinClock primary_trace_clock = 2`: the clock of the trace's
    /// time axis.
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct Clock {
    /// `optional uint32 clock_id = 1`: a builtin clock, or 64..127 for a
    /// sequence-scoped one.
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// `optional uint64 timestamp = 2`.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
    /// `optional bool is_incremental = 3`: packets give deltas from the previous
    /// packet's time on this clock.
    #[prost(bool, optional, tag = "3")]
    pub is_incremental: Option<bool>,
    /// `optional uint64 unit_multiplier_ns = 4`.
    #[prost(uint64, optional, tag = "4")]
    pub unit_multiplier_ns: Option<u64>,
}

/// `BuiltinClock.BUILTIN_CLOCK_MONOTONIC` (builtin_clock.proto).
pub const BUILTIN_CLOCK_MONOTONIC: u32 = 3;
/// The sequence-scoped incremental clock kprof uses (64..127 are sequence-scoped).
pub const INCREMENTAL_CLOCK_ID: u32 = 64;

/// `TracePacketDefaults` (trace_packet_defaults.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TracePacketDefaults {
    /// `optional uint32 timestamp_clock_id = 58`.
    #[prost(uint32, optional, tag = "58")]
    pub timestamp_clock_id: Option<u32>,
    /// `optional TrackEventDefaults track_event_defaults = 11`.
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

/// `TrackEventDefaults` (track_event.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TrackEventDefaults {
    /// `optional uint64 track_uuid = 11`: the track of events that name none.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
}

/// `TrackDescriptor` (track_descriptor.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TrackDescriptor {
    /// `optional uint64 uuid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// `string name = 2` (in the oneof `static_or_dynamic_name`).
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// `optional ProcessDescriptor process = 3`.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// `optional ThreadDescriptor thread = 4`.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// `optional uint64 parent_uuid = 5`.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// `optional CounterDescriptor counter = 8`: makes this a counter track.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `ProcessDescriptor` (process_descriptor.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ProcessDescriptor {
    /// `optional int32 pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `optional string process_name = 6`.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
    /// `repeated string process_labels = 8`.
    #[prost(string, repeated, tag = "8")]
    pub process_labels: Vec<String>,
}

/// `ThreadDescriptor` (thread_descriptor.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct ThreadDescriptor {
    /// `optional int32 pid = 1`.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// `optional int32 tid = 2`.
    #[prost(int32, optional, tag = "2")]
    pub tid: Option<i32>,
    /// `optional string thread_name = 5`.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `CounterDescriptor` (counter_descriptor.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct CounterDescriptor {
    /// `optional Unit unit = 3`.
    #[prost(int32, optional, tag = "3")]
    pub unit: Option<i32>,
    /// `optional string unit_name = 6`: a unit that `Unit` has no value for.
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// `CounterDescriptor.Unit.UNIT_SIZE_BYTES`.
pub const UNIT_SIZE_BYTES: i32 = 3;

/// `TrackEvent` (track_event.proto).
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct TrackEvent {
    /// `repeated uint64 category_iids = 3` (interned `EventCategory`).
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    /// `repeated DebugAnnotation debug_annotations = 4`: the event's arguments.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// `optional Type type = 9` ([`TYPE_SLICE_BEGIN`], ...).
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// `uint64 name_iid = 10` (in the oneof `name_field`; interned `EventName`).
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    /// `optional uint64 track_uuid = 11` (else the sequence's default track).
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// `repeated string categories = 22`: categories not interned.
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// `string name = 23` (in the oneof `name_field`): a name not interned.
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// `int64 counter_value = 30` (in the oneof `counter_value_field`).
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    /// `double double_counter_value = 44` (in the oneof `counter_value_field`).
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
    /// `repeated fixed64 flow_ids = 47`: flows that start (or pass) here.
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    /// `repeated fixed64 terminating_flow_ids = 48`: flows that end here.
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

/// `TrackEvent.Type.TYPE_SLICE_BEGIN`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
/// `TrackEvent.Type.TYPE_SLICE_END`.
pub const TYPE_SLICE_END: i32 = 2;
/// `TrackEvent.Type.TYPE_INSTANT`.
pub const TYPE_INSTANT: i32 = 3;
/// `TrackEvent.Type.TYPE_COUNTER`.
pub const TYPE_COUNTER: i32 = 4;

/// `DebugAnnotation` (debug_annotation.proto): one named argument.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct DebugAnnotation {
    /// `uint64 name_iid = 1` (in the oneof `name_field`; interned
    /// `DebugAnnotationName`).
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// `string name = 10` (in the oneof `name_field`): a name not interned.
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    /// `oneof value`.
    #[prost(oneof = "debug_annotation::Value", tags = "2, 3, 4, 6, 7, 17")]
    pub value: Option<debug_annotation::Value>,
}

/// Members of `DebugAnnotation.value`.
pub mod debug_annotation {
    /// `oneof value` of `DebugAnnotation` (the members kprof writes).
    #[derive(Clone, PartialEq, ::prost::Oneof)]
    pub enum Value {
        /// `bool bool_value = 2`.
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        /// `uint64 uint_value = 3`.
        #[prost(uint64, tag = "3")]
        UintValue(u64),
        /// `int64 int_value = 4`.
        #[prost(int64, tag = "4")]
        IntValue(i64),
        /// `string string_value = 6`.
        #[prost(string, tag = "6")]
        StringValue(String),
        /// `uint64 pointer_value = 7` (shown in hexadecimal).
        #[prost(uint64, tag = "7")]
        PointerValue(u64),
        /// `uint64 string_value_iid = 17` (interned
        /// `InternedData.debug_annotation_string_values`).
        #[prost(uint64, tag = "17")]
        StringValueIid(u64),
    }
}

/// `InternedData` (interned_data.proto): per-sequence tables of strings that
/// events refer to by iid.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct InternedData {
    /// `repeated EventCategory event_categories = 1`.
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<InternedString>,
    /// `repeated EventName event_names = 2`.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<InternedString>,
    /// `repeated DebugAnnotationName debug_annotation_names = 3`.
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<InternedString>,
    /// `repeated InternedString debug_annotation_string_values = 29`.
    #[prost(message, repeated, tag = "29")]
    pub debug_annotation_string_values: Vec<InternedBytes>,
}

impl InternedData {
    /// Whether no table has an entry.
    pub fn is_empty(&self) -> bool {
        self.event_categories.is_empty()
            && self.event_names.is_empty()
            && self.debug_annotation_names.is_empty()
            && self.debug_annotation_string_values.is_empty()
    }

    /// Empties every table, keeping their capacity.
    pub fn clear(&mut self) {
        self.event_categories.clear();
        self.event_names.clear();
        self.debug_annotation_names.clear();
        self.debug_annotation_string_values.clear();
    }
}

/// `EventCategory`, `EventName` and `DebugAnnotationName` share this shape:
/// `optional uint64 iid = 1; optional string name = 2`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct InternedString {
    /// `optional uint64 iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `optional string name = 2`.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `InternedString` (profile_common.proto): `optional uint64 iid = 1; optional
/// bytes str = 2`.
#[derive(Clone, PartialEq, ::prost::Message)]
pub struct InternedBytes {
    /// `optional uint64 iid = 1`.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// `optional bytes str = 2`.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}
