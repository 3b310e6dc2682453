//! One time base for the PEs of an FA-BSP job (the actor plugin): each PE
//! records when it left its first `shmem_barrier_all` (`actor.barrier_ns`, its
//! CLOCK_MONOTONIC), and every PE leaves a barrier at about the same moment, so
//! the differences between those values are the offsets between the PEs'
//! clocks (their hosts' boot times on several nodes; a few microseconds of
//! barrier exit skew on one). A merged trace subtracts a rank's offset from
//! every timestamp of that rank to put all ranks on rank 0's clock, as it does
//! with the offsets the MPI plugin measures.

use std::collections::BTreeMap;

/// The metadata key the actor plugin writes.
pub const BARRIER_KEY: &str = "actor.barrier_ns";

/// When a PE left its first barrier (its CLOCK_MONOTONIC ns), from its
/// profile's metadata; None when it never reached one (or is no PE).
pub fn barrier_ns(metadata: &BTreeMap<String, String>) -> Option<i64> {
    metadata.get(BARRIER_KEY)?.parse().ok()
}

/// Per rank (in the order given: the first is the reference), its clock's
/// offset to the first rank's (its clock minus the first one's, in ns: what
/// to subtract from its timestamps), from each rank's [`barrier_ns`]; None
/// unless every rank has one.
pub fn barrier_offsets(times: &[Option<i64>]) -> Option<Vec<i64>> {
    let times: Vec<i64> = times.iter().copied().collect::<Option<_>>()?;
    let first = *times.first()?;
    Some(times.iter().map(|t| t - first).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_each_clock_less_the_first_ones() {
        let meta = |v: &str| BTreeMap::from([(BARRIER_KEY.to_string(), v.to_string())]);
        let times: Vec<Option<i64>> = ["1000000", "250", "1000100"]
            .iter()
            .map(|v| barrier_ns(&meta(v)))
            .collect();
        assert_eq!(barrier_offsets(&times), Some(vec![0, -999_750, 100]));
        let none = barrier_ns(&BTreeMap::new());
        assert_eq!(none, None);
        assert_eq!(barrier_offsets(&[times[0], none]), None);
        assert_eq!(barrier_offsets(&[]), None);
        assert_eq!(barrier_ns(&meta("x")), None);
    }
}
