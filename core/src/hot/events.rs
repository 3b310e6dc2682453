//! Recording events: the functions behind the C table. Each takes a timestamp and
//! either adds the event to the calling thread's in-place profile (no trace, see
//! [`crate::hot::aggregate`]) or appends records to the thread's buffer — no lock, no
//! allocation, no system call, except on first sight of a thread, a name pointer,
//! a call path or a device. Memory and section events, whose meaning depends on
//! the order across threads, are always records.

use std::ffi::c_char;

use std::sync::atomic::{AtomicU64, Ordering};

use kprof_abi::{Activity, Anomaly, CopyEnd, Kind, Site, SpaceName};

use crate::base::devices::Device;
use crate::hot::counters::{Values, MAX_COUNTERS};
use crate::hot::current;
use crate::hot::nesting::{
    CopyInfo, DeviceActivity, Event, Extras, Opening, SiteRef, Transfer, ACTIVITY_ARGS,
};
use crate::hot::open::{GUID_SEQ_BITS, GUID_SEQ_MASK};
use crate::hot::record::{head, long, Op};
use crate::hot::runtime::{self, Runtime};
use crate::hot::thread::ThreadState;

/// Opens an instance; returns its GUID (0 when not recording).
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[inline(always)]
pub unsafe fn begin(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64 {
    begin_named(kind, dev, parent, |t, rt| {
        // SAFETY: forwarded from the caller.
        unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) }
    })
}

