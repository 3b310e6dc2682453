//! One time base for the PEs of an FA-BSP job (the actor plugin): each PE
//! records when it left its first `shmem_barrier_all` (`actor.barrier_ns`, its
//! CLOCK_MONOTONIC), and every PE leaves a barrier at about the same moment, so
//! the differences between those values are the offsets between the PEs'
//! clocks (their hosts' boot times on several nodes; a few microseconds of
//! barrier exit skew on one). A merged trace adds a rank's offset to every
//! timestamp of that rank to put all ranks on rank 0's clock.

use serde_json::Value;

/// The metadata key the actor plugin writes.
pub const BARRIER_KEY: &str = "actor.barrier_ns";

/// Per rank (in the order given), the nanoseconds to add to its timestamps to
/// put it on the first rank's clock; None unless every profile has the
/// barrier time (not an actor job, or a PE that never reached a barrier).
// Called by `kprof merge` when it combines the ranks' traces.
#[cfg_attr(not(test), allow(dead_code))]
pub fn barrier_offsets(profiles: &[&Value]) -> Option<Vec<i64>> {
    let times: Vec<i64> = profiles
        .iter()
        .map(|p| p["metadata"][BARRIER_KEY].as_str()?.parse::<i64>().ok())
        .collect::<Option<_>>()?;
    let first = *times.first()?;
    Some(times.iter().map(|t| first - t).collect())
}

#[cfg(test)]
mod tests {
    use super::barrier_offsets;
    use serde_json::json;

    #[test]
    fn offsets_put_ranks_on_the_first_ranks_clock() {
        let a = json!({"metadata": {"actor.barrier_ns": "1000000"}});
        let b = json!({"metadata": {"actor.barrier_ns": "250"}});
        let c = json!({"metadata": {"actor.barrier_ns": "1000100"}});
        assert_eq!(barrier_offsets(&[&a, &b, &c]), Some(vec![0, 999_750, -100]));
        let none = json!({"metadata": {}});
        assert_eq!(barrier_offsets(&[&a, &none]), None);
        assert_eq!(barrier_offsets(&[]), None);
    }
}
