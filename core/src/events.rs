//! Recording events: the functions behind the C table. Each takes a timestamp and
//! appends records to the calling thread's buffer — no lock, no allocation, no system
//! call, except on first sight of a thread, a name pointer or a device.

use std::ffi::c_char;

use kprof_abi::{Anomaly, CopyEnd, Kind, SpaceName};

use crate::devices::Device;
use crate::record::{Op, Record};
use crate::runtime::{self, active, inactive_call};
use crate::thread::{with_thread, GUID_SEQ_BITS, GUID_SEQ_MASK};

/// Opens an instance; returns its GUID (0 when not recording).
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[inline(always)]
pub unsafe fn begin(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64 {
    let Some(rt) = active() else {
        inactive_call();
        return 0;
    };
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let name = unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) };
        let guid = t.open();
        // Timestamp last, so the lookup is not counted in the instance's time.
        let ts = rt.clock.now();
        if parent == 0 {
            t.push(rt, Record::head(ts, Op::Begin, kind, name, dev));
        } else {
            let head = Record::head(ts, Op::BeginParent, kind, name, dev);
            t.push_n(rt, &[head, Record::ext(parent, 0)]);
        }
        guid
    })
}

/// Opens an instance named after code address `codeptr` (symbolized by the
/// writer); with `transfer`, a data transfer of `(bytes, direction)`.
#[inline]
pub fn begin_at(
    kind: u8,
    codeptr: u64,
    dev: u16,
    parent: u64,
    transfer: Option<(u64, u32)>,
) -> u64 {
    let Some(rt) = active() else {
        inactive_call();
        return 0;
    };
    with_thread(rt, |t| {
        let guid = t.open();
        let ts = rt.clock.now();
        match transfer {
            None => {
                let head = Record::head(ts, Op::BeginAt, kind, 0, dev);
                t.push_n(rt, &[head, Record::ext(codeptr, parent)]);
            }
            Some((bytes, direction)) => {
                let head = Record::head(ts, Op::BeginTransfer, kind, direction, dev);
                let units = [head, Record::ext(codeptr, parent), Record::ext(bytes, 0)];
                t.push_n(rt, &units);
            }
        }
        guid
    })
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
    let Some(rt) = active() else {
        inactive_call();
        return 0;
    };
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let name = unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) };
        let guid = t.open();
        let head = Record::head(rt.clock.now(), Op::BeginTransferNamed, kind, name, dev);
        let units = [
            head,
            Record::ext(parent, 0),
            Record::ext(bytes, u64::from(direction)),
        ];
        t.push_n(rt, &units);
        guid
    })
}

/// Records a dependence edge between two instances.
pub fn edge(kind: u8, from: u64, to: u64) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    let ts = rt.clock.now();
    with_thread(rt, |t| {
        let head = Record::head(ts, Op::Edge, kind, 0, 0);
        t.push_n(rt, &[head, Record::ext(from, to)]);
    });
}

/// Attaches a numeric argument to the calling thread's innermost open instance.
/// The record carries no timestamp: it belongs to the instance, not to a time.
///
/// # Safety
/// `key` is NULL or NUL-terminated.
#[inline]
pub unsafe fn arg(key: *const c_char, value: u64) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let key = unsafe { t.names.lookup(key, &rt.names, &rt.anomalies) };
        let head = Record::head(0, Op::Arg, 0, key, 0);
        t.push_n(rt, &[head, Record::ext(value, 0)]);
    });
}

/// Names the calling thread.
pub fn thread_name(name: String) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    with_thread(rt, |t| t.slot().set_name(name));
}

/// Closes instance `guid` of `kind` (0: the innermost open one of that kind).
#[inline(always)]
pub fn end(kind: u8, guid: u64) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    // Timestamp first, so recording is not counted in the instance's time.
    let ts = rt.clock.now();
    with_thread(rt, |t| {
        t.close();
        let seq = guid & GUID_SEQ_MASK;
        if guid == 0 || guid >> GUID_SEQ_BITS == u64::from(t.index()) {
            t.push(
                rt,
                Record::head(ts, Op::End, kind, seq as u32, (seq >> 32) as u16),
            );
        } else {
            let head = Record::head(ts, Op::EndGuid, kind, 0, 0);
            t.push_n(rt, &[head, Record::ext(guid, 0)]);
        }
    });
}

/// Records an instant event.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn instant(kind: u8, name: *const c_char, a: u64, b: u64) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    let ts = rt.clock.now();
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let name = unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) };
        let head = Record::head(ts, Op::Instant, kind, name, 0);
        t.push_n(rt, &[head, Record::ext(a, b)]);
    });
}

/// Records an allocation (`op` Alloc) or deallocation (`op` Free).
///
/// # Safety
/// `space.ptr` is NULL or readable for `space.max_len` bytes or to a NUL; `label` is
/// NULL or NUL-terminated.
pub unsafe fn memory(op: Op, space: SpaceName, label: *const c_char, ptr: u64, bytes: u64) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    let ts = rt.clock.now();
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let (space, label) = unsafe {
            (
                t.names
                    .lookup_bounded(space.ptr, space.max_len, &rt.names, &rt.anomalies),
                t.names.lookup(label, &rt.names, &rt.anomalies),
            )
        };
        let units = [
            Record::head(ts, op, 0, label, 0),
            Record::ext(ptr, bytes),
            Record::ext(u64::from(space), 0),
        ];
        t.push_n(rt, &units);
    });
}

/// Opens a memory copy; returns its GUID.
///
/// # Safety
/// As [`memory`], for both ends.
pub unsafe fn copy_begin(dst: CopyEnd, src: CopyEnd, bytes: u64) -> u64 {
    let Some(rt) = active() else {
        inactive_call();
        return 0;
    };
    let n = &rt.names;
    with_thread(rt, |t| {
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
        let units = [
            Record::head(
                rt.clock.now(),
                Op::CopyBegin,
                Kind::DeepCopy as u8,
                dst_label,
                0,
            ),
            Record::ext(bytes, u64::from(src_label)),
            Record::ext(u64::from(dst_space), u64::from(src_space)),
        ];
        t.push_n(rt, &units);
        guid
    })
}

/// Creates a section; returns its id (0 when not recording).
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn section_create(name: *const c_char) -> u32 {
    let Some(rt) = active() else {
        inactive_call();
        return 0;
    };
    // SAFETY: forwarded from the caller.
    let name = with_thread(rt, |t| unsafe {
        t.names.lookup(name, &rt.names, &rt.anomalies)
    });
    let mut s = rt.sections.lock().unwrap_or_else(|p| p.into_inner());
    s.push(name);
    s.len() as u32
}

/// Starts (`op` SectionStart) or stops (`op` SectionStop) section `id`.
pub fn section(op: Op, id: u32) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    let ts = rt.clock.now();
    with_thread(rt, |t| t.push(rt, Record::head(ts, op, 0, id, 0)));
}

/// Validates a section id on destroy (the totals stay in the profile).
pub fn section_destroy(id: u32) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    let known = rt
        .sections
        .lock()
        .map(|s| id >= 1 && id as usize <= s.len());
    if !known.unwrap_or(false) {
        rt.anomalies.count(Anomaly::UnknownSection);
    }
}

/// Records a metadata pair.
pub fn metadata(key: String, value: String) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    rt.metadata
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((key, value));
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
