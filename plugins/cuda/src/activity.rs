//! CUPTI's activity API: buffers requested from the pool, completed buffers read
//! record by record and translated into the core's device activities (kernels,
//! copies, sets, synchronizations), allocations and frees (MEMORY2), and counts
//! (CUPTI's overhead, dropped records, unknown kinds).

use std::ffi::{c_char, CStr, CString};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use kprof_abi::guard::guard;
use kprof_abi::{
    direction, ActivityArg, Anomaly, CoreApi, DeviceDesc, Kind, SpaceName, ACTIVITY_ARGS,
};
use kprof_gpu::activity::{deliver, fill, Delivery, Record, NO_ARG};
use rustc_hash::FxHashMap;

use crate::names::{self, KernelNames};
use crate::records::{self, CopyRec};
use crate::state::{self, State, RING};
use crate::sys::cuda12::{self as c, CUcontext, CUpti_Activity, CUPTI_SUCCESS};

/// CUPTI asks for a buffer: one from the pool, or none when the pool is empty
/// (CUPTI then drops records and counts them).
///
/// # Safety
/// Called by CUPTI with valid out pointers.
pub unsafe extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    guard((), || {
        let (p, n) = match state::state().and_then(|st| st.pool.take().map(|p| (st, p))) {
            Some((st, p)) => (p, st.pool.buffer_size()),
            None => (std::ptr::null_mut(), 0),
        };
        // SAFETY: CUPTI's out pointers, valid for the call.
        unsafe {
            if !buffer.is_null() {
                *buffer = p;
            }
            if !size.is_null() {
                *size = n;
            }
            if !max_records.is_null() {
                *max_records = 0;
            }
        }
    })
}

/// CUPTI hands back a buffer with `valid` bytes of records.
///
/// # Safety
/// Called by CUPTI with a buffer `buffer_requested` gave it.
pub unsafe extern "C" fn buffer_completed(
    context: CUcontext,
    stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    guard((), || {
        let Some(st) = state::state() else {
            return;
        };
        if !buffer.is_null() && !st.life.is_done() {
            guard((), || {
                st.recalibrate();
                let mut t = translator();
                let cpu = thread_cpu_ns();
                let n = t.buffer(st, buffer, valid);
                t.walked.0 += n;
                t.walked.1 += thread_cpu_ns().saturating_sub(cpu);
            });
        }
        // SAFETY: the context CUPTI passed with this buffer.
        unsafe { report_dropped(st, context, stream) };
        st.pool.give(buffer);
    })
}

/// CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Counts the records CUPTI dropped in the queue of `context`/`stream` (NULL/0:
/// the global queue) since the last call.
///
/// # Safety
/// `context` is NULL or a context CUPTI handed to a buffer callback.
pub unsafe fn report_dropped(st: &State, context: CUcontext, stream: u32) {
    let mut n: usize = 0;
    // SAFETY: a CUPTI function with a valid out pointer; the count resets.
    let rc = unsafe { (st.cupti.cuptiActivityGetNumDroppedRecords)(context, stream, &mut n) };
    if rc != CUPTI_SUCCESS || n == 0 {
        return;
    }
    if st.debug {
        kprof_gpu::debug_line!("kprof-cuda: {n} records dropped by CUPTI");
    }
    for _ in 0..n {
        // SAFETY: core table function.
        unsafe { (st.api.anomaly)(Anomaly::DeviceRecordsDropped as u32) };
    }
}

/// Argument keys of a kernel, in the order kept when the ABI holds fewer.
const KERNEL_KEYS: [&CStr; 9] = [
    c"grid_x",
    c"grid_y",
    c"grid_z",
    c"block_x",
    c"block_y",
    c"block_z",
    c"registers",
    c"static_shared",
    c"dynamic_shared",
];

/// Records by kind, for the debug summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Kernels delivered.
    pub kernels: u64,
    /// Copies delivered.
    pub copies: u64,
    /// Sets delivered.
    pub sets: u64,
    /// Synchronizations delivered.
    pub syncs: u64,
    /// Allocations and frees delivered.
    pub memory: u64,
    /// Overhead records.
    pub overhead: u64,
    /// Records of kinds kprof does not translate.
    pub unknown_kind: u64,
    /// Activities whose correlation id had no launch.
    pub unknown_correlation: u64,
    /// Activities with unusable times.
    pub bad_time: u64,
}

