//! Reading `profile.json` for `kprof report` in one streaming pass: everything but
//! the call-path tree into the report's types, and the tree node by node to a
//! [`Sink`] that keeps only what the chosen view shows. A profile of a million
//! call paths is then never held whole (the tree held whole costs about 224 bytes
//! a node).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use kprof_core::output::report::{ArgRange, NodeCounters, Report, ThreadSpread, TreeNode, SCHEMA};
use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::load::MAX_JSON_DEPTH;

/// What reads the tree as it streams by, depth first.
pub trait Sink {
    /// A node before its children, at `depth` (roots at 0). `node.children` is
    /// not to be read: a streamed node comes without them.
    fn enter(&mut self, depth: usize, node: &TreeNode);
    /// The end of the node entered last at `depth`, after all its children.
    fn leave(&mut self, depth: usize);
}

/// Feeds a tree held in memory to `sink`, as [`read`] feeds a streamed one.
pub fn walk(tree: &[TreeNode], sink: &mut dyn Sink) {
    fn go(nodes: &[TreeNode], depth: usize, sink: &mut dyn Sink) {
        for n in nodes {
            sink.enter(depth, n);
            go(&n.children, depth + 1, sink);
            sink.leave(depth);
        }
    }
    go(tree, 0, sink);
}

/// A node with no name, kind, figures or children.
pub fn blank() -> TreeNode {
    TreeNode {
        name: Cow::Borrowed(""),
        kind: Cow::Borrowed(""),
        device: None,
        device_index: None,
        instance: None,
        count: 0,
        total_ns: 0,
        self_ns: 0,
        min_ns: 0,
        max_ns: 0,
        mean_ns: 0.0,
        stddev_ns: 0.0,
        threads: None,
        args: BTreeMap::new(),
        counters: None,
        samples: None,
        stack_samples: None,
        children: Vec::new(),
    }
}

/// A node's own fields, without its children (what a sink keeps of it).
pub fn bare(n: &TreeNode) -> TreeNode {
    TreeNode {
        name: n.name.clone(),
        kind: n.kind.clone(),
        device: n.device.clone(),
        device_index: n.device_index,
        instance: n.instance,
        count: n.count,
        total_ns: n.total_ns,
        self_ns: n.self_ns,
        min_ns: n.min_ns,
        max_ns: n.max_ns,
        mean_ns: n.mean_ns,
        stddev_ns: n.stddev_ns,
        threads: n.threads.clone(),
        args: n.args.clone(),
        counters: n.counters.clone(),
        samples: n.samples.clone(),
        stack_samples: n.stack_samples.clone(),
        children: Vec::new(),
    }
}

/// Reads the single-process profile at `path`, its tree to `sink`; `None` when
/// that cannot be done in one pass (another schema, invalid JSON, a node whose
/// `children` is not its last member, as kprof never writes it). The caller then
/// loads it whole with a fresh sink: the sink may have seen part of the tree.
pub fn read(path: &Path, sink: &mut dyn Sink) -> Option<Report> {
    let file = std::fs::File::open(path).ok()?;
    let mut de =
        serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(1 << 16, file));
    de.disable_recursion_limit();
    let report = ReportSeed { sink }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(report)
}

/// The report: `tree` streamed to the sink, every other member kept as JSON and
/// read into [`Report`] at the end (they are small).
struct ReportSeed<'s> {
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for ReportSeed<'_> {
    type Value = Report;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Report, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ReportSeed<'_> {
    type Value = Report;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a kprof profile")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Report, A::Error> {
        let mut rest = Map::new();
        let mut tree = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "tree" {
                if tree {
                    return Err(A::Error::duplicate_field("tree"));
                }
                tree = true;
                map.next_value_seed(Nodes {
                    depth: 0,
                    sink: &mut *self.sink,
                })?;
                continue;
            }
            // Inside the profile's object: one level used.
            let value = map.next_value_seed(Bounded(MAX_JSON_DEPTH - 1))?;
            // A merged profile has other nodes: stop at its schema (written first).
            if key == "schema" && value.as_str() != Some(SCHEMA) {
                return Err(A::Error::custom("not a single-process profile"));
            }
            if rest.insert(key, value).is_some() {
                return Err(A::Error::custom("duplicate member"));
            }
        }
        let report = Report::deserialize(Value::Object(rest)).map_err(A::Error::custom)?;
        if report.schema != SCHEMA {
            return Err(A::Error::custom("not a single-process profile"));
        }
        Ok(report)
    }
}

/// A list of sibling nodes at `depth`.
struct Nodes<'s> {
    depth: usize,
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for Nodes<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Nodes<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of tree nodes")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Node {
                depth: self.depth,
                sink: &mut *self.sink,
            })?
            .is_some()
        {}
        Ok(())
    }
}

/// One node: its fields, then (its last member) its children.
struct Node<'s> {
    depth: usize,
    sink: &'s mut dyn Sink,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// The members of a node, as [`TreeNode`] names them.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Name,
    Kind,
    Device,
    DeviceIndex,
    Instance,
    Count,
    TotalNs,
    SelfNs,
    MinNs,
    MaxNs,
    MeanNs,
    StddevNs,
    Threads,
    Args,
    Counters,
    Samples,
    StackSamples,
    Children,
    Other,
}

