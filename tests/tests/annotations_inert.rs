//! The annotation API measures only when asked. A program linked with
//! `libkprof_core` and run plainly (no `KPROF_*` setting, not under `kprof run`, no
//! runtime that loaded a kprof plugin) records and writes nothing: no directory, no
//! summary, its own output untouched. The same program measures with a setting of
//! the README's table, under `kprof run`, and once Kokkos loaded the kprof plugin.
//! Programs: `tests/cli/kernels.c` (annotations only) and the annotated Kokkos
//! harness host.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use kprof_tests::{
    assert_ok, build_kokkos_hosts, clean_cmd, compile_with_core, lib, node, nodes, read_profile,
    run, scratch, test_file, u,
};

/// `kernels N`: N annotated "kernel" regions inside "main loop", then prints
/// `kernels N`. Built outside the directories the runs look at.
fn kernels_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = scratch("annotations_inert_bin");
        compile_with_core(&[&test_file("cli/kernels.c")], &dir.join("kernels"), &[])
    })
}

/// `kernels 3` in `dir` with a clean tool environment (no `KPROF_*`).
fn kernels(dir: &Path) -> Command {
    let mut cmd = clean_cmd(kernels_bin());
    cmd.current_dir(dir).arg("3").stdin(Stdio::null());
    cmd
}

/// Every name in `dir`.
fn entries(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The one `kprof-kernels-<pid>` directory in `dir`.
fn only_output(dir: &Path) -> PathBuf {
    let names = entries(dir);
    let outs: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("kprof-kernels-"))
        .collect();
    assert_eq!(outs.len(), 1, "one output directory expected: {names:?}");
    dir.join(outs[0])
}

/// Asserts the profile in `out` holds the program's 3 "kernel" regions in
/// "main loop".
fn assert_measured(out: &Path) {
    let all = nodes(&read_profile(out));
    assert_eq!(u(&node(&all, &["main loop"])["count"]), 1);
    assert_eq!(u(&node(&all, &["main loop", "kernel"])["count"]), 3);
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_plain_run_records_and_writes_nothing() {
    let dir = scratch("annotations_inert_plain");
    let o = run(&mut kernels(&dir));
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "kernels 3\n");
    assert_eq!(text(&o.stderr), "", "nothing on stderr");
    assert_eq!(entries(&dir), BTreeSet::new(), "nothing written");
}

/// Any setting of the README's table asks, even one that only shapes the output.
#[test]
fn a_kprof_setting_asks_for_measurement() {
    let dir = scratch("annotations_inert_setting");
    let o = run(kernels(&dir).env("KPROF_SUMMARY", "1"));
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "kernels 3\n");
    let err = text(&o.stderr);
    assert!(err.contains("kernel"), "a summary on stderr:\n{err}");
    assert_measured(&only_output(&dir));
}

/// `kprof run` asks, with no setting of its own.
#[test]
fn kprof_run_asks_for_measurement() {
    let dir = scratch("annotations_inert_kprof_run");
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(&dir)
        .args(["run", "-o", "out", "--"])
        .arg(kernels_bin())
        .arg("3")
        .stdin(Stdio::null());
    let o = run(&mut cmd);
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "kernels 3\n");
    assert_measured(&dir.join("out"));
}

/// A runtime that loads a kprof plugin asks: with Kokkos' tool library set and no
/// `KPROF_*` setting, the annotations made after the plugin attached are measured
/// with the kernels, in the default output directory.
#[test]
fn a_loaded_plugin_asks_for_measurement() {
    let bin = scratch("annotations_inert_kokkos_bin");
    let (_, host_annotate) = build_kokkos_hosts(&bin);
    let dir = scratch("annotations_inert_kokkos");
    let o: Output = run(clean_cmd(&host_annotate)
        .current_dir(&dir)
        .args(["4", "annotate"])
        .env("KOKKOS_TOOLS_LIBS", lib("libkprof.so"))
        .stdin(Stdio::null()));
    assert_ok(&o);
    let names = entries(&dir);
    let outs: Vec<&String> = names.iter().filter(|n| n.starts_with("kprof-")).collect();
    assert_eq!(outs.len(), 1, "one output directory expected: {names:?}");
    let p = read_profile(&dir.join(outs[0]));
    let plugins = p["plugins"].as_array().expect("plugins");
    for want in ["kokkos", "annotation"] {
        assert!(
            plugins.iter().any(|x| x == want),
            "{want} in plugins {plugins:?}"
        );
    }
    let all = nodes(&p);
    assert_eq!(u(&node(&all, &["app phase"])["count"]), 1);
    assert_eq!(u(&node(&all, &["app phase", "inner"])["count"]), 5);
}