/// The buffers' translation state: one buffer is translated at a time.
static TRANSLATOR: OnceLock<Mutex<Translator>> = OnceLock::new();

/// Takes the translation state (buffers, and the final figures at the flush).
pub fn translator() -> MutexGuard<'static, Translator> {
    TRANSLATOR
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// State of the buffer thread(s): caches and totals.
#[derive(Default)]
pub struct Translator {
    names: KernelNames,
    devices: FxHashMap<(u32, u32), u16>,
    /// Memory space names by device (`u32::MAX`: the host's, for pinned and
    /// pageable memory).
    spaces: FxHashMap<u32, CString>,
    /// Context id -> device id, learnt from records that carry both
    /// (synchronization records carry only the context).
    context_device: FxHashMap<u32, u32>,
    /// CUPTI's own overhead (kprof's cost): records and ns.
    pub tool_overhead: (u64, u64),
    /// The driver's overhead (JIT, lazy loading): records and ns.
    pub driver_overhead: (u64, u64),
    /// Records by kind.
    pub counts: Counts,
    /// Records walked in completed buffers, and the CPU time the buffer thread
    /// spent translating them (kprof's cost per activity record).
    pub walked: (u64, u64),
}

impl Translator {
    /// Translates every record of a completed buffer; returns how many.
    fn buffer(&mut self, st: &State, buffer: *mut u8, valid: usize) -> u64 {
        let mut rec: *mut CUpti_Activity = std::ptr::null_mut();
        let mut n = 0;
        loop {
            // SAFETY: CUPTI walks its own records in `buffer`; `rec` starts NULL.
            let rc = unsafe { (st.cupti.cuptiActivityGetNextRecord)(buffer, valid, &mut rec) };
            if rc != CUPTI_SUCCESS || rec.is_null() {
                break;
            }
            // SAFETY: a record CUPTI wrote, of the layout `st.layout` names.
            unsafe { self.record(st, rec) };
            n += 1;
        }
        n
    }

    /// Translates one record.
    ///
    /// # Safety
    /// `rec` is a record of a CUPTI whose layout is `st.layout`.
    unsafe fn record(&mut self, st: &State, rec: *const CUpti_Activity) {
        // SAFETY: every record starts with its kind.
        let kind = unsafe { (*rec).kind };
        let l = st.layout;
        match kind {
            c::CUPTI_ACTIVITY_KIND_KERNEL | c::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL => {
                // SAFETY: a kernel record of this layout.
                self.kernel(st, unsafe { records::kernel(l.kernel, rec) });
            }
            c::CUPTI_ACTIVITY_KIND_MEMCPY => {
                // SAFETY: a copy record of this layout.
                self.copy(st, unsafe { records::memcpy(l.memcpy, rec) });
            }
            c::CUPTI_ACTIVITY_KIND_MEMCPY2 => {
                // SAFETY: a peer copy record.
                self.copy(st, unsafe { records::peer(rec) });
            }
            c::CUPTI_ACTIVITY_KIND_MEMSET => {
                // SAFETY: a set record of this layout.
                let r = unsafe { records::memset(l.memset, rec) };
                self.context_device.insert(r.context, r.device);
                let mut args = [NO_ARG; ACTIVITY_ARGS];
                let n = fill(&mut args, &[(c"value", u64::from(r.value))]);
                self.counts.sets += 1;
                self.emit(
                    st,
                    Kind::GpuMemset,
                    direction::NONE,
                    (r.device, r.stream),
                    c"memset",
                    (r.start, r.end),
                    r.correlation,
                    r.bytes,
                    &args[..n],
                );
            }
            c::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => {
                // SAFETY: a synchronization record of this layout.
                let r = unsafe { records::sync(l.sync, rec) };
                let device = self.context_device.get(&r.context).copied().unwrap_or(0);
                // A context synchronization has no stream: the device's track 0.
                let stream = if r.stream == u32::MAX { 0 } else { r.stream };
                self.counts.syncs += 1;
                self.emit(
                    st,
                    Kind::GpuSync,
                    direction::NONE,
                    (device, stream),
                    names::sync_name(r.ty),
                    (r.start, r.end),
                    r.correlation,
                    0,
                    &[],
                );
            }
            c::CUPTI_ACTIVITY_KIND_MEMORY2 => {
                // SAFETY: a memory record of this layout.
                self.memory(st, unsafe { records::memory(l.memory, rec) });
            }
            c::CUPTI_ACTIVITY_KIND_OVERHEAD => {
                // SAFETY: an overhead record of this layout.
                let r = unsafe { records::overhead(l.overhead, rec) };
                let ns = r.end.saturating_sub(r.start);
                let total = if names::overhead_is_tool(r.kind) {
                    &mut self.tool_overhead
                } else {
                    &mut self.driver_overhead
                };
                total.0 += 1;
                total.1 += ns;
                self.counts.overhead += 1;
                if st.debug {
                    kprof_gpu::debug_line!("kprof-cuda: overhead kind={:#x} {ns} ns", r.kind);
                }
            }
            other => {
                self.counts.unknown_kind += 1;
                if st.debug {
                    kprof_gpu::debug_line!("kprof-cuda: record of unknown kind {other}");
                }
                // SAFETY: core table function.
                unsafe { (st.api.anomaly)(Anomaly::UnknownEvent as u32) };
            }
        }
    }

