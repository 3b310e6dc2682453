//! `kprof merge` streams: synthetic rank directories (`kprof_tests::synthetic`,
//! the generator of the `merge_scale` benchmark, here with fewer ranks) merge to
//! the sums of the ranks' own profiles, and the merge's peak memory does not grow
//! with the number of ranks (bounded by the merged tree).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use kprof_tests::synthetic::{measure_via, write_ranks};
use kprof_tests::{lib, nodes, read_profile, scratch, u};

/// `kprof merge --no-trace -o OUT DIRS...` of `n` synthetic ranks of `size`
/// nodes: (peak bytes, merged profile, the ranks' profiles).
fn merge(n: u64, size: usize) -> (u64, serde_json::Value, Vec<serde_json::Value>) {
    let dir = scratch(&format!("merge_scale_{n}"));
    let dirs = write_ranks(&dir, n, size);
    let out = dir.join("merged");
    let mut args: Vec<OsString> = ["merge", "--no-trace", "-o"].map(OsString::from).into();
    args.push(out.clone().into());
    args.extend(dirs.iter().rev().map(|d| d.clone().into_os_string()));
    let peak_rss = Path::new(env!("CARGO_BIN_EXE_peak_rss"));
    let cost = measure_via(peak_rss, &lib("kprof"), &args);
    assert!(cost.success, "kprof merge of {n} ranks failed");
    let ranks = dirs.iter().map(|d| read_profile(d)).collect();
    (cost.peak_bytes, read_profile(&out), ranks)
}

#[test]
fn streaming_merge_sums_the_ranks_in_bounded_memory() {
    let (small_peak, _, _) = merge(50, 300);
    let (peak, merged, ranks) = merge(400, 300);
    let n = ranks.len() as u64;

    // Every node: the sums, extremes and presence of the ranks' own values.
    let mut want: BTreeMap<Vec<String>, (u64, u64, u64, u64, u64)> = BTreeMap::new();
    for r in &ranks {
        for (path, v) in nodes(r) {
            let e = want.entry(path).or_insert((0, 0, 0, u64::MAX, 0));
            e.0 += u(&v["count"]);
            e.1 += u(&v["total_ns"]);
            e.2 += 1;
            e.3 = e.3.min(u(&v["total_ns"]));
            e.4 = e.4.max(u(&v["total_ns"]));
        }
    }
    let got = nodes(&merged);
    assert_eq!(got.len(), want.len());
    for (path, v) in &got {
        let (count, total, present, min, max) = want[path];
        assert_eq!(u(&v["count"]["sum"]), count, "{path:?}");
        assert_eq!(u(&v["total_ns"]["sum"]), total, "{path:?}");
        assert_eq!(u(&v["ranks"]), present, "{path:?}");
        let min = if present < n { 0 } else { min };
        assert_eq!(u(&v["total_ns"]["min"]), min, "{path:?}");
        assert_eq!(u(&v["total_ns"]["max"]), max, "{path:?}");
        assert!(
            v.get("by_rank").is_none(),
            "per-rank arrays only with --by-rank"
        );
    }
    // Ranks in rank order though given in reverse; every rank's message rows.
    let order: Vec<u64> = merged["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["rank"]))
        .collect();
    assert_eq!(order, (0..n).collect::<Vec<_>>());
    let sends = merged["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["direction"] == "send")
        .unwrap();
    let entries = sends["entries"].as_array().unwrap();
    assert_eq!(entries.len() as u64, n);
    for (r, e) in entries.iter().enumerate() {
        let r = r as u64;
        assert_eq!(
            (u(&e["rank"]), u(&e["peer"]), u(&e["count"])),
            (r, (r + 1) % n, 2 + r)
        );
    }
    // 8 times the ranks, not 8 times the memory: the merged tree bounds it.
    assert!(
        peak < small_peak + (16 << 20),
        "peak {} MB at 400 ranks against {} MB at 50",
        peak >> 20,
        small_peak >> 20
    );
}
