//! Activity records read out of a CUPTI buffer into plain values, through the
//! generated struct of the version the loaded CUPTI writes ([`crate::layout`]).

use std::ffi::c_char;

use crate::layout;
use crate::sys::cuda12::{self as c12, CUpti_Activity};
use crate::sys::cuda13 as c13;

/// A kernel execution (CONCURRENT_KERNEL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRec {
    /// Start and end, CUPTI clock (ns).
    pub start: u64,
    /// End (0: CUPTI could not time it).
    pub end: u64,
    /// Device id.
    pub device: u32,
    /// Context id.
    pub context: u32,
    /// Stream id.
    pub stream: u32,
    /// Correlation id of the API call that launched it.
    pub correlation: u32,
    /// Grid size (blocks) x, y, z.
    pub grid: [i32; 3],
    /// Block size (threads) x, y, z.
    pub block: [i32; 3],
    /// Registers per thread.
    pub registers: u16,
    /// Static shared memory per block, bytes.
    pub static_shared: i32,
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared: i32,
    /// Mangled name, owned by CUPTI (may be NULL).
    pub name: *const c_char,
}

/// A memory copy (MEMCPY, or MEMCPY2 between devices).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyRec {
    /// `CUpti_ActivityMemcpyKind`.
    pub copy_kind: u8,
    /// `CUpti_ActivityMemoryKind` of the source.
    pub src_kind: u8,
    /// `CUpti_ActivityMemoryKind` of the destination.
    pub dst_kind: u8,
    /// Bytes copied.
    pub bytes: u64,
    /// Start, CUPTI clock.
    pub start: u64,
    /// End, CUPTI clock.
    pub end: u64,
    /// Device that did the copy.
    pub device: u32,
    /// Context id.
    pub context: u32,
    /// Stream id.
    pub stream: u32,
    /// Correlation id.
    pub correlation: u32,
    /// Source and destination devices of a peer copy (else `device`).
    pub src_device: u32,
    /// Destination device.
    pub dst_device: u32,
}

/// A memory set (MEMSET).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetRec {
    /// Value set.
    pub value: u32,
    /// Bytes set.
    pub bytes: u64,
    /// Start, CUPTI clock.
    pub start: u64,
    /// End, CUPTI clock.
    pub end: u64,
    /// Device id.
    pub device: u32,
    /// Context id.
    pub context: u32,
    /// Stream id.
    pub stream: u32,
    /// Correlation id.
    pub correlation: u32,
    /// `CUpti_ActivityMemoryKind` of the memory set.
    pub memory_kind: u16,
}

/// A device memory allocation or release (MEMORY2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRec {
    /// `CUpti_ActivityMemoryOperationType` (1 allocation, 2 release).
    pub op: u32,
    /// `CUpti_ActivityMemoryKind`.
    pub memory_kind: u32,
    /// Correlation id.
    pub correlation: u32,
    /// Address.
    pub address: u64,
    /// Bytes.
    pub bytes: u64,
    /// When, CUPTI clock.
    pub timestamp: u64,
    /// Device id.
    pub device: u32,
    /// Context id.
    pub context: u32,
    /// Stream id (memory pools).
    pub stream: u32,
}

/// A synchronization (SYNCHRONIZATION).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRec {
    /// `CUpti_ActivitySynchronizationType`.
    pub ty: u32,
    /// Start, CUPTI clock.
    pub start: u64,
    /// End, CUPTI clock.
    pub end: u64,
    /// Correlation id.
    pub correlation: u32,
    /// Context id.
    pub context: u32,
    /// Stream id (`u32::MAX` for a context synchronization).
    pub stream: u32,
}

/// CUPTI's own overhead (OVERHEAD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverheadRec {
    /// `CUpti_ActivityOverheadKind`.
    pub kind: u32,
    /// Start, CUPTI clock.
    pub start: u64,
    /// End, CUPTI clock.
    pub end: u64,
}

/// Copies the record at `p` as a `T`.
///
/// # Safety
/// `p` points to a record CUPTI wrote whose struct is `T` or extends it.
unsafe fn read<T: Copy>(p: *const CUpti_Activity) -> T {
    // SAFETY: the caller guarantees at least size_of::<T>() readable bytes; CUPTI
    // aligns records to 8 but read_unaligned asks nothing of the alignment.
    unsafe { std::ptr::read_unaligned(p.cast::<T>()) }
}

