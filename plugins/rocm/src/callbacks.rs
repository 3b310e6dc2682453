//! rocprofiler-sdk's callback tracing: each HIP runtime call becomes a host
//! slice (`gpu_api`) on the calling thread, its internal correlation id mapped
//! to the thread's innermost open instance and that slice; kernel symbols
//! registered with code objects give the dispatches their names.
//!
//! The HIP path takes no lock and allocates nothing: the operation's name comes
//! from a table of atomics filled on first use (the SDK's names are static), the
//! mapping goes into the correlation ring, and the slice's GUID travels from the
//! call's enter to its exit in the SDK's per-call user data slot.

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::PoisonError;

use kprof_abi::guard::guard;
use kprof_abi::Kind;
use kprof_gpu::correlation::Launch;

use crate::state::{self, KernelSymbol, State, RING};
use crate::sys::{
    CallbackTracingRecordV1, KernelSymbolRegister, UserData, CALLBACK_PHASE_ENTER,
    CALLBACK_PHASE_EXIT, CALLBACK_TRACING_CODE_OBJECT, CALLBACK_TRACING_HIP_RUNTIME_API,
    CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, STATUS_SUCCESS,
};

/// HIP operations whose names are cached (HIP has about 500).
const NAMES: usize = 2048;

static OP_NAMES: [AtomicPtr<c_char>; NAMES] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; NAMES];

/// The SDK's name of HIP runtime operation `op` (`"hipLaunchKernel"`): a static
/// string of the SDK, as `begin_static` requires.
fn op_name(st: &State, op: i32) -> *const c_char {
    let slot = usize::try_from(op).ok().and_then(|i| OP_NAMES.get(i));
    if let Some(p) = slot.map(|s| s.load(Ordering::Relaxed)) {
        if !p.is_null() {
            return p;
        }
    }
    let mut name: *const c_char = std::ptr::null();
    let mut len = 0u64;
    // SAFETY: an SDK query with valid out pointers; the name it gives lives as
    // long as the SDK.
    let rc = unsafe {
        (st.rp.query_callback_tracing_kind_operation_name)(
            CALLBACK_TRACING_HIP_RUNTIME_API,
            op,
            &mut name,
            &mut len,
        )
    };
    if rc != STATUS_SUCCESS || name.is_null() {
        return c"HIP API call".as_ptr();
    }
    if let Some(s) = slot {
        s.store(name.cast_mut(), Ordering::Relaxed);
    }
    name
}

/// The callback of the HIP runtime API service.
///
/// # Safety
/// Called by rocprofiler-sdk with `user_data` valid from the call's enter to its
/// exit.
pub unsafe extern "C" fn on_hip(
    record: CallbackTracingRecordV1,
    user_data: *mut UserData,
    _data: *mut c_void,
) {
    guard((), || {
        let Some(st) = state::measuring() else {
            return;
        };
        let record = record.fields(st.abi);
        if record.kind != CALLBACK_TRACING_HIP_RUNTIME_API {
            return;
        }
        let api = st.api;
        let corr = record.correlation;
        match record.phase {
            CALLBACK_PHASE_ENTER => {
                let name = op_name(st, record.operation);
                // SAFETY: core table functions, callable from any thread; the name
                // is a static string of the SDK.
                let (site, guid) = unsafe {
                    let site = (api.site)();
                    (site, (api.begin_static)(Kind::GpuApi as u8, name, 0, 0))
                };
                // Internal correlation ids count up from 1 per process: the low 32
                // bits index the ring (an id 2^32 calls older is long retired).
                RING.insert(corr as u32, Launch { site, api: guid });
                if !user_data.is_null() {
                    // SAFETY: the SDK's slot for this call.
                    unsafe { (*user_data).value = guid };
                }
                if st.debug {
                    // SAFETY: a NUL-terminated name.
                    let n = unsafe { CStr::from_ptr(name) }.to_string_lossy();
                    kprof_gpu::debug_line!("kprof-rocm: enter {n} corr={corr} slice={guid}");
                }
            }
            CALLBACK_PHASE_EXIT => {
                if user_data.is_null() {
                    return;
                }
                // SAFETY: the SDK's slot for this call, written at its enter.
                let guid = unsafe { (*user_data).value };
                if guid != 0 {
                    // SAFETY: core table function; guid is the slice opened at enter.
                    unsafe { (api.end)(Kind::GpuApi as u8, guid) };
                }
            }
            _ => {}
        }
    })
}

/// The callback of the code object service: kernel symbols, by kernel id.
///
/// # Safety
/// Called by rocprofiler-sdk with the payload of the record's operation.
pub unsafe extern "C" fn on_code_object(
    record: CallbackTracingRecordV1,
    _user_data: *mut UserData,
    _data: *mut c_void,
) {
    guard((), || {
        let Some(st) = state::state() else {
            return;
        };
        let record = record.fields(st.abi);
        if record.kind != CALLBACK_TRACING_CODE_OBJECT
            || record.operation != CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER
            || record.phase != CALLBACK_PHASE_ENTER
            || record.payload.is_null()
        {
            return;
        }
        let p = record.payload.cast::<KernelSymbolRegister>();
        // SAFETY: the payload of a kernel symbol registration starts with its
        // size; a field is read only when the size covers it.
        let size = unsafe { (*p).size } as usize;
        if size < std::mem::offset_of!(KernelSymbolRegister, kernel_object) {
            return;
        }
        // SAFETY: covered by `size`.
        let (id, name) = unsafe { ((*p).kernel_id, (*p).kernel_name) };
        let regs = if size >= std::mem::size_of::<KernelSymbolRegister>() {
            // SAFETY: covered by `size`.
            unsafe { ((*p).sgpr_count, (*p).arch_vgpr_count) }
        } else {
            (0, 0)
        };
        let text = if name.is_null() {
            format!("kernel {id}")
        } else {
            // SAFETY: the SDK's NUL-terminated symbol name.
            let raw = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            kernel_name(&raw)
        };
        let sym = KernelSymbol {
            name: CString::new(text).unwrap_or_else(|_| c"kernel".to_owned()),
            sgprs: regs.0,
            vgprs: regs.1,
        };
        if st.debug {
            kprof_gpu::debug_line!("kprof-rocm: kernel symbol {id} = {:?}", sym.name);
        }
        st.kernels
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, sym);
    })
}

/// A kernel's readable name from its code object symbol: without the `.kd`
/// suffix of a kernel descriptor, demangled without the return type (the
/// parameters tell overloads apart), as the CUDA plugin names kernels.
pub fn kernel_name(symbol: &str) -> String {
    kprof_gpu::names::kernel_name(symbol.strip_suffix(".kd").unwrap_or(symbol))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names() {
        assert_eq!(
            kernel_name("_Z5saxpyifPKfPf.kd"),
            "saxpy(int, float, float const*, float*)"
        );
        assert_eq!(kernel_name("_Z3fooIiEvPT_"), "foo<int>(int*)");
        assert_eq!(kernel_name("plain"), "plain");
    }
}
