//! Which version of each activity record struct the loaded CUPTI writes.
//!
//! CUPTI writes the newest version of a record its release knows (CUDA 12.9 writes
//! `CUpti_ActivityKernel9`, CUDA 13.0 `CUpti_ActivityKernel10`, 13.4 `Kernel13`, ...),
//! and says nothing in the record itself: the layout follows from the library's
//! `cuptiGetVersion`, never from the headers kprof was built with. The table below
//! comes from the public headers of every CUPTI release on PyPI (12.0 to 13.5); where
//! one API version is not covered by a header (CUDA 12.3, 12.5, 12.7) the older
//! struct is taken, which is the newer one's prefix, so reading it never goes past a
//! record's end. Every struct version kprof reads keeps the fields kprof uses at the
//! same offsets (new versions only append), which `records` relies on only through
//! the generated types.

/// CUPTI API versions of the CUDA 12 releases start here (CUDA 12.0 reports 18 or 19).
pub const FIRST_CUDA12: u32 = 18;
/// CUDA 13 and later report `xxyyzz` (13.0 is 130000).
pub const FIRST_CUDA13: u32 = 130_000;
/// The newest API version whose headers kprof's table was checked against.
pub const NEWEST_KNOWN: u32 = 130_599;

/// Kernel record versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// `CUpti_ActivityKernel9` (CUDA 12.x).
    K9,
    /// `CUpti_ActivityKernel10` (CUDA 13.0).
    K10,
    /// `CUpti_ActivityKernel11` (CUDA 13.1, 13.2).
    K11,
    /// `CUpti_ActivityKernel12` (CUDA 13.3).
    K12,
    /// `CUpti_ActivityKernel13` (CUDA 13.4, 13.5).
    K13,
}

/// Memory copy record versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memcpy {
    /// `CUpti_ActivityMemcpy5` (CUDA 12.0 to 12.7).
    M5,
    /// `CUpti_ActivityMemcpy6` (CUDA 12.8 to 13.3).
    M6,
    /// `CUpti_ActivityMemcpy7` (CUDA 13.4 on).
    M7,
}

/// Memory set record versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memset {
    /// `CUpti_ActivityMemset4` (CUDA 12.x to 13.3).
    S4,
    /// `CUpti_ActivityMemset5` (CUDA 13.4 on).
    S5,
}

/// Memory (MEMORY2) record versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// `CUpti_ActivityMemory3` (CUDA 12.0 to 12.5).
    M3,
    /// `CUpti_ActivityMemory4` (CUDA 12.6 on).
    M4,
}

/// Synchronization record versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// `CUpti_ActivitySynchronization` (CUDA 12.0 to 12.7).
    S1,
    /// `CUpti_ActivitySynchronization2` (CUDA 12.8 on).
    S2,
}

/// Overhead record versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overhead {
    /// `CUpti_ActivityOverhead` (CUDA 12.0 to 12.3).
    O1,
    /// `CUpti_ActivityOverhead3` (CUDA 12.4 on).
    O3,
}

/// The record structs one CUPTI release writes. Peer copies are
/// `CUpti_ActivityMemcpyPtoP4` in every supported release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// CUPTI API version it was chosen for.
    pub version: u32,
    /// Kernels (CONCURRENT_KERNEL).
    pub kernel: Kernel,
    /// Copies (MEMCPY).
    pub memcpy: Memcpy,
    /// Sets (MEMSET).
    pub memset: Memset,
    /// Device memory (MEMORY2).
    pub memory: Memory,
    /// Synchronizations (SYNCHRONIZATION).
    pub sync: Sync,
    /// CUPTI's own overhead (OVERHEAD).
    pub overhead: Overhead,
    /// Newer than every release kprof's table was checked against: the newest known
    /// structs are read (CUPTI has only ever appended fields to a record).
    pub newer_than_known: bool,
}

/// Why a CUPTI version cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Older than CUDA 12 (another record history).
    #[error("CUPTI API version {0} is older than CUDA 12, which kprof needs")]
    TooOld(u32),
    /// Between the CUDA 12 numbering and CUDA 13's `xxyyzz`.
    #[error("CUPTI API version {0} is not one kprof knows")]
    Unknown(u32),
}