macro_rules! kernel {
    ($t:ty, $p:expr) => {{
        // SAFETY: forwarded from the caller of `kernel`.
        let r: $t = unsafe { read($p) };
        KernelRec {
            start: r.start,
            end: r.end,
            device: r.deviceId,
            context: r.contextId,
            stream: r.streamId,
            correlation: r.correlationId,
            grid: [r.gridX, r.gridY, r.gridZ],
            block: [r.blockX, r.blockY, r.blockZ],
            registers: r.registersPerThread,
            static_shared: r.staticSharedMemory,
            dynamic_shared: r.dynamicSharedMemory,
            name: r.name,
        }
    }};
}

/// The kernel record at `p`.
///
/// # Safety
/// `p` is a CONCURRENT_KERNEL (or KERNEL) record of a CUPTI whose layout is `l`.
pub unsafe fn kernel(l: layout::Kernel, p: *const CUpti_Activity) -> KernelRec {
    match l {
        layout::Kernel::K9 => kernel!(c12::CUpti_ActivityKernel9, p),
        layout::Kernel::K10 => kernel!(c13::CUpti_ActivityKernel10, p),
        layout::Kernel::K11 => kernel!(c13::CUpti_ActivityKernel11, p),
        layout::Kernel::K12 => kernel!(c13::CUpti_ActivityKernel12, p),
        layout::Kernel::K13 => kernel!(c13::CUpti_ActivityKernel13, p),
    }
}

macro_rules! copy {
    ($t:ty, $p:expr) => {{
        // SAFETY: forwarded from the caller of `copy`.
        let r: $t = unsafe { read($p) };
        CopyRec {
            copy_kind: r.copyKind,
            src_kind: r.srcKind,
            dst_kind: r.dstKind,
            bytes: r.bytes,
            start: r.start,
            end: r.end,
            device: r.deviceId,
            context: r.contextId,
            stream: r.streamId,
            correlation: r.correlationId,
            src_device: r.deviceId,
            dst_device: r.deviceId,
        }
    }};
}

/// The copy record at `p`.
///
/// # Safety
/// `p` is a MEMCPY record of a CUPTI whose layout is `l`.
pub unsafe fn memcpy(l: layout::Memcpy, p: *const CUpti_Activity) -> CopyRec {
    match l {
        layout::Memcpy::M5 => copy!(c12::CUpti_ActivityMemcpy5, p),
        layout::Memcpy::M6 => copy!(c12::CUpti_ActivityMemcpy6, p),
        layout::Memcpy::M7 => copy!(c13::CUpti_ActivityMemcpy7, p),
    }
}

/// The peer copy record at `p` (`CUpti_ActivityMemcpyPtoP4` in every supported
/// release).
///
/// # Safety
/// `p` is a MEMCPY2 record.
pub unsafe fn peer(p: *const CUpti_Activity) -> CopyRec {
    // SAFETY: forwarded from the caller.
    let r: c12::CUpti_ActivityMemcpyPtoP4 = unsafe { read(p) };
    CopyRec {
        copy_kind: r.copyKind,
        src_kind: r.srcKind,
        dst_kind: r.dstKind,
        bytes: r.bytes,
        start: r.start,
        end: r.end,
        device: r.deviceId,
        context: r.contextId,
        stream: r.streamId,
        correlation: r.correlationId,
        src_device: r.srcDeviceId,
        dst_device: r.dstDeviceId,
    }
}

macro_rules! set {
    ($t:ty, $p:expr) => {{
        // SAFETY: forwarded from the caller of `memset`.
        let r: $t = unsafe { read($p) };
        SetRec {
            value: r.value,
            bytes: r.bytes,
            start: r.start,
            end: r.end,
            device: r.deviceId,
            context: r.contextId,
            stream: r.streamId,
            correlation: r.correlationId,
            memory_kind: r.memoryKind,
        }
    }};
}

/// The set record at `p`.
///
/// # Safety
/// `p` is a MEMSET record of a CUPTI whose layout is `l`.
pub unsafe fn memset(l: layout::Memset, p: *const CUpti_Activity) -> SetRec {
    match l {
        layout::Memset::S4 => set!(c12::CUpti_ActivityMemset4, p),
        layout::Memset::S5 => set!(c13::CUpti_ActivityMemset5, p),
    }
}

macro_rules! memory {
    ($t:ty, $p:expr) => {{
        // SAFETY: forwarded from the caller of `memory`.
        let r: $t = unsafe { read($p) };
        MemoryRec {
            op: r.memoryOperationType,
            memory_kind: r.memoryKind,
            correlation: r.correlationId,
            address: r.address,
            bytes: r.bytes,
            timestamp: r.timestamp,
            device: r.deviceId,
            context: r.contextId,
            stream: r.streamId,
        }
    }};
}

