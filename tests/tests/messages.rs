//! Message matrices (`Kind::Message` instants, `kprof_message`): each process's
//! rows per channel, direction and peer, exact, the same in place and from
//! records, never drawn one by one in traces; `kprof merge` of two processes'
//! directories gives the job's matrix. The program is `tests/harness/messages.c`.

use std::path::Path;
use std::sync::OnceLock;

use kprof_tests::trace_check::read_perfetto;
use kprof_tests::{
    assert_ok, clean_cmd, core_harness, lib, read_profile, run, scratch, skip_unless,
};
use serde_json::{json, Value};

fn program() -> std::path::PathBuf {
    static BUILT: OnceLock<std::path::PathBuf> = OnceLock::new();
    core_harness(&BUILT, "messages")
}

fn record(dir: &Path, rank: u32, env: &[(&str, &str)]) -> Value {
    let mut cmd = clean_cmd(&program());
    cmd.arg(rank.to_string())
        .env("KPROF_OUTPUT_DIR", dir)
        .env("KPROF_SUMMARY", "0");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "sent 8 340");
    read_profile(dir)
}

/// A channel's row: channel, direction, [(peer, count, bytes)].
type Row = (String, String, Vec<(u64, u64, u64)>);

fn rows(p: &Value) -> Vec<Row> {
    p["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| {
            let peers = m["peers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| {
                    (
                        x["peer"].as_u64().unwrap(),
                        x["count"].as_u64().unwrap(),
                        x["bytes"].as_u64().unwrap(),
                    )
                })
                .collect();
            (
                m["channel"].as_str().unwrap().to_string(),
                m["direction"].as_str().unwrap().to_string(),
                peers,
            )
        })
        .collect()
}

#[test]
fn matrices_are_exact_in_place_and_from_records() {
    // Channels by name, sends before receives.
    let want = vec![
        (
            "conveyor 0".to_string(),
            "send".to_string(),
            vec![(4, 5, 40), (5, 3, 300)],
        ),
        (
            "conveyor 0".to_string(),
            "receive".to_string(),
            vec![(7, 7, 112)],
        ),
        (
            "world".to_string(),
            "send".to_string(),
            vec![(0, 2, 1 << 20)],
        ),
    ];
    for (mode, env) in [
        ("in_place", vec![]),
        ("records", vec![("KPROF_IN_PLACE", "0")]),
        ("trace", vec![("KPROF_TRACE", "perfetto,json")]),
    ] {
        let dir = scratch(&format!("messages_{mode}")).join("out");
        let p = record(&dir, 3, &env);
        assert_eq!(rows(&p), want, "{mode}");
        let sent = &p["messages"][0];
        assert_eq!(
            (sent["count"].as_u64(), sent["bytes"].as_u64()),
            (Some(8), Some(340))
        );
        if mode == "trace" {
            // Aggregated, not drawn: no instant per message in the traces.
            let m = read_perfetto(&dir);
            skip_unless(
                m.is_some(),
                "Perfetto's protos (protoc) to decode the trace",
            );
            if let Some(m) = m {
                m.assert_valid();
                assert!(
                    m.instants.iter().all(|i| !i.name.contains("conveyor")),
                    "{mode}"
                );
                assert_eq!(m.named("phase").len(), 1);
            }
            let json = std::fs::read_to_string(dir.join("trace.json")).unwrap();
            assert!(!json.contains("conveyor 0"), "JSON has message events");
        }
    }
}

#[test]
fn merge_gives_the_jobs_matrix() {
    let base = scratch("messages_merge");
    let (a, b) = (base.join("r0"), base.join("r1"));
    record(&a, 0, &[("OMPI_COMM_WORLD_RANK", "0")]);
    record(&b, 1, &[("OMPI_COMM_WORLD_RANK", "1")]);
    let merged = base.join("merged");
    let out = run(clean_cmd(&lib("kprof"))
        .arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(&merged)
        .arg("--no-trace"));
    assert_ok(&out);
    let m = read_profile(&merged);
    let send = m["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["channel"] == "conveyor 0" && x["direction"] == "send")
        .expect("conveyor 0 sends");
    assert_eq!(send["count"], 16);
    assert_eq!(send["bytes"], 680);
    assert_eq!(
        send["entries"],
        json!([
            {"rank": 0, "peer": 1, "count": 5, "bytes": 40},
            {"rank": 0, "peer": 2, "count": 3, "bytes": 300},
            {"rank": 1, "peer": 2, "count": 5, "bytes": 40},
            {"rank": 1, "peer": 3, "count": 3, "bytes": 300}
        ])
    );
    // The summary of `kprof report` lists the rows.
    let report = run(clean_cmd(&lib("kprof")).arg("report").arg(&a));
    assert_ok(&report);
    let text = String::from_utf8_lossy(&report.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("conveyor 0") && l.contains("send"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("8 msgs") && line.contains("2 peers"),
        "{line}"
    );
}

/// `kprof plot` of one process's directory draws its matrix rows as a heatmap: a
/// row per channel and direction, a column per peer, one cell per (row, peer)
/// with bytes, the darkest the largest.
#[test]
fn plot_draws_the_processs_rows_as_a_heatmap() {
    let dir = scratch("messages_plot").join("out");
    let p = record(&dir, 3, &[]);
    let rows = rows(&p);
    let o = run(clean_cmd(&lib("kprof")).arg("plot").arg(&dir));
    assert_ok(&o);
    let svg = std::fs::read_to_string(dir.join("plot-messages.svg")).expect("plot-messages.svg");
    let doc = roxmltree::Document::parse(&svg).expect("an SVG");
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().trim().to_string())
        .collect();
    // Cells: the heatmap's colour (106, 168, 79), one per (row, peer) with bytes.
    let cells: Vec<f64> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#6AA84F"))
        .map(|n| n.attribute("opacity").map_or(1.0, |o| o.parse().unwrap()))
        .collect();
    let with_bytes: Vec<u64> = rows
        .iter()
        .flat_map(|(_, _, peers)| peers.iter().map(|p| p.2).filter(|&b| b > 0))
        .collect();
    assert_eq!(cells.len(), with_bytes.len(), "{texts:?}");
    // The largest cell is fully dark; a cell is 0.15 + 0.85 x its share of it.
    let max = *with_bytes.iter().max().unwrap() as f64;
    let mut want: Vec<f64> = with_bytes
        .iter()
        .map(|&b| 0.15 + 0.85 * b as f64 / max)
        .collect();
    let mut got = cells.clone();
    want.sort_by(f64::total_cmp);
    got.sort_by(f64::total_cmp);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 0.01, "opacities {got:?} vs {want:?}");
    }
    for (channel, direction, peers) in &rows {
        let label = format!("{channel} {direction}");
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with(&label[..label.len().min(28)])),
            "{label}: {texts:?}"
        );
        for (peer, _, _) in peers {
            assert!(texts.contains(&peer.to_string()), "peer {peer}: {texts:?}");
        }
    }
}
