//! What a thread is doing, by the kind of its innermost open instance: the
//! categories of the concurrency view ([`crate::consume::concurrency`]). Plain
//! data, so that a thread's own profile ([`crate::hot::aggregate`]) can follow
//! its category over time as it records.

use kprof_abi::Kind;

/// Number of categories, idle included.
pub const CATEGORIES: usize = 8;

/// What a thread is doing, by the kind of its innermost open instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Kernels: Kokkos `parallel_for/reduce/scan`, RAJA launches and captures,
    /// OpenACC compute constructs and launches, OpenMP target regions and
    /// submissions.
    Kernel = 0,
    /// OpenMP parallel work not in a finer kind: the region, implicit tasks,
    /// worksharing constructs, reductions, `masked`, holding a mutex.
    Parallel = 1,
    /// OpenMP explicit tasks (running, and their creation).
    Task = 2,
    /// Waiting: OpenMP barriers, sync waits, `taskwait`, `taskgroup`, waiting for
    /// a mutex; Kokkos fences; OpenACC `wait`.
    Wait = 3,
    /// Moving data: deep copies, OpenMP target data, OpenACC data constructs,
    /// enter/exit data, updates and transfers.
    Data = 4,
    /// Named regions (Kokkos profile regions, `kprof_region_begin`) with nothing
    /// finer open inside.
    Region = 5,
    /// Inside a runtime's own calls: GPU API calls, MPI calls, device initialization and
    /// shutdown.
    Runtime = 6,
    /// Inside no instance: the thread is known (it recorded) but between
    /// instances (serial code outside any region, or not running).
    Idle = 7,
}

/// [`Category::of`] for every kind discriminant.
const OF_KIND: [Option<Category>; 256] = {
    let mut table = [None; 256];
    let mut i = 0;
    while i < Kind::ALL.len() {
        table[Kind::ALL[i] as usize] = Category::of_kind(Kind::ALL[i]);
        i += 1;
    }
    table
};

impl Category {
    /// Every category, in index order.
    pub const ALL: [Category; CATEGORIES] = [
        Category::Kernel,
        Category::Parallel,
        Category::Task,
        Category::Wait,
        Category::Data,
        Category::Region,
        Category::Runtime,
        Category::Idle,
    ];

    /// The category of a thread whose innermost open instance is of `kind`;
    /// `None` for device activities, which are device time, not a thread's.
    /// (On every begin: one load from a table made at compile time.)
    #[inline(always)]
    pub fn of(kind: Kind) -> Option<Category> {
        OF_KIND[kind as usize]
    }

    /// [`Category::of`], by kind.
    const fn of_kind(kind: Kind) -> Option<Category> {
        use Category::*;
        Some(match kind {
            Kind::ParallelFor
            | Kind::ParallelReduce
            | Kind::ParallelScan
            | Kind::AccCompute
            | Kind::AccLaunch
            | Kind::RajaLaunch
            | Kind::RajaCapture
            | Kind::OmpTarget
            | Kind::OmpTargetSubmit => Kernel,
            Kind::OmpParallel
            | Kind::OmpImplicitTask
            | Kind::OmpLoop
            | Kind::OmpSections
            | Kind::OmpSingle
            | Kind::OmpSingleOther
            | Kind::OmpWorkshare
            | Kind::OmpDistribute
            | Kind::OmpTaskloop
            | Kind::OmpDispatch
            | Kind::OmpReduction
            | Kind::OmpMutexHold
            | Kind::OmpMasked => Parallel,
            Kind::OmpTask | Kind::OmpTaskCreate => Task,
            Kind::Fence
            | Kind::OmpBarrier
            | Kind::OmpSyncWait
            | Kind::OmpTaskwait
            | Kind::OmpTaskgroup
            | Kind::OmpMutexWait
            | Kind::AccWait => Wait,
            Kind::DeepCopy
            | Kind::OmpTargetData
            | Kind::AccData
            | Kind::AccEnterData
            | Kind::AccExitData
            | Kind::AccUpdate
            | Kind::AccUpload
            | Kind::AccDownload => Data,
            // Instants never open; should a runtime open one, it is the region's.
            Kind::Region
            | Kind::UserRegion
            | Kind::Marker
            | Kind::DualViewSync
            | Kind::DualViewModify
            | Kind::UserCounter
            | Kind::Message
            | Kind::ActorSegment => Region,
            Kind::GpuApi
            | Kind::Mpi
            | Kind::AccDeviceInit
            | Kind::AccDeviceShutdown
            | Kind::OmpDevice => Runtime,
            Kind::GpuKernel | Kind::GpuMemcpy | Kind::GpuMemset | Kind::GpuSync => return None,
        })
    }

    /// Name in profiles and traces (`"wait"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Kernel => "kernel",
            Category::Parallel => "parallel",
            Category::Task => "task",
            Category::Wait => "wait",
            Category::Data => "data",
            Category::Region => "region",
            Category::Runtime => "runtime",
            Category::Idle => "idle",
        }
    }

    /// Name of its counter track in traces (`"threads wait"`).
    pub fn track_name(self) -> String {
        format!("threads {}", self.as_str())
    }
}