/// The memory record at `p`.
///
/// # Safety
/// `p` is a MEMORY2 record of a CUPTI whose layout is `l`.
pub unsafe fn memory(l: layout::Memory, p: *const CUpti_Activity) -> MemoryRec {
    match l {
        layout::Memory::M3 => memory!(c12::CUpti_ActivityMemory3, p),
        layout::Memory::M4 => memory!(c12::CUpti_ActivityMemory4, p),
    }
}

macro_rules! sync {
    ($t:ty, $p:expr) => {{
        // SAFETY: forwarded from the caller of `sync`.
        let r: $t = unsafe { read($p) };
        SyncRec {
            ty: r.type_,
            start: r.start,
            end: r.end,
            correlation: r.correlationId,
            context: r.contextId,
            stream: r.streamId,
        }
    }};
}

/// The synchronization record at `p`.
///
/// # Safety
/// `p` is a SYNCHRONIZATION record of a CUPTI whose layout is `l`.
pub unsafe fn sync(l: layout::Sync, p: *const CUpti_Activity) -> SyncRec {
    match l {
        layout::Sync::S1 => sync!(c12::CUpti_ActivitySynchronization, p),
        layout::Sync::S2 => sync!(c12::CUpti_ActivitySynchronization2, p),
    }
}

macro_rules! overhead {
    ($t:ty, $p:expr) => {{
        // SAFETY: forwarded from the caller of `overhead`.
        let r: $t = unsafe { read($p) };
        OverheadRec {
            kind: r.overheadKind,
            start: r.start,
            end: r.end,
        }
    }};
}

