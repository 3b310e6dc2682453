//! rocprofiler-sdk's buffer: kernel dispatch, memory copy and memory allocation
//! records, delivered in batches on the SDK's thread, translated into the core's
//! device activities (on the core clock, under the launch of their correlation
//! id), allocations and frees; drops and unknown records counted.
//!
//! Tracks: a device is `"HIP"` with the HIP device number of its agent; a
//! dispatch goes on its queue's track (queues numbered 1, 2, ... per device in
//! the order their first record arrives), a copy (whose record names no queue)
//! on the device's track 0.

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use kprof_abi::guard::guard;
use kprof_abi::{
    direction, ActivityArg, Anomaly, CoreApi, DeviceDesc, Kind, SpaceName, ACTIVITY_ARGS,
};
use kprof_gpu::activity::{deliver, fill, Delivery, Record, NO_ARG};
use rustc_hash::FxHashMap;

use crate::state::{self, State, RING};
use crate::sys::{
    self, Abi, BufferId, ContextId, KernelDispatchRecord, MemoryAllocationRecord,
    MemoryAllocationRecordV1, MemoryCopyRecord, RecordHeader,
};

/// The buffer callback: `num_headers` records, and the records the SDK dropped
/// since the last call.
///
/// # Safety
/// Called by rocprofiler-sdk with `headers` pointing to `num_headers` headers.
pub unsafe extern "C" fn on_buffer(
    _context: ContextId,
    _buffer: BufferId,
    headers: *mut *mut RecordHeader,
    num_headers: usize,
    _data: *mut c_void,
    drop_count: u64,
) {
    guard((), || {
        let Some(st) = state::state() else {
            return;
        };
        if st.life.is_done() {
            return;
        }
        for _ in 0..drop_count {
            // SAFETY: core table function.
            unsafe { (st.api.anomaly)(Anomaly::DeviceRecordsDropped as u32) };
        }
        if headers.is_null() || num_headers == 0 {
            return;
        }
        st.recalibrate();
        let mut t = translator();
        let cpu = thread_cpu_ns();
        for i in 0..num_headers {
            // SAFETY: the SDK's array of `num_headers` header pointers.
            let h = unsafe { *headers.add(i) };
            if h.is_null() {
                continue;
            }
            // SAFETY: a header of the SDK, valid during the callback.
            let h = unsafe { *h };
            guard((), || {
                // SAFETY: the header's payload is the record its kind names.
                unsafe { t.record(st, h) }
            });
        }
        t.walked.0 += num_headers as u64;
        t.walked.1 += thread_cpu_ns().saturating_sub(cpu);
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

/// Records by kind, for the debug summary.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Kernels delivered.
    pub kernels: u64,
    /// Copies delivered.
    pub copies: u64,
    /// Allocations and frees delivered.
    pub memory: u64,
    /// Records of kinds kprof does not translate.
    pub unknown_kind: u64,
    /// Activities whose correlation id had no launch.
    pub unknown_correlation: u64,
    /// Activities with unusable times.
    pub bad_time: u64,
}

/// The records' translation state: one buffer is translated at a time.
static TRANSLATOR: OnceLock<Mutex<Translator>> = OnceLock::new();

/// Takes the translation state (buffers, and the final figures at the flush).
pub fn translator() -> MutexGuard<'static, Translator> {
    TRANSLATOR
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

/// State of the buffer thread: caches and totals.
#[derive(Default)]
pub struct Translator {
    /// Agents not in the SDK's agent list, numbered after its GPUs.
    extra_agents: FxHashMap<u64, u32>,
    /// (device, queue handle) -> queue number on the device.
    queues: FxHashMap<(u32, u64), u32>,
    /// Queues seen per device.
    queue_count: FxHashMap<u32, u32>,
    /// (device, instance) -> core device index.
    devices: FxHashMap<(u32, u32), u16>,
    /// Memory space names by device.
    spaces: FxHashMap<u32, CString>,
    /// Names of kernels whose symbol was never registered.
    unnamed: FxHashMap<u64, CString>,
    /// Records by kind.
    pub counts: Counts,
    /// Records walked, and the CPU time the SDK's thread spent on them.
    pub walked: (u64, u64),
}

/// Whether a record of `size` bytes holds `T` up to the end of field at
/// `end` bytes.
fn covers(size: u64, end: usize) -> bool {
    size as usize >= end
}

/// The size of a complete memory allocation record in the SDK's layout.
fn allocation_size(abi: Abi) -> usize {
    match abi {
        Abi::V0 => std::mem::size_of::<MemoryAllocationRecord>(),
        Abi::V1 => std::mem::size_of::<MemoryAllocationRecordV1>(),
    }
}

impl Translator {
    /// Translates one record.
    ///
    /// # Safety
    /// `h.payload` is the SDK's record of `h.category` and `h.kind`.
    unsafe fn record(&mut self, st: &State, h: RecordHeader) {
        if h.payload.is_null() {
            return;
        }
        // SAFETY: every tracing record starts with its size.
        let size = unsafe { *h.payload.cast::<u64>() };
        match (h.category, h.kind) {
            (sys::BUFFER_CATEGORY_TRACING, sys::BUFFER_TRACING_KERNEL_DISPATCH)
                if covers(size, std::mem::size_of::<KernelDispatchRecord>()) =>
            {
                // SAFETY: a complete kernel dispatch record.
                let r = unsafe { *h.payload.cast::<KernelDispatchRecord>() };
                self.kernel(st, &r);
            }
            (sys::BUFFER_CATEGORY_TRACING, sys::BUFFER_TRACING_MEMORY_COPY)
                if covers(size, std::mem::size_of::<MemoryCopyRecord>()) =>
            {
                // SAFETY: a memory copy record up to its bytes.
                let r = unsafe { *h.payload.cast::<MemoryCopyRecord>() };
                self.copy(st, &r);
            }
            (sys::BUFFER_CATEGORY_TRACING, kind)
                if kind == st.abi.buffer_tracing_memory_allocation()
                    && covers(size, allocation_size(st.abi)) =>
            {
                let r = match st.abi {
                    // SAFETY: a complete memory allocation record of SDK 0.x.
                    Abi::V0 => unsafe { *h.payload.cast::<MemoryAllocationRecord>() },
                    // SAFETY: a complete memory allocation record of SDK 1.0.
                    Abi::V1 => unsafe { *h.payload.cast::<MemoryAllocationRecordV1>() }.into(),
                };
                self.memory(st, &r);
            }
            (category, kind) => {
                self.counts.unknown_kind += 1;
                if st.debug {
                    kprof_gpu::debug_line!(
                        "kprof-rocm: record of unknown category {category} kind {kind} ({size} bytes)"
                    );
                }
                // SAFETY: core table function.
                unsafe { (st.api.anomaly)(Anomaly::UnknownEvent as u32) };
            }
        }
    }

    /// The HIP device number of `agent` (agents the SDK did not list get numbers
    /// after its GPUs, in the order they are seen).
    fn gpu(&mut self, st: &State, agent: u64) -> Option<u32> {
        let gpus = st.gpus.get().map(Vec::as_slice).unwrap_or_default();
        if let Some(&(_, n)) = gpus.iter().find(|(h, _)| *h == agent) {
            return Some(n);
        }
        None.or_else(|| self.extra_agents.get(&agent).copied())
    }

    fn gpu_or_new(&mut self, st: &State, agent: u64) -> u32 {
        if let Some(n) = self.gpu(st, agent) {
            return n;
        }
        let known = st.gpus.get().map_or(0, Vec::len) as u32;
        let n = known + self.extra_agents.len() as u32;
        self.extra_agents.insert(agent, n);
        n
    }

    fn kernel(&mut self, st: &State, r: &KernelDispatchRecord) {
        let d = &r.dispatch_info;
        let device = self.gpu_or_new(st, d.agent_id.handle);
        let count = self.queue_count.entry(device).or_insert(0);
        let queue = *self
            .queues
            .entry((device, d.queue_id.handle))
            .or_insert_with(|| {
                *count += 1;
                *count
            });
        let kernels = st.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        let sym = kernels.get(&d.kernel_id);
        let (name, sgprs, vgprs) = match sym {
            Some(s) => (s.name.clone(), s.sgprs, s.vgprs),
            None => {
                let id = d.kernel_id;
                let n = self
                    .unnamed
                    .entry(id)
                    .or_insert_with(|| CString::new(format!("kernel {id}")).unwrap_or_default());
                (n.clone(), 0, 0)
            }
        };
        drop(kernels);
        let pairs: [(&'static CStr, u64); 10] = [
            (c"grid_x", u64::from(d.grid_size.x)),
            (c"grid_y", u64::from(d.grid_size.y)),
            (c"grid_z", u64::from(d.grid_size.z)),
            (c"workgroup_x", u64::from(d.workgroup_size.x)),
            (c"workgroup_y", u64::from(d.workgroup_size.y)),
            (c"workgroup_z", u64::from(d.workgroup_size.z)),
            (c"lds_bytes", u64::from(d.group_segment_size)),
            (c"scratch_bytes", u64::from(d.private_segment_size)),
            (c"vgprs", u64::from(vgprs)),
            (c"sgprs", u64::from(sgprs)),
        ];
        let mut args = [NO_ARG; ACTIVITY_ARGS];
        let n = fill(&mut args, &pairs);
        self.counts.kernels += 1;
        if st.debug {
            kprof_gpu::debug_line!(
                "kprof-rocm: kernel {:?} grid=({},{},{}) wg=({},{},{}) dev={device} queue={queue} corr={} dur={} ns",
                name, d.grid_size.x, d.grid_size.y, d.grid_size.z, d.workgroup_size.x,
                d.workgroup_size.y, d.workgroup_size.z, r.correlation_id.internal,
                r.end_timestamp.wrapping_sub(r.start_timestamp)
            );
        }
        self.emit(
            st,
            Kind::GpuKernel,
            direction::NONE,
            (device, queue),
            &name,
            (r.start_timestamp, r.end_timestamp),
            r.correlation_id.internal,
            0,
            &args[..n],
        );
    }

    fn copy(&mut self, st: &State, r: &MemoryCopyRecord) {
        let src = self.gpu(st, r.src_agent_id.handle);
        let dst = self.gpu(st, r.dst_agent_id.handle);
        let (dir, name, device): (u8, &CStr, Option<u32>) = match r.operation {
            sys::MEMORY_COPY_HOST_TO_DEVICE => (
                direction::TO_DEVICE,
                c"memcpy HtoD",
                Some(dst.unwrap_or_else(|| self.gpu_or_new(st, r.dst_agent_id.handle))),
            ),
            sys::MEMORY_COPY_DEVICE_TO_HOST => (
                direction::FROM_DEVICE,
                c"memcpy DtoH",
                Some(src.unwrap_or_else(|| self.gpu_or_new(st, r.src_agent_id.handle))),
            ),
            sys::MEMORY_COPY_DEVICE_TO_DEVICE if r.src_agent_id != r.dst_agent_id => {
                (direction::PEER, c"memcpy PtoP", src)
            }
            sys::MEMORY_COPY_DEVICE_TO_DEVICE => (direction::DEVICE_TO_DEVICE, c"memcpy DtoD", src),
            sys::MEMORY_COPY_HOST_TO_HOST => (direction::OTHER, c"memcpy HtoH", src.or(dst)),
            _ => (direction::OTHER, c"memcpy", src.or(dst)),
        };
        let device = device.unwrap_or_else(|| {
            self.gpu_or_new(st, r.src_agent_id.handle.max(r.dst_agent_id.handle))
        });
        let mut args = [NO_ARG; ACTIVITY_ARGS];
        let n = if dir == direction::PEER {
            let s = self.gpu_or_new(st, r.src_agent_id.handle);
            let d = self.gpu_or_new(st, r.dst_agent_id.handle);
            fill(
                &mut args,
                &[(c"src_device", u64::from(s)), (c"dst_device", u64::from(d))],
            )
        } else {
            0
        };
        self.counts.copies += 1;
        if st.debug {
            kprof_gpu::debug_line!(
                "kprof-rocm: {} {} bytes dev={device} corr={} dur={} ns",
                name.to_string_lossy(),
                r.bytes,
                r.correlation_id.internal,
                r.end_timestamp.wrapping_sub(r.start_timestamp)
            );
        }
        self.emit(
            st,
            Kind::GpuMemcpy,
            dir,
            (device, 0),
            name,
            (r.start_timestamp, r.end_timestamp),
            r.correlation_id.internal,
            r.bytes,
            &args[..n],
        );
    }

    fn memory(&mut self, st: &State, r: &MemoryAllocationRecord) {
        let gpu = self.gpu(st, r.agent_id.handle);
        let key = gpu.unwrap_or(u32::MAX);
        let space = self.spaces.entry(key).or_insert_with(|| {
            let text = match gpu {
                Some(d) => format!("HIP:{d}"),
                None => "HIP:host".to_string(),
            };
            CString::new(text).unwrap_or_default()
        });
        let name = SpaceName {
            ptr: space.as_ptr(),
            max_len: space.as_bytes_with_nul().len(),
        };
        let label: &CStr = match (gpu.is_some(), r.operation) {
            (_, sys::MEMORY_ALLOCATION_VMEM_ALLOCATE | sys::MEMORY_ALLOCATION_VMEM_FREE) => c"vmem",
            (true, _) => c"device",
            (false, _) => c"host",
        };
        self.counts.memory += 1;
        if st.debug {
            kprof_gpu::debug_line!(
                "kprof-rocm: memory op={} {:#x} {} bytes space={} corr={}",
                r.operation,
                r.address,
                r.allocation_size,
                space.to_string_lossy(),
                r.correlation_id.internal
            );
        }
        let label: *const c_char = label.as_ptr();
        match r.operation {
            // SAFETY: core table functions with strings alive across the calls.
            sys::MEMORY_ALLOCATION_ALLOCATE | sys::MEMORY_ALLOCATION_VMEM_ALLOCATE => unsafe {
                (st.api.alloc)(name, label, r.address, r.allocation_size)
            },
            // SAFETY: as above.
            sys::MEMORY_ALLOCATION_FREE | sys::MEMORY_ALLOCATION_VMEM_FREE => unsafe {
                (st.api.free)(name, label, r.address, r.allocation_size)
            },
            // SAFETY: core table function.
            _ => unsafe { (st.api.anomaly)(Anomaly::UnknownEvent as u32) },
        }
    }

    /// The core's device index of HIP device `device`'s track `instance`.
    fn device(&mut self, api: &CoreApi, device: u32, instance: u32) -> u16 {
        *self.devices.entry((device, instance)).or_insert_with(|| {
            let desc = DeviceDesc {
                backend: c"HIP".as_ptr(),
                index: device,
                instance,
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
        (device, instance): (u32, u32),
        name: &CStr,
        times: (u64, u64),
        correlation: u64,
        bytes: u64,
        args: &[ActivityArg],
    ) {
        let dev = self.device(st.api, device, instance);
        let r = Record {
            kind,
            direction,
            dev,
            name,
            times,
            correlation: correlation as u32,
            bytes,
            args,
        };
        match deliver(st.api, &st.clock, &RING, &r) {
            Delivery::BadTime => self.counts.bad_time += 1,
            Delivery::Delivered { launch, .. } => {
                if launch.is_none() {
                    self.counts.unknown_correlation += 1;
                    if st.debug {
                        kprof_gpu::debug_line!("kprof-rocm:   correlation {correlation} unknown");
                    }
                }
            }
        }
    }
}
