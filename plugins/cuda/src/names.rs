//! Names and numbers of device activities as kprof shows them: kernel names
//! demangled, copy directions in kprof's terms, memory kinds as labels.

use std::ffi::{CStr, CString};

use kprof_abi::direction;
use rustc_hash::FxHashMap;

use crate::sys::cuda12 as c;

/// kprof's direction of a `CUpti_ActivityMemcpyKind`.
pub fn copy_direction(kind: u8) -> u8 {
    match u32::from(kind) {
        c::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD | c::CUPTI_ACTIVITY_MEMCPY_KIND_HTOA => {
            direction::TO_DEVICE
        }
        c::CUPTI_ACTIVITY_MEMCPY_KIND_DTOH | c::CUPTI_ACTIVITY_MEMCPY_KIND_ATOH => {
            direction::FROM_DEVICE
        }
        c::CUPTI_ACTIVITY_MEMCPY_KIND_DTOD
        | c::CUPTI_ACTIVITY_MEMCPY_KIND_ATOD
        | c::CUPTI_ACTIVITY_MEMCPY_KIND_DTOA
        | c::CUPTI_ACTIVITY_MEMCPY_KIND_ATOA => direction::DEVICE_TO_DEVICE,
        c::CUPTI_ACTIVITY_MEMCPY_KIND_PTOP => direction::PEER,
        _ => direction::OTHER,
    }
}

/// The name of a copy of `CUpti_ActivityMemcpyKind` `kind`.
pub fn copy_name(kind: u8) -> &'static CStr {
    match u32::from(kind) {
        c::CUPTI_ACTIVITY_MEMCPY_KIND_HTOD => c"memcpy HtoD",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_DTOH => c"memcpy DtoH",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_HTOA => c"memcpy HtoA",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_ATOH => c"memcpy AtoH",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_ATOA => c"memcpy AtoA",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_ATOD => c"memcpy AtoD",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_DTOA => c"memcpy DtoA",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_DTOD => c"memcpy DtoD",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_HTOH => c"memcpy HtoH",
        c::CUPTI_ACTIVITY_MEMCPY_KIND_PTOP => c"memcpy PtoP",
        _ => c"memcpy",
    }
}

/// The label of a `CUpti_ActivityMemoryKind` (memory records, copy ends).
pub fn memory_kind(kind: u32) -> &'static CStr {
    match kind {
        c::CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE => c"pageable",
        c::CUPTI_ACTIVITY_MEMORY_KIND_PINNED => c"pinned",
        c::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE => c"device",
        c::CUPTI_ACTIVITY_MEMORY_KIND_ARRAY => c"array",
        c::CUPTI_ACTIVITY_MEMORY_KIND_MANAGED => c"managed",
        c::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC => c"device_static",
        c::CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC => c"managed_static",
        _ => c"unknown",
    }
}

/// Whether memory of this `CUpti_ActivityMemoryKind` is the host's (pinned or
/// pageable), not a device's.
pub fn is_host_memory(kind: u32) -> bool {
    matches!(
        kind,
        c::CUPTI_ACTIVITY_MEMORY_KIND_PINNED | c::CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE
    )
}

/// The name of a `CUpti_ActivitySynchronizationType`.
pub fn sync_name(ty: u32) -> &'static CStr {
    match ty {
        c::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE => c"event synchronize",
        c::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT => c"stream wait event",
        c::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE => c"stream synchronize",
        c::CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE => c"context synchronize",
        _ => c"synchronize",
    }
}

/// Whether an overhead kind is CUPTI's own work for the tool (kprof's cost), as
/// opposed to the driver's (JIT compilation, lazy module loading).
pub fn overhead_is_tool(kind: u32) -> bool {
    matches!(
        kind,
        c::CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH
            | c::CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION
            | c::CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE
            | c::CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST
            | c::CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL
    )
}

pub use kprof_gpu::names::kernel_name;

/// Demangled names, cached by their mangled text (the buffer thread's).
#[derive(Default)]
pub struct KernelNames {
    cache: FxHashMap<Box<[u8]>, CString>,
}

impl KernelNames {
    /// The readable name of the kernel named `mangled` (CUPTI's text).
    pub fn get(&mut self, mangled: &CStr) -> &CStr {
        let key = mangled.to_bytes();
        if !self.cache.contains_key(key) {
            let text = kernel_name(&mangled.to_string_lossy());
            let name = CString::new(text).unwrap_or_else(|_| c"kernel".to_owned());
            self.cache.insert(key.into(), name);
        }
        self.cache
            .get(key)
            .map(CString::as_c_str)
            .unwrap_or(c"kernel")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions() {
        assert_eq!(copy_direction(1), direction::TO_DEVICE);
        assert_eq!(copy_direction(2), direction::FROM_DEVICE);
        assert_eq!(copy_direction(3), direction::TO_DEVICE);
        assert_eq!(copy_direction(4), direction::FROM_DEVICE);
        for k in [5, 6, 7, 8] {
            assert_eq!(copy_direction(k), direction::DEVICE_TO_DEVICE, "kind {k}");
        }
        assert_eq!(copy_direction(9), direction::OTHER);
        assert_eq!(copy_direction(10), direction::PEER);
        assert_eq!(copy_direction(0), direction::OTHER);
        assert_eq!(copy_direction(200), direction::OTHER);
        assert_eq!(copy_name(1), c"memcpy HtoD");
        assert_eq!(copy_name(2), c"memcpy DtoH");
        assert_eq!(copy_name(10), c"memcpy PtoP");
    }

    #[test]
    fn labels() {
        assert_eq!(memory_kind(3), c"device");
        assert_eq!(memory_kind(5), c"managed");
        assert_eq!(memory_kind(2), c"pinned");
        assert_eq!(memory_kind(77), c"unknown");
        assert_eq!(sync_name(3), c"stream synchronize");
        assert!(overhead_is_tool(
            c::CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH
        ));
        assert!(!overhead_is_tool(
            c::CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER
        ));
    }

    #[test]
    fn kernel_names() {
        assert_eq!(
            kernel_name("_Z4axpyifPKfPf"),
            "axpy(int, float, float const*, float*)"
        );
        assert_eq!(
            kernel_name("_Z5scaleIfEvPT_S0_i"),
            "scale<float>(float*, float, int)"
        );
        assert_eq!(kernel_name("plain_c_kernel"), "plain_c_kernel");
        assert_eq!(kernel_name("_Znot a symbol"), "_Znot a symbol");
        let mut names = KernelNames::default();
        assert_eq!(
            names.get(c"_Z4axpyifPKfPf"),
            c"axpy(int, float, float const*, float*)"
        );
        assert_eq!(
            names.get(c"_Z4axpyifPKfPf"),
            c"axpy(int, float, float const*, float*)"
        );
        assert_eq!(names.cache.len(), 1);
    }
}
