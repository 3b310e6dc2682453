//! What an event is: the kinds of measured instances and of anomalies, shared by the
//! plugins that produce events and the core that aggregates and writes them.

/// The kind of a measured instance or instant event, carried in every record.
///
/// The discriminants are part of the ABI: never renumber, only append.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Kokkos `parallel_for`.
    ParallelFor = 1,
    /// Kokkos `parallel_reduce`.
    ParallelReduce = 2,
    /// Kokkos `parallel_scan`.
    ParallelScan = 3,
    /// A fence (Kokkos `fence`, device synchronisation).
    Fence = 4,
    /// A runtime's named region (Kokkos `pushRegion`/`popRegion`).
    Region = 5,
    /// A memory copy between spaces (Kokkos `deep_copy`).
    DeepCopy = 6,
    /// A region from the kprof annotation API (`kprof_region_begin`).
    UserRegion = 7,
    /// A named instant marker (Kokkos `markEvent`, `kprof_event`).
    Marker = 8,
    /// A dual-view sync; instant values: a = pointer, b = 1 toward the device.
    DualViewSync = 9,
    /// A dual-view modify; instant values: a = pointer, b = 1 on the device.
    DualViewModify = 10,
    /// An OpenMP parallel region (on the thread that encountered it).
    OmpParallel = 11,
    /// An OpenMP implicit task: one team member's share of a parallel region.
    OmpImplicitTask = 12,
    /// An OpenMP worksharing loop (any schedule).
    OmpLoop = 13,
    /// OpenMP `sections`.
    OmpSections = 14,
    /// OpenMP `single` (the executing thread; see [`Kind::OmpSingleOther`]).
    OmpSingle = 15,
    /// OpenMP `single`, on a thread that skipped the block.
    OmpSingleOther = 16,
    /// OpenMP `workshare`.
    OmpWorkshare = 17,
    /// OpenMP `distribute`.
    OmpDistribute = 18,
    /// OpenMP `taskloop`.
    OmpTaskloop = 19,
    /// A chunk of a loop or a section handed to a thread (instant: a = first
    /// iteration, b = iterations).
    OmpDispatch = 20,
    /// An OpenMP barrier (explicit or implicit): the whole synchronisation.
    OmpBarrier = 21,
    /// Time waiting inside a synchronisation (barrier, taskwait, taskgroup).
    OmpSyncWait = 22,
    /// OpenMP `taskwait`.
    OmpTaskwait = 23,
    /// OpenMP `taskgroup`.
    OmpTaskgroup = 24,
    /// An OpenMP reduction.
    OmpReduction = 25,
    /// Waiting to acquire a mutex (lock, nest lock, critical, ordered, atomic).
    OmpMutexWait = 26,
    /// Holding a mutex.
    OmpMutexHold = 27,
    /// OpenMP `masked` / `master`.
    OmpMasked = 28,
    /// An OpenMP explicit task executing (from its first schedule to completion).
    OmpTask = 29,
    /// An explicit task created (instant: a = task GUID, b = OMPT task flags).
    OmpTaskCreate = 30,
    /// An OpenMP target region.
    OmpTarget = 31,
    /// A target data operation (alloc, transfer, delete); bytes as a copy.
    OmpTargetData = 32,
    /// A target kernel submitted to a device.
    OmpTargetSubmit = 33,
    /// A device event (initialize, load, finalize) (instant: a = device number).
    OmpDevice = 34,
    /// An OpenACC compute construct (parallel, kernels, serial).
    AccCompute = 35,
    /// An OpenACC data construct.
    AccData = 36,
    /// OpenACC enter data.
    AccEnterData = 37,
    /// OpenACC exit data.
    AccExitData = 38,
    /// OpenACC update.
    AccUpdate = 39,
    /// OpenACC wait.
    AccWait = 40,
    /// OpenACC device initialization.
    AccDeviceInit = 41,
    /// OpenACC device shutdown.
    AccDeviceShutdown = 42,
    /// A kernel launch enqueued on an async queue.
    AccLaunch = 43,
    /// A host-to-device transfer enqueued (a transfer: bytes, direction).
    AccUpload = 44,
    /// A device-to-host transfer enqueued (a transfer: bytes, direction).
    AccDownload = 45,
    /// A RAJA kernel launch (preLaunch -> postLaunch).
    RajaLaunch = 46,
    /// A RAJA kernel capture (preCapture -> postCapture).
    RajaCapture = 47,
    /// A value of a user counter (`kprof_counter`; instant: a = f64 bits).
    UserCounter = 48,
    /// A kernel that ran on a GPU (a device activity: explicit times on a device
    /// stream track, see `CoreApi::activity`).
    GpuKernel = 49,
    /// A memory copy a GPU performed (a device activity; bytes and direction).
    GpuMemcpy = 50,
    /// A memory set a GPU performed (a device activity; bytes).
    GpuMemset = 51,
    /// A synchronization the GPU runtime reported (a device activity: stream,
    /// event or context synchronization).
    GpuSync = 52,
    /// A GPU runtime or driver API call on the host thread that made it
    /// (`cudaLaunchKernel`, `cudaMemcpyAsync`, `cudaMalloc`, ...).
    GpuApi = 53,
    /// Messages sent to or received from a peer on a channel (an instant: name =
    /// channel, a = [`message::pack`]ed peer, direction and count, b = bytes),
    /// aggregated into the channel's matrix row, not drawn one by one.
    Message = 54,
    /// An MPI call (`MPI_Send`, `MPI_Allreduce`, ...) on the thread that made it,
    /// named by the function; arguments `bytes_sent`, `bytes_received`, `peer` (in
    /// `MPI_COMM_WORLD` ranks) and `comm_size` (collectives).
    Mpi = 55,
    /// A segment of an FA-BSP (HClib-Actor) PE's actor phase, named `actor MAIN`
    /// (the program's own work), `actor PROC` (message handlers) or `actor COMM`
    /// (inside Conveyors and OpenSHMEM): opened only with a trace or counters,
    /// for per-PE timelines and counters per segment.
    ActorSegment = 56,
}