/// As [`begin`] for a name that stays unchanged for the rest of the process (a
/// plugin's string literal): the name cache hits on the pointer alone.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string never freed nor changed.
#[inline(always)]
pub unsafe fn begin_static(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64 {
    begin_named(kind, dev, parent, |t, rt| {
        // SAFETY: forwarded from the caller.
        unsafe { t.names.lookup_static(name, &rt.names, &rt.anomalies) }
    })
}

/// Opens an instance named by `name_id` (which looks the name up).
#[inline(always)]
fn begin_named(
    kind: u8,
    dev: u16,
    parent: u64,
    name_id: impl FnOnce(&mut ThreadState, &Runtime) -> u32,
) -> u64 {
    let Some(mut e) = current::enter() else {
        return 0;
    };
    let rt = e.rt;
    let t = e.t();
    let name = name_id(t, rt);
    let guid = t.open();
    let counters = t.read_counters(kind);
    // Timestamp last, so the lookup is not counted in the instance's time.
    let ts = rt.clock.now();
    let own = t.names.take_own();
    if let Some(ip) = t.in_place() {
        // A first sight of the name is kprof's time, not the enclosing instances'.
        if own != 0 {
            ip.add_own(own);
        }
        let o = (guid, kind, name, dev, ts);
        match counters {
            None if parent == 0 => ip.open_plain(o),
            None => ip.open_with(o, parent, None),
            Some(_) => {
                let extras = Extras {
                    counters,
                    ..Extras::NONE
                };
                ip.open_extras(o, parent, extras);
            }
        }
        return guid;
    }
    push_counters(t, counters);
    // Host instances of the first 2^16 names, close in time to the thread's last
    // event (nearly all): one word, or two with a parent.
    let short = match (t.delta(ts), u16::try_from(name)) {
        (Some(delta), Ok(name)) if dev == 0 => Some((delta, name)),
        _ => None,
    };
    match short {
        Some((delta, name)) if parent == 0 => {
            t.push([head(Op::BeginShort, kind, delta, name)], ts);
        }
        Some((delta, name)) => {
            let h = head(Op::BeginParentShort, kind, delta, name);
            t.push([h, parent], ts);
        }
        None if parent == 0 => t.push(long(ts, Op::Begin, kind, name, dev), ts),
        None => {
            let [h, time] = long(ts, Op::BeginParent, kind, name, dev);
            t.push([h, time, parent, 0], ts);
        }
    }
    guid
}

/// Appends the thread's counters read for the begin or end record that follows
/// (records mode).
#[inline(always)]
fn push_counters(t: &mut ThreadState, counters: Option<Values>) {
    if let Some(v) = counters {
        let mut words = [0u64; 2 + MAX_COUNTERS];
        words[0] = head(Op::Counters, 0, 0, 0);
        words[2..].copy_from_slice(&v);
        t.push_untimed(words);
    }
}

/// What a [`begin_at`] record carries besides the code address.
#[derive(Clone, Copy)]
pub enum AtExtra {
    /// Nothing.
    None,
    /// A data transfer of `bytes` in `direction`.
    Transfer {
        /// Bytes moved.
        bytes: u64,
        /// 0 allocation, 1 to device, 2 from device, 3 delete, 4 other.
        direction: u32,
    },
    /// One numeric argument, keyed by a string that stays unchanged for the rest
    /// of the process (as [`arg`]'s, in the same record).
    Arg {
        /// NUL-terminated key.
        key: *const c_char,
        /// The value.
        value: u64,
    },
}

/// Opens an instance named after code address `codeptr` (symbolized by the
/// writer), with `extra`.
///
/// # Safety
/// An [`AtExtra::Arg`] key is NULL or NUL-terminated, never freed nor changed.
#[inline]
pub unsafe fn begin_at(kind: u8, codeptr: u64, dev: u16, parent: u64, extra: AtExtra) -> u64 {
    let Some(mut e) = current::enter() else {
        return 0;
    };
    let rt = e.rt;
    let t = e.t();
    let key = match extra {
        // SAFETY: the caller's contract.
        AtExtra::Arg { key, .. } => unsafe { t.names.lookup_static(key, &rt.names, &rt.anomalies) },
        _ => 0,
    };
    let guid = t.open();
    if let Some(ip) = t.in_place() {
        let name = ip.code_name(codeptr);
        let extras = match extra {
            AtExtra::None => Extras::NONE,
            AtExtra::Transfer { bytes, direction } => Extras {
                transfer: Some(Transfer { bytes, direction }),
                ..Extras::NONE
            },
            AtExtra::Arg { value, .. } => Extras {
                arg: Some((key, value)),
                ..Extras::NONE
            },
        };
        let counters = t.read_counters(kind);
        // (`t` was borrowed for the counters: the profile again.)
        let Some(ip) = t.in_place() else {
            return guid;
        };
        let ts = rt.clock.now();
        let o = (guid, kind, name, dev, ts);
        match (extra, counters) {
            (AtExtra::None, None) if parent == 0 => ip.open_plain(o),
            (AtExtra::None, None) => ip.open_with(o, parent, None),
            (AtExtra::Arg { value, .. }, None) => ip.open_with(o, parent, Some((key, value))),
            _ => {
                let extras = Extras { counters, ..extras };
                ip.open_extras(o, parent, extras);
            }
        }
        return guid;
    }
    let counters = t.read_counters(kind);
    push_counters(t, counters);
    let ts = rt.clock.now();
    // The common case of host constructs nested where they run, close in time to
    // the thread's last event: the address by its code slot, one word (two with a
    // small argument), plus two the first time the slot holds the address.
    let short = match extra {
        _ if dev != 0 || parent != 0 => None,
        AtExtra::None => Some(None),
        AtExtra::Arg { value, .. } => u32::try_from(value).ok().map(|v| Some((key, v))),
        AtExtra::Transfer { .. } => None,
    };
    if let (Some(arg), Some(delta)) = (short, t.delta(ts)) {
        let (slot, define) = t.code_slot(codeptr);
        let def = head(Op::CodeDef, 0, 0, slot);
        match arg {
            None => {
                let h = head(Op::BeginCodeShort, kind, delta, slot);
                if define {
                    t.push([def, codeptr, h], ts);
                } else {
                    t.push([h], ts);
                }
            }
            Some((key, value)) => {
                let h = head(Op::BeginCodeArgShort, kind, delta, slot);
                let kv = u64::from(key) | u64::from(value) << 32;
                if define {
                    t.push([def, codeptr, h, kv], ts);
                } else {
                    t.push([h, kv], ts);
                }
            }
        }
        return guid;
    }
    match extra {
        // Without a code slot, the address still fits the head's 48 bits.
        AtExtra::None if dev == 0 && parent == 0 && codeptr >> 48 == 0 => {
            let (low, high) = (codeptr as u32, (codeptr >> 32) as u16);
            t.push(long(ts, Op::BeginCode, kind, low, high), ts);
        }
        AtExtra::None => {
            let [h, time] = long(ts, Op::BeginAt, kind, 0, dev);
            t.push([h, time, codeptr, parent], ts);
        }
        AtExtra::Transfer { bytes, direction } => {
            let [h, time] = long(ts, Op::BeginTransfer, kind, direction, dev);
            t.push([h, time, codeptr, parent, bytes, 0], ts);
        }
        AtExtra::Arg { value, .. } if parent == 0 => {
            let [h, time] = long(ts, Op::BeginAtArg, kind, key, dev);
            t.push([h, time, codeptr, value], ts);
        }
        AtExtra::Arg { value, .. } => {
            let [h, time] = long(ts, Op::BeginAt, kind, 0, dev);
            let [arg, no_time] = long(0, Op::Arg, 0, key, 0);
            t.push([h, time, codeptr, parent, arg, no_time, value, 0], ts);
        }
    }
    guid
}

/// Opens a data transfer named `name`.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn begin_transfer_named(
    kind: u8,
    name: *const c_char,
    dev: u16,
    parent: u64,
    bytes: u64,
    direction: u32,
) -> u64 {
    let Some(mut e) = current::enter() else {
        return 0;
    };
    let rt = e.rt;
    let t = e.t();
    // SAFETY: forwarded from the caller.
    let name = unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) };
    let guid = t.open();
    let counters = t.read_counters(kind);
    let ts = rt.clock.now();
    if let Some(ip) = t.in_place() {
        let extras = Extras {
            transfer: Some(Transfer { bytes, direction }),
            counters,
            ..Extras::NONE
        };
        ip.open_extras((guid, kind, name, dev, ts), parent, extras);
        return guid;
    }
    push_counters(t, counters);
    let [h, time] = long(ts, Op::BeginTransferNamed, kind, name, dev);
    let direction = u64::from(direction);
    t.push([h, time, parent, 0, bytes, direction], ts);
    guid
}