/// The overhead record at `p`.
///
/// # Safety
/// `p` is an OVERHEAD record of a CUPTI whose layout is `l`.
pub unsafe fn overhead(l: layout::Overhead, p: *const CUpti_Activity) -> OverheadRec {
    match l {
        layout::Overhead::O1 => overhead!(c12::CUpti_ActivityOverhead, p),
        layout::Overhead::O3 => overhead!(c12::CUpti_ActivityOverhead3, p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zeroed record of type `T` (every generated record struct is plain data).
    fn zeroed<T>() -> T {
        // SAFETY: the record structs are C structs of integers, pointers and unions
        // of them, for which all-zero bytes are a valid value.
        unsafe { std::mem::zeroed() }
    }

    fn p<T>(r: &T) -> *const CUpti_Activity {
        (r as *const T).cast()
    }

    macro_rules! kernel_case {
        ($t:ty, $l:expr) => {{
            let mut r: $t = zeroed();
            r.kind = c12::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            r.start = 1_000;
            r.end = 3_500;
            r.deviceId = 1;
            r.contextId = 2;
            r.streamId = 13;
            r.correlationId = 134;
            (r.gridX, r.gridY, r.gridZ) = (16384, 2, 1);
            (r.blockX, r.blockY, r.blockZ) = (128, 2, 1);
            r.registersPerThread = 16;
            r.staticSharedMemory = 48;
            r.dynamicSharedMemory = 1024;
            r.name = c"_Z4axpyifPKfPf".as_ptr();
            // SAFETY: a record of the layout named.
            let k = unsafe { kernel($l, p(&r)) };
            assert_eq!(
                (k.start, k.end, k.device, k.context, k.stream, k.correlation),
                (1_000, 3_500, 1, 2, 13, 134),
                "{:?}",
                $l
            );
            assert_eq!((k.grid, k.block), ([16384, 2, 1], [128, 2, 1]));
            assert_eq!(
                (k.registers, k.static_shared, k.dynamic_shared),
                (16, 48, 1024)
            );
            assert_eq!(k.name, r.name);
        }};
    }

    #[test]
    fn every_kernel_layout() {
        kernel_case!(c12::CUpti_ActivityKernel9, layout::Kernel::K9);
        kernel_case!(c13::CUpti_ActivityKernel10, layout::Kernel::K10);
        kernel_case!(c13::CUpti_ActivityKernel11, layout::Kernel::K11);
        kernel_case!(c13::CUpti_ActivityKernel12, layout::Kernel::K12);
        kernel_case!(c13::CUpti_ActivityKernel13, layout::Kernel::K13);
    }

    macro_rules! copy_case {
        ($t:ty, $l:expr) => {{
            let mut r: $t = zeroed();
            (r.copyKind, r.srcKind, r.dstKind) = (1, 2, 3);
            (r.bytes, r.start, r.end) = (4096, 10, 20);
            (r.deviceId, r.contextId, r.streamId, r.correlationId) = (0, 1, 7, 128);
            // SAFETY: a record of the layout named.
            let c = unsafe { memcpy($l, p(&r)) };
            assert_eq!(
                (c.copy_kind, c.src_kind, c.dst_kind, c.bytes, c.start, c.end),
                (1, 2, 3, 4096, 10, 20)
            );
            assert_eq!(
                (c.device, c.context, c.stream, c.correlation),
                (0, 1, 7, 128)
            );
            assert_eq!((c.src_device, c.dst_device), (0, 0));
        }};
    }

    #[test]
    fn every_copy_layout_and_peer() {
        copy_case!(c12::CUpti_ActivityMemcpy5, layout::Memcpy::M5);
        copy_case!(c12::CUpti_ActivityMemcpy6, layout::Memcpy::M6);
        copy_case!(c13::CUpti_ActivityMemcpy7, layout::Memcpy::M7);
        let mut r: c12::CUpti_ActivityMemcpyPtoP4 = zeroed();
        (r.copyKind, r.bytes, r.deviceId) = (10, 64, 1);
        (r.srcDeviceId, r.dstDeviceId, r.correlationId) = (1, 2, 99);
        // SAFETY: a peer copy record.
        let c = unsafe { peer(p(&r)) };
        assert_eq!(
            (
                c.copy_kind,
                c.bytes,
                c.src_device,
                c.dst_device,
                c.correlation
            ),
            (10, 64, 1, 2, 99)
        );
    }

    #[test]
    fn sets_memory_syncs_overhead() {
        let mut s4: c12::CUpti_ActivityMemset4 = zeroed();
        (
            s4.value,
            s4.bytes,
            s4.streamId,
            s4.correlationId,
            s4.memoryKind,
        ) = (7, 512, 3, 5, 3);
        let mut s5: c13::CUpti_ActivityMemset5 = zeroed();
        (
            s5.value,
            s5.bytes,
            s5.streamId,
            s5.correlationId,
            s5.memoryKind,
        ) = (7, 512, 3, 5, 3);
        // SAFETY: records of the layouts named.
        let (a, b) = unsafe {
            (
                memset(layout::Memset::S4, p(&s4)),
                memset(layout::Memset::S5, p(&s5)),
            )
        };
        assert_eq!(a, b);
        assert_eq!(
            (a.value, a.bytes, a.stream, a.correlation, a.memory_kind),
            (7, 512, 3, 5, 3)
        );

        let mut m3: c12::CUpti_ActivityMemory3 = zeroed();
        (m3.memoryOperationType, m3.memoryKind, m3.address, m3.bytes) = (1, 3, 0xdead000, 1 << 20);
        (m3.deviceId, m3.correlationId, m3.timestamp) = (0, 121, 77);
        let mut m4: c12::CUpti_ActivityMemory4 = zeroed();
        (m4.memoryOperationType, m4.memoryKind, m4.address, m4.bytes) = (1, 3, 0xdead000, 1 << 20);
        (m4.deviceId, m4.correlationId, m4.timestamp) = (0, 121, 77);
        // SAFETY: records of the layouts named.
        let (a, b) = unsafe {
            (
                memory(layout::Memory::M3, p(&m3)),
                memory(layout::Memory::M4, p(&m4)),
            )
        };
        assert_eq!(a, b);
        assert_eq!(
            (a.op, a.memory_kind, a.address, a.bytes, a.correlation),
            (1, 3, 0xdead000, 1 << 20, 121)
        );

        let mut y1: c12::CUpti_ActivitySynchronization = zeroed();
        (
            y1.type_,
            y1.start,
            y1.end,
            y1.correlationId,
            y1.contextId,
            y1.streamId,
        ) = (3, 5, 9, 129, 1, 13);
        let mut y2: c12::CUpti_ActivitySynchronization2 = zeroed();
        (
            y2.type_,
            y2.start,
            y2.end,
            y2.correlationId,
            y2.contextId,
            y2.streamId,
        ) = (3, 5, 9, 129, 1, 13);
        // SAFETY: records of the layouts named.
        let (a, b) = unsafe {
            (
                sync(layout::Sync::S1, p(&y1)),
                sync(layout::Sync::S2, p(&y2)),
            )
        };
        assert_eq!(a, b);
        assert_eq!(
            (a.ty, a.start, a.end, a.correlation, a.stream),
            (3, 5, 9, 129, 13)
        );

        let mut o1: c12::CUpti_ActivityOverhead = zeroed();
        (o1.overheadKind, o1.start, o1.end) = (0x10000, 100, 250);
        let mut o3: c12::CUpti_ActivityOverhead3 = zeroed();
        (o3.overheadKind, o3.start, o3.end) = (0x10000, 100, 250);
        // SAFETY: records of the layouts named.
        let (a, b) = unsafe {
            (
                overhead(layout::Overhead::O1, p(&o1)),
                overhead(layout::Overhead::O3, p(&o3)),
            )
        };
        assert_eq!(a, b);
        assert_eq!((a.kind, a.start, a.end), (0x10000, 100, 250));
    }
}