/// The packing of a [`Kind::Message`] instant's first value.
pub mod message {
    /// Sent to the peer.
    pub const SEND: u8 = 0;
    /// Received from the peer.
    pub const RECEIVE: u8 = 1;
    /// Most messages one instant carries (24 bits).
    pub const MAX_COUNT: u64 = (1 << 24) - 1;

    /// Peer rank, direction and message count in one value. (Inlined: plugins
    /// call it per message, from another crate.)
    #[inline]
    pub fn pack(peer: u32, direction: u8, count: u64) -> u64 {
        u64::from(peer) | u64::from(direction) << 32 | count.min(MAX_COUNT) << 40
    }

    /// The peer, direction and count of a packed value.
    #[inline]
    pub fn unpack(a: u64) -> (u32, u8, u64) {
        (a as u32, (a >> 32) as u8, a >> 40)
    }
}

impl Kind {
    /// Every kind, in discriminant order.
    pub const ALL: [Kind; 56] = [
        Kind::ParallelFor,
        Kind::ParallelReduce,
        Kind::ParallelScan,
        Kind::Fence,
        Kind::Region,
        Kind::DeepCopy,
        Kind::UserRegion,
        Kind::Marker,
        Kind::DualViewSync,
        Kind::DualViewModify,
        Kind::OmpParallel,
        Kind::OmpImplicitTask,
        Kind::OmpLoop,
        Kind::OmpSections,
        Kind::OmpSingle,
        Kind::OmpSingleOther,
        Kind::OmpWorkshare,
        Kind::OmpDistribute,
        Kind::OmpTaskloop,
        Kind::OmpDispatch,
        Kind::OmpBarrier,
        Kind::OmpSyncWait,
        Kind::OmpTaskwait,
        Kind::OmpTaskgroup,
        Kind::OmpReduction,
        Kind::OmpMutexWait,
        Kind::OmpMutexHold,
        Kind::OmpMasked,
        Kind::OmpTask,
        Kind::OmpTaskCreate,
        Kind::OmpTarget,
        Kind::OmpTargetData,
        Kind::OmpTargetSubmit,
        Kind::OmpDevice,
        Kind::AccCompute,
        Kind::AccData,
        Kind::AccEnterData,
        Kind::AccExitData,
        Kind::AccUpdate,
        Kind::AccWait,
        Kind::AccDeviceInit,
        Kind::AccDeviceShutdown,
        Kind::AccLaunch,
        Kind::AccUpload,
        Kind::AccDownload,
        Kind::RajaLaunch,
        Kind::RajaCapture,
        Kind::UserCounter,
        Kind::GpuKernel,
        Kind::GpuMemcpy,
        Kind::GpuMemset,
        Kind::GpuSync,
        Kind::GpuApi,
        Kind::Message,
        Kind::Mpi,
        Kind::ActorSegment,
    ];