/// Records a dependence edge between two instances.
pub fn edge(kind: u8, from: u64, to: u64) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let ts = rt.clock.now();
    let t = e.t();
    let thread = t.index();
    if let Some(ip) = t.in_place() {
        if let Some(kind) = Kind::from_u8(kind) {
            ip.event(&Event::Edge {
                thread,
                kind,
                from,
                to,
                ts,
            });
        }
        return;
    }
    let [h, time] = long(ts, Op::Edge, kind, 0, 0);
    t.push([h, time, from, to], ts);
}

/// Attaches a numeric argument to the calling thread's innermost open instance.
/// The record carries no timestamp: it belongs to the instance, not to a time.
///
/// # Safety
/// `key` is NULL or NUL-terminated.
#[inline]
pub unsafe fn arg(key: *const c_char, value: u64) {
    arg_named(value, |t, rt| {
        // SAFETY: forwarded from the caller.
        unsafe { t.names.lookup(key, &rt.names, &rt.anomalies) }
    })
}

/// [`arg`] for a `key` that is never freed nor changed (a literal).
///
/// # Safety
/// `key` is NULL or NUL-terminated, and never changes.
#[inline]
pub unsafe fn arg_static(key: *const c_char, value: u64) {
    arg_named(value, |t, rt| {
        // SAFETY: forwarded from the caller.
        unsafe { t.names.lookup_static(key, &rt.names, &rt.anomalies) }
    })
}

#[inline(always)]
fn arg_named(value: u64, key_id: impl FnOnce(&mut ThreadState, &Runtime) -> u32) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let t = e.t();
    let key = key_id(t, rt);
    if let Some(ip) = t.in_place() {
        ip.arg(key, value);
        return;
    }
    let [h, no_time] = long(0, Op::Arg, 0, key, 0);
    t.push_untimed([h, no_time, value, 0]);
}