impl Field {
    /// The members a node must have (the others default to none).
    const REQUIRED: [Field; 10] = [
        Field::Name,
        Field::Kind,
        Field::Count,
        Field::TotalNs,
        Field::SelfNs,
        Field::MinNs,
        Field::MaxNs,
        Field::MeanNs,
        Field::StddevNs,
        Field::Children,
    ];

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Field, D::Error> {
        struct Names;
        impl Visitor<'_> for Names {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member of a tree node")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "name" => Field::Name,
                    "kind" => Field::Kind,
                    "device" => Field::Device,
                    "device_index" => Field::DeviceIndex,
                    "instance" => Field::Instance,
                    "count" => Field::Count,
                    "total_ns" => Field::TotalNs,
                    "self_ns" => Field::SelfNs,
                    "min_ns" => Field::MinNs,
                    "max_ns" => Field::MaxNs,
                    "mean_ns" => Field::MeanNs,
                    "stddev_ns" => Field::StddevNs,
                    "threads" => Field::Threads,
                    "args" => Field::Args,
                    "counters" => Field::Counters,
                    "samples" => Field::Samples,
                    "stack_samples" => Field::StackSamples,
                    "children" => Field::Children,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_identifier(Names)
    }
}

/// A node's kind, as the runtime's own static text when it is one of its kinds
/// (a million nodes share a handful of kinds).
struct KindText(Cow<'static, str>);

impl<'de> Deserialize<'de> for KindText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KindText, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = KindText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a kind")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<KindText, E> {
                Ok(KindText(
                    match kprof_abi::Kind::ALL.iter().find(|k| k.as_str() == v) {
                        Some(k) => Cow::Borrowed(k.as_str()),
                        None => Cow::Owned(v.to_string()),
                    },
                ))
            }
        }
        d.deserialize_str(Text)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tree node")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // The reader recurses per level: it reads no deeper than the whole load
        // does (the profile's object, `tree`, then an object and a `children`
        // list per level; a node's own members nest at most 3 deep).
        let at = 3 + 2 * self.depth;
        if at + 3 > MAX_JSON_DEPTH {
            return Err(A::Error::custom("nested too deep"));
        }
        let mut n = blank();
        let mut seen = 0u32;
        while let Some(field) = map.next_key::<Field>()? {
            if seen & Field::Children.bit() != 0 {
                return Err(A::Error::custom("a member after a node's children"));
            }
            if field != Field::Other {
                if seen & field.bit() != 0 {
                    return Err(A::Error::custom("duplicate member of a tree node"));
                }
                seen |= field.bit();
            }
            match field {
                Field::Name => n.name = Cow::Owned(map.next_value::<String>()?),
                Field::Kind => n.kind = map.next_value::<KindText>()?.0,
                Field::Device => n.device = map.next_value()?,
                Field::DeviceIndex => n.device_index = map.next_value()?,
                Field::Instance => n.instance = map.next_value()?,
                Field::Count => n.count = map.next_value()?,
                Field::TotalNs => n.total_ns = map.next_value()?,
                Field::SelfNs => n.self_ns = map.next_value()?,
                Field::MinNs => n.min_ns = map.next_value()?,
                Field::MaxNs => n.max_ns = map.next_value()?,
                Field::MeanNs => n.mean_ns = map.next_value()?,
                Field::StddevNs => n.stddev_ns = map.next_value()?,
                Field::Threads => n.threads = map.next_value::<Option<Box<ThreadSpread>>>()?,
                Field::Args => n.args = map.next_value::<BTreeMap<String, ArgRange>>()?,
                Field::Counters => n.counters = map.next_value::<Option<Box<NodeCounters>>>()?,
                Field::Samples => n.samples = map.next_value::<Option<Box<Vec<[u64; 2]>>>>()?,
                Field::StackSamples => n.stack_samples = map.next_value()?,
                Field::Children => {
                    let missing = |f: &&Field| **f != Field::Children && seen & f.bit() == 0;
                    if Field::REQUIRED.iter().any(|f| missing(&f)) {
                        return Err(A::Error::custom("a node's member missing"));
                    }
                    self.sink.enter(self.depth, &n);
                    map.next_value_seed(Nodes {
                        depth: self.depth + 1,
                        sink: &mut *self.sink,
                    })?;
                }
                Field::Other => {
                    map.next_value_seed(Bounded(MAX_JSON_DEPTH.saturating_sub(at)))?;
                }
            }
        }
        if seen & Field::Children.bit() == 0 {
            return Err(A::Error::missing_field("children"));
        }
        self.sink.leave(self.depth);
        Ok(())
    }
}

/// Any JSON value, nested at most this many containers deep (what serde_json's
/// own `Value` reads, with the depth bounded instead of the whole file scanned
/// for it first).
struct Bounded(usize);

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self
            .0
            .checked_sub(1)
            .ok_or_else(|| A::Error::custom("nested too deep"))?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Bounded(inner))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self
            .0
            .checked_sub(1)
            .ok_or_else(|| A::Error::custom("nested too deep"))?;
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(Bounded(inner))?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}
