//! Pure translations from OMPT enumerations to kprof kinds and names. Names are
//! `'static` C strings: the core caches names by pointer, so a fixed pointer per
//! name makes every lookup after the first a hit.

use std::ffi::CStr;

use kprof_abi::Kind;

use crate::ompt::{data_op, dispatch, mutex, sync, thread, work};

/// Thread name for an `ompt_thread_t`.
pub fn thread_name(kind: i32) -> &'static CStr {
    match kind {
        thread::INITIAL => c"OpenMP initial thread",
        thread::WORKER => c"OpenMP worker thread",
        _ => c"OpenMP other thread",
    }
}

/// The kprof kind of a worksharing construct (`ompt_work_t`). Every loop schedule
/// (5.0's `loop`, 5.2's `loop_static`..`loop_other`) is a loop; `scope` and values
/// a newer runtime may add are counted as loops too, so nothing is dropped.
pub fn work_kind(wstype: i32) -> Kind {
    match wstype {
        work::SECTIONS => Kind::OmpSections,
        work::SINGLE_EXECUTOR => Kind::OmpSingle,
        work::SINGLE_OTHER => Kind::OmpSingleOther,
        work::WORKSHARE => Kind::OmpWorkshare,
        work::DISTRIBUTE => Kind::OmpDistribute,
        work::TASKLOOP => Kind::OmpTaskloop,
        // LOOP, LOOP_STATIC..=LOOP_OTHER, SCOPE, unknown.
        _ => Kind::OmpLoop,
    }
}

/// The kprof kind and name of a synchronization region (`ompt_sync_region_t`), as
/// reported by `sync_region` and `reduction`.
pub fn sync_region(kind: i32) -> (Kind, &'static CStr) {
    match kind {
        sync::BARRIER => (Kind::OmpBarrier, c"barrier"),
        sync::BARRIER_IMPLICIT
        | sync::BARRIER_IMPLICIT_WORKSHARE
        | sync::BARRIER_IMPLICIT_PARALLEL => (Kind::OmpBarrier, c"implicit barrier"),
        sync::BARRIER_EXPLICIT => (Kind::OmpBarrier, c"explicit barrier"),
        sync::BARRIER_IMPLEMENTATION => (Kind::OmpBarrier, c"implementation barrier"),
        sync::BARRIER_TEAMS => (Kind::OmpBarrier, c"teams barrier"),
        sync::TASKWAIT => (Kind::OmpTaskwait, c"taskwait"),
        sync::TASKGROUP => (Kind::OmpTaskgroup, c"taskgroup"),
        sync::REDUCTION => (Kind::OmpReduction, c"reduction"),
        _ => (Kind::OmpBarrier, unknown_sync_name(kind)),
    }
}

/// Whether a synchronization kind is an implicit barrier (5.0's `barrier_implicit`,
/// 5.1's `barrier_implicit_workshare` / `barrier_implicit_parallel`).
pub fn is_implicit_barrier(kind: i32) -> bool {
    matches!(
        kind,
        sync::BARRIER_IMPLICIT | sync::BARRIER_IMPLICIT_WORKSHARE | sync::BARRIER_IMPLICIT_PARALLEL
    )
}

/// `"sync region <n>"` for values this plugin does not know, as static strings for
/// the next few values a runtime might add, one shared name beyond.
fn unknown_sync_name(kind: i32) -> &'static CStr {
    match kind {
        0 => c"sync region 0",
        11 => c"sync region 11",
        12 => c"sync region 12",
        13 => c"sync region 13",
        14 => c"sync region 14",
        15 => c"sync region 15",
        16 => c"sync region 16",
        _ => c"sync region (unknown)",
    }
}

/// Name of a mutex (`ompt_mutex_t`) for wait and hold slices.
pub fn mutex_name(kind: i32) -> &'static CStr {
    match kind {
        mutex::LOCK => c"lock",
        mutex::TEST_LOCK => c"test lock",
        mutex::NEST_LOCK => c"nest lock",
        mutex::TEST_NEST_LOCK => c"test nest lock",
        mutex::CRITICAL => c"critical",
        mutex::ATOMIC => c"atomic",
        mutex::ORDERED => c"ordered",
        _ => c"mutex",
    }
}

/// Whether a mutex acquisition is a `test` (never waits): its acquire is not a
/// wait, and a failed test has no `acquired` to close one.
pub fn mutex_is_test(kind: i32) -> bool {
    matches!(kind, mutex::TEST_LOCK | mutex::TEST_NEST_LOCK)
}

/// Name of a dispatch (`ompt_dispatch_t`).
pub fn dispatch_name(kind: i32) -> &'static CStr {
    match kind {
        dispatch::ITERATION => c"iteration",
        dispatch::SECTION => c"section",
        dispatch::WS_LOOP_CHUNK => c"chunk",
        dispatch::TASKLOOP_CHUNK => c"taskloop chunk",
        dispatch::DISTRIBUTE_CHUNK => c"distribute chunk",
        _ => c"dispatch",
    }
}

/// Whether a dispatch's `instance.ptr` points to an `ompt_dispatch_chunk_t`.
pub fn dispatch_has_chunk(kind: i32) -> bool {
    matches!(
        kind,
        dispatch::WS_LOOP_CHUNK | dispatch::TASKLOOP_CHUNK | dispatch::DISTRIBUTE_CHUNK
    )
}