/// Names the calling thread.
pub fn thread_name(name: String) {
    if let Some(mut e) = current::enter() {
        e.t().slot().set_name(name);
    }
}

/// Closes instance `guid` of `kind` (0: the innermost open one of that kind).
#[inline(always)]
pub fn end(kind: u8, guid: u64) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    // Timestamp first, so recording is not counted in the instance's time.
    let ts = rt.clock.now();
    end_entered(e.t(), kind, guid, ts);
}

/// [`end`] on an entered thread, at raw time `ts`.
#[inline(always)]
fn end_entered(t: &mut ThreadState, kind: u8, guid: u64, ts: u64) {
    t.close();
    let counters = t.read_counters(kind);
    if let Some(ip) = t.in_place() {
        ip.close(ts, kind, guid, counters.as_ref());
        return;
    }
    end_records(t, kind, guid, ts, counters);
}

/// Opens an annotation region (`kprof_region_begin`): [`begin`] of a
/// [`Kind::UserRegion`], whose name goes on the thread's stack of open
/// regions so that [`region_end`] can check the name it is given.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn region_begin(name: *const c_char) -> u64 {
    begin_named(Kind::UserRegion as u8, 0, 0, |t, rt| {
        // SAFETY: forwarded from the caller.
        let id = unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) };
        t.regions.push(id);
        id
    })
}

/// Closes the annotation region `name` (`kprof_region_end`; NULL: the
/// innermost, unchecked). The innermost open region of that name, as nearly
/// always, ends as [`end`] ends it. Another name is a mismatch, counted and
/// noted with both names ([`Anomaly::MismatchedEnd`]) and repaired by the
/// rules for unbalanced ends: a region of that name open further out closes
/// with what is open inside it; none, the end is ignored.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn region_end(name: *const c_char) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    // Timestamp first: the name's check is not the region's time.
    let ts = rt.clock.now();
    let t = e.t();
    let top = t.regions.last().copied();
    let id = if name.is_null() {
        top
    } else {
        // SAFETY: forwarded from the caller.
        Some(unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) })
    };
    let closing = match (top, id) {
        (Some(top), Some(id)) if top == id => 1,
        _ => mismatched_end(&t.regions, rt, id),
    };
    for _ in 0..closing {
        t.regions.pop();
        end_entered(t, Kind::UserRegion as u8, 0, ts);
    }
    // A first sight of the name, after the ends: the enclosing regions' time.
    let own = t.names.take_own();
    if let Some(ip) = t.in_place() {
        ip.add_own(own);
    }
}

/// How many of the open annotation regions `open` (innermost last) an end
/// naming `id` (None: NULL with none open) closes when it is not the
/// innermost's: counted and noted.
#[cold]
#[inline(never)]
fn mismatched_end(open: &[u32], rt: &Runtime, id: Option<u32>) -> usize {
    let quoted = |id: u32| format!("\"{}\"", rt.names.text(id));
    let given = id.map_or_else(|| "NULL".to_string(), quoted);
    let pos = id.and_then(|id| open.iter().rposition(|&r| r == id));
    match (open.last(), pos) {
        (None, _) => {
            rt.anomalies.note(Anomaly::UnmatchedEnd, || {
                format!("kprof_region_end({given}) with no region open: ignored")
            });
            0
        }
        (Some(&top), Some(p)) => {
            let inside = open.len() - p - 1;
            rt.anomalies.note(Anomaly::MismatchedEnd, || {
                format!(
                    "kprof_region_end({given}) while {} was the innermost open region: \
                     closed {given} and the {inside} region(s) open inside it",
                    quoted(top)
                )
            });
            inside + 1
        }
        (Some(&top), None) => {
            rt.anomalies.note(Anomaly::MismatchedEnd, || {
                format!(
                    "kprof_region_end({given}) while {} was the innermost open region \
                     and no region {given} was open: ignored",
                    quoted(top)
                )
            });
            0
        }
    }
}

