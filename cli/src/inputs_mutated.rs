//! Inputs, mutated, for the command's readers of files it did not write in
//! this run (docs/reliability.md): the ELF reader of `kprof run` ([`detect`]),
//! the Perfetto trace reader of `kprof merge` ([`trace_packets`],
//! [`pftrace`]), a job's merged profile read by `kprof report` and `kprof
//! plot`, and one process's `profile.json` read by `kprof plot`. Seeds: a
//! small program the test builds (`tests/fuzz-corpus/elf/seed.c`), traces and
//! profiles kprof wrote (`tests/fuzz-corpus/pftrace/`, `merged/`,
//! `profile/`). Each mutation gives a result or one error line, never a
//! panic. The fuzz targets `elf` and `pftrace`
//! (`fuzz/`) build the same modules.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::Parser;
use kprof_core::consume::trace::perfetto_proto::trace_packet::Data;
use kprof_tables::models::ModelId;
use kprof_tests::mutate::{apply, apply_values, corpus, edit, regressions, value_edits};
use proptest::prelude::*;

use crate::detect::{self, detect, inspect};
use crate::pftrace;
use crate::trace_packets::{each_packet, Stop, INFLATED_MAX};

fn scratch(name: &str) -> PathBuf {
    kprof_tests::scratch(&format!("inputs_mutated_{name}"))
}

/// The seed program, built once per test process.
fn elf_seed() -> &'static [u8] {
    static SEED: OnceLock<Vec<u8>> = OnceLock::new();
    SEED.get_or_init(|| {
        let dir = scratch("elf_seed");
        let src = kprof_tests::workspace_root().join("tests/fuzz-corpus/elf/seed.c");
        let out = kprof_tests::compile(
            &[&src],
            &dir.join("seed"),
            &["-Wl,--no-as-needed", "-lm", "-Wl,-rpath,/opt/kokkos/lib"],
        );
        std::fs::read(out).unwrap()
    })
}

/// `inspect` on `b`: what it found is made of the input's bytes, an error is
/// one line. Returns whether it was read.
fn check_elf(b: &[u8]) -> bool {
    match inspect(b) {
        Ok(info) => {
            let names = info.needed.len() + info.runpath.len() + info.rpath.len();
            assert!(names <= b.len(), "{names} names from {} bytes", b.len());
            true
        }
        Err(e) => {
            assert!(!e.contains('\n') && !e.is_empty(), "{e:?}");
            false
        }
    }
}

/// The packets of a trace's bytes: their count, or the error line (a cut end
/// is not an error: what precedes it counts).
fn count_packets(b: &[u8]) -> Result<usize, String> {
    let mut n = 0;
    match each_packet(b, &mut |_| {
        n += 1;
        Ok(())
    }) {
        Ok(_) => Ok(n),
        Err(Stop::Bad(what)) => {
            assert!(!what.contains('\n'), "{what:?}");
            Err(what)
        }
        Err(Stop::Io(e)) => panic!("no consumer failed: {e}"),
    }
}

