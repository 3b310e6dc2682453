//! Chrome / Trace Event Format JSON (`trace.json`), for chrome://tracing, Perfetto
//! and the many tools that read it.
//!
//! The file is the JSON Array Format: `[` then one event per line. Events are
//! buffered for one writer round and appended at each flush, so a killed process
//! leaves every complete round; the closing `]` comes at finish (readers accept the
//! array without it). Times are microseconds since the runtime's start (the absolute
//! CLOCK_MONOTONIC start is in a `clock_sync` metadata event and in profile.json).
//!
//! - slices are `X` events, written when they end; categories by source
//!   (`kokkos.parallel_for`), arguments for device, bytes and spaces;
//! - flows are version 2: a parent slice carries `bind_id` (its GUID) and
//!   `flow_out`, each child `flow_in` with the same `bind_id` (one source, many
//!   destinations). An event has one `bind_id`, so a slice that is itself the
//!   destination of a flow (an OpenMP region inside a Kokkos kernel) cannot be a
//!   source too: its outgoing arrows are only in the Perfetto trace;
//! - memory in use per space is a `C` counter, allocations and frees are
//!   process-scoped `i` events with label and bytes; markers and dual-view
//!   activity are thread-scoped `i` events; sections are async `b`/`e` slices;
//! - device activities (GPU kernels, copies) are `X` events on one pseudo-thread
//!   per device stream (tid [`DEVICE_TID`] + device index, named
//!   `"CUDA:0 stream 7"`), with their own times; the arrows from the launching
//!   API calls are only in the Perfetto trace;
//! - `M` events name the process and threads.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use kprof_abi::Kind;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::consume::concurrency::{Category, Point};
use crate::consume::profile::memory::Space;
use crate::consume::system::Metric;
use crate::consume::trace::writer::{thread_label, TraceWriter};
use crate::hot::nesting::{Consumer, DeviceActivity, Event, Global, Slice};
use crate::hot::runtime::Runtime;
use crate::output::{create_file, OutputError};

/// Text buffered before it is written out (bounds memory within a round).
const MAX_TEXT: usize = 1 << 20;
/// Ended slices held back so a parent's `flow_out` can still be set by a child on
/// another thread that the writer processes later; beyond this the oldest go out.
const MAX_ENDED: usize = 1 << 14;

/// Thread ids of device streams: above any Linux tid (`pid_max` is at most 2^22).
const DEVICE_TID: i64 = 1 << 30;

/// A slice that ended in this round, written at the next flush.
struct Pending {
    slice: Slice,
    end: u64,
}

/// The JSON trace writer.
pub struct ChromeWriter {
    rt: &'static Runtime,
    path: PathBuf,
    file: BufWriter<File>,
    /// Text of the events of this round that need no flow information.
    buf: String,
    /// Slices that ended this round (their `flow_out` is decided at flush).
    ended: Vec<Pending>,
    /// GUIDs of slices that are the source of at least one flow, not written yet.
    flow_sources: FxHashSet<u64>,
    /// GUIDs of open slices that are the destination of a flow (so not a source).
    flow_destinations: FxHashSet<u64>,
    /// Device streams whose pseudo-thread is named.
    devices_named: FxHashSet<u32>,
    /// Sources written (with `flow_out`) in this round and the one before: a child
    /// whose end the writer processes after its parent's may still bind to them.
    written_sources: [FxHashSet<u64>; 2],
    /// JSON-escaped names by name id.
    names: FxHashMap<u32, String>,
    /// Threads whose metadata was written: index -> OS tid.
    threads: FxHashMap<u32, i32>,
    spaces: FxHashMap<u32, Space>,
    /// JSON-escaped counter names of the system metrics (`KPROF_SAMPLE_MS`).
    system_names: Vec<String>,
    first: bool,
    pid: u32,
    /// A write that failed between flushes, reported by the next flush.
    error: Option<std::io::Error>,
}

impl ChromeWriter {
    /// Creates `path` and writes the process metadata.
    pub fn create(path: &Path, rt: &'static Runtime) -> Result<ChromeWriter, OutputError> {
        let file = create_file(path)?;
        let mut w = ChromeWriter {
            rt,
            path: path.to_path_buf(),
            file,
            buf: String::with_capacity(1 << 16),
            ended: Vec::new(),
            flow_sources: FxHashSet::default(),
            flow_destinations: FxHashSet::default(),
            devices_named: FxHashSet::default(),
            written_sources: Default::default(),
            names: FxHashMap::default(),
            threads: FxHashMap::default(),
            spaces: FxHashMap::default(),
            system_names: Vec::new(),
            first: true,
            pid: rt.process.pid,
            error: None,
        };
        let p = &rt.process;
        let mut label = format!("{} (pid {}", p.executable, p.pid);
        if let Some(r) = p.rank {
            let _ = write!(label, ", rank {r}");
        }
        label.push(')');
        let pid = w.pid;
        w.emit(format_args!(
            r#"{{"ph":"M","name":"process_name","pid":{pid},"args":{{"name":{}}}}}"#,
            json(&label)
        ));
        let start_ns = rt.clock.to_ns(rt.start_raw);
        w.emit(format_args!(
            r#"{{"ph":"M","name":"clock_sync","pid":{pid},"args":{{"domain":"CLOCK_MONOTONIC","start_ns":{start_ns},"source":"{}"}}}}"#,
            rt.clock.source().as_str()
        ));
        Ok(w)
    }