    /// The kind with discriminant `v`, if any.
    pub fn from_u8(v: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(v).wrapping_sub(1)).copied()
    }

    /// Name used in profiles (`"parallel_for"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ParallelFor => "parallel_for",
            Kind::ParallelReduce => "parallel_reduce",
            Kind::ParallelScan => "parallel_scan",
            Kind::Fence => "fence",
            Kind::Region => "region",
            Kind::DeepCopy => "deep_copy",
            Kind::UserRegion => "user_region",
            Kind::Marker => "marker",
            Kind::DualViewSync => "dual_view_sync",
            Kind::DualViewModify => "dual_view_modify",
            Kind::OmpParallel => "omp_parallel",
            Kind::OmpImplicitTask => "omp_implicit_task",
            Kind::OmpLoop => "omp_loop",
            Kind::OmpSections => "omp_sections",
            Kind::OmpSingle => "omp_single",
            Kind::OmpSingleOther => "omp_single_other",
            Kind::OmpWorkshare => "omp_workshare",
            Kind::OmpDistribute => "omp_distribute",
            Kind::OmpTaskloop => "omp_taskloop",
            Kind::OmpDispatch => "omp_dispatch",
            Kind::OmpBarrier => "omp_barrier",
            Kind::OmpSyncWait => "omp_sync_wait",
            Kind::OmpTaskwait => "omp_taskwait",
            Kind::OmpTaskgroup => "omp_taskgroup",
            Kind::OmpReduction => "omp_reduction",
            Kind::OmpMutexWait => "omp_mutex_wait",
            Kind::OmpMutexHold => "omp_mutex_hold",
            Kind::OmpMasked => "omp_masked",
            Kind::OmpTask => "omp_task",
            Kind::OmpTaskCreate => "omp_task_create",
            Kind::OmpTarget => "omp_target",
            Kind::OmpTargetData => "omp_target_data",
            Kind::OmpTargetSubmit => "omp_target_submit",
            Kind::OmpDevice => "omp_device",
            Kind::AccCompute => "acc_compute",
            Kind::AccData => "acc_data",
            Kind::AccEnterData => "acc_enter_data",
            Kind::AccExitData => "acc_exit_data",
            Kind::AccUpdate => "acc_update",
            Kind::AccWait => "acc_wait",
            Kind::AccDeviceInit => "acc_device_init",
            Kind::AccDeviceShutdown => "acc_device_shutdown",
            Kind::AccLaunch => "acc_launch",
            Kind::AccUpload => "acc_upload",
            Kind::AccDownload => "acc_download",
            Kind::RajaLaunch => "raja_launch",
            Kind::RajaCapture => "raja_capture",
            Kind::UserCounter => "user_counter",
            Kind::GpuKernel => "gpu_kernel",
            Kind::GpuMemcpy => "gpu_memcpy",
            Kind::GpuMemset => "gpu_memset",
            Kind::GpuSync => "gpu_sync",
            Kind::GpuApi => "gpu_api",
            Kind::Message => "message",
            Kind::Mpi => "mpi",
            Kind::ActorSegment => "actor_segment",
        }
    }

    /// Trace category, by source (`"kokkos.parallel_for"`).
    pub fn category(self) -> &'static str {
        match self {
            Kind::ParallelFor => "kokkos.parallel_for",
            Kind::ParallelReduce => "kokkos.parallel_reduce",
            Kind::ParallelScan => "kokkos.parallel_scan",
            Kind::Fence => "kokkos.fence",
            Kind::Region => "kokkos.region",
            Kind::DeepCopy => "kokkos.deep_copy",
            Kind::UserRegion => "user.region",
            Kind::Marker => "kokkos.event",
            Kind::DualViewSync | Kind::DualViewModify => "kokkos.dual_view",
            Kind::OmpParallel => "openmp.parallel",
            Kind::OmpImplicitTask => "openmp.implicit_task",
            Kind::OmpLoop
            | Kind::OmpSections
            | Kind::OmpSingle
            | Kind::OmpSingleOther
            | Kind::OmpWorkshare
            | Kind::OmpDistribute
            | Kind::OmpTaskloop => "openmp.work",
            Kind::OmpDispatch => "openmp.dispatch",
            Kind::OmpBarrier | Kind::OmpTaskwait | Kind::OmpTaskgroup | Kind::OmpReduction => {
                "openmp.sync"
            }
            Kind::OmpSyncWait => "openmp.sync_wait",
            Kind::OmpMutexWait | Kind::OmpMutexHold => "openmp.mutex",
            Kind::OmpMasked => "openmp.masked",
            Kind::OmpTask | Kind::OmpTaskCreate => "openmp.task",
            Kind::OmpTarget | Kind::OmpTargetSubmit | Kind::OmpDevice => "openmp.target",
            Kind::OmpTargetData => "openmp.target_data",
            Kind::AccCompute => "openacc.compute",
            Kind::AccData | Kind::AccEnterData | Kind::AccExitData | Kind::AccUpdate => {
                "openacc.data"
            }
            Kind::AccWait => "openacc.wait",
            Kind::AccDeviceInit | Kind::AccDeviceShutdown => "openacc.device",
            Kind::AccLaunch => "openacc.launch",
            Kind::AccUpload | Kind::AccDownload => "openacc.transfer",
            Kind::RajaLaunch => "raja.launch",
            Kind::RajaCapture => "raja.capture",
            Kind::UserCounter => "user.counter",
            Kind::GpuKernel => "gpu.kernel",
            Kind::GpuMemcpy | Kind::GpuMemset => "gpu.memory",
            Kind::GpuSync => "gpu.sync",
            Kind::GpuApi => "gpu.api",
            Kind::Message => "message",
            Kind::Mpi => "mpi",
            Kind::ActorSegment => "actor.segment",
        }
    }

    /// Whether OpenMP reports this kind ([`Kind::model`] "openmp", without the
    /// string compare: the in-place profile asks on every end).
    #[inline]
    pub fn is_openmp(self) -> bool {
        let k = self as u8;
        k >= Kind::OmpParallel as u8 && k < Kind::AccCompute as u8
    }

    /// The programming model (or API) that reports this kind: a nesting of two
    /// kinds of different models is an edge between plugins, drawn as a flow.
    pub fn model(self) -> &'static str {
        match self as u8 {
            _ if matches!(self, Kind::UserRegion | Kind::UserCounter) => "user",
            _ if self == Kind::Message => "message",
            _ if self == Kind::Mpi => "mpi",
            _ if self == Kind::ActorSegment => "actor",
            k if k >= Kind::GpuKernel as u8 => "gpu",
            k if k >= Kind::RajaLaunch as u8 => "raja",
            k if k >= Kind::AccCompute as u8 => "openacc",
            k if k >= Kind::OmpParallel as u8 => "openmp",
            _ => "kokkos",
        }
    }

    /// Whether a runtime may legitimately still have instances of this kind open
    /// when the process ends: LLVM's libomp reports the end of a worker's implicit
    /// task, implicit barrier and its wait only when the next parallel region wakes
    /// the worker, so after the last region they stay open.
    pub fn may_end_late(self) -> bool {
        matches!(
            self,
            Kind::OmpImplicitTask | Kind::OmpBarrier | Kind::OmpSyncWait
        )
    }

    /// Whether instances of this kind are device activities: recorded after the
    /// fact with explicit times on a device track (`CoreApi::activity`), never
    /// opened and closed on a host thread.
    pub fn is_device_activity(self) -> bool {
        matches!(
            self,
            Kind::GpuKernel | Kind::GpuMemcpy | Kind::GpuMemset | Kind::GpuSync
        )
    }

    /// Whether instances of this kind are kernels (parallel dispatches).
    pub fn is_kernel(self) -> bool {
        matches!(
            self,
            Kind::ParallelFor | Kind::ParallelReduce | Kind::ParallelScan
        )
    }
}