/// [`end`] with records (a trace, or `KPROF_IN_PLACE=0`): out of the in-place
/// path's line, which then keeps fewer registers.
#[inline(never)]
fn end_records(t: &mut ThreadState, kind: u8, guid: u64, ts: u64, counters: Option<Values>) {
    push_counters(t, counters);
    let back = if guid == 0 { Some(0) } else { t.back_ref(guid) };
    if let (Some(delta), Some(back)) = (t.delta(ts), back) {
        t.push([head(Op::EndShort, kind, delta, back)], ts);
    } else if guid == 0 || guid >> GUID_SEQ_BITS == u64::from(t.index()) {
        let seq = guid & GUID_SEQ_MASK;
        let words = long(ts, Op::End, kind, seq as u32, (seq >> 32) as u16);
        t.push(words, ts);
    } else {
        let [h, time] = long(ts, Op::EndGuid, kind, 0, 0);
        t.push([h, time, guid, 0], ts);
    }
}

/// As [`end`], at raw time `at` (a [`stamp`] taken earlier, on any thread;
/// 0: now) instead of now ([`kprof_abi::CoreApi::end_at`]): for ends a
/// runtime reports late. Never later than now, never before the thread's
/// last event (one thread's times only grow). `guid` of another thread's
/// instance (a thread parked where it cannot report the end itself) is kept
/// for the end of the run: that instance, if still open then, ends at `at`.
#[inline]
pub fn end_at(kind: u8, guid: u64, at: u64) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let now = rt.clock.now();
    let ts = if at == 0 { now } else { at.min(now) };
    let t = e.t();
    if guid != 0 && guid >> GUID_SEQ_BITS != u64::from(t.index()) {
        late_end(rt, guid, ts);
        return;
    }
    // Never before the thread's last event, as this thread's profile or
    // records saw it.
    let last = match t.in_place() {
        Some(ip) => ip.last_ts,
        None => t.last_time(),
    };
    end_entered(t, kind, guid, ts.max(last));
}

/// [`end_at`] of another thread's instance: kept for the end of the run (a
/// plugin reports these from its flush, not per event).
#[cold]
#[inline(never)]
fn late_end(rt: &Runtime, guid: u64, at: u64) {
    let mut late = rt.late_ends.lock().unwrap_or_else(|p| p.into_inner());
    late.push((guid, at));
}

/// The core clock now, raw ([`kprof_abi::CoreApi::stamp`]); 0 when not
/// recording.
#[inline(always)]
pub fn stamp() -> u64 {
    runtime::active().map_or(0, |rt| rt.clock.now())
}

/// Records a call whole ([`kprof_abi::Call`]): in place, its node, arguments
/// and message at once; with records, the begin, arguments, message and end
/// that the separate calls would have written, at the same times.
///
/// # Safety
/// The call's name, argument keys and channel are NULL or NUL-terminated,
/// never freed nor changed.
#[inline]
pub unsafe fn call(c: &kprof_abi::Call) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    // Timestamp first, so recording is not counted in the call's time.
    let end = rt.clock.now();
    let t = e.t();
    // SAFETY: the caller's contract, for every string.
    let name = unsafe { t.names.lookup_static(c.name, &rt.names, &rt.anomalies) };
    let mut args = [(0u32, 0u64); kprof_abi::CALL_ARGS];
    let n = usize::from(c.nargs).min(kprof_abi::CALL_ARGS);
    for (slot, a) in args.iter_mut().zip(&c.args[..n]) {
        // SAFETY: as above.
        let key = unsafe { t.names.lookup_static(a.key, &rt.names, &rt.anomalies) };
        *slot = (key, a.value);
    }
    let channel = if c.channel.is_null() {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { t.names.lookup_static(c.channel, &rt.names, &rt.anomalies) })
    };
    let thread = t.index();
    // A stamp from before the runtime started, or a clock read on another
    // CPU a little behind: the call then begins when it ends.
    let begin = if c.begin == 0 || c.begin > end {
        end
    } else {
        c.begin
    };
    if let Some(ip) = t.in_place() {
        let Some(kind) = Kind::from_u8(c.kind) else {
            rt.anomalies.count(Anomaly::UnknownEvent);
            return;
        };
        ip.call(kind, name, begin, end, &args[..n]);
        if let Some(channel) = channel {
            ip.event(&Event::Instant {
                thread,
                kind: Kind::Message,
                name: channel,
                a: c.message,
                b: c.bytes,
                ts: 0,
            });
        }
        return;
    }
    call_records(t, c, (name, channel), &args[..n], (begin, end));
}

