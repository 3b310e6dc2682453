//! What a diff of two jobs (merged profiles) reads beyond each call path's
//! time per rank: each MPI function over all its call paths, each call path's
//! imbalance over the ranks, and the job's messages per channel. A leaf: the
//! inputs fill it node by node, the command compares it.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::paths::{PathId, Paths};

/// The kind of an MPI call's node in a profile.
const MPI_KIND: &str = "mpi";

/// A job's values beyond its call paths' (single processes have none).
#[derive(Default)]
pub struct JobVals {
    /// Per MPI function (a one-step path: its name, kind `mpi`): calls and time
    /// per rank (the mean over the ranks), summed over the function's call
    /// paths.
    pub functions: HashMap<PathId, (f64, f64)>,
    /// Per call path: its imbalance (the slowest rank's time over the mean of
    /// the ranks) and the time it costs (the slowest rank's minus the mean),
    /// in ns.
    pub imbalance: HashMap<PathId, Imbalance>,
    /// Per (channel, direction): messages and bytes of every rank together.
    pub messages: BTreeMap<(String, String), (f64, f64)>,
}

/// A call path's spread over a job's ranks.
#[derive(Clone, Copy, Debug, Default)]
pub struct Imbalance {
    /// The slowest rank's time over the mean of the ranks (1 when balanced).
    pub ratio: f64,
    /// The slowest rank's time minus the mean of the ranks, in ns.
    pub lost: f64,
}

impl JobVals {
    /// Reads one node of a merged tree, at `path`: its imbalance by the time
    /// `time_key` (`total_ns` or `self_ns`), and when it is an MPI call, its
    /// calls and time added to its function's (`ranks` ranks in the job).
    pub fn node(
        &mut self,
        n: &Value,
        path: PathId,
        time_key: &str,
        ranks: usize,
        paths: &mut Paths,
    ) {
        let time = &n[time_key];
        if let (Some(ratio), Some(max), Some(mean)) = (
            time["imbalance"].as_f64(),
            time["max"].as_f64(),
            time["mean"].as_f64(),
        ) {
            let lost = (max - mean).max(0.0);
            self.imbalance.insert(path, Imbalance { ratio, lost });
        }
        if n["kind"].as_str() != Some(MPI_KIND) {
            return;
        }
        let name = n["name"].as_str().unwrap_or("").to_string();
        let function = paths.child(None, (name, MPI_KIND.to_string(), String::new()));
        let per_rank = |v: &Value| v["sum"].as_f64().unwrap_or(0.0) / ranks.max(1) as f64;
        let f = self.functions.entry(function).or_default();
        f.0 += per_rank(&n["count"]);
        f.1 += per_rank(time);
    }

    /// Reads the job's message matrices (a merged profile's `messages`).
    pub fn messages(&mut self, list: &Value) {
        for m in list.as_array().into_iter().flatten() {
            let text = |k: &str| m[k].as_str().unwrap_or("").to_string();
            let v = self
                .messages
                .entry((text("channel"), text("direction")))
                .or_default();
            v.0 += m["count"].as_f64().unwrap_or(0.0);
            v.1 += m["bytes"].as_f64().unwrap_or(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn functions_add_up_over_call_paths_and_imbalance_is_read() {
        let mut paths = Paths::default();
        let mut job = JobVals::default();
        let stat = |sum: f64, mean: f64, max: f64| json!({"sum": sum, "mean": mean, "max": max, "imbalance": max / mean});
        let send = |total| {
            json!({"name": "MPI_Send", "kind": "mpi", "count": stat(8.0, 4.0, 6.0),
                   "total_ns": total})
        };
        let a = paths.child(None, ("a".into(), "region".into(), String::new()));
        let b = paths.child(None, ("b".into(), "region".into(), String::new()));
        job.node(
            &send(stat(400.0, 200.0, 300.0)),
            a,
            "total_ns",
            2,
            &mut paths,
        );
        job.node(&send(stat(100.0, 50.0, 50.0)), b, "total_ns", 2, &mut paths);
        let f = paths.child(None, ("MPI_Send".into(), "mpi".into(), String::new()));
        assert_eq!(job.functions[&f], (8.0, 250.0));
        assert_eq!(job.imbalance[&a].ratio, 1.5);
        assert_eq!(job.imbalance[&a].lost, 100.0);
        assert_eq!(job.imbalance[&b].lost, 0.0);
        job.messages(&json!([
            {"channel": "mpi", "direction": "sent", "count": 3, "bytes": 24},
            {"channel": "mpi", "direction": "sent", "count": 1, "bytes": 8}
        ]));
        assert_eq!(
            job.messages[&("mpi".to_string(), "sent".to_string())],
            (4.0, 32.0)
        );
    }
}