/// The core's transfer direction of a target data operation
/// (`ompt_target_data_op_t`, `_async` variants included): 0 allocation, 1 to the
/// device, 2 from the device, 3 delete, 4 other.
pub fn data_op_direction(optype: i32) -> u32 {
    let base = if optype > data_op::ASYNC {
        optype - data_op::ASYNC
    } else {
        optype
    };
    match base {
        data_op::ALLOC => 0,
        data_op::TRANSFER_TO_DEVICE => 1,
        data_op::TRANSFER_FROM_DEVICE => 2,
        data_op::DELETE => 3,
        _ => 4,
    }
}

/// The device a data operation concerns, by its direction: the source of a
/// transfer from the device and of a delete (libomp 19 passes the host, or -1, as
/// their destination), the destination of an allocation and of a transfer to the
/// device. Not decided by comparing with the initial device number that
/// `initialize` receives: libomp 19 passes 0 there, before it knows its devices.
pub fn data_op_device(optype: i32, src: i32, dest: i32) -> i32 {
    match data_op_direction(optype) {
        2 | 3 => src,
        0 | 1 => dest,
        _ if dest >= 0 => dest,
        _ => src,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_of_every_version_are_loops() {
        for w in [1, 10, 11, 12, 13] {
            assert_eq!(work_kind(w), Kind::OmpLoop, "wstype {w}");
        }
        assert_eq!(work_kind(2), Kind::OmpSections);
        assert_eq!(work_kind(3), Kind::OmpSingle);
        assert_eq!(work_kind(4), Kind::OmpSingleOther);
        assert_eq!(work_kind(5), Kind::OmpWorkshare);
        assert_eq!(work_kind(6), Kind::OmpDistribute);
        assert_eq!(work_kind(7), Kind::OmpTaskloop);
        assert_eq!(work_kind(8), Kind::OmpLoop);
        assert_eq!(work_kind(99), Kind::OmpLoop);
        assert_eq!(work_kind(-1), Kind::OmpLoop);
    }

    #[test]
    fn sync_regions_of_14_and_19() {
        let name = |k| sync_region(k).1.to_str().unwrap();
        assert_eq!(sync_region(1), (Kind::OmpBarrier, c"barrier"));
        for k in [2, 8, 9] {
            assert_eq!(sync_region(k).0, Kind::OmpBarrier);
            assert_eq!(name(k), "implicit barrier");
        }
        assert_eq!(name(3), "explicit barrier");
        assert_eq!(name(4), "implementation barrier");
        assert_eq!(name(10), "teams barrier");
        assert_eq!(sync_region(5), (Kind::OmpTaskwait, c"taskwait"));
        assert_eq!(sync_region(6), (Kind::OmpTaskgroup, c"taskgroup"));
        assert_eq!(sync_region(7), (Kind::OmpReduction, c"reduction"));
        assert_eq!(sync_region(11), (Kind::OmpBarrier, c"sync region 11"));
        assert_eq!(sync_region(0), (Kind::OmpBarrier, c"sync region 0"));
        assert_eq!(sync_region(1000).1, c"sync region (unknown)");
        // Same name, same pointer: the core's name cache hits.
        assert_eq!(sync_region(2).1.as_ptr(), sync_region(9).1.as_ptr());
    }

    #[test]
    fn mutexes() {
        let names: Vec<_> = (0..=8).map(|k| mutex_name(k).to_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "mutex",
                "lock",
                "test lock",
                "nest lock",
                "test nest lock",
                "critical",
                "atomic",
                "ordered",
                "mutex"
            ]
        );
        assert!(mutex_is_test(2) && mutex_is_test(4));
        assert!(!mutex_is_test(1) && !mutex_is_test(5));
    }

    #[test]
    fn threads_and_dispatches() {
        assert_eq!(thread_name(1), c"OpenMP initial thread");
        assert_eq!(thread_name(2), c"OpenMP worker thread");
        assert_eq!(thread_name(3), c"OpenMP other thread");
        assert_eq!(thread_name(4), c"OpenMP other thread");
        assert_eq!(dispatch_name(3), c"chunk");
        assert_eq!(dispatch_name(2), c"section");
        assert_eq!(dispatch_name(1), c"iteration");
        assert_eq!(dispatch_name(9), c"dispatch");
        assert!(dispatch_has_chunk(3) && dispatch_has_chunk(4) && dispatch_has_chunk(5));
        assert!(!dispatch_has_chunk(1) && !dispatch_has_chunk(2) && !dispatch_has_chunk(6));
    }

    #[test]
    fn data_ops() {
        assert_eq!(data_op_direction(1), 0);
        assert_eq!(data_op_direction(2), 1);
        assert_eq!(data_op_direction(3), 2);
        assert_eq!(data_op_direction(4), 3);
        assert_eq!(data_op_direction(5), 4);
        assert_eq!(data_op_direction(17), 0);
        assert_eq!(data_op_direction(18), 1);
        assert_eq!(data_op_direction(19), 2);
        assert_eq!(data_op_direction(20), 3);
        assert_eq!(data_op_direction(0), 4);
        assert_eq!(data_op_direction(99), 4);
        // As libomp 19 reports them with 4 host devices (4 = the host).
        assert_eq!(data_op_device(1, 4, 0), 0);
        assert_eq!(data_op_device(2, 4, 0), 0);
        assert_eq!(data_op_device(3, 0, 4), 0);
        assert_eq!(data_op_device(4, 2, -1), 2);
        assert_eq!(data_op_device(18, 4, 1), 1);
        assert_eq!(data_op_device(19, 3, 4), 3);
        assert_eq!(data_op_device(5, 4, 1), 1);
        assert_eq!(data_op_device(6, 1, -1), 1);
    }
}