/// [`call`] with records: the begin, arguments, message and end that separate
/// calls would have written (out of the in-place path's line).
#[inline(never)]
fn call_records(
    t: &mut ThreadState,
    c: &kprof_abi::Call,
    (name, channel): (u32, Option<u32>),
    args: &[(u32, u64)],
    (begin, end): (u64, u64),
) {
    // Never before the thread's last event (one thread's times only grow in
    // its buffer).
    let begin = if t.delta(begin).is_some() { begin } else { end };
    // The writer recounts the thread's GUIDs from its begins.
    let _ = t.open();
    match (t.delta(begin), u16::try_from(name)) {
        (Some(delta), Ok(short)) => t.push([head(Op::BeginShort, c.kind, delta, short)], begin),
        _ => t.push(long(begin, Op::Begin, c.kind, name, 0), begin),
    }
    for &(key, value) in args {
        let [h, no_time] = long(0, Op::Arg, 0, key, 0);
        t.push_untimed([h, no_time, value, 0]);
    }
    if let Some(channel) = channel {
        let [h, time] = long(end, Op::Instant, Kind::Message as u8, channel, 0);
        t.push([h, time, c.message, c.bytes], end);
    }
    t.close();
    match t.delta(end) {
        Some(delta) => t.push([head(Op::EndShort, c.kind, delta, 0)], end),
        None => t.push(long(end, Op::End, c.kind, 0, 0), end),
    }
}

/// Records an instant event.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn instant(kind: u8, name: *const c_char, a: u64, b: u64) {
    instant_named(kind, a, b, |t, rt| {
        // SAFETY: forwarded from the caller.
        unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) }
    })
}

/// [`instant`] for a `name` that is never freed nor changed (a literal).
///
/// # Safety
/// `name` is NULL or NUL-terminated, and never changes.
pub unsafe fn instant_static(kind: u8, name: *const c_char, a: u64, b: u64) {
    instant_named(kind, a, b, |t, rt| {
        // SAFETY: forwarded from the caller.
        unsafe { t.names.lookup_static(name, &rt.names, &rt.anomalies) }
    })
}

#[inline(always)]
fn instant_named(
    kind: u8,
    a: u64,
    b: u64,
    name_id: impl FnOnce(&mut ThreadState, &Runtime) -> u32,
) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let t = e.t();
    // A message aggregated in place has no time (it joins its matrix row, never
    // a timeline): no clock read, the larger part of its cost.
    let ts = if kind == Kind::Message as u8 && t.in_place().is_some() {
        0
    } else {
        rt.clock.now()
    };
    let name = name_id(t, rt);
    let thread = t.index();
    if let Some(ip) = t.in_place() {
        if let Some(kind) = Kind::from_u8(kind) {
            ip.event(&Event::Instant {
                thread,
                kind,
                name,
                a,
                b,
                ts,
            });
        }
        return;
    }
    let [h, time] = long(ts, Op::Instant, kind, name, 0);
    t.push([h, time, a, b], ts);
}

/// Records an allocation (`op` Alloc) or deallocation (`op` Free).
///
/// # Safety
/// `space.ptr` is NULL or readable for `space.max_len` bytes or to a NUL; `label` is
/// NULL or NUL-terminated.
pub unsafe fn memory(op: Op, space: SpaceName, label: *const c_char, ptr: u64, bytes: u64) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let ts = rt.clock.now();
    let t = e.t();
    // SAFETY: forwarded from the caller.
    let (space, label) = unsafe {
        (
            t.names
                .lookup_bounded(space.ptr, space.max_len, &rt.names, &rt.anomalies),
            t.names.lookup(label, &rt.names, &rt.anomalies),
        )
    };
    let [h, time] = long(ts, op, 0, label, 0);
    t.push([h, time, ptr, bytes, u64::from(space), 0], ts);
}