    /// Appends one event to the round's buffer, handing the buffer to the file
    /// when it is large (write errors surface at the next flush).
    fn emit(&mut self, args: std::fmt::Arguments<'_>) {
        self.buf.push_str(if self.first { "[\n" } else { ",\n" });
        self.first = false;
        let _ = self.buf.write_fmt(args);
        if self.buf.len() >= MAX_TEXT {
            if let Err(e) = self.file.write_all(self.buf.as_bytes()) {
                self.error.get_or_insert(e);
            }
            self.buf.clear();
        }
    }

    /// Microseconds since the runtime's start, with nanosecond digits.
    fn us(&self, raw: u64) -> String {
        let ns = self.rt.clock.delta_ns(self.rt.start_raw, raw);
        format!("{}.{:03}", ns / 1000, ns % 1000)
    }

    fn name(&mut self, id: u32) -> String {
        let rt = self.rt;
        self.names
            .entry(id)
            .or_insert_with(|| json(&rt.names.text(id)))
            .clone()
    }

    /// The OS tid of thread `index`, writing its metadata on first sight.
    fn tid(&mut self, index: u32) -> i32 {
        if let Some(&tid) = self.threads.get(&index) {
            return tid;
        }
        let slot = self
            .rt
            .threads
            .snapshot()
            .into_iter()
            .find(|s| s.index == index);
        let (tid, name) = slot.map_or((index as i32, String::new()), |s| (s.tid, s.name()));
        self.threads.insert(index, tid);
        let pid = self.pid;
        let label = thread_label(&name, index);
        self.emit(format_args!(
            r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"args":{{"name":{}}}}}"#,
            json(&label)
        ));
        self.emit(format_args!(
            r#"{{"ph":"M","name":"thread_sort_index","pid":{pid},"tid":{tid},"args":{{"sort_index":{index}}}}}"#
        ));
        tid
    }

    /// The pseudo-thread of device (stream) `dev` (of its synchronizations with
    /// `sync`: they overlap the stream's work), named on first use.
    fn device_tid(&mut self, dev: u16, sync: bool) -> i64 {
        let key = u32::from(dev) | u32::from(sync) << 16;
        let tid = DEVICE_TID + i64::from(key);
        if self.devices_named.insert(key) {
            let label = crate::base::devices::track_name(self.rt.devices.get(dev), dev, sync);
            let pid = self.pid;
            self.emit(format_args!(
                r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"args":{{"name":{}}}}}"#,
                json(&label)
            ));
        }
        tid
    }

    /// A device activity: an `X` event on its stream's pseudo-thread.
    fn device_activity(&mut self, a: &DeviceActivity) {
        let tid = self.device_tid(a.dev, a.kind == Kind::GpuSync);
        let name = self.name(a.name);
        let ns = a
            .begin_ns
            .saturating_sub(self.rt.clock.to_ns(self.rt.start_raw));
        let ts = format!("{}.{:03}", ns / 1000, ns % 1000);
        let ns = a.dur_ns;
        let mut args = format!(r#""bytes":{}"#, a.bytes);
        for &(k, v) in a.args() {
            let _ = write!(args, r#",{}:{v}"#, json(&self.rt.names.text(k)));
        }
        let pid = self.pid;
        self.emit(format_args!(
            r#"{{"ph":"X","name":{name},"cat":"{}","ts":{ts},"dur":{}.{:03},"pid":{pid},"tid":{tid},"args":{{{args}}}}}"#,
            a.kind.category(),
            ns / 1000,
            ns % 1000
        ));
    }

    /// Arguments of a slice: device, copy details.
    fn slice_args(&mut self, s: &Slice) -> String {
        let mut a = String::new();
        if let Some(d) = self.rt.devices.get(s.dev) {
            let _ = write!(
                a,
                r#""device":{},"device_index":{},"instance":{}"#,
                json(&d.backend),
                d.index,
                d.instance
            );
        }
        for &(key, value) in s.args() {
            if !a.is_empty() {
                a.push(',');
            }
            let key = self.name(key);
            let _ = write!(a, "{key}:{value}");
        }
        if let Some(t) = s.transfer {
            if !a.is_empty() {
                a.push(',');
            }
            let direction = match t.direction {
                0 => "alloc",
                1 => "to_device",
                2 => "from_device",
                3 => "delete",
                _ => "other",
            };
            let _ = write!(a, r#""bytes":{},"direction":"{direction}""#, t.bytes);
        }
        // What a counted slice counted (`KPROF_COUNTERS`).
        if let (Some(counted), Some(c)) = (s.counted(), self.rt.counters.as_ref()) {
            for (name, v) in c.names.iter().zip(counted) {
                if !a.is_empty() {
                    a.push(',');
                }
                let _ = write!(a, "{}:{v}", json(name));
            }
        }
        if s.end_lost {
            // Drawn up to where recording resumed: the real end is unknown.
            if !a.is_empty() {
                a.push(',');
            }
            a.push_str(r#""end_lost":"records dropped: ends where recording resumed""#);
        }
        if let Some(c) = s.copy {
            if !a.is_empty() {
                a.push(',');
            }
            let (dst, src) = (self.name(c.dst_space), self.name(c.src_space));
            let (dl, sl) = (self.name(s.name), self.name(c.src_label));
            let _ = write!(
                a,
                r#""bytes":{},"dst_space":{dst},"dst_label":{dl},"src_space":{src},"src_label":{sl}"#,
                c.bytes
            );
        }
        a
    }

    fn write_slice(&mut self, p: &Pending) {
        let s = &p.slice;
        let tid = self.tid(s.thread);
        let name = match s.copy {
            Some(c) => json(&format!(
                "{} <- {}",
                self.rt.names.text(s.name),
                self.rt.names.text(c.src_label)
            )),
            None => self.name(s.name),
        };
        let (ts, dur) = (self.us(s.begin), {
            let ns = self.rt.clock.delta_ns(s.begin, p.end);
            format!("{}.{:03}", ns / 1000, ns % 1000)
        });
        let args = self.slice_args(s);
        let mut flow = String::new();
        if self.flow_sources.remove(&s.guid) {
            self.written_sources[0].insert(s.guid);
            let _ = write!(flow, r#","bind_id":"{:#x}","flow_out":true"#, s.guid);
        }
        let destination = self.flow_destinations.remove(&s.guid);
        if let Some(parent) = s.flow_parent() {
            // A parent written long ago without flow_out would leave a dangling end.
            let bound = self.flow_sources.contains(&parent)
                || self.written_sources.iter().any(|w| w.contains(&parent));
            if flow.is_empty() && bound && destination {
                let _ = write!(flow, r#","bind_id":"{parent:#x}","flow_in":true"#);
            }
        }
        let pid = self.pid;
        self.emit(format_args!(
            r#"{{"ph":"X","name":{name},"cat":"{}","ts":{ts},"dur":{dur},"pid":{pid},"tid":{tid}{flow},"args":{{{args}}}}}"#,
            s.kind.category()
        ));
    }
}

impl Consumer for ChromeWriter {
    fn event(&mut self, ev: &Event<'_>) {
        match *ev {
            // Dependence edges are in the profile's task graph; creation ->
            // execution arrows come from explicit parents.
            Event::Edge { .. } | Event::Site { .. } => {}
            Event::Activity(a) => self.device_activity(a),
            Event::Begin(s) => {
                if let Some(parent) = s.flow_parent() {
                    if !self.flow_destinations.contains(&parent) {
                        self.flow_sources.insert(parent);
                        self.flow_destinations.insert(s.guid);
                    }
                }
            }
            Event::End(s, end) => {
                self.ended.push(Pending { slice: *s, end });
                if self.ended.len() >= MAX_ENDED {
                    let oldest: Vec<Pending> = self.ended.drain(..MAX_ENDED / 2).collect();
                    for p in &oldest {
                        self.write_slice(p);
                    }
                }
            }
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
            } => {
                if kind == Kind::UserCounter {
                    let (name, ts, pid) = (self.name(name), self.us(ts), self.pid);
                    let value = f64::from_bits(a);
                    // JSON has no NaN or infinity: those values are left out.
                    if value.is_finite() {
                        self.emit(format_args!(
                            r#"{{"ph":"C","name":{name},"cat":"user.counter","ts":{ts},"pid":{pid},"args":{{"value":{value}}}}}"#
                        ));
                    }
                    return;
                }
                let tid = self.tid(thread);
                let (name, ts, pid) = (self.name(name), self.us(ts), self.pid);
                let args = match kind {
                    Kind::DualViewSync => format!(r#""pointer":"{a:#x}","to_device":{}"#, b != 0),
                    Kind::DualViewModify => {
                        format!(r#""pointer":"{a:#x}","on_device":{}"#, b != 0)
                    }
                    _ => String::new(),
                };
                self.emit(format_args!(
                    r#"{{"ph":"i","s":"t","name":{name},"cat":"{}","ts":{ts},"pid":{pid},"tid":{tid},"args":{{{args}}}}}"#,
                    kind.category()
                ));
            }
        }
    }

    fn global(&mut self, ts: u64, ev: &Global) {
        let (t, pid) = (self.us(ts), self.pid);
        match *ev {
            Global::Alloc {
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
            } => {
                let alloc = matches!(ev, Global::Alloc { .. });
                let current = {
                    let s = self.spaces.entry(space).or_default();
                    if alloc {
                        s.alloc(ts, label, ptr, bytes);
                    } else {
                        s.free(ptr);
                    }
                    s.current
                };
                let (sp, lb) = (self.name(space), self.name(label));
                let what = if alloc { "allocate" } else { "deallocate" };
                self.emit(format_args!(
                    r#"{{"ph":"i","s":"p","name":"{what}","cat":"kokkos.memory","ts":{t},"pid":{pid},"args":{{"label":{lb},"bytes":{bytes},"space":{sp},"address":"{ptr:#x}"}}}}"#
                ));
                let counter = json(&format!("memory {}", self.rt.names.text(space)));
                self.emit(format_args!(
                    r#"{{"ph":"C","name":{counter},"cat":"kokkos.memory","ts":{t},"pid":{pid},"args":{{"bytes":{current}}}}}"#
                ));
            }
            Global::SectionStart(id) | Global::SectionStop(id) => {
                let name_id = self
                    .rt
                    .sections
                    .lock()
                    .ok()
                    .and_then(|s| s.get((id as usize).checked_sub(1)?).copied());
                let Some(name_id) = name_id else { return };
                let name = self.name(name_id);
                let ph = if matches!(ev, Global::SectionStart(_)) {
                    'b'
                } else {
                    'e'
                };
                self.emit(format_args!(
                    r#"{{"ph":"{ph}","name":{name},"cat":"kokkos.section","id":"{id:#x}","ts":{t},"pid":{pid}}}"#
                ));
            }
        }
    }
}

impl TraceWriter for ChromeWriter {
    fn path(&self) -> &Path {
        &self.path
    }

    fn sample(&mut self, ts: u64, metrics: &[Metric], values: &[f64]) {
        if self.system_names.len() != metrics.len() {
            self.system_names = metrics.iter().map(|m| json(&m.track_name())).collect();
        }
        let (ts, pid) = (self.us(ts), self.pid);
        let names = std::mem::take(&mut self.system_names);
        for (name, &value) in names.iter().zip(values) {
            // JSON has no NaN: a metric without a value this time is left out.
            if value.is_finite() {
                self.emit(format_args!(
                    r#"{{"ph":"C","name":{name},"cat":"system","ts":{ts},"pid":{pid},"args":{{"value":{value}}}}}"#
                ));
            }
        }
        self.system_names = names;
    }

    /// One `C` event named `threads` with a value per category: a stacked area.
    fn concurrency(&mut self, p: &Point) {
        let (ts, pid) = (self.us(p.ts), self.pid);
        let mut args = String::with_capacity(128);
        for c in Category::ALL {
            if !args.is_empty() {
                args.push(',');
            }
            let _ = write!(args, r#""{}":{}"#, c.as_str(), p.counts[c as usize]);
        }
        self.emit(format_args!(
            r#"{{"ph":"C","name":"threads","cat":"kprof.concurrency","ts":{ts},"pid":{pid},"args":{{{args}}}}}"#
        ));
    }

    fn flush(&mut self) -> Result<(), OutputError> {
        let ended = std::mem::take(&mut self.ended);
        for p in &ended {
            self.write_slice(p);
        }
        self.written_sources.swap(0, 1);
        self.written_sources[0].clear();
        let err = |source| OutputError::File {
            path: self.path.display().to_string(),
            source,
        };
        if let Some(e) = self.error.take() {
            return Err(err(e));
        }
        self.file.write_all(self.buf.as_bytes()).map_err(err)?;
        self.buf.clear();
        // Hand the round to the kernel: it survives the process being killed.
        self.file.flush().map_err(err)
    }

    fn finish(mut self: Box<Self>) -> Result<PathBuf, OutputError> {
        self.flush()?;
        let tail: &[u8] = if self.first { b"[\n]\n" } else { b"\n]\n" };
        let path = self.path.clone();
        let err = |source| OutputError::File {
            path: path.display().to_string(),
            source,
        };
        self.file.write_all(tail).map_err(err)?;
        self.file.flush().map_err(err)?;
        Ok(path)
    }
}

/// `s` as a JSON string literal.
fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
