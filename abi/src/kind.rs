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
}

impl Kind {
    /// Every kind, in discriminant order.
    pub const ALL: [Kind; 10] = [
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
        }
    }

    /// The programming model (or API) that reports this kind: a nesting of two
    /// kinds of different models is an edge between plugins, drawn as a flow.
    pub fn model(self) -> &'static str {
        match self {
            Kind::UserRegion => "user",
            _ => "kokkos",
        }
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
}

impl Anomaly {
    /// Every anomaly, in discriminant order.
    pub const ALL: [Anomaly; 9] = [
        Anomaly::NullName,
        Anomaly::InvalidUtf8Name,
        Anomaly::UnmatchedEnd,
        Anomaly::OutOfOrderEnd,
        Anomaly::UnclosedAtExit,
        Anomaly::UnknownSection,
        Anomaly::UnknownFree,
        Anomaly::CallAfterFinalize,
        Anomaly::InternalError,
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discriminants_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_u8(k as u8), Some(k));
        }
        assert_eq!(Kind::from_u8(0), None);
        assert_eq!(Kind::from_u8(200), None);
        for a in Anomaly::ALL {
            assert_eq!(Anomaly::from_u32(a as u32), Some(a));
        }
        assert_eq!(Anomaly::from_u32(99), None);
    }
}