    fn kernel(&mut self, st: &State, r: records::KernelRec) {
        self.context_device.insert(r.context, r.device);
        let name = if r.name.is_null() {
            c"kernel"
        } else {
            // SAFETY: CUPTI's NUL-terminated name, valid while the record is.
            self.names.get(unsafe { CStr::from_ptr(r.name) })
        };
        let name: *const c_char = name.as_ptr();
        let values = [
            r.grid[0] as u64,
            r.grid[1] as u64,
            r.grid[2] as u64,
            r.block[0] as u64,
            r.block[1] as u64,
            r.block[2] as u64,
            u64::from(r.registers),
            r.static_shared as u64,
            r.dynamic_shared as u64,
        ];
        let mut args = [NO_ARG; ACTIVITY_ARGS];
        for (i, slot) in args.iter_mut().enumerate().take(KERNEL_KEYS.len()) {
            *slot = ActivityArg {
                key: KERNEL_KEYS[i].as_ptr(),
                value: values[i],
            };
        }
        let n = ACTIVITY_ARGS.min(KERNEL_KEYS.len());
        self.counts.kernels += 1;
        if st.debug {
            // SAFETY: `name` points into the cache, alive for this call.
            let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            kprof_gpu::debug_line!(
                "kprof-cuda: kernel \"{text}\" grid=({},{},{}) block=({},{},{}) regs={} smem={}+{} dev={} ctx={} stream={} corr={} dur={} ns",
                r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2],
                r.registers, r.static_shared, r.dynamic_shared, r.device, r.context,
                r.stream, r.correlation, r.end.wrapping_sub(r.start)
            );
        }
        // SAFETY: `name` stays valid across the call (the core copies it).
        let name = unsafe { CStr::from_ptr(name) };
        self.emit(
            st,
            Kind::GpuKernel,
            direction::NONE,
            (r.device, r.stream),
            name,
            (r.start, r.end),
            r.correlation,
            0,
            &args[..n],
        );
    }

    fn copy(&mut self, st: &State, r: CopyRec) {
        self.context_device.insert(r.context, r.device);
        let dir = names::copy_direction(r.copy_kind);
        let mut args = [NO_ARG; ACTIVITY_ARGS];
        let pairs = [
            (c"src_kind", u64::from(r.src_kind)),
            (c"dst_kind", u64::from(r.dst_kind)),
            (c"src_device", u64::from(r.src_device)),
            (c"dst_device", u64::from(r.dst_device)),
        ];
        // The devices only for a copy between two.
        let pairs = if dir == direction::PEER {
            &pairs[..]
        } else {
            &pairs[..2]
        };
        let n = fill(&mut args, pairs);
        self.counts.copies += 1;
        if st.debug {
            kprof_gpu::debug_line!(
                "kprof-cuda: {} {} bytes src_kind={} dst_kind={} dev={} stream={} corr={} dur={} ns",
                names::copy_name(r.copy_kind).to_string_lossy(),
                r.bytes, r.src_kind, r.dst_kind, r.device, r.stream, r.correlation,
                r.end.wrapping_sub(r.start)
            );
        }
        self.emit(
            st,
            Kind::GpuMemcpy,
            dir,
            (r.device, r.stream),
            names::copy_name(r.copy_kind),
            (r.start, r.end),
            r.correlation,
            r.bytes,
            &args[..n],
        );
    }

    fn memory(&mut self, st: &State, r: records::MemoryRec) {
        self.context_device.insert(r.context, r.device);
        let label = names::memory_kind(r.memory_kind);
        // Host memory CUDA allocates (cudaMallocHost) is not the device's: its own
        // space, so a device's high-water mark and leaks are device memory only.
        let host = names::is_host_memory(r.memory_kind);
        let key = if host { u32::MAX } else { r.device };
        let space = self.spaces.entry(key).or_insert_with(|| {
            let name = if host {
                "CUDA host".to_string()
            } else {
                format!("CUDA:{}", r.device)
            };
            CString::new(name).unwrap_or_default()
        });
        let name = SpaceName {
            ptr: space.as_ptr(),
            max_len: space.as_bytes_with_nul().len(),
        };
        self.counts.memory += 1;
        if st.debug {
            kprof_gpu::debug_line!(
                "kprof-cuda: memory op={} kind={} {:#x} {} bytes dev={} corr={}",
                r.op,
                label.to_string_lossy(),
                r.address,
                r.bytes,
                r.device,
                r.correlation
            );
        }
        match r.op {
            // SAFETY: core table functions with strings alive across the calls.
            c::CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION => unsafe {
                (st.api.alloc)(name, label.as_ptr(), r.address, r.bytes)
            },
            // SAFETY: as above.
            c::CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE => unsafe {
                (st.api.free)(name, label.as_ptr(), r.address, r.bytes)
            },
            _ => {
                // SAFETY: core table function.
                unsafe { (st.api.anomaly)(Anomaly::UnknownEvent as u32) }
            }
        }
    }

    /// The core's device index of `device`'s stream `stream`.
    fn device(&mut self, api: &CoreApi, device: u32, stream: u32) -> u16 {
        *self.devices.entry((device, stream)).or_insert_with(|| {
            let desc = DeviceDesc {
                backend: c"CUDA".as_ptr(),
                index: device,
                instance: stream,
            };
            // SAFETY: core table function; the descriptor lives across the call.
            unsafe { (api.device)(&desc) }
        })
    }

    /// Delivers one device activity, found under the launch of `correlation`.
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        st: &State,
        kind: Kind,
        direction: u8,
        (device, stream): (u32, u32),
        name: &CStr,
        times: (u64, u64),
        correlation: u32,
        bytes: u64,
        args: &[ActivityArg],
    ) {
        let dev = self.device(st.api, device, stream);
        let r = Record {
            kind,
            direction,
            dev,
            name,
            times,
            correlation,
            bytes,
            args,
        };
        match deliver(st.api, &st.clock, &RING, &r) {
            Delivery::BadTime => self.counts.bad_time += 1,
            Delivery::Delivered {
                launch,
                start_ns,
                end_ns,
            } => {
                if launch.is_none() {
                    self.counts.unknown_correlation += 1;
                }
                if st.debug {
                    let l = launch.unwrap_or_default();
                    kprof_gpu::debug_line!(
                        "kprof-cuda:   correlation {correlation} -> site {} api slice {} \
                         ({}); {} \"{}\" track {dev} [{start_ns}, {end_ns}] core ns",
                        l.site.guid,
                        l.api,
                        if launch.is_some() { "found" } else { "unknown" },
                        kind.as_str(),
                        name.to_string_lossy()
                    );
                }
            }
        }
    }
}