impl Layout {
    /// The layout of the records CUPTI API version `v` writes.
    pub fn for_version(v: u32) -> Result<Layout, LayoutError> {
        if v < FIRST_CUDA12 {
            return Err(LayoutError::TooOld(v));
        }
        if v > 99 && v < FIRST_CUDA13 {
            return Err(LayoutError::Unknown(v));
        }
        let cuda13 = v >= FIRST_CUDA13;
        let minor13 = if cuda13 { (v / 100) % 100 } else { 0 };
        let major = if cuda13 { v / 10_000 } else { 12 };
        // Past 12.9 update 1 (28) or 13.5: the newest known records of that major.
        let newer = (v > 28 && !cuda13) || v > NEWEST_KNOWN;
        let m13 = if major > 13 { 99 } else { minor13 };
        let kernel = match (cuda13, m13) {
            (false, _) => Kernel::K9,
            (true, 0) => Kernel::K10,
            (true, 1..=2) => Kernel::K11,
            (true, 3) => Kernel::K12,
            (true, _) => Kernel::K13,
        };
        let memcpy = match (cuda13, m13) {
            (false, _) if v < 26 => Memcpy::M5,
            (false, _) => Memcpy::M6,
            (true, 0..=3) => Memcpy::M6,
            (true, _) => Memcpy::M7,
        };
        let memset = if cuda13 && m13 >= 4 {
            Memset::S5
        } else {
            Memset::S4
        };
        let memory = if !cuda13 && v < 24 {
            Memory::M3
        } else {
            Memory::M4
        };
        let sync = if !cuda13 && v < 26 {
            Sync::S1
        } else {
            Sync::S2
        };
        let overhead = if !cuda13 && v < 22 {
            Overhead::O1
        } else {
            Overhead::O3
        };
        Ok(Layout {
            version: v,
            kernel,
            memcpy,
            memset,
            memory,
            sync,
            overhead,
            newer_than_known: newer,
        })
    }

    /// The CUDA release a CUPTI API version belongs to, as `major.minor` text.
    pub fn cuda_release(v: u32) -> String {
        if v >= FIRST_CUDA13 {
            format!("{}.{}", v / 10_000, (v / 100) % 100)
        } else {
            "12".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(v: u32) -> Layout {
        Layout::for_version(v).unwrap()
    }

    #[test]
    fn cuda12_releases() {
        // 12.0 (18/19): the oldest structs of the CUDA 12 history.
        let a = l(18);
        assert_eq!(
            (a.kernel, a.memcpy, a.memset, a.memory, a.sync, a.overhead),
            (
                Kernel::K9,
                Memcpy::M5,
                Memset::S4,
                Memory::M3,
                Sync::S1,
                Overhead::O1
            )
        );
        // 12.4 (22): Overhead3; 12.6 (24): Memory4; 12.8 (26): Memcpy6, Synchronization2.
        assert_eq!(l(22).overhead, Overhead::O3);
        assert_eq!(l(22).memory, Memory::M3);
        assert_eq!(l(24).memory, Memory::M4);
        assert_eq!(l(24).memcpy, Memcpy::M5);
        assert_eq!((l(26).memcpy, l(26).sync), (Memcpy::M6, Sync::S2));
        // 12.9 update 1 (28).
        let b = l(28);
        assert_eq!(
            (b.kernel, b.memcpy, b.memset, b.memory, b.sync, b.overhead),
            (
                Kernel::K9,
                Memcpy::M6,
                Memset::S4,
                Memory::M4,
                Sync::S2,
                Overhead::O3
            )
        );
        assert!(!b.newer_than_known);
    }

    #[test]
    fn cuda13_releases() {
        assert_eq!(l(130_000).kernel, Kernel::K10);
        assert_eq!(l(130_001).kernel, Kernel::K10);
        assert_eq!(l(130_101).kernel, Kernel::K11);
        assert_eq!(l(130_202).kernel, Kernel::K11);
        assert_eq!(l(130_301).kernel, Kernel::K12);
        assert_eq!(l(130_301).memcpy, Memcpy::M6);
        let c = l(130_401);
        assert_eq!(
            (c.kernel, c.memcpy, c.memset, c.memory, c.sync, c.overhead),
            (
                Kernel::K13,
                Memcpy::M7,
                Memset::S5,
                Memory::M4,
                Sync::S2,
                Overhead::O3
            )
        );
        assert_eq!(l(130_500).kernel, Kernel::K13);
        assert!(!l(130_500).newer_than_known);
    }

    #[test]
    fn newer_and_unknown() {
        let n = l(130_600);
        assert!(n.newer_than_known);
        assert_eq!(n.kernel, Kernel::K13);
        let n = l(140_000);
        assert!(n.newer_than_known);
        assert_eq!(
            (n.kernel, n.memcpy, n.memset),
            (Kernel::K13, Memcpy::M7, Memset::S5)
        );
        assert!(l(29).newer_than_known);
        assert_eq!(l(29).kernel, Kernel::K9);
        assert_eq!(Layout::for_version(17), Err(LayoutError::TooOld(17)));
        assert_eq!(
            Layout::for_version(12_000),
            Err(LayoutError::Unknown(12_000))
        );
        assert_eq!(Layout::cuda_release(130_401), "13.4");
        assert_eq!(Layout::cuda_release(28), "12");
    }
}
