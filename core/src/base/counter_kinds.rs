//! The kinds of instances that hardware counters are read for
//! (`KPROF_COUNTER_KINDS`): the words a user writes and the kinds each selects.
//! Plain settings, read by the configuration and by the counters of the hot path.

use kprof_abi::Kind;

/// The kinds counted when `KPROF_COUNTER_KINDS` is not set.
pub const DEFAULT_KINDS: &str = "regions,kernels,parallel";

/// The words `KPROF_COUNTER_KINDS` takes, and the kinds each selects.
const KIND_WORDS: &[(&str, &[Kind])] = &[
    ("regions", &[Kind::Region, Kind::UserRegion]),
    (
        "kernels",
        &[
            Kind::ParallelFor,
            Kind::ParallelReduce,
            Kind::ParallelScan,
            Kind::AccCompute,
            Kind::RajaLaunch,
            Kind::OmpTargetSubmit,
        ],
    ),
    ("parallel", &[Kind::OmpParallel, Kind::OmpImplicitTask]),
    (
        "loops",
        &[
            Kind::OmpLoop,
            Kind::OmpSections,
            Kind::OmpSingle,
            Kind::OmpWorkshare,
            Kind::OmpDistribute,
            Kind::OmpTaskloop,
            Kind::OmpMasked,
        ],
    ),
    ("tasks", &[Kind::OmpTask]),
    (
        "sync",
        &[
            Kind::Fence,
            Kind::OmpBarrier,
            Kind::OmpSyncWait,
            Kind::OmpTaskwait,
            Kind::OmpTaskgroup,
            Kind::OmpReduction,
            Kind::OmpMutexWait,
            Kind::OmpMutexHold,
            Kind::AccWait,
        ],
    ),
    (
        "data",
        &[
            Kind::DeepCopy,
            Kind::OmpTargetData,
            Kind::AccData,
            Kind::AccEnterData,
            Kind::AccExitData,
            Kind::AccUpdate,
            Kind::AccUpload,
            Kind::AccDownload,
        ],
    ),
    ("target", &[Kind::OmpTarget]),
    ("gpu_api", &[Kind::GpuApi]),
    ("mpi", &[Kind::Mpi]),
    ("actor", &[Kind::ActorSegment]),
];

/// The kinds named by a comma list of [`KIND_WORDS`] (`all`: every kind that has
/// a duration), as a mask by discriminant, and the words not understood.
pub fn parse_kinds(list: &str) -> (u64, Vec<String>) {
    let mut mask = 0u64;
    let mut unknown = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let word = word.to_ascii_lowercase();
        if word == "all" {
            for &(_, kinds) in KIND_WORDS {
                mask |= kinds.iter().fold(0, |m, &k| m | 1 << k as u8);
            }
            continue;
        }
        match KIND_WORDS.iter().find(|(w, _)| *w == word) {
            Some((_, kinds)) => mask |= kinds.iter().fold(0, |m, &k| m | 1 << k as u8),
            None => unknown.push(word),
        }
    }
    (mask, unknown)
}

/// The words [`parse_kinds`] takes, for messages.
pub fn kind_words() -> String {
    let mut w: Vec<&str> = KIND_WORDS.iter().map(|(w, _)| *w).collect();
    w.push("all");
    w.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_words_select_their_kinds() {
        let (m, bad) = parse_kinds("regions, Kernels,bogus");
        assert_eq!(bad, vec!["bogus".to_string()]);
        let has = |k: Kind| m >> k as u8 & 1 == 1;
        assert!(has(Kind::Region) && has(Kind::UserRegion) && has(Kind::ParallelFor));
        assert!(!has(Kind::OmpBarrier) && !has(Kind::OmpParallel));
        let (d, _) = parse_kinds(DEFAULT_KINDS);
        assert!(d >> Kind::OmpImplicitTask as u8 & 1 == 1);
        assert!(
            d >> Kind::OmpSyncWait as u8 & 1 == 0,
            "never every barrier by default"
        );
        let (all, _) = parse_kinds("all");
        assert!(all >> Kind::OmpSyncWait as u8 & 1 == 1);
        assert!(
            all >> Kind::Marker as u8 & 1 == 0,
            "instants have no duration"
        );
    }
}