/// Opens a memory copy; returns its GUID.
///
/// # Safety
/// As [`memory`], for both ends.
pub unsafe fn copy_begin(dst: CopyEnd, src: CopyEnd, bytes: u64) -> u64 {
    let Some(mut e) = current::enter() else {
        return 0;
    };
    let rt = e.rt;
    let n = &rt.names;
    let t = e.t();
    let names = &mut t.names;
    // SAFETY: forwarded from the caller.
    let (dst_space, src_space, dst_label, src_label) = unsafe {
        (
            names.lookup_bounded(dst.space.ptr, dst.space.max_len, n, &rt.anomalies),
            names.lookup_bounded(src.space.ptr, src.space.max_len, n, &rt.anomalies),
            names.lookup(dst.label, n, &rt.anomalies),
            names.lookup(src.label, n, &rt.anomalies),
        )
    };
    let guid = t.open();
    let counters = t.read_counters(Kind::DeepCopy as u8);
    let ts = rt.clock.now();
    if let Some(ip) = t.in_place() {
        let copy = CopyInfo {
            bytes,
            src_label,
            dst_space,
            src_space,
        };
        ip.open(&Opening {
            guid,
            parent: 0,
            kind: Kind::DeepCopy as u8,
            name: dst_label,
            dev: 0,
            begin: ts,
            extras: Extras {
                copy: Some(copy),
                counters,
                ..Extras::NONE
            },
        });
        return guid;
    }
    push_counters(t, counters);
    let [h, time] = long(ts, Op::CopyBegin, Kind::DeepCopy as u8, dst_label, 0);
    let (dst_space, src_space) = (u64::from(dst_space), u64::from(src_space));
    let words = [h, time, bytes, u64::from(src_label), dst_space, src_space];
    t.push(words, ts);
    guid
}

/// Creates a section; returns its id (0 when not recording).
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn section_create(name: *const c_char) -> u32 {
    let Some(mut e) = current::enter() else {
        return 0;
    };
    let rt = e.rt;
    // SAFETY: forwarded from the caller.
    let name = unsafe { e.t().names.lookup(name, &rt.names, &rt.anomalies) };
    let mut s = rt.sections.lock().unwrap_or_else(|p| p.into_inner());
    s.push(name);
    s.len() as u32
}

/// Starts (`op` SectionStart) or stops (`op` SectionStop) section `id`.
pub fn section(op: Op, id: u32) {
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let ts = rt.clock.now();
    e.t().push(long(ts, op, 0, id, 0), ts);
}