/// `kprof merge`'s trace merge of the seed (rank 0) and `b` (rank 1): when `b`
/// is read, the merged trace holds every packet of both and reads back whole;
/// otherwise the merge fails with one line naming the file.
fn check_trace(seed: &[u8], b: &[u8], dir: &Path) {
    let r0 = dir.join("r0.pftrace");
    let r1 = dir.join("r1.pftrace");
    let out = dir.join("merged.pftrace");
    std::fs::write(&r0, seed).unwrap();
    std::fs::write(&r1, b).unwrap();
    let _ = std::fs::remove_file(&out);
    let traces = [(0, dir, r0.clone(), 0), (1, dir, r1.clone(), 1_000)];
    let merged = pftrace::merge(&traces, &out);
    let want = count_packets(seed).unwrap();
    match count_packets(b) {
        Ok(n) => {
            merged.unwrap_or_else(|e| panic!("read, yet not merged: {}", e.0));
            let got = std::fs::read(&out).unwrap();
            let mut labels = Vec::new();
            let cut = each_packet(&got, &mut |p| {
                if let Some(Data::TrackDescriptor(t)) = &p.data {
                    if let Some(pr) = &t.process {
                        labels.extend(pr.process_labels.iter().cloned());
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|_| panic!("the merged trace does not read back"));
            assert!(!cut);
            assert_eq!(count_packets(&got), Ok(want + n));
            assert!(labels.iter().any(|l| l == "rank 0"), "{labels:?}");
        }
        Err(what) => {
            let e = merged.expect_err("refused, yet merged").0;
            assert!(!e.contains('\n'), "{e:?}");
            assert!(e.contains("r1.pftrace") && e.contains(&what), "{e}");
        }
    }
}

/// `kprof report` (tree, flat, JSON) and `kprof plot` of the merged profile
/// `b`: each succeeds or fails with one line. Returns how many succeeded.
fn check_merged(b: &[u8], dir: &Path) -> usize {
    let run = dir.join("job");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("profile.json"), b).unwrap();
    let html = dir.join("plot.html");
    let (r, h) = (run.to_str().unwrap(), html.to_str().unwrap());
    let mut ok = 0;
    for args in [
        &["report", r][..],
        &["report", "--flat", r],
        &["report", "--json", "--tree", r],
        &["plot", r, "-o", h, "--force"],
    ] {
        let cli = crate::Cli::try_parse_from([&["kprof"][..], args].concat()).unwrap();
        let outcome = match cli.command {
            crate::Command::Report(a) => crate::report::main(a),
            crate::Command::Plot(a) => crate::plot::main(a),
            _ => unreachable!(),
        };
        match outcome {
            Ok(_) => ok += 1,
            Err(e) => assert!(
                !e.0.contains('\n') && !e.0.is_empty(),
                "{args:?}: {:?}",
                e.0
            ),
        }
    }
    ok
}

/// The most a plot page and its SVG files may take beyond
/// [`PLOT_BYTES_PER_INPUT_BYTE`] times the profile's bytes: the page's fixed
/// parts (style, the flame graph's script, axes; 62 KiB of page and 57 KiB of
/// SVG for the 3.6 KiB seed `patterns.json`).
const PLOT_FIXED_BYTES: u64 = 1 << 20;

/// What each byte of a profile may add to its plot: a node's or a name's
/// share of each figure that shows it.
const PLOT_BYTES_PER_INPUT_BYTE: u64 = 64;

/// `kprof plot` of one process's `profile.json` `b`: a page (and its SVG
/// files) whose size is bounded by the input's, or one error line. Returns
/// whether a page was written.
fn check_plot_single(b: &[u8], dir: &Path) -> bool {
    let run = dir.join("run");
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&run).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(run.join("profile.json"), b).unwrap();
    let html = out.join("plot.html");
    let args = [
        "kprof",
        "plot",
        run.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ];
    let crate::Command::Plot(a) = crate::Cli::try_parse_from(args).unwrap().command else {
        unreachable!()
    };
    match crate::plot::main(a) {
        Ok(code) => {
            assert_eq!(code, 0);
            let written: u64 = std::fs::read_dir(&out)
                .unwrap()
                .map(|e| e.unwrap().metadata().unwrap().len())
                .sum();
            let bound = PLOT_FIXED_BYTES + PLOT_BYTES_PER_INPUT_BYTE * b.len() as u64;
            assert!(
                written <= bound,
                "{written} bytes of plot from {} bytes of profile",
                b.len()
            );
            let page = std::fs::read_to_string(&html).unwrap();
            assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
            true
        }
        Err(e) => {
            assert!(!e.0.contains('\n') && !e.0.is_empty(), "{:?}", e.0);
            false
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// The seed program's bytes mutated: read, or one error line; the whole
    /// detection (which follows the needed libraries on this machine) on the
    /// mutated file gives models or one line.
    #[test]
    fn elf_bytes_mutated(edits in prop::collection::vec(edit(), 1..6)) {
        let b = apply(elf_seed().to_vec(), &edits);
        check_elf(&b);
        let p = scratch("elf_case").join("prog");
        std::fs::write(&p, &b).unwrap();
        if let Err(e) = detect(&p) {
            prop_assert!(!e.contains('\n'), "{e:?}");
        }
    }

    /// A trace kprof wrote, mutated, merged after an intact one.
    #[test]
    fn trace_bytes_mutated(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit(), 1..6)) {
        let s = corpus("pftrace");
        let b = apply(s[seed.index(s.len())].1.clone(), &edits);
        check_trace(&s[0].1, &b, &scratch("trace_case"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, failure_persistence: None, ..ProptestConfig::default() })]

    /// A merged profile kprof wrote, its bytes mutated.
    #[test]
    fn merged_bytes_mutated(edits in prop::collection::vec(edit(), 1..6)) {
        let b = apply(corpus("merged").remove(0).1, &edits);
        check_merged(&b, &scratch("merged_bytes"));
    }

    /// A merged profile kprof wrote, its values replaced or deleted (stays
    /// JSON, so reaches the report and the figures).
    #[test]
    fn merged_values_mutated(muts in value_edits()) {
        let b = apply_values(&corpus("merged").remove(0).1, muts);
        check_merged(&b, &scratch("merged_values"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, failure_persistence: None, ..ProptestConfig::default() })]

    /// One process's profile kprof wrote, its bytes mutated, plotted.
    #[test]
    fn profile_plot_bytes_mutated(seed in any::<prop::sample::Index>(), edits in prop::collection::vec(edit(), 1..6)) {
        let s = corpus("profile");
        let b = apply(s[seed.index(s.len())].1.clone(), &edits);
        check_plot_single(&b, &scratch("plot_bytes"));
    }

    /// One process's profile kprof wrote, its values replaced or deleted,
    /// plotted.
    #[test]
    fn profile_plot_values_mutated(seed in any::<prop::sample::Index>(), muts in value_edits()) {
        let s = corpus("profile");
        let b = apply_values(&s[seed.index(s.len())].1, muts);
        check_plot_single(&b, &scratch("plot_values"));
    }
}

/// The unmutated seeds are read whole, with what was built into them: the
/// properties above are not refusing everything.
#[test]
fn seeds_are_read() {
    let info = inspect(elf_seed()).expect("the seed program is read");
    assert!(info.needed.iter().any(|n| n == "libm.so.6"), "{info:?}");
    assert_eq!(info.runpath, ["/opt/kokkos/lib"]);
    assert!(info.symtab && info.tools_libs, "{info:?}");
    assert!(info.symbols[ModelId::Kokkos as usize], "{info:?}");
    let dir = scratch("elf_whole");
    std::fs::write(dir.join("prog"), elf_seed()).unwrap();
    let models = detect::detect(&dir.join("prog")).unwrap();
    assert!(models.has(ModelId::Kokkos), "{:?}", models.reasons);
    let merged = corpus("merged").remove(0).1;
    assert_eq!(check_merged(&merged, &scratch("merged_whole")), 4);
    for (p, b) in corpus("profile") {
        assert!(
            check_plot_single(&b, &scratch("plot_whole")),
            "{}",
            p.display()
        );
    }
    let s = corpus("pftrace");
    for (p, b) in &s {
        let n = count_packets(b).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(n > 3, "{}: {n} packets", p.display());
        check_trace(&s[0].1, b, &scratch("trace_whole"));
    }
}

/// A small file of compressed empty packets (a zlib bomb: 20 bytes inflate to
/// 2, each a packet structure of hundreds of bytes) is refused past
/// [`INFLATED_MAX`], not decoded into gigabytes.
#[test]
fn inflation_is_capped() {
    use flate2::write::ZlibEncoder;
    use prost::Message;
    use std::io::Write;
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = [0x0a, 0x00].repeat(1 << 16);
    for _ in 0..(INFLATED_MAX / chunk.len() + 1) {
        z.write_all(&chunk).unwrap();
    }
    let packet = kprof_core::consume::trace::perfetto_proto::TracePacket {
        data: Some(Data::CompressedPackets(z.finish().unwrap())),
        ..Default::default()
    };
    let mut file = vec![0x0a];
    prost::encoding::encode_varint(packet.encoded_len() as u64, &mut file);
    packet.encode_raw(&mut file);
    assert!(file.len() < 100 << 10, "{} bytes", file.len());
    let e = count_packets(&file).unwrap_err();
    assert!(e.contains("inflates past"), "{e}");
}

/// Each input a fuzzer or a property found to crash these readers, replayed.
#[test]
fn fuzz_regressions() {
    for (_, b) in regressions("merged-") {
        check_merged(&b, &scratch("merged_regression"));
    }
    for (_, b) in regressions("profile-plot-") {
        check_plot_single(&b, &scratch("plot_regression"));
    }
    for (_, b) in regressions("elf-") {
        check_elf(&b);
    }
    let s = corpus("pftrace");
    for (_, b) in regressions("pftrace-") {
        check_trace(&s[0].1, &b, &scratch("trace_regression"));
    }
}