/// Things that went wrong in the host's use of a tool interface, or inside kprof,
/// that are counted and reported instead of being fatal.
///
/// The discriminants are part of the ABI: never renumber, only append.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anomaly {
    /// A NULL name was passed (recorded as `<null>`).
    NullName = 0,
    /// A name was not valid UTF-8 (shown with U+FFFD).
    InvalidUtf8Name = 1,
    /// An end whose id is unknown or already ended, or a pop with nothing open.
    UnmatchedEnd = 2,
    /// An end that closed inner instances still open.
    OutOfOrderEnd = 3,
    /// An instance still open at finalize (closed then).
    UnclosedAtExit = 4,
    /// A section id that was never created (or a stop without a start).
    UnknownSection = 5,
    /// A deallocation of a pointer never allocated.
    UnknownFree = 6,
    /// A call after finalize (ignored).
    CallAfterFinalize = 7,
    /// A fault inside kprof that was caught; the program is unaffected.
    InternalError = 8,
    /// An event type a runtime reported that this plugin does not know (ignored).
    UnknownEvent = 9,
    /// An instance nested deeper than the profile's depth cap (`KPROF_MAX_DEPTH`):
    /// its time is inside the node at the cap and not counted again.
    BeyondMaxDepth = 10,
    /// An instance whose end was among dropped records (full buffers): its
    /// duration is unknown and kept out of the statistics.
    EndLost = 11,
    /// A device activity whose launching host instance is unknown (a correlation
    /// id never seen at a launch, or a launch before measuring began): placed at
    /// the profile's root.
    UnknownCorrelation = 12,
    /// A device activity lost: the GPU tool library dropped records (its buffers
    /// were full) or the plugin's bounded buffer pool was empty.
    DeviceRecordsDropped = 13,
    /// A device activity whose end is before its begin (a clock the vendor did
    /// not keep): recorded with zero duration.
    DeviceTimeInvalid = 14,
    /// A thread whose PAPI event set could not be made or started: its
    /// instances carry no counters (`KPROF_COUNTERS`).
    CountersUnavailable = 15,
    /// A counter read PAPI refused: that instance carries no counters.
    CounterReadFailed = 16,
    /// A misuse of the Kokkos tuning interface (an undeclared variable, a value
    /// outside its declared set, a context ended twice or never): ignored; the
    /// profile's `tuning` block says which.
    TuningMisuse = 17,
    /// An annotation region ended by a name other than the innermost open
    /// region's (`kprof_region_end("b")` inside `"a"`): a region of that name
    /// open further out is closed with what is open inside it; none, the end is
    /// ignored. The profile's `anomaly_notes` name both.
    MismatchedEnd = 18,
}