/// Validates a section id on destroy (the totals stay in the profile).
pub fn section_destroy(id: u32) {
    let Some(e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let known = rt
        .sections
        .lock()
        .map(|s| id >= 1 && id as usize <= s.len());
    if !known.unwrap_or(false) {
        rt.anomalies.count(Anomaly::UnknownSection);
    }
}

/// Records a metadata pair; a NULL key or value is `<null>` and counted as a null
/// name, invalid UTF-8 is shown with U+FFFD and counted, as for every other name.
pub fn metadata(key: Option<&std::ffi::CStr>, value: Option<&std::ffi::CStr>) {
    let Some(e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let text = |s: Option<&std::ffi::CStr>| match s {
        None => {
            rt.anomalies.count(Anomaly::NullName);
            "<null>".to_string()
        }
        Some(s) => {
            if s.to_str().is_err() {
                rt.anomalies.count(Anomaly::InvalidUtf8Name);
            }
            s.to_string_lossy().into_owned()
        }
    };
    let pair = (text(key), text(value));
    rt.metadata
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(pair);
}

/// Index of a device.
pub fn device(d: Device) -> u16 {
    match runtime::get() {
        Some(rt) => rt.devices.index(d),
        None => 0,
    }
}

/// Counts an anomaly reported by a plugin.
pub fn anomaly(a: Anomaly) {
    if let Some(rt) = runtime::get() {
        rt.anomalies.count(a);
    }
}

/// The core clock now, in CLOCK_MONOTONIC nanoseconds (0 when not recording).
pub fn now_ns() -> u64 {
    runtime::active().map_or(0, |rt| rt.clock.to_ns(rt.clock.now()))
}

/// Numbers of site records (a trace is on): unique in the process, so the writer
/// never confuses two threads' sites, whichever thread reuses whose slot.
static SITES: AtomicU64 = AtomicU64::new(0);

/// The calling thread's innermost open instance as the site of device work it
/// launches now. In place, its node; with records, a site record the writer
/// resolves (the thread knows no nodes then).
pub fn site() -> Site {
    let Some(mut e) = current::enter() else {
        return Site::default();
    };
    let t = e.t();
    let index = t.index();
    if let Some(ip) = t.in_place() {
        return match ip.top() {
            Some((guid, node)) => Site {
                guid,
                node: SiteRef::Node {
                    thread: index,
                    node,
                }
                .word(),
            },
            None => Site::default(),
        };
    }
    let token = SITES.fetch_add(1, Ordering::Relaxed) + 1;
    let [h, _] = long(0, Op::Site, 0, token as u32, (token >> 32) as u16);
    t.push_untimed([h, 0]);
    Site {
        guid: 0,
        node: SiteRef::Token(token).word(),
    }
}

/// Records a device activity: into the calling thread's in-place profile, or as
/// a record (its own start and end, not the thread's time).
///
/// # Safety
/// The activity's name and argument keys are NULL or NUL-terminated, the keys
/// never freed nor changed.
pub unsafe fn activity(a: &Activity) {
    let Some(kind) = Kind::from_u8(a.kind).filter(|k| k.is_device_activity()) else {
        anomaly(Anomaly::UnknownEvent);
        return;
    };
    let Some(mut e) = current::enter() else {
        return;
    };
    let rt = e.rt;
    let t = e.t();
    // SAFETY: forwarded from the caller.
    let name = unsafe { t.names.lookup(a.name, &rt.names, &rt.anomalies) };
    let end_ns = if a.end_ns < a.start_ns {
        rt.anomalies.count(Anomaly::DeviceTimeInvalid);
        a.start_ns
    } else {
        a.end_ns
    };
    let mut args = [(0, 0); ACTIVITY_ARGS];
    let nargs = usize::from(a.nargs).min(ACTIVITY_ARGS);
    for (out, arg) in args.iter_mut().zip(&a.args).take(nargs) {
        // SAFETY: forwarded from the caller (keys are literals).
        let key = unsafe { t.names.lookup_static(arg.key, &rt.names, &rt.anomalies) };
        *out = (key, arg.value);
    }
    let site = if a.site.node != 0 {
        SiteRef::from_word(a.site.node)
    } else {
        SiteRef::Root
    };
    let act = DeviceActivity {
        thread: t.index(),
        kind,
        name,
        dev: a.dev,
        begin: rt.clock.from_ns(a.start_ns),
        end: rt.clock.from_ns(end_ns),
        begin_ns: a.start_ns,
        dur_ns: end_ns - a.start_ns,
        bytes: a.bytes,
        direction: a.direction,
        site,
        flow_from: if a.flow_from != 0 {
            a.flow_from
        } else {
            a.site.guid
        },
        args,
        nargs: nargs as u8,
    };
    if let Some(ip) = t.in_place() {
        let at = match site {
            SiteRef::Node { thread, node } => Some((thread, node)),
            _ => None,
        };
        ip.activity(&act, at);
        return;
    }
    let mut words = [0u64; 10 + 2 * ACTIVITY_ARGS];
    let [h, ts] = long(act.begin, Op::Activity, a.kind, name, a.dev);
    words[..2].copy_from_slice(&[h, ts]);
    words[2..10].copy_from_slice(&[
        act.end,
        act.bytes,
        site.word(),
        act.flow_from,
        u64::from(act.direction) | (nargs as u64) << 8,
        act.dur_ns,
        act.begin_ns,
        0,
    ]);
    for (k, &(key, value)) in args.iter().enumerate() {
        words[10 + 2 * k] = u64::from(key);
        words[11 + 2 * k] = value;
    }
    t.push_untimed(words);
}
