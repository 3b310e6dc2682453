//! Recording events: the functions behind the C table. Each takes a timestamp and
//! appends records to the calling thread's buffer — no lock, no allocation, no system
//! call, except on first sight of a thread, a name pointer or a device.

use std::ffi::c_char;

use kprof_abi::{Anomaly, CopyEnd, Kind, SpaceName};

use crate::devices::Device;
use crate::record::{Op, Record};
use crate::runtime::{self, active, inactive_call};
use crate::thread::with_thread;

/// Opens an instance; returns its GUID (0 when not recording).
///
/// # Safety
/// `name` is NULL or NUL-terminated.
#[inline]
pub unsafe fn begin(kind: u8, name: *const c_char, dev: u16, parent: u64) -> u64 {
    let Some(rt) = active() else {
        inactive_call();
        return 0;
    };
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let name = unsafe { t.names.lookup(name, &rt.names, &rt.anomalies) };
        let guid = t.next_guid();
        // Timestamp last, so the lookup is not counted in the instance's time.
        let ts = rt.clock.now();
        t.push(
            rt,
            Record {
                ts,
                a: guid,
                b: parent,
                name,
                aux: dev,
                kind,
                op: Op::Begin as u8,
            },
        );
        guid
    })
}

/// Closes instance `guid` of `kind` (0: the innermost open one of that kind).
#[inline]
pub fn end(kind: u8, guid: u64) {
    let Some(rt) = active() else {
        inactive_call();
        return;
    };
    // Timestamp first, so recording is not counted in the instance's time.
    let ts = rt.clock.now();
    with_thread(rt, |t| {
        t.push(
            rt,
            Record {
                ts,
                a: guid,
                kind,
                op: Op::End as u8,
                ..Record::default()
            },
        )
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
        t.push(
            rt,
            Record {
                ts,
                a,
                b,
                name,
                kind,
                op: Op::Instant as u8,
                ..Record::default()
            },
        )
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
    // SAFETY: forwarded from the caller.
    let space = unsafe {
        rt.names
            .intern_bounded(space.ptr, space.max_len, &rt.anomalies)
    };
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let label = unsafe { t.names.lookup(label, &rt.names, &rt.anomalies) };
        let head = Record {
            ts,
            a: ptr,
            b: bytes,
            name: label,
            op: op as u8,
            ..Record::default()
        };
        let cont = Record {
            name: space,
            op: Op::Cont as u8,
            ..Record::default()
        };
        t.push2(rt, head, cont);
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
    // SAFETY: forwarded from the caller.
    let (dst_space, src_space) = unsafe {
        (
            n.intern_bounded(dst.space.ptr, dst.space.max_len, &rt.anomalies),
            n.intern_bounded(src.space.ptr, src.space.max_len, &rt.anomalies),
        )
    };
    with_thread(rt, |t| {
        // SAFETY: forwarded from the caller.
        let (dst_label, src_label) = unsafe {
            (
                t.names.lookup(dst.label, n, &rt.anomalies),
                t.names.lookup(src.label, n, &rt.anomalies),
            )
        };
        let guid = t.next_guid();
        let head = Record {
            ts: rt.clock.now(),
            a: guid,
            name: dst_label,
            kind: Kind::DeepCopy as u8,
            op: Op::Begin as u8,
            ..Record::default()
        };
        let cont = Record {
            a: bytes,
            b: u64::from(dst_space) << 32 | u64::from(src_space),
            name: src_label,
            op: Op::Cont as u8,
            ..Record::default()
        };
        t.push2(rt, head, cont);
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
    with_thread(rt, |t| {
        t.push(
            rt,
            Record {
                ts,
                a: u64::from(id),
                op: op as u8,
                ..Record::default()
            },
        )
    });
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