impl Anomaly {
    /// Every anomaly, in discriminant order.
    pub const ALL: [Anomaly; 19] = [
        Anomaly::NullName,
        Anomaly::InvalidUtf8Name,
        Anomaly::UnmatchedEnd,
        Anomaly::OutOfOrderEnd,
        Anomaly::UnclosedAtExit,
        Anomaly::UnknownSection,
        Anomaly::UnknownFree,
        Anomaly::CallAfterFinalize,
        Anomaly::InternalError,
        Anomaly::UnknownEvent,
        Anomaly::BeyondMaxDepth,
        Anomaly::EndLost,
        Anomaly::UnknownCorrelation,
        Anomaly::DeviceRecordsDropped,
        Anomaly::DeviceTimeInvalid,
        Anomaly::CountersUnavailable,
        Anomaly::CounterReadFailed,
        Anomaly::TuningMisuse,
        Anomaly::MismatchedEnd,
    ];

    /// The anomaly with discriminant `v`, if any.
    pub fn from_u32(v: u32) -> Option<Anomaly> {
        Anomaly::ALL.get(v as usize).copied()
    }

    /// Key used in `profile.json`'s `anomalies` object.
    pub fn key(self) -> &'static str {
        match self {
            Anomaly::NullName => "null_names",
            Anomaly::InvalidUtf8Name => "invalid_utf8_names",
            Anomaly::UnmatchedEnd => "unmatched_ends",
            Anomaly::OutOfOrderEnd => "out_of_order_ends",
            Anomaly::UnclosedAtExit => "unclosed_at_exit",
            Anomaly::UnknownSection => "unknown_sections",
            Anomaly::UnknownFree => "unknown_frees",
            Anomaly::CallAfterFinalize => "calls_after_finalize",
            Anomaly::InternalError => "internal_errors",
            Anomaly::UnknownEvent => "unknown_events",
            Anomaly::BeyondMaxDepth => "beyond_max_depth",
            Anomaly::EndLost => "ends_lost_to_drops",
            Anomaly::UnknownCorrelation => "device_unknown_correlation",
            Anomaly::DeviceRecordsDropped => "device_records_dropped",
            Anomaly::DeviceTimeInvalid => "device_time_invalid",
            Anomaly::CountersUnavailable => "threads_not_counted",
            Anomaly::CounterReadFailed => "counter_reads_failed",
            Anomaly::TuningMisuse => "tuning_misuses",
            Anomaly::MismatchedEnd => "mismatched_region_ends",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_values_round_trip() {
        let a = message::pack(0xdead_beef, message::RECEIVE, 12);
        assert_eq!(message::unpack(a), (0xdead_beef, message::RECEIVE, 12));
        let big = message::pack(1, message::SEND, u64::MAX);
        assert_eq!(message::unpack(big), (1, message::SEND, message::MAX_COUNT));
        assert_eq!(Kind::Message.model(), "message");
    }

    #[test]
    fn discriminants_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_u8(k as u8), Some(k));
            assert_eq!(k.is_openmp(), k.model() == "openmp", "{k:?}");
        }
        assert_eq!(Kind::from_u8(0), None);
        assert_eq!(Kind::OmpDevice.model(), "openmp");
        assert_eq!(Kind::AccCompute.model(), "openacc");
        assert_eq!(Kind::RajaCapture.model(), "raja");
        assert_eq!(Kind::UserCounter.model(), "user");
        assert_eq!(Kind::Fence.model(), "kokkos");
        assert_eq!(Kind::GpuApi.model(), "gpu");
        assert_eq!(Kind::from_u8(55), Some(Kind::Mpi));
        assert_eq!(
            (Kind::Mpi.as_str(), Kind::Mpi.category(), Kind::Mpi.model()),
            ("mpi", "mpi", "mpi")
        );
        assert_eq!(Kind::from_u8(56), Some(Kind::ActorSegment));
        assert_eq!(Kind::ActorSegment.model(), "actor");
        assert!(Kind::GpuKernel.is_device_activity() && !Kind::GpuApi.is_device_activity());
        assert_eq!(Kind::from_u8(200), None);
        for a in Anomaly::ALL {
            assert_eq!(Anomaly::from_u32(a as u32), Some(a));
        }
        assert_eq!(Anomaly::from_u32(99), None);
    }
}
