//! The MPI plugin on real Open MPI: `mpirun -np 4 kprof run -- patterns ...`
//! (`tests/mpi/patterns.c`, whose phases count their own messages per peer).
//! Asserts, per rank: the message rows equal the program's own counts exactly;
//! each MPI call is a node under the region that made it, with exact counts and
//! byte arguments; the sleeping rank's lateness shows as the others' wait; and
//! `kprof merge` of the 4 rank directories gives the job's matrix exactly. The
//! program's output and exit status are the same without kprof.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use kprof_tests::openmp::have;
use kprof_tests::{
    assert_ok, clean_cmd, compile_with, lib, lib_dir, node, nodes, read_profile, run, scratch,
    skip_unless, test_file, text_block, u,
};
use serde_json::Value;

const RANKS: u32 = 4;

fn available() -> bool {
    Family::OpenMpi.available()
}

/// The MPI implementations the tests run on, installed side by side (Debian's
/// `mpicc`/`mpirun` are Open MPI's; MPICH's carry a suffix).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    OpenMpi,
    Mpich,
}

impl Family {
    fn cc(self) -> &'static str {
        match self {
            Family::OpenMpi => "mpicc",
            Family::Mpich => "mpicc.mpich",
        }
    }

    fn launcher(self) -> &'static str {
        match self {
            Family::OpenMpi => "mpirun",
            Family::Mpich => "mpirun.mpich",
        }
    }

    /// The family as the profile's metadata names it.
    fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "MPICH",
        }
    }

    fn available(self) -> bool {
        let what = match self {
            Family::OpenMpi => "Open MPI (mpicc, mpirun)",
            Family::Mpich => "MPICH (mpicc.mpich, mpirun.mpich)",
        };
        !skip_unless(have(self.cc()) && have(self.launcher()), what)
    }
}

/// `tests/mpi/patterns.c`, built once with mpicc and linked with the core (its
/// phases are kprof regions).
fn program() -> PathBuf {
    program_of(Family::OpenMpi)
}

/// `tests/mpi/patterns.c` built once with `family`'s compiler.
fn program_of(family: Family) -> PathBuf {
    static BUILT: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    BUILT[family as usize]
        .get_or_init(|| {
            let dir = scratch(&format!("mpi_build_{family:?}"));
            let libdir = lib_dir();
            compile_with(
                family.cc(),
                &[&test_file("mpi/patterns.c")],
                &dir.join("patterns"),
                &[
                    &format!("-L{}", libdir.display()),
                    "-lkprof_core",
                    &format!("-Wl,-rpath,{}", libdir.display()),
                    "-lpthread",
                    // GCC takes MPICH's MPI_STATUSES_IGNORE, `(MPI_Status *)1`,
                    // for an array of no room.
                    "-Wno-stringop-overflow",
                ],
            )
        })
        .clone()
}

/// One job at a time: 4 ranks already oversubscribe the 2 cores of CI.
static JOBS: Mutex<()> = Mutex::new(());

/// The environment of every MPI run: as root too; idle ranks yield their core
/// (they busy-poll by default, which starves the others when oversubscribed).
fn mpi_env(cmd: &mut Command) -> &mut Command {
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_osc", "^rdma")
        .env("OMPI_MCA_mpi_yield_when_idle", "1")
}

/// `mpirun -np <ranks>` of `argv` in `cwd` with `env`, under `timeout` (a job
/// that hangs fails its test instead of hanging it).
fn mpirun_n(
    cwd: &Path,
    ranks: u32,
    argv: &[&Path],
    phases: &[&str],
    env: &[(&str, &str)],
) -> Output {
    mpirun_of(Family::OpenMpi, cwd, ranks, argv, phases, env)
}

/// [`mpirun_n`] with `family`'s launcher (MPICH's passes the environment on
/// and oversubscribes as it is).
fn mpirun_of(
    family: Family,
    cwd: &Path,
    ranks: u32,
    argv: &[&Path],
    phases: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let _one = JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = clean_cmd(Path::new("timeout"));
    cmd.args(["300", family.launcher()]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    mpi_env(&mut cmd)
        .current_dir(cwd)
        .env("KPROF_SUMMARY", "0")
        .args(["-np", &ranks.to_string()]);
    if family == Family::OpenMpi {
        cmd.arg("--oversubscribe");
    }
    cmd.args(argv).arg(cwd.join("expect")).args(phases);
    let _ = std::fs::create_dir_all(cwd.join("expect"));
    run(&mut cmd)
}

/// The job under kprof (`with`) ends as without it (`plain`): the same exit
/// status and the same output lines, one from each of `ranks` ranks.
fn same_outcome(with: &Output, plain: &Output, ranks: u32) {
    assert_eq!(
        with.status.code(),
        plain.status.code(),
        "exit status changed:\n{}",
        String::from_utf8_lossy(&with.stderr)
    );
    let lines = |o: &Output| -> BTreeSet<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(lines(with), lines(plain), "program output changed");
    assert_eq!(lines(plain).len(), ranks as usize, "{plain:?}");
}

/// Runs `phases` under kprof (`mpirun ... kprof run -- patterns`) and without;
/// checks output and exit status are the same; returns each rank's profile and
/// its own counts, and the directory holding the rank directories.
fn measured(name: &str, phases: &[&str]) -> (Vec<(Value, BTreeSet<Row>)>, PathBuf) {
    measured_of(Family::OpenMpi, name, phases)
}

/// [`measured`] on `family`'s MPI.
fn measured_of(
    family: Family,
    name: &str,
    phases: &[&str],
) -> (Vec<(Value, BTreeSet<Row>)>, PathBuf) {
    let base = scratch(name);
    let (plain_dir, kprof_dir) = (base.join("plain"), base.join("kprof"));
    for d in [&plain_dir, &kprof_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let prog = program_of(family);
    let per_rank = [("KPROF_PER_RANK", "1")];
    let plain = mpirun_of(family, &plain_dir, RANKS, &[&prog], phases, &per_rank);
    let kprof = lib("kprof");
    let with = mpirun_of(
        family,
        &kprof_dir,
        RANKS,
        &[&kprof, Path::new("run"), Path::new("--"), &prog],
        phases,
        &per_rank,
    );
    same_outcome(&with, &plain, RANKS);
    let ranks = (0..RANKS)
        .map(|r| {
            let p = read_profile(&kprof_dir.join(format!("kprof-patterns-rank{r}")));
            assert_eq!(p["metadata"]["MPI rank"], r.to_string());
            assert_eq!(p["metadata"]["MPI family"], family.name());
            (p, expected(&kprof_dir.join("expect"), r))
        })
        .collect();
    (ranks, kprof_dir)
}

/// (direction, world peer, count, bytes).
type Row = (String, u64, u64, u64);

/// The program's own counts of rank `r`.
fn expected(dir: &Path, r: u32) -> BTreeSet<Row> {
    std::fs::read_to_string(dir.join(format!("expect.{r}")))
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dir = if f[0] == "send" { "send" } else { "receive" };
            (
                dir.to_string(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// The profile's rows of channel `MPI p2p`.
fn rows(p: &Value) -> BTreeSet<Row> {
    let mut out = BTreeSet::new();
    for m in p["messages"].as_array().expect("messages") {
        assert_eq!(m["channel"], "MPI p2p");
        for x in m["peers"].as_array().unwrap() {
            out.insert((
                m["direction"].as_str().unwrap().to_string(),
                u(&x["peer"]),
                u(&x["count"]),
                u(&x["bytes"]),
            ));
        }
    }
    out
}

/// An argument's (min, max) at a node.
fn arg(n: &Value, key: &str) -> (u64, u64) {
    let a = &n["args"][key];
    assert!(a.is_object(), "no argument {key} at {n}");
    (u(&a["min"]), u(&a["max"]))
}

fn count(all: &[(Vec<String>, Value)], path: &[&str]) -> u64 {
    let n = node(all, path);
    assert_eq!(n["kind"], "mpi", "{path:?}");
    u(&n["count"])
}

#[test]
fn point_to_point_and_collectives_exact_per_rank_and_merged() {
    patterns_exact(Family::OpenMpi);
}

/// The same programs built with MPICH and run by its launcher: the same one
/// plugin, MPICH's ABI (int handles, its statuses and constants).
#[test]
fn mpich_point_to_point_and_collectives_exact_per_rank_and_merged() {
    patterns_exact(Family::Mpich);
}

fn patterns_exact(family: Family) {
    if !family.available() {
        return;
    }
    let (ranks, dir) = measured_of(
        family,
        &format!("mpi_patterns_{family:?}"),
        &[
            "ring",
            "alltoall",
            "subcomm",
            "collectives",
            "types",
            "exit3",
        ],
    );
    let n = u64::from(RANKS);
    for (r, (p, want)) in ranks.iter().enumerate() {
        let r = r as u64;
        assert_eq!(&rows(p), want, "rank {r}: messages");
        let all = nodes(p);
        // Ring: 3 sends of 8(r+1) bytes to the right, 3 receives from the left.
        let left = (r + n - 1) % n;
        let send = node(&all, &["ring", "MPI_Send"]);
        assert_eq!(u(&send["count"]), 3);
        assert_eq!(arg(send, "bytes_sent"), (8 * (r + 1), 8 * (r + 1)));
        assert_eq!(arg(send, "peer"), ((r + 1) % n, (r + 1) % n));
        let recv = node(&all, &["ring", "MPI_Recv"]);
        assert_eq!(u(&recv["count"]), 3);
        assert_eq!(
            arg(recv, "bytes_received"),
            (8 * (left + 1), 8 * (left + 1))
        );
        assert_eq!(arg(recv, "peer"), (left, left));
        assert_eq!(count(&all, &["ring", "MPI_Sendrecv"]), 1);
        // All to all: r+1 receives from each other rank, q+1 sends to each q.
        assert_eq!(count(&all, &["alltoall", "MPI_Irecv"]), (n - 1) * (r + 1));
        let sends: u64 = (0..n).filter(|&q| q != r).map(|q| q + 1).sum();
        assert_eq!(count(&all, &["alltoall", "MPI_Isend"]), sends);
        assert_eq!(count(&all, &["alltoall", "MPI_Waitall"]), 1);
        assert!(count(&all, &["alltoall", "MPI_Testsome"]) >= 1);
        // Sub-communicator and a duplicate of the world.
        assert_eq!(count(&all, &["subcomm", "MPI_Comm_split"]), 1);
        assert_eq!(count(&all, &["subcomm", "MPI_Comm_dup"]), 1);
        assert_eq!(count(&all, &["subcomm", "MPI_Wait"]), 2);
        // The sub-rank's world rank is in the rows above (expect.<rank>).
        assert_eq!(count(&all, &["subcomm", "MPI_Isend"]), 1);
        if r == 0 {
            let any = node(&all, &["subcomm", "MPI_Waitany"]);
            assert_eq!((u(&any["count"]), arg(any, "bytes_received")), (3, (4, 4)));
        } else {
            assert_eq!(arg(node(&all, &["subcomm", "MPI_Send"]), "peer"), (0, 0));
        }
        // Collectives: (sent, received) bytes of this rank, communicator of 4.
        let d = 8;
        let root = |k: u64, v: u64| if r == k { v } else { 0 };
        for (name, sent, received) in [
            ("MPI_Bcast", root(1, 100 * d), 100 * d - root(1, 100 * d)),
            ("MPI_Reduce", 10 * d, root(0, 10 * d)),
            ("MPI_Allreduce", d, d),
            ("MPI_Allgather", 4 * d, 4 * d * n),
            ("MPI_Allgatherv", (r + 1) * d, 10 * d),
            ("MPI_Alltoall", 2 * d * n, 2 * d * n),
            ("MPI_Alltoallv", 10 * d, (r + 1) * d * n),
            ("MPI_Gather", 3 * d, root(2, 3 * d * n)),
            ("MPI_Gatherv", (r + 1) * d, root(2, 10 * d)),
            ("MPI_Scatter", root(3, 5 * d * n), 5 * d),
            ("MPI_Scatterv", root(3, 10 * d), (r + 1) * d),
        ] {
            let c = node(&all, &["collectives", name]);
            assert_eq!(u(&c["count"]), 1, "{name}");
            assert_eq!(arg(c, "bytes_sent"), (sent, sent), "rank {r} {name}");
            assert_eq!(
                arg(c, "bytes_received"),
                (received, received),
                "rank {r} {name}"
            );
            assert_eq!(arg(c, "comm_size"), (n, n), "{name}");
        }
        assert_eq!(count(&all, &["collectives", "MPI_Barrier"]), 1);
        // Derived datatypes, the first freed before the second is made (its
        // handle possibly the first's): each call's bytes by its own type.
        let sr = node(&all, &["types", "MPI_Sendrecv"]);
        assert_eq!(u(&sr["count"]), 2);
        assert_eq!(arg(sr, "bytes_sent"), (40, 48), "rank {r}");
        assert_eq!(arg(sr, "bytes_received"), (40, 48), "rank {r}");
        let b = node(&all, &["types", "MPI_Bcast"]);
        let (sent, received) = if r == 0 { (20, 0) } else { (0, 20) };
        assert_eq!(arg(b, "bytes_sent"), (sent, sent), "rank {r}");
        assert_eq!(arg(b, "bytes_received"), (received, received), "rank {r}");
        assert_eq!(count(&all, &["MPI_Init_thread"]), 1);
        assert_eq!(count(&all, &["MPI_Finalize"]), 1);
        assert_eq!(p["metadata"]["MPI thread level"], "MPI_THREAD_MULTIPLE");
        assert!(p["metadata"]["MPI receives not tracked"].is_null());
    }

    // The job's matrix: every rank's own counts, exactly.
    let merged = dir.join("merged");
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.arg("merge");
    for r in 0..RANKS {
        cmd.arg(dir.join(format!("kprof-patterns-rank{r}")));
    }
    assert_ok(&run(cmd.arg("-o").arg(&merged).arg("--no-trace")));
    let m = read_profile(&merged);
    let mut got = BTreeSet::new();
    for ch in m["messages"].as_array().unwrap() {
        assert_eq!(ch["channel"], "MPI p2p");
        for e in ch["entries"].as_array().unwrap() {
            got.insert((
                u(&e["rank"]),
                ch["direction"].as_str().unwrap().to_string(),
                u(&e["peer"]),
                u(&e["count"]),
                u(&e["bytes"]),
            ));
        }
    }
    let want: BTreeSet<_> = ranks
        .iter()
        .enumerate()
        .flat_map(|(r, (_, rows))| {
            rows.iter()
                .map(move |(d, peer, c, b)| (r as u64, d.clone(), *peer, *c, *b))
        })
        .collect();
    assert_eq!(got, want);
    // What each rank sent is what its peers received.
    let sent: BTreeSet<_> = want
        .iter()
        .filter(|x| x.1 == "send")
        .map(|x| (x.0, x.2, x.3, x.4))
        .collect();
    let received: BTreeSet<_> = want
        .iter()
        .filter(|x| x.1 == "receive")
        .map(|x| (x.2, x.0, x.3, x.4))
        .collect();
    assert_eq!(sent, received);
}

#[test]
fn late_rank_shows_as_wait_and_threads_count_exactly() {
    late_rank_and_threads(Family::OpenMpi);
}

/// [`late_rank_shows_as_wait_and_threads_count_exactly`] on MPICH.
#[test]
fn mpich_late_rank_shows_as_wait_and_threads_count_exactly() {
    late_rank_and_threads(Family::Mpich);
}

fn late_rank_and_threads(family: Family) {
    if !family.available() {
        return;
    }
    let (ranks, dir) = measured_of(
        family,
        &format!("mpi_sleep_threads_{family:?}"),
        &["sleep", "threads"],
    );
    for (r, (p, want)) in ranks.iter().enumerate() {
        // Two threads x 50 exchanges of 16 bytes with rank ^ 1, from the threads.
        assert_eq!(&rows(p), want, "rank {r}");
        let partner = (r ^ 1) as u64;
        assert_eq!(
            want.iter().cloned().collect::<Vec<_>>(),
            vec![
                ("receive".to_string(), partner, 100, 1600),
                ("send".to_string(), partner, 100, 1600)
            ]
        );
        let all = nodes(p);
        assert_eq!(count(&all, &["MPI_Isend"]), 100, "rank {r}");
        assert_eq!(count(&all, &["MPI_Irecv"]), 100, "rank {r}");
        assert_eq!(count(&all, &["MPI_Waitall"]), 100, "rank {r}");
        assert_eq!(
            arg(node(&all, &["MPI_Waitall"]), "bytes_received"),
            (16, 16)
        );
        // Rank 3 sleeps 1 s before the allreduce: the others wait there, all
        // but the time they reached it after rank 3 began its sleep (a few
        // time slices at most on a loaded machine), the late rank hardly.
        let wait = u(&node(&all, &["sleep", "MPI_Allreduce"])["total_ns"]);
        if r == 3 {
            assert!(wait < 150_000_000, "the late rank waited {wait} ns");
        } else {
            assert!(wait >= 750_000_000, "rank {r} waited only {wait} ns");
        }
        // The time in MPI, in `kprof report`.
        let calls: u64 = all
            .iter()
            .filter(|(_, n)| n["kind"] == "mpi")
            .map(|(_, n)| u(&n["count"]))
            .sum();
        let out = run(clean_cmd(&lib("kprof"))
            .arg("report")
            .arg(dir.join(format!("kprof-patterns-rank{r}"))));
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("MPI: "))
            .unwrap_or_else(|| panic!("no MPI line in\n{text}"));
        assert!(line.starts_with(&format!("MPI: {calls} calls, ")), "{line}");
    }
}

#[test]
fn kprof_run_detects_mpi_and_preloads_the_plugin() {
    if !available() {
        return;
    }
    let dir = scratch("mpi_detect");
    std::fs::create_dir_all(dir.join("expect")).unwrap();
    // A singleton (no launcher): one rank.
    let _one = JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = clean_cmd(&lib("kprof"));
    let out = run(mpi_env(&mut cmd)
        .current_dir(&dir)
        .env("KPROF_SUMMARY", "0")
        .args(["run", "--verbose", "-o", "out", "--"])
        .arg(program())
        .arg(dir.join("expect"))
        .arg("sleep"));
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("kprof: detected mpi: links libmpi.so"),
        "{err}"
    );
    assert!(
        err.contains("kprof: measuring mpi, annotations (detected)"),
        "{err}"
    );
    assert!(
        err.contains("LD_PRELOAD=") && err.contains("libkprof_mpi.so"),
        "{err}"
    );
    let p = read_profile(&dir.join("out"));
    let all = nodes(&p);
    let allreduce = node(&all, &["sleep", "MPI_Allreduce"]);
    assert_eq!(
        (u(&allreduce["count"]), arg(allreduce, "comm_size")),
        (1, (1, 1))
    );
    assert!(p["plugins"].as_array().unwrap().iter().any(|x| x == "mpi"));
}

/// Without MPI_Init the plugin stays out of the way: an MPI program that never
/// calls MPI, or a non-MPI program with the plugin preloaded, runs unchanged.
#[test]
fn preloaded_into_a_program_without_mpi_calls_records_nothing() {
    if !available() {
        return;
    }
    let out = run(Command::new("true").env("LD_PRELOAD", lib("libkprof_mpi.so")));
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Linked instead of preloaded (`-lkprof_mpi` before the MPI library, as the
/// CMake target `kprof::mpi` does): the same exact rows, no `kprof run`.
#[test]
fn linked_before_libmpi_without_kprof_run() {
    if !available() {
        return;
    }
    let dir = scratch("mpi_linked");
    let libdir = lib_dir();
    let exe = compile_with(
        "mpicc",
        &[&test_file("mpi/patterns.c")],
        &dir.join("patterns_linked"),
        &[
            &format!("-L{}", libdir.display()),
            "-lkprof_mpi",
            "-lkprof_core",
            &format!("-Wl,-rpath,{}", libdir.display()),
            "-lpthread",
        ],
    );
    let _one = JOBS.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::create_dir_all(dir.join("expect")).unwrap();
    let mut cmd = clean_cmd(Path::new("mpirun"));
    let out = run(mpi_env(&mut cmd)
        .current_dir(&dir)
        .env("KPROF_SUMMARY", "0")
        .env("KPROF_PER_RANK", "1")
        .env("KPROF_OUTPUT_DIR", dir.join("r%r"))
        .args(["-np", &RANKS.to_string(), "--oversubscribe"])
        .arg(&exe)
        .arg(dir.join("expect"))
        .args(["ring", "subcomm"]));
    assert_ok(&out);
    for r in 0..RANKS {
        let p = read_profile(&dir.join(format!("r{r}")));
        assert_eq!(rows(&p), expected(&dir.join("expect"), r), "rank {r}");
        assert_eq!(count(&nodes(&p), &["ring", "MPI_Send"]), 3);
    }
}

/// An MPI library the plugin does not know, lacking functions the plugin uses
/// (`tests/mpi/fake_mpi.c`): every call is forwarded with its arguments and
/// return code intact, one line says why nothing is measured, nothing is written.
/// Needs no MPI installed.
#[test]
fn an_unknown_mpi_library_is_forwarded_untouched() {
    let dir = scratch("mpi_fake");
    compile_with(
        "gcc",
        &[&test_file("mpi/fake_mpi.c")],
        &dir.join("libfakempi.so"),
        &["-shared", "-fPIC"],
    );
    let app = compile_with(
        "gcc",
        &[&test_file("mpi/fake_app.c")],
        &dir.join("fake_app"),
        &[
            &format!("-L{}", dir.display()),
            "-lfakempi",
            &format!("-Wl,-rpath,{}", dir.display()),
        ],
    );
    let plain = run(clean_cmd(&app).arg("x"));
    let with = run(clean_cmd(&app)
        .arg("x")
        .env("LD_PRELOAD", lib("libkprof_mpi.so"))
        .env("KPROF_OUTPUT_DIR", dir.join("out")));
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout),
        "init 2 x\nsend 42 1 0x1234 3 9 0x5678\nrc 7\nfinalize\n"
    );
    assert_eq!(with.stdout, plain.stdout);
    assert_eq!(with.status.code(), plain.status.code());
    assert_eq!(
        String::from_utf8_lossy(&with.stderr),
        "kprof: the MPI library has no PMPI_Init_thread: MPI calls are not measured\n"
    );
    assert!(!dir.join("out").exists());
}

// ---- the job's profile, reduced over MPI at MPI_Finalize ----

/// The job's profile rank 0 wrote (`kprof-patterns-job` in `dir`).
fn job_profile(dir: &Path) -> Value {
    let p = read_profile(&dir.join("kprof-patterns-job"));
    assert_eq!(p["schema"], "kprof-merged/1");
    p
}

/// The job's message matrix: (rank, direction, peer, count, bytes).
fn job_rows(m: &Value) -> BTreeSet<(u64, String, u64, u64, u64)> {
    let mut got = BTreeSet::new();
    for ch in m["messages"].as_array().unwrap() {
        assert_eq!(ch["channel"], "MPI p2p");
        for e in ch["entries"].as_array().unwrap() {
            got.insert((
                u(&e["rank"]),
                ch["direction"].as_str().unwrap().to_string(),
                u(&e["peer"]),
                u(&e["count"]),
                u(&e["bytes"]),
            ));
        }
    }
    got
}

/// The programs' own counts of `ranks` ranks, as the job's matrix has them.
fn own_rows(dir: &Path, ranks: u32) -> BTreeSet<(u64, String, u64, u64, u64)> {
    (0..ranks)
        .flat_map(|r| {
            expected(&dir.join("expect"), r)
                .into_iter()
                .map(move |(d, peer, c, b)| (u64::from(r), d, peer, c, b))
        })
        .collect()
}

/// 4 ranks with `KPROF_PER_RANK=1`: the profile rank 0 wrote at `MPI_Finalize`
/// is exactly `kprof merge` of the ranks' own directories from the same run, its
/// per-node sums are the ranks' own values summed, its matrix is the programs'
/// own counts, and every rank's clock offset to rank 0 is recorded.
#[test]
fn job_profile_reduced_at_finalize_equals_the_ranks_profiles() {
    if !available() {
        return;
    }
    let (ranks, dir) = measured("mpi_job", &["ring", "alltoall", "subcomm", "collectives"]);
    let job = job_profile(&dir);
    assert_eq!(job["ranks"].as_array().unwrap().len(), RANKS as usize);

    // kprof merge of the same directories (named as the ranks recorded them).
    let merged = dir.join("merged");
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.arg("merge");
    for r in job["ranks"].as_array().unwrap() {
        cmd.arg(r["dir"].as_str().expect("each rank's directory"));
    }
    assert_ok(&run(cmd.arg("-o").arg(&merged).arg("--no-trace")));
    assert_eq!(job, read_profile(&merged));
    let profiles: Vec<Value> = ranks.iter().map(|(p, _)| p.clone()).collect();
    assert_job_sums(&job, &profiles);
    assert_eq!(job_rows(&job), own_rows(&dir, RANKS));

    // Clock offsets: rank 0's is 0; each other rank's came with its error bound
    // (half the shortest round trip), the same as in its own profile.
    for (r, x) in job["ranks"].as_array().unwrap().iter().enumerate() {
        let (offset, error) = (&x["clock_offset_ns"], &x["clock_error_ns"]);
        assert!(offset.is_i64() && error.is_u64(), "rank {r}: {x}");
        let meta = &ranks[r].0["metadata"];
        assert_eq!(meta["clock offset to rank 0 (ns)"], offset.to_string());
        if r == 0 {
            assert_eq!((offset.as_i64(), u(error)), (Some(0), 0));
        } else {
            // Ranks of one host: round trips of microseconds, not seconds.
            assert!(u(error) > 0 && u(error) < 1_000_000_000, "rank {r}: {x}");
        }
    }

    // The job's profile.cali (statistics over the ranks, as Caliper's spot
    // writes them) loads into caliper-reader, Hatchet and Thicket with the
    // values of the job's profile.json.
    let thicket = kprof_tests::openmp::deps_dir().join("thicket");
    let have = Command::new("python3")
        .args(["-c", "import caliperreader, hatchet, thicket"])
        .env("PYTHONPATH", &thicket)
        .output()
        .is_ok_and(|o| o.status.success());
    if skip_unless(
        have,
        "caliper-reader, llnl-hatchet and llnl-thicket (bash tests/setup.sh)",
    ) {
        return;
    }
    let mut cmd = Command::new("python3");
    cmd.arg(test_file("caliper/check_job_cali.py"))
        .arg(dir.join("kprof-patterns-job"))
        .arg(RANKS.to_string())
        .env("PYTHONPATH", &thicket);
    let out = run(&mut cmd);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in ["caliper-reader: ", "hatchet: ", "thicket: "] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
}

/// The job's profile holds, node by node, the sums of the ranks' own counts and
/// times, and how many ranks ran each node.
fn assert_job_sums(job: &Value, ranks: &[Value]) {
    let mut want: BTreeMap<Vec<String>, (u64, u64, u64)> = BTreeMap::new();
    for p in ranks {
        for (path, n) in nodes(p) {
            let e = want.entry(path).or_default();
            e.0 += u(&n["count"]);
            e.1 += u(&n["total_ns"]);
            e.2 += 1;
        }
    }
    let got = nodes(job);
    assert_eq!(got.len(), want.len());
    for (path, n) in &got {
        let (count, total, present) = want[path];
        assert_eq!(u(&n["count"]["sum"]), count, "{path:?}");
        assert_eq!(u(&n["total_ns"]["sum"]), total, "{path:?}");
        assert_eq!(u(&n["ranks"]), present, "{path:?}");
    }
}

/// 8 ranks on 2 cores, without `KPROF_PER_RANK`: one directory for the job (the
/// ranks' own are removed once their profiles are in it), its matrix the
/// programs' own counts exactly.
#[test]
fn eight_ranks_one_directory_for_the_job() {
    if !available() {
        return;
    }
    let dir = scratch("mpi_job8");
    let prog = program();
    let kprof = lib("kprof");
    let out = mpirun_n(
        &dir,
        8,
        &[&kprof, Path::new("run"), Path::new("--"), &prog],
        &["ring", "alltoall"],
        &[],
    );
    assert_ok(&out);
    let job = job_profile(&dir);
    let listed: Vec<u64> = job["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["rank"]))
        .collect();
    assert_eq!(listed, (0..8).collect::<Vec<_>>());
    assert_eq!(job_rows(&job), own_rows(&dir, 8));
    let all = nodes(&job);
    let send = node(&all, &["ring", "MPI_Send"]);
    assert_eq!((u(&send["count"]["sum"]), u(&send["ranks"])), (24, 8));
    for r in 0..8 {
        assert!(
            !dir.join(format!("kprof-patterns-rank{r}")).exists(),
            "rank {r}'s own directory stays without KPROF_PER_RANK"
        );
    }
}

/// Programs that never complete `MPI_Finalize` on every rank: the job ends as it
/// does without kprof (exit status, no hang: a bounded wait of 2 s here), and
/// every rank's data is written, in its own directory or in the job's profile.
///
/// After `MPI_Abort` the aborting rank writes its own profile before the real
/// call, always. Open MPI 4.1's `mpirun` then sends the others SIGTERM, sleeps
/// at most `odls_base_sigkill_timeout` (1 s) and sends SIGKILL; a child's exit
/// cuts that sleep short, so the first rank to end (after writing) brings the
/// SIGKILL on the rest within a millisecond. Each of the others writes its
/// profile on SIGTERM, the first one always; one not scheduled before that
/// SIGKILL (4 ranks on 2 cores) writes nothing, and `kprof merge` names it.
#[test]
fn abort_and_missing_finalize_add_no_hang_and_keep_every_rank() {
    if !available() {
        return;
    }
    let prog = program();
    let kprof = lib("kprof");
    for ending in ["nofinalize", "halffinalize", "abort1"] {
        let base = scratch(&format!("mpi_end_{ending}"));
        let (plain_dir, kprof_dir) = (base.join("plain"), base.join("kprof"));
        for d in [&plain_dir, &kprof_dir] {
            std::fs::create_dir_all(d).unwrap();
        }
        let env = [("KPROF_MPI_WAIT_S", "2")];
        let plain = mpirun_n(&plain_dir, RANKS, &[&prog], &["ring", ending], &env);
        let with = mpirun_n(
            &kprof_dir,
            RANKS,
            &[&kprof, Path::new("run"), Path::new("--"), &prog],
            &["ring", ending],
            &env,
        );
        let err = String::from_utf8_lossy(&with.stderr);
        assert_ne!(with.status.code(), Some(124), "{ending}: hung\n{err}");
        assert_eq!(
            with.status.code(),
            plain.status.code(),
            "{ending}: exit status changed\n{err}"
        );
        let in_job: BTreeSet<u64> = std::fs::read_dir(&kprof_dir)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("kprof-patterns-job")
            })
            .flat_map(|e| {
                let p = read_profile(&e.path());
                p["ranks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| u(&r["rank"]))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut lost = Vec::new();
        for r in 0..RANKS {
            let own = kprof_dir.join(format!("kprof-patterns-rank{r}"));
            if in_job.contains(&u64::from(r)) {
                continue;
            }
            if ending == "abort1" && r != 1 && !own.join("profile.json").exists() {
                lost.push(r);
                continue;
            }
            let p = read_profile(&own);
            let all = nodes(&p);
            assert_eq!(count(&all, &["ring", "MPI_Send"]), 3, "{ending} rank {r}");
            if ending == "abort1" {
                let aborted = all.iter().any(|(path, _)| path == &["MPI_Abort"]);
                assert_eq!(aborted, r == 1, "rank {r}");
                if r == 1 {
                    assert_eq!(count(&all, &["MPI_Abort"]), 1);
                    assert_eq!(p["metadata"]["MPI_Abort error code"], "5");
                }
            }
        }
        if !lost.is_empty() {
            assert!(
                lost.len() < 3,
                "no rank wrote its profile on SIGTERM\n{err}"
            );
            merge_names_the_lost_ranks(&kprof, &kprof_dir, &lost);
        }
    }
}

/// `kprof merge` of the job's rank directories merges the others and names each
/// rank in `lost` (killed before it wrote its profile) as missing.
fn merge_names_the_lost_ranks(kprof: &Path, dir: &Path, lost: &[u32]) {
    let mut cmd = clean_cmd(kprof);
    cmd.current_dir(dir)
        .args(["merge", "--no-trace", "-o", "m"]);
    for r in 0..RANKS {
        cmd.arg(format!("kprof-patterns-rank{r}"));
    }
    let merged = run(&mut cmd);
    assert_ok(&merged);
    let said = String::from_utf8_lossy(&merged.stderr);
    let missing = match lost {
        [r] => format!("rank {r} (kprof-patterns-rank{r})"),
        _ => format!(
            "ranks {}",
            lost.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let want = format!(
        "merged {} of {RANKS} ranks; missing: {missing}",
        RANKS as usize - lost.len()
    );
    assert!(said.contains(&want), "{want:?} not in\n{said}");
}

/// Per-rank Perfetto traces merged by `kprof merge` move onto rank 0's clock:
/// each rank's slices shift by the clock offset it measured at `MPI_Init`. On
/// one host the ranks share a clock and the offsets are what the measure leaves
/// (near 0); to see offsets that matter, as between hosts, the ranks' recorded
/// offsets are then replaced by known ones (rank r's clock `AHEAD_NS` x
/// [0, 1, -1, 2][r] ahead) and the merged trace must have each rank's slices
/// exactly that much earlier than its own trace.
#[test]
fn merged_traces_are_on_rank_0s_clock() {
    if !available() {
        return;
    }
    if skip_unless(
        kprof_tests::trace_check::perfetto_schema().is_some(),
        "protoc",
    ) {
        return;
    }
    const AHEAD_NS: i64 = 7_000_000;
    let injected = |r: u32| AHEAD_NS * [0, 1, -1, 2][r as usize % 4];
    let dir = scratch("mpi_clock_traces");
    let prog = program();
    let kprof = lib("kprof");
    let out = mpirun_n(
        &dir,
        RANKS,
        &[&kprof, Path::new("run"), Path::new("--"), &prog],
        &["ring"],
        &[("KPROF_PER_RANK", "1"), ("KPROF_TRACE", "perfetto")],
    );
    assert_ok(&out);
    // Per rank, by its pid: its ring's begin in its own trace and the offset it
    // measured.
    let mut own: BTreeMap<i64, (u32, u64, i64)> = BTreeMap::new();
    for r in 0..RANKS {
        let d = dir.join(format!("kprof-patterns-rank{r}"));
        let p = read_profile(&d);
        let offset: i64 = p["metadata"][OFFSET_KEY]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("a clock offset");
        // One host, one clock: the offset is the measure's error, within half
        // the shortest of 8 round trips (microseconds). 5 ms allows a loaded
        // 2-core machine to preempt every one of them for a time slice, and is
        // still far below the known offsets below.
        if r == 0 {
            assert_eq!(offset, 0, "rank 0 is the reference");
        }
        assert!(
            offset.abs() <= 5_000_000,
            "rank {r}: {offset} ns off on one host"
        );
        let own_trace = kprof_tests::trace_check::read_perfetto(&d).expect("schema checked");
        let ring = ring_begins(&own_trace);
        assert_eq!(ring.len(), 1, "rank {r}: {ring:?}");
        let (&pid, &begin) = ring.iter().next().unwrap();
        assert!(own.insert(pid, (r, begin, offset)).is_none(), "pid {pid}");
        // Calls recorded whole are slices in the trace as any other: inside
        // the ring, with their arguments, as many as the profile counts.
        let ring = own_trace.named("ring");
        let all = nodes(&p);
        for (call, key, peer) in [
            ("MPI_Send", "bytes_sent", (r + 1) % RANKS),
            ("MPI_Recv", "bytes_received", (r + RANKS - 1) % RANKS),
        ] {
            let slices = own_trace.named(call);
            assert_eq!(
                slices.len() as u64,
                count(&all, &["ring", call]),
                "rank {r} {call}"
            );
            assert_eq!(slices.len(), 3, "rank {r} {call}");
            let node = node(&all, &["ring", call]);
            let (lo, hi) = arg(node, key);
            for s in slices {
                let parent = s.parent.map(|i| own_trace.slices[i].name.as_str());
                assert_eq!(parent, Some("ring"), "rank {r} {call}");
                assert!(s.begin_ns <= s.end_ns && s.begin_ns >= ring[0].begin_ns);
                assert!(s.end_ns <= ring[0].end_ns, "rank {r} {call}");
                let bytes = s.args.get(key).and_then(Value::as_u64).expect(key);
                assert!(bytes > 0 && (lo..=hi).contains(&bytes), "rank {r} {call}");
            }
            // The ring's last round receives from MPI_ANY_SOURCE: the peer is
            // the status's, the left neighbour.
            if call == "MPI_Recv" {
                let peers: BTreeSet<u64> = own_trace
                    .named(call)
                    .iter()
                    .filter_map(|s| s.args.get("peer").and_then(Value::as_u64))
                    .collect();
                assert_eq!(peers, BTreeSet::from([u64::from(peer)]), "rank {r}");
            }
        }

        // The same rank with the known offset in place of the measured one.
        let moved = dir.join(format!("moved/kprof-patterns-rank{r}"));
        std::fs::create_dir_all(&moved).unwrap();
        std::fs::copy(d.join("trace.pftrace"), moved.join("trace.pftrace")).unwrap();
        let text = std::fs::read_to_string(d.join("profile.json")).unwrap();
        let (from, to) = (
            format!("\"{OFFSET_KEY}\":\"{offset}\""),
            format!("\"{OFFSET_KEY}\":\"{}\"", injected(r)),
        );
        assert_eq!(
            text.matches(&from).count(),
            1,
            "{from} in rank {r}'s profile"
        );
        std::fs::write(moved.join("profile.json"), text.replace(&from, &to)).unwrap();
    }
    // Merged as measured: each rank's ring moved by the offset it reported;
    // with the known offsets: by exactly those.
    for (which, known) in [("", false), ("moved/", true)] {
        let merged = dir.join(format!("{which}m"));
        let mut cmd = clean_cmd(&kprof);
        cmd.arg("merge");
        for r in 0..RANKS {
            cmd.arg(dir.join(format!("{which}kprof-patterns-rank{r}")));
        }
        assert_ok(&run(cmd.arg("-o").arg(&merged)));
        let model = kprof_tests::trace_check::read_perfetto(&merged).unwrap();
        model.assert_valid();
        let got = ring_begins(&model);
        let want: BTreeMap<i64, u64> = own
            .iter()
            .map(|(&pid, &(r, begin, measured))| {
                let offset = if known { injected(r) } else { measured };
                (pid, begin.saturating_add_signed(-offset))
            })
            .collect();
        assert_eq!(got, want, "{which}merged: ring begins by pid");
    }
}

/// The metadata key of a rank's clock offset to rank 0's (ns, signed).
const OFFSET_KEY: &str = "clock offset to rank 0 (ns)";

/// The begin of each `ring` slice in a trace, by the pid of its thread track.
fn ring_begins(model: &kprof_tests::trace_check::Model) -> BTreeMap<i64, u64> {
    let mut by_pid = BTreeMap::new();
    for s in model.named("ring") {
        let Some(kprof_tests::trace_check::TrackKind::Thread { pid, .. }) =
            model.tracks.get(&s.track).map(|t| t.kind.clone())
        else {
            panic!("ring slice on a track that is not a thread's: {s:?}");
        };
        assert!(
            by_pid.insert(pid, s.begin_ns).is_none(),
            "pid {pid}: two rings"
        );
    }
    by_pid
}

/// With hardware counters asked for MPI calls (`KPROF_COUNTER_KINDS=mpi`), the
/// plugin opens and closes each call (so that counters are read at both ends)
/// instead of recording it whole: the same nodes, counts, arguments and rows.
/// (The counter itself need not be countable here: the flag alone chooses.)
#[test]
fn calls_opened_for_counters_give_the_same_profile_as_whole_calls() {
    if !available() {
        return;
    }
    let dir = scratch("mpi_counted_calls");
    let prog = program();
    let plugin = lib("libkprof_mpi.so");
    let preload = format!("LD_PRELOAD={}", plugin.display());
    let mut profiles = Vec::new();
    for (name, counted) in [("whole", false), ("opened", true)] {
        let out = dir.join(name);
        let target = format!("KPROF_OUTPUT_DIR={}", out.join("r%r").display());
        let mut argv: Vec<PathBuf> = ["-x", &preload, "-x", &target]
            .iter()
            .map(PathBuf::from)
            .collect();
        if counted {
            for kv in ["KPROF_COUNTERS=PAPI_TOT_INS", "KPROF_COUNTER_KINDS=mpi"] {
                argv.extend(["-x", kv].map(PathBuf::from));
            }
        }
        argv.push(prog.clone());
        let argv: Vec<&Path> = argv.iter().map(PathBuf::as_path).collect();
        let o = mpirun_n(
            &dir,
            RANKS,
            &argv,
            &["ring", "alltoall", "collectives"],
            &[("KPROF_PER_RANK", "1")],
        );
        assert_ok(&o);
        profiles.push(
            (0..RANKS)
                .map(|r| read_profile(&out.join(format!("r{r}"))))
                .collect::<Vec<_>>(),
        );
    }
    let mpi_nodes = |p: &Value| -> BTreeMap<Vec<String>, (u64, String)> {
        nodes(p)
            .into_iter()
            .filter(|(_, n)| n["kind"] == "mpi")
            .map(|(path, n)| (path, (u(&n["count"]), n["args"].to_string())))
            .collect()
    };
    for (r, (whole, opened)) in profiles[0].iter().zip(&profiles[1]).enumerate() {
        let w = mpi_nodes(whole);
        assert!(w.len() > 15, "rank {r}: {w:?}");
        assert_eq!(w, mpi_nodes(opened), "rank {r}");
        assert_eq!(whole["metadata"]["MPI calls"], "recorded whole");
        assert_eq!(
            opened["metadata"]["MPI calls"],
            "opened and closed (hardware counters)"
        );
        assert_eq!(rows(whole), rows(opened), "rank {r}");
        assert_eq!(
            rows(whole),
            expected(&dir.join("expect"), r as u32),
            "rank {r}"
        );
    }
}

// ---- Fortran (mpif.h, `use mpi`, `use mpi_f08`) ----

impl Family {
    /// The family's Fortran compiler wrapper.
    fn fc(self) -> &'static str {
        match self {
            Family::OpenMpi => "mpifort",
            Family::Mpich => "mpifort.mpich",
        }
    }
}

/// The Fortran test programs: `tests/mpi/ring.f90` (`use mpi` and `mpif.h`) and
/// its port to the `mpi_f08` module, `tests/mpi/ring_f08.f90`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fortran {
    /// `ring.f90`.
    Mpif,
    /// `ring_f08.f90`.
    F08,
}

impl Fortran {
    /// The program's name (its source is `tests/mpi/<name>.f90`).
    fn name(self) -> &'static str {
        match self {
            Fortran::Mpif => "ring",
            Fortran::F08 => "ring_f08",
        }
    }
}

/// `binding`'s program built once with `family`'s `mpifort`, with kprof's
/// Fortran module (its phases are kprof regions) and linked with the core.
fn fortran_program(family: Family, binding: Fortran) -> PathBuf {
    static BUILT: [[OnceLock<PathBuf>; 2]; 2] = [
        [OnceLock::new(), OnceLock::new()],
        [OnceLock::new(), OnceLock::new()],
    ];
    BUILT[family as usize][binding as usize]
        .get_or_init(|| {
            let name = binding.name();
            let dir = scratch(&format!("mpi_fortran_build_{family:?}_{name}"));
            let libdir = lib_dir();
            let (l, rpath) = (
                format!("-L{}", libdir.display()),
                format!("-Wl,-rpath,{}", libdir.display()),
            );
            let mut args = vec![
                "-J",
                dir.to_str().unwrap(),
                &l,
                "-lkprof_core",
                &rpath,
                // mpif.h declares every MPI constant.
                "-Wno-unused-parameter",
            ];
            if family == Family::Mpich {
                // MPICH's `use mpi` declares each choice buffer with one type
                // (Open MPI's ignores it): gfortran 10+ refuses another type
                // unless told, and still warns.
                args.extend(["-fallow-argument-mismatch", "-w"]);
            }
            let module = kprof_tests::workspace_root().join("ffi-headers/kprof.f90");
            let ring = test_file(&format!("mpi/{name}.f90"));
            compile_with(family.fc(), &[&module, &ring], &dir.join(name), &args)
        })
        .clone()
}

/// What `ring.f90` printed about its own calls, rank by rank.
#[derive(Default, Debug)]
struct Said {
    /// (direction, world peer, count, bytes).
    rows: BTreeSet<Row>,
    /// (region, function) -> calls.
    calls: BTreeMap<(String, String), u64>,
    /// function -> (bytes sent, bytes received) of one collective call.
    colls: BTreeMap<String, (u64, u64)>,
}

fn said(out: &Output) -> BTreeMap<u64, Said> {
    let mut all: BTreeMap<u64, Said> = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 || f[0] != "rank" {
            continue;
        }
        let n = |i: usize| -> u64 { f[i].parse().unwrap() };
        let s = all.entry(n(1)).or_default();
        match f[2] {
            "send" => drop(s.rows.insert(("send".into(), n(3), n(4), n(5)))),
            "recv" => drop(s.rows.insert(("receive".into(), n(3), n(4), n(5)))),
            "call" => drop(s.calls.insert((f[3].into(), f[4].into()), n(5))),
            "coll" => drop(s.colls.insert(f[3].into(), (n(4), n(5)))),
            _ => {}
        }
    }
    all
}

/// The lines two runs of `ring.f90` print alike (not how often `MPI_Test`
/// polled).
fn stable_lines(o: &Output) -> BTreeSet<String> {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.contains(" MPI_Test "))
        .map(str::to_string)
        .collect()
}

/// A Fortran program (`use mpi` and `mpif.h`) on 4 ranks: every call the
/// program counted is a node under its region, with the program's own counts
/// and collective bytes; the message rows are its own counts exactly; the job's
/// profile reduced at `MPI_Finalize` equals `kprof merge` of the ranks. Under
/// Open MPI the plugin's Fortran entries record (the library's Fortran entries
/// call `PMPI_*`); under MPICH they only forward and the C ones record (its
/// Fortran entries call `MPI_*`): exact counts in both show nothing is counted
/// twice.
#[test]
fn fortran_ring_and_collectives_exact() {
    fortran_exact(Family::OpenMpi, Fortran::Mpif);
}

/// [`fortran_ring_and_collectives_exact`] built and run with MPICH.
#[test]
fn mpich_fortran_ring_and_collectives_exact() {
    fortran_exact(Family::Mpich, Fortran::Mpif);
}

/// The same program with the `mpi_f08` module (`tests/mpi/ring_f08.f90`:
/// handles and statuses as derived types, `ierror` passed or omitted,
/// `MPI_IN_PLACE` in an allreduce and a gather) under Open MPI, whose
/// `mpi_send_f08_` entries call its internal Fortran functions and so `PMPI_*`:
/// the plugin's `mpi_f08` entries record every call, exactly once.
#[test]
fn fortran_f08_ring_and_collectives_exact() {
    fortran_exact(Family::OpenMpi, Fortran::F08);
}

/// [`fortran_f08_ring_and_collectives_exact`] under MPICH, whose `mpi_f08`
/// entries with choice buffers (`mpi_send_f08ts_`) call the C `MPI_*`
/// (recorded there) and the others (`mpi_wait_f08_`, `mpi_init_f08_` ...) the
/// C `PMPI_*` (recorded by the plugin's `mpi_f08` entries).
#[test]
fn mpich_fortran_f08_ring_and_collectives_exact() {
    fortran_exact(Family::Mpich, Fortran::F08);
}

fn fortran_exact(family: Family, binding: Fortran) {
    if !family.available() || skip_unless(have(family.fc()), family.fc()) {
        return;
    }
    let prog = fortran_program(family, binding);
    let name = binding.name();
    let base = scratch(&format!("mpi_fortran_{family:?}_{name}"));
    let (plain_dir, kprof_dir) = (base.join("plain"), base.join("kprof"));
    for d in [&plain_dir, &kprof_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let per_rank = [("KPROF_PER_RANK", "1")];
    let plain = mpirun_of(family, &plain_dir, RANKS, &[&prog], &[], &per_rank);
    assert_ok(&plain);
    let kprof = lib("kprof");
    let with = mpirun_of(
        family,
        &kprof_dir,
        RANKS,
        &[&kprof, Path::new("run"), Path::new("--"), &prog],
        &[],
        &per_rank,
    );
    assert_ok(&with);
    assert_eq!(
        stable_lines(&with),
        stable_lines(&plain),
        "program output changed"
    );
    let said = said(&with);
    assert_eq!(said.len(), RANKS as usize, "{with:?}");
    let n = u64::from(RANKS);
    for (&r, s) in &said {
        let p = read_profile(&kprof_dir.join(format!("kprof-{name}-rank{r}")));
        assert_eq!(p["metadata"]["MPI rank"], r.to_string());
        assert_eq!(p["metadata"]["MPI family"], family.name());
        assert_eq!(rows(&p), s.rows, "rank {r}: messages");
        let all = nodes(&p);
        // ring_f08 has one phase more: a send that fails, its ierror left out
        // (its message is not among the rows the program counted).
        let phases_calls = match binding {
            Fortran::Mpif => 12,
            Fortran::F08 => 13,
        };
        assert_eq!(s.calls.len(), phases_calls, "rank {r}: {s:?}");
        for ((region, f), want) in &s.calls {
            assert_eq!(count(&all, &[region, f]), *want, "rank {r} {region} {f}");
        }
        assert_eq!(s.colls.len(), 7, "rank {r}: {s:?}");
        for (f, (sent, received)) in &s.colls {
            let c = node(&all, &["collectives", f]);
            assert_eq!(arg(c, "bytes_sent"), (*sent, *sent), "rank {r} {f}");
            assert_eq!(
                arg(c, "bytes_received"),
                (*received, *received),
                "rank {r} {f}"
            );
            assert_eq!(arg(c, "comm_size"), (n, n), "rank {r} {f}");
        }
        // Point-to-point arguments: r+1 doubles to the right, from the left.
        let left = (r + n - 1) % n;
        let send = node(&all, &["ring", "MPI_Send"]);
        assert_eq!(arg(send, "bytes_sent"), (8 * (r + 1), 8 * (r + 1)));
        assert_eq!(arg(send, "peer"), ((r + 1) % n, (r + 1) % n));
        for f in ["MPI_Recv", "MPI_Wait", "MPI_Waitall"] {
            let c = node(&all, &["ring", f]);
            assert_eq!(arg(c, "peer"), (left, left), "rank {r} {f}");
        }
        // The sub-communicator's peers are world ranks r-2 and r+2.
        if r >= 2 {
            assert_eq!(
                arg(node(&all, &["subcomm", "MPI_Recv"]), "peer"),
                (r - 2, r - 2)
            );
        } else {
            assert_eq!(
                arg(node(&all, &["subcomm", "MPI_Send"]), "peer"),
                (r + 2, r + 2)
            );
        }
        assert_eq!(count(&all, &["MPI_Init_thread"]), 1);
        assert_eq!(count(&all, &["MPI_Finalize"]), 1);
        assert!(p["metadata"]["MPI receives not tracked"].is_null());
    }
    // The job's profile, reduced over MPI at MPI_Finalize: kprof merge of the
    // ranks' own directories, and the programs' own rows.
    let job = read_profile(&kprof_dir.join(format!("kprof-{name}-job")));
    assert_eq!(job["schema"], "kprof-merged/1");
    let merged = kprof_dir.join("merged");
    let mut cmd = clean_cmd(&kprof);
    cmd.arg("merge");
    for r in job["ranks"].as_array().unwrap() {
        cmd.arg(r["dir"].as_str().expect("each rank's directory"));
    }
    assert_ok(&run(cmd.arg("-o").arg(&merged).arg("--no-trace")));
    assert_eq!(job, read_profile(&merged));
    let own: BTreeSet<_> = said
        .iter()
        .flat_map(|(&r, s)| {
            s.rows
                .iter()
                .map(move |(d, peer, c, b)| (r, d.clone(), *peer, *c, *b))
        })
        .collect();
    assert_eq!(job_rows(&job), own);
}

// ---- a Kokkos program under MPI ----

/// `tests/kokkos/mpi_solver.cpp` built with `mpicxx` against the Kokkos 3.4.01
/// install of tests/scripts/build-kokkos.sh (Serial + OpenMP, static).
fn kokkos_mpi_program() -> Option<PathBuf> {
    let install = kprof_tests::openmp::deps_dir().join("kokkos-3.4.01/install");
    let (core, containers) = (
        install.join("lib/libkokkoscore.a"),
        install.join("lib/libkokkoscontainers.a"),
    );
    if skip_unless(
        core.is_file() && have("mpicxx"),
        "real Kokkos (run tests/scripts/build-kokkos.sh) and mpicxx",
    ) {
        return None;
    }
    let dir = scratch("mpi_kokkos_build");
    let include = install.join("include");
    let args = [
        "-std=c++14",
        "-fopenmp",
        // Open MPI's C++ bindings do not build with -Wextra -Werror.
        "-DOMPI_SKIP_MPICXX",
        "-isystem",
        include.to_str().expect("UTF-8 path"),
        containers.to_str().expect("UTF-8 path"),
        core.to_str().expect("UTF-8 path"),
        "-ldl",
    ];
    let src = test_file("kokkos/mpi_solver.cpp");
    Some(compile_with(
        "mpicxx",
        &[&src],
        &dir.join("mpi_solver"),
        &args,
    ))
}

/// A real Kokkos program calling MPI (`tests/kokkos/mpi_solver.cpp`), 4 ranks
/// under `kprof run` (Kokkos and MPI detected together): each rank's kernels and
/// MPI calls sit under the Kokkos regions that made them, with the program's
/// counts and bytes, and its message rows are its halo exchange exactly; the job
/// profile rank 0 wrote at `MPI_Finalize` is `kprof merge` of the ranks' own
/// directories (`KPROF_PER_RANK=1`, same run) and, node by node, the sum of the
/// ranks' profiles. Output and exit status unchanged.
#[test]
fn kokkos_program_under_mpi_job_profile_is_the_sum_of_the_ranks() {
    if !available() {
        return;
    }
    let Some(prog) = kokkos_mpi_program() else {
        return;
    };
    const ITERATIONS: u64 = 6;
    let base = scratch("mpi_kokkos");
    let (plain_dir, kprof_dir) = (base.join("plain"), base.join("kprof"));
    for d in [&plain_dir, &kprof_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    // One OpenMP thread per rank: 4 ranks already share 2 cores.
    let env = [
        ("KPROF_PER_RANK", "1"),
        ("OMP_NUM_THREADS", "1"),
        ("OMP_PROC_BIND", "false"),
    ];
    let plain = mpirun_n(&plain_dir, RANKS, &[&prog], &[], &env);
    assert_ok(&plain);
    let kprof = lib("kprof");
    let with = mpirun_n(
        &kprof_dir,
        RANKS,
        &[&kprof, Path::new("run"), Path::new("--"), &prog],
        &[],
        &env,
    );
    assert_ok(&with);
    let lines = |o: &Output| -> BTreeSet<String> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(lines(&with), lines(&plain), "program output changed");
    assert_eq!(lines(&plain).len(), RANKS as usize, "{plain:?}");
    assert!(
        String::from_utf8_lossy(&with.stderr).contains("measuring kokkos, mpi (detected)"),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );

    let n = u64::from(RANKS);
    let mut profiles = Vec::new();
    for r in 0..n {
        let p = read_profile(&kprof_dir.join(format!("kprof-mpi_solver-rank{r}")));
        assert_eq!(p["metadata"]["MPI rank"], r.to_string());
        let all = nodes(&p);
        for (path, kind, calls) in [
            (&["solve"][..], "region", 1),
            (&["solve", "iteration"][..], "region", ITERATIONS),
            (
                &["solve", "iteration", "smooth"][..],
                "parallel_for",
                ITERATIONS,
            ),
            (
                &["solve", "iteration", "norm"][..],
                "parallel_reduce",
                ITERATIONS,
            ),
            (
                &["solve", "iteration", "x <- y"][..],
                "deep_copy",
                ITERATIONS,
            ),
            (
                &["solve", "iteration", "MPI_Allreduce"][..],
                "mpi",
                ITERATIONS,
            ),
            (
                &["solve", "iteration", "MPI_Sendrecv"][..],
                "mpi",
                2 * ITERATIONS,
            ),
            (&["MPI_Init"][..], "mpi", 1),
            (&["MPI_Finalize"][..], "mpi", 1),
        ] {
            let x = node(&all, path);
            assert_eq!(
                (x["kind"].as_str(), u(&x["count"])),
                (Some(kind), calls),
                "rank {r} {path:?}"
            );
        }
        let allreduce = node(&all, &["solve", "iteration", "MPI_Allreduce"]);
        assert_eq!(arg(allreduce, "bytes_sent"), (8, 8));
        assert_eq!(arg(allreduce, "comm_size"), (n, n));
        let halo = node(&all, &["solve", "iteration", "MPI_Sendrecv"]);
        assert_eq!(arg(halo, "bytes_sent"), (8, 8));
        assert_eq!(arg(halo, "bytes_received"), (8, 8));
        // Per iteration one double to each neighbour and one from each.
        let want: BTreeSet<Row> = [(r + n - 1) % n, (r + 1) % n]
            .into_iter()
            .flat_map(|q| {
                ["send", "receive"].map(|d| (d.to_string(), q, ITERATIONS, 8 * ITERATIONS))
            })
            .collect();
        assert_eq!(rows(&p), want, "rank {r}");
        profiles.push(p);
    }

    let job = read_profile(&kprof_dir.join("kprof-mpi_solver-job"));
    assert_eq!(job["schema"], "kprof-merged/1");
    assert_eq!(job["ranks"].as_array().unwrap().len(), RANKS as usize);
    let merged = kprof_dir.join("merged");
    let mut cmd = clean_cmd(&kprof);
    cmd.arg("merge");
    for r in job["ranks"].as_array().unwrap() {
        cmd.arg(r["dir"].as_str().expect("each rank's directory"));
    }
    assert_ok(&run(cmd.arg("-o").arg(&merged).arg("--no-trace")));
    assert_eq!(job, read_profile(&merged));
    assert_job_sums(&job, &profiles);
    let all = nodes(&job);
    let smooth = node(&all, &["solve", "iteration", "smooth"]);
    assert_eq!(
        (u(&smooth["count"]["sum"]), u(&smooth["ranks"])),
        (n * ITERATIONS, n)
    );
    let own: BTreeSet<_> = profiles
        .iter()
        .enumerate()
        .flat_map(|(r, p)| {
            rows(p)
                .into_iter()
                .map(move |(d, peer, c, b)| (r as u64, d, peer, c, b))
        })
        .collect();
    assert_eq!(job_rows(&job), own);
}

// ---- reading a job: its report, a rank that dies, 32 ranks ----

/// `kprof <args>` in `dir`, which must succeed; its stdout and stderr.
fn kprof_in(dir: &Path, args: &[&str]) -> (String, String) {
    let out = run(clean_cmd(&lib("kprof")).current_dir(dir).args(args));
    assert_ok(&out);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The number of a report's `MPI: N calls` line.
fn mpi_calls(report: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.starts_with("MPI: "))
        .unwrap_or_else(|| panic!("no MPI line in\n{report}"));
    line["MPI: ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"))
}

/// Each rank's time in MPI: its outermost MPI calls' total time.
fn time_in_mpi(p: &Value) -> u64 {
    fn walk(list: &Value) -> u64 {
        list.as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                if n["kind"] == "mpi" {
                    u(&n["total_ns"])
                } else {
                    walk(&n["children"])
                }
            })
            .sum()
    }
    walk(&p["tree"])
}

/// `kprof report` of the job's profile shows what a rank's report shows, over
/// the ranks: the program, the MPI calls (as many as the ranks' reports count
/// together), each MPI function's calls, the message matrix (totals and every
/// pair, exactly the programs' own counts), `--flat` by name summed over the
/// ranks, `--threads` as the ranks and their threads; with `--by-rank`, each
/// rank's time in MPI, the least and the most named.
#[test]
fn job_report_shows_what_the_ranks_reports_show() {
    if !available() {
        return;
    }
    let (ranks, dir) = measured("mpi_job_report", &["ring", "alltoall", "collectives"]);
    let profiles: Vec<&Value> = ranks.iter().map(|(p, _)| p).collect();
    let (text, _) = kprof_in(&dir, &["report", "kprof-patterns-job", "--top", "100"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "kprof report: kprof-patterns-job/profile.json (merged, 4 ranks)"
    );
    assert_eq!(lines[1], "program: patterns (4 ranks on 1 host)");

    // The MPI calls: the ranks' reports' counts added up, every MPI node's.
    let own: u64 = (0..RANKS)
        .map(|r| mpi_calls(&kprof_in(&dir, &["report", &format!("kprof-patterns-rank{r}")]).0))
        .sum();
    let all: Vec<Vec<(Vec<String>, Value)>> = profiles.iter().map(|p| nodes(p)).collect();
    let in_tree: u64 = all
        .iter()
        .flatten()
        .filter(|(_, n)| n["kind"] == "mpi")
        .map(|(_, n)| u(&n["count"]))
        .sum();
    assert_eq!((mpi_calls(&text), own), (in_tree, in_tree));
    assert!(
        text.contains(&format!("\nMPI: {in_tree} calls over 4 ranks, ")),
        "{text}"
    );
    // Per function: MPI_Send's 3 ring rounds on each rank.
    let send = text
        .lines()
        .find(|l| l.ends_with(" MPI_Send") && !l.contains('/'))
        .unwrap_or_else(|| panic!("no MPI_Send function row:\n{text}"));
    let cells: Vec<&str> = send.split_whitespace().collect();
    // time/rank, % MPI, calls, per call, function (a duration is two cells).
    assert_eq!(cells[cells.len() - 4], "12", "{send}");

    // The matrix: totals, and every pair of each direction as the programs
    // counted them.
    let want = own_rows(&dir, RANKS);
    for (direction, arrow) in [("send", "->"), ("receive", "<-")] {
        let rows: Vec<_> = want.iter().filter(|r| r.1 == direction).collect();
        let (count, bytes): (u64, u64) = (
            rows.iter().map(|r| r.3).sum(),
            rows.iter().map(|r| r.4).sum(),
        );
        let head = format!(
            "  MPI p2p {direction}: {count} msgs, {} from 4 of 4 ranks; bytes per rank: ",
            kprof_core::output::readable::bytes(bytes)
        );
        let at = lines
            .iter()
            .position(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("no line {head:?} in\n{text}"));
        let pairs: BTreeSet<(u64, String, u64, u64, u64)> = lines[at + 2..at + 2 + rows.len()]
            .iter()
            .map(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                assert_eq!((c[1], c[5]), (arrow, "B"), "{l}");
                let n = |i: usize| c[i].parse::<u64>().unwrap();
                (n(0), direction.to_string(), n(2), n(3), n(4))
            })
            .collect();
        let want: BTreeSet<_> = rows.into_iter().cloned().collect();
        assert_eq!(pairs, want, "{direction}");
    }

    // --flat: by name, summed over the ranks and call paths.
    let (csv, _) = kprof_in(
        &dir,
        &[
            "report",
            "kprof-patterns-job",
            "--flat",
            "--csv",
            "--top",
            "1000",
        ],
    );
    let row = csv
        .lines()
        .find(|l| l.starts_with("MPI_Recv,"))
        .unwrap_or_else(|| panic!("{csv}"));
    let recv: Vec<&(Vec<String>, Value)> = all
        .iter()
        .flatten()
        .filter(|(path, _)| path.last().is_some_and(|n| n == "MPI_Recv"))
        .collect();
    let (count, total): (u64, u64) = (
        recv.iter().map(|(_, n)| u(&n["count"])).sum(),
        recv.iter().map(|(_, n)| u(&n["total_ns"])).sum(),
    );
    let cells: Vec<&str> = row.split(',').collect();
    assert_eq!(
        &cells[..5],
        [
            "MPI_Recv",
            "mpi",
            "1",
            &count.to_string(),
            &total.to_string()
        ]
    );

    // --threads: the ranks, each with its threads.
    let (threads, _) = kprof_in(&dir, &["report", "kprof-patterns-job", "--threads"]);
    for (r, p) in profiles.iter().enumerate() {
        let row = threads
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&r.to_string()))
            .unwrap_or_else(|| panic!("rank {r}:\n{threads}"));
        let c: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            c[1],
            p["threads"].as_array().unwrap().len().to_string(),
            "{row}"
        );
        assert_eq!(c[5], p["program"]["pid"].to_string(), "{row}");
    }

    // With each rank's values kept: each rank's time in MPI, the least and the
    // most, exactly the ranks' own.
    let mut cmd = clean_cmd(&lib("kprof"));
    cmd.current_dir(&dir)
        .args(["merge", "--by-rank", "--no-trace", "-o", "by"]);
    for r in 0..RANKS {
        cmd.arg(format!("kprof-patterns-rank{r}"));
    }
    assert_ok(&run(&mut cmd));
    let (text, _) = kprof_in(&dir, &["report", "by"]);
    let per: Vec<u64> = profiles.iter().map(|p| time_in_mpi(p)).collect();
    let (lo, hi) = (
        (0..per.len()).min_by_key(|&i| per[i]).unwrap(),
        (0..per.len()).max_by_key(|&i| per[i]).unwrap(),
    );
    let d = |ns: u64| kprof_core::output::readable::duration(ns as f64);
    let want = format!(
        "  per rank: min {} (rank {lo}), max {} (rank {hi}), imbalance ",
        d(per[lo]),
        d(per[hi])
    );
    assert!(text.contains(&want), "{want:?} not in\n{text}");
}

/// A rank killed with SIGKILL before `MPI_Finalize` writes no profile (with a
/// trace: only its partial trace); the launcher ends the others, which write
/// theirs. `kprof merge` of the ranks' directories merges the three, names the
/// missing rank and its directory, and exits 0; so does a merge of only the
/// directories that hold a profile (the job's size is in each rank's profile).
#[test]
fn a_killed_rank_is_named_and_the_others_merged() {
    if !available() {
        return;
    }
    let dir = scratch("mpi_killed_rank");
    let (prog, kprof) = (program(), lib("kprof"));
    let out = mpirun_n(
        &dir,
        RANKS,
        &[
            &kprof,
            Path::new("run"),
            Path::new("--trace"),
            Path::new("perfetto"),
            Path::new("--"),
            &prog,
        ],
        &["ring", "kill2"],
        &[("KPROF_PER_RANK", "1")],
    );
    assert_ne!(out.status.code(), Some(124), "hung");
    assert!(!dir.join("kprof-patterns-rank2/profile.json").exists());
    let mut cmd = clean_cmd(&kprof);
    cmd.current_dir(&dir)
        .args(["merge", "--no-trace", "-o", "m"]);
    for r in 0..RANKS {
        cmd.arg(format!("kprof-patterns-rank{r}"));
    }
    let merged = run(&mut cmd);
    assert_ok(&merged);
    let said = String::from_utf8_lossy(&merged.stderr);
    let warned: Vec<&str> = said.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(
        warned,
        [
            "kprof merge: warning: kprof-patterns-rank2: no profile.json in this directory (is \
             it a kprof output directory? a run killed with SIGKILL leaves only its trace); left \
             out of the merge",
            "kprof merge: warning: merged 3 of 4 ranks; missing: rank 2 (kprof-patterns-rank2)"
        ],
        "{said}"
    );
    let m = read_profile(&dir.join("m"));
    let listed: Vec<u64> = m["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["rank"]))
        .collect();
    assert_eq!(listed, [0, 1, 3]);
    let all = nodes(&m);
    let send = node(&all, &["ring", "MPI_Send"]);
    assert_eq!((u(&send["count"]["sum"]), u(&send["ranks"])), (9, 3));
    let survivors: BTreeSet<_> = own_rows(&dir, RANKS)
        .into_iter()
        .filter(|r| r.0 != 2)
        .collect();
    assert_eq!(job_rows(&m), survivors);

    // Only the directories with a profile: the job's size still tells.
    let mut cmd = clean_cmd(&kprof);
    cmd.current_dir(&dir)
        .args(["merge", "--no-trace", "-o", "m3"]);
    for r in [0, 1, 3] {
        cmd.arg(format!("kprof-patterns-rank{r}"));
    }
    let merged = run(&mut cmd);
    assert_ok(&merged);
    let said = String::from_utf8_lossy(&merged.stderr);
    assert!(
        said.lines()
            .any(|l| l == "kprof merge: warning: merged 3 of 4 ranks; missing: rank 2"),
        "{said}"
    );
}

/// A job of 32 ranks on 2 cores (oversubscribed), reduced over MPI at
/// `MPI_Finalize`: every rank in the job's profile, the ring's calls summed
/// exactly, its matrix the programs' own counts, and the report's MPI line the
/// sum.
#[test]
fn thirty_two_ranks_reduced_in_job_exactly() {
    if !available() {
        return;
    }
    const N: u32 = 32;
    let dir = scratch("mpi_job32");
    let out = mpirun_n(
        &dir,
        N,
        &[&lib("kprof"), Path::new("run"), Path::new("--"), &program()],
        &["ring"],
        &[],
    );
    assert_ok(&out);
    let job = job_profile(&dir);
    let listed: Vec<u64> = job["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| u(&r["rank"]))
        .collect();
    assert_eq!(listed, (0..u64::from(N)).collect::<Vec<_>>());
    assert_eq!(job_rows(&job), own_rows(&dir, N));
    let all = nodes(&job);
    for (path, each) in [
        (&["ring", "MPI_Send"][..], 3),
        (&["ring", "MPI_Recv"][..], 3),
        (&["ring", "MPI_Sendrecv"][..], 1),
        (&["MPI_Init_thread"][..], 1),
    ] {
        let n = node(&all, path);
        assert_eq!(
            (u(&n["count"]["sum"]), u(&n["count"]["min"]), u(&n["ranks"])),
            (each * u64::from(N), each, u64::from(N)),
            "{path:?}"
        );
    }
    let (text, _) = kprof_in(&dir, &["report", "kprof-patterns-job"]);
    let calls: u64 = all
        .iter()
        .filter(|(_, n)| n["kind"] == "mpi")
        .map(|(_, n)| u(&n["count"]["sum"]))
        .sum();
    assert_eq!(mpi_calls(&text), calls);
    assert!(
        text.contains("program: patterns (32 ranks on 1 host)"),
        "{text}"
    );
}

// ---- two jobs compared ----

/// The cells of the row of `block` ending with `last` (cells split at blanks).
fn row_ending<'a>(block: &'a str, last: &str) -> Vec<&'a str> {
    block
        .lines()
        .find(|l| l.ends_with(&format!(" {last}")))
        .unwrap_or_else(|| panic!("no row ending {last:?} in\n{block}"))
        .split_whitespace()
        .collect()
}

/// Two jobs of 4 ranks, the second adding an all-to-all phase to the ring:
/// `kprof diff` of their job profiles compares each MPI function over all its
/// call paths (MPI_Send's 3 calls per rank on both sides, MPI_Isend new), shows
/// the imbalance block, and the job's messages as the programs counted them.
#[test]
fn job_diff_compares_mpi_functions_imbalance_and_messages() {
    if !available() {
        return;
    }
    let (_, dir_a) = measured("mpi_job_diff_a", &["ring"]);
    let (_, dir_b) = measured("mpi_job_diff_b", &["ring", "alltoall"]);
    let (job_a, job_b) = (
        dir_a.join("kprof-patterns-job"),
        dir_b.join("kprof-patterns-job"),
    );
    let (text, _) = kprof_in(
        &dir_a,
        &[
            "diff",
            job_a.to_str().unwrap(),
            job_b.to_str().unwrap(),
            "--all",
        ],
    );
    assert!(text.contains("(a job of 4 ranks)"), "{text}");

    // MPI functions: the same 3 sends per rank; the all-to-all's sends new.
    let functions = text_block(&text, "MPI functions over all their call paths");
    let send = row_ending(functions, "MPI_Send");
    assert!(send.join(" ").contains(" 3 -> 3 "), "{functions}");
    let isend = row_ending(functions, "MPI_Isend");
    assert_eq!(isend[isend.len() - 2], "new", "{functions}");

    // Imbalance: its block, each row's ratios readable.
    let imbalance = text_block(&text, "Imbalance over the ranks");
    assert!(imbalance.contains("lost A"), "{imbalance}");

    // Messages: every rank's sends, exactly the programs' own counts.
    let messages = text_block(&text, "Messages of the job");
    let sent = |dir: &Path| -> u64 {
        own_rows(dir, RANKS)
            .iter()
            .filter(|r| r.1 == "send")
            .map(|r| r.3)
            .sum()
    };
    let (sa, sb) = (sent(&dir_a), sent(&dir_b));
    assert!(sb > sa, "the all-to-all sends more: {sa} {sb}");
    let row = row_ending(messages, "MPI p2p send");
    assert_eq!(
        (row[0], row[1], row[row.len() - 4]),
        (sa.to_string().as_str(), sb.to_string().as_str(), "more"),
        "{messages}"
    );
}

// ---- call-stack samples ----

/// `tests/sampling/mpi_op.c` (an MPI program that knows nothing of kprof), 2
/// ranks under `kprof run --sample-hz 200`: the same output and exit status as
/// without kprof; each rank's calls are opened (so a sample taken inside one
/// lands under it) and counted as ever (6 MPI_Allreduce); under its
/// Ranks of the sampled runs of sampling/mpi_op.c.
const SAMPLED_RANKS: u32 = 2;

/// sampling/mpi_op.c, built once for the tests that run it.
fn mpi_op_program() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = scratch("mpi_op_program");
            compile_with(
                "mpicc",
                &[&test_file("sampling/mpi_op.c")],
                &dir.join("mpi_op"),
                &[],
            )
        })
        .clone()
}

/// `kprof run --sample-hz 200` of sampling/mpi_op.c on [`SAMPLED_RANKS`]
/// ranks in `dir`, a profile per rank (`kprof-mpi_op-rank<r>`).
fn sampled_mpi_op(dir: &Path) -> Output {
    mpirun_n(
        dir,
        SAMPLED_RANKS,
        &[
            &lib("kprof"),
            Path::new("run"),
            Path::new("--sample-hz"),
            Path::new("200"),
            Path::new("--"),
            &mpi_op_program(),
        ],
        &[],
        &[("KPROF_PER_RANK", "1")],
    )
}

/// MPI_Allreduce the user-defined reduction's op_work, which MPI runs inside
/// the call, has at least 80% of the samples; outside every call, rank_compute
/// at least 95%; and the two split the rank's CPU 80/20 as their loops do
/// (within 5 points).
#[test]
fn sampled_program_runs_unchanged_and_samples_land_in_its_calls() {
    if !available() {
        return;
    }
    let base = scratch("mpi_stack_samples");
    let (plain_dir, kprof_dir) = (base.join("plain"), base.join("kprof"));
    for d in [&plain_dir, &kprof_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let plain = mpirun_n(
        &plain_dir,
        SAMPLED_RANKS,
        &[&mpi_op_program()],
        &[],
        &[("KPROF_PER_RANK", "1")],
    );
    assert_ok(&plain);
    let with = sampled_mpi_op(&kprof_dir);
    same_outcome(&with, &plain, SAMPLED_RANKS);
    let functions = kprof_tests::sample_functions;
    for r in 0..SAMPLED_RANKS {
        let p = read_profile(&kprof_dir.join(format!("kprof-mpi_op-rank{r}")));
        assert_eq!(p["metadata"]["MPI rank"], r.to_string());
        assert_eq!(
            p["metadata"]["MPI calls"], "opened and closed (call-stack samples)",
            "rank {r}"
        );
        let info = &p["stack_samples"];
        assert_eq!(
            (u(&info["hz"]), u(&info["lost"])),
            (200, 0),
            "rank {r}: {info}"
        );
        let all = nodes(&p);
        let allreduce = node(&all, &["MPI_Allreduce"]);
        assert_eq!(u(&allreduce["count"]), 6, "rank {r}");
        let inside = &allreduce["stack_samples"];
        let f = functions(inside);
        let op = f.get("op_work").copied().unwrap_or(0);
        // Most of the call is the user's operation; the rest is the rank
        // waiting for its peer inside Open MPI, which a loaded machine
        // stretches (the peer descheduled), so only a majority is sure.
        assert!(
            op * 100 >= u(&inside["samples"]) * 50 && f.values().all(|&n| n <= op),
            "rank {r}: op_work under MPI_Allreduce: {inside}"
        );
        assert!(!f.contains_key("rank_compute"), "rank {r}: {inside}");
        let outside = &info["outside"];
        let g = functions(outside);
        let compute = g.get("rank_compute").copied().unwrap_or(0);
        assert!(
            compute * 100 >= u(&outside["samples"]) * 95,
            "rank {r}: rank_compute outside the calls: {outside}"
        );
        assert!(!g.contains_key("op_work"), "rank {r}: {outside}");
        // 8 steps to 2 of the same loop: 80/20 of the two.
        let share = 100.0 * op as f64 / (op + compute) as f64;
        assert!(
            (share - 80.0).abs() <= 5.0,
            "rank {r}: op_work {op}, rank_compute {compute}: {share:.1}%"
        );
        // ~0.6 s of CPU: ~120 samples at 200 Hz.
        assert!(op + compute >= 80, "rank {r}: {info}");
        // The collectives' code, which Open MPI loads inside MPI_Init, unwinds
        // to `main` (its unwind information read when MPI_Init returned).
        assert!(
            u(&info["truncated"]) * 10 <= u(&info["samples"]),
            "rank {r}: truncated unwinds: {info}"
        );
    }
}

/// Self samples by function of a merged profile's `stack_samples` object: the
/// sums over ranks.
fn merged_functions(s: &Value) -> BTreeMap<String, u64> {
    s["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap().to_string(),
                u(&f["samples"]["sum"]),
            )
        })
        .collect()
}

/// `kprof merge` of a sampled job keeps its call-stack samples: per call path
/// and outside every call, each function's samples in the merged profile are
/// the sum of the ranks' (read from their profile.json); the lost and
/// truncated samples are summed, the rate kept; and `kprof report --samples`
/// of the merged directory shows those sums.
#[test]
fn merged_samples_are_the_sums_of_the_ranks_samples() {
    if !available() {
        return;
    }
    let dir = scratch("mpi_stack_samples_merged");
    assert_ok(&sampled_mpi_op(&dir));
    let rank_dirs: Vec<PathBuf> = (0..SAMPLED_RANKS)
        .map(|r| dir.join(format!("kprof-mpi_op-rank{r}")))
        .collect();
    let ranks: Vec<Value> = rank_dirs.iter().map(|d| read_profile(d)).collect();
    let merged = dir.join("merged");
    let out = run(clean_cmd(&lib("kprof"))
        .arg("merge")
        .args(&rank_dirs)
        .arg("-o")
        .arg(&merged)
        .arg("--no-trace"));
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    // Both ranks sampled at one rate: nothing to warn of.
    assert!(!err.contains("warning"), "{err}");
    let m = read_profile(&merged);

    // Every sampled call path's functions: the ranks' sums.
    let sum_over_ranks = |of: &dyn Fn(&Value) -> Option<Value>| {
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for p in &ranks {
            if let Some(s) = of(p) {
                for (f, n) in kprof_tests::sample_functions(&s) {
                    *want.entry(f).or_insert(0) += n;
                }
            }
        }
        want
    };
    let merged_nodes = nodes(&m);
    let mut compared = 0;
    for (path, n) in merged_nodes
        .iter()
        .filter(|(_, n)| n["stack_samples"].is_object())
    {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        let want = sum_over_ranks(&|p| {
            let all = nodes(p);
            all.iter()
                .find(|(q, _)| q.iter().map(String::as_str).eq(path.iter().copied()))
                .and_then(|(_, n)| n.get("stack_samples").cloned())
        });
        assert_eq!(merged_functions(&n["stack_samples"]), want, "{path:?}");
        assert_eq!(
            u(&n["stack_samples"]["samples"]["sum"]),
            want.values().sum::<u64>(),
            "{path:?}"
        );
        compared += 1;
    }
    let allreduce = node(&merged_nodes, &["MPI_Allreduce"]);
    let inside = merged_functions(&allreduce["stack_samples"]);
    let want_inside =
        sum_over_ranks(&|p| Some(node(&nodes(p), &["MPI_Allreduce"])["stack_samples"].clone()));
    assert_eq!(inside, want_inside);
    assert!(
        inside.get("op_work").copied().unwrap_or(0) > 0,
        "{inside:?}"
    );
    assert!(compared >= 1);

    // Outside every call, and how the samples were taken.
    let job = &m["stack_samples"];
    let outside = merged_functions(&job["outside"]);
    assert_eq!(
        outside,
        sum_over_ranks(&|p| Some(p["stack_samples"]["outside"].clone()))
    );
    assert!(
        outside.get("rank_compute").copied().unwrap_or(0) > 0,
        "{outside:?}"
    );
    let total = |k: &str| ranks.iter().map(|p| u(&p["stack_samples"][k])).sum::<u64>();
    for k in ["samples", "lost", "truncated", "threads", "signals"] {
        assert_eq!(u(&job[k]), total(k), "{k}: {job}");
    }
    assert_eq!((u(&job["hz"]), u(&job["ranks"])), (200, 2), "{job}");

    // The report of the merged directory: the job's sums.
    let report = run(clean_cmd(&lib("kprof"))
        .args(["report", "--samples", "--top", "100"])
        .arg(&merged));
    assert_ok(&report);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains(&format!(
            "Call-stack samples summed over 2 ranks: {} at 200 Hz",
            total("samples")
        )),
        "{text}"
    );
    let kind = allreduce["kind"].as_str().unwrap();
    let block = |title: &str| -> Vec<String> {
        let at = text
            .find(title)
            .unwrap_or_else(|| panic!("{title:?} in {text}"));
        text[at..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(str::to_string)
            .collect()
    };
    let shown = |lines: &[String]| -> BTreeMap<String, u64> {
        // "    <sum> <pct>  <function>  [<min> .. <max>]" rows, function lines only.
        lines
            .iter()
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                (cols[2].to_string(), cols[0].parse().unwrap())
            })
            .collect()
    };
    let inside_text = block(&format!(
        "MPI_Allreduce ({kind}): {} samples",
        inside.values().sum::<u64>()
    ));
    let rows = shown(&inside_text);
    assert!(!rows.is_empty(), "{text}");
    for (f, n) in &rows {
        assert_eq!(inside.get(f), Some(n), "{f} in {text}");
    }
    assert_eq!(rows.get("op_work"), inside.get("op_work"), "{text}");
    let outside_text = block(&format!(
        "outside every construct: {} samples",
        outside.values().sum::<u64>()
    ));
    assert_eq!(
        shown(&outside_text).get("rank_compute"),
        outside.get("rank_compute"),
        "{text}"
    );
}

// ---- a job's samples in its flame graph and its in-job profile.cali ----

use kprof_tests::plot_check::{flame_frames, FlameFrame};

/// The ranks' own profiles of a sampled run in `dir` (`KPROF_PER_RANK=1`).
fn sampled_rank_dirs(dir: &Path) -> Vec<PathBuf> {
    (0..SAMPLED_RANKS)
        .map(|r| dir.join(format!("kprof-mpi_op-rank{r}")))
        .collect()
}

/// A construct of the job, combined by hand from the ranks' profile.json: its
/// exclusive time and samples summed over the ranks, and the program's call
/// paths below it by their names from the first frame of the rank's `context`
/// (the frames above its `paths`), (samples in and below, self samples) summed.
#[derive(Default, Debug)]
struct SampledConstruct {
    self_ns: u64,
    samples: u64,
    paths: BTreeMap<Vec<String>, (u64, u64)>,
}

/// The constructs of `ranks`' profiles by their names from the root.
fn combined_constructs(ranks: &[Value]) -> BTreeMap<Vec<String>, SampledConstruct> {
    let mut all: BTreeMap<Vec<String>, SampledConstruct> = BTreeMap::new();
    for p in ranks {
        for (path, n) in nodes(p) {
            let c = all.entry(path).or_default();
            c.self_ns += u(&n["self_ns"]);
            add_samples(&n["stack_samples"], c);
        }
    }
    all
}

/// Adds one rank's `stack_samples` of a construct (or those outside every
/// construct) to `c`: its samples, and its call paths by their names from the
/// first frame of its `context`.
fn add_samples(s: &Value, c: &mut SampledConstruct) {
    fn add(list: &Value, above: &mut Vec<String>, into: &mut BTreeMap<Vec<String>, (u64, u64)>) {
        for p in list.as_array().into_iter().flatten() {
            above.push(p["name"].as_str().unwrap().to_string());
            let e = into.entry(above.clone()).or_default();
            (e.0, e.1) = (e.0 + u(&p["samples"]), e.1 + u(&p["self_samples"]));
            add(&p["children"], above, into);
            above.pop();
        }
    }
    if !s.is_object() {
        return;
    }
    c.samples += u(&s["samples"]);
    let below: u64 = s["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| u(&p["samples"]))
        .sum();
    let mut above = Vec::new();
    for f in s["context"].as_array().unwrap() {
        above.push(f.as_str().unwrap().to_string());
        c.paths.entry(above.clone()).or_default().0 += below;
    }
    add(&s["paths"], &mut above, &mut c.paths);
}

/// How many frames every path of `paths` starts with (the merged `context`):
/// down from a single first frame while it has no self samples and one callee.
fn common_frames(paths: &BTreeMap<Vec<String>, (u64, u64)>) -> usize {
    let below = |at: &[String]| -> Vec<&Vec<String>> {
        paths
            .keys()
            .filter(|k| k.len() == at.len() + 1 && k.starts_with(at))
            .collect()
    };
    let mut at: &[String] = &[];
    while let [k] = below(at)[..] {
        if paths[k].1 != 0 || below(k).len() != 1 {
            break;
        }
        at = k;
    }
    at.len()
}

/// Checks the sample frames below the frame `at` against the combined call
/// paths of `c` (`path`: what they belong to, for the messages), each
/// `per_sample` ns a sample; returns how many it found (those `drawn` at all).
fn check_sample_frames(
    frames: &[FlameFrame],
    at: &FlameFrame,
    row: f64,
    c: &SampledConstruct,
    per_sample: f64,
    drawn: &dyn Fn(f64) -> bool,
    path: &[String],
) -> usize {
    let mut frame_of: BTreeMap<Vec<String>, &FlameFrame> = BTreeMap::new();
    let skip = common_frames(&c.paths);
    for (sp, &(samples, _)) in &c.paths {
        if sp.len() <= skip {
            continue;
        }
        let sp = &sp[skip..];
        let want = samples as f64 * per_sample;
        if !drawn(want) {
            continue;
        }
        let parent = match sp.len() {
            1 => at,
            k => frame_of
                .get(&sp[..k - 1])
                .copied()
                .unwrap_or_else(|| panic!("{path:?}: {sp:?}'s caller not drawn")),
        };
        let name = sp.last().unwrap();
        let f = frame_below(frames, parent, row, &format!("{name} (sample, "))
            .unwrap_or_else(|| panic!("{path:?}: no sample frame {sp:?} below {}", parent.title));
        assert!(
            (f.w as f64 - want).abs() <= 1.0 + 1e-9 * want,
            "{path:?} {sp:?}: {} wide, {samples} samples x {per_sample} ns = {want}",
            f.w
        );
        assert!(
            f.title.contains(&format!(
                ": {samples} call-stack samples in and below it (summed over 2 ranks)"
            )),
            "{}",
            f.title
        );
        frame_of.insert(sp.to_vec(), f);
    }
    frame_of.len()
}

/// The frame one row below `parent`, inside its span, whose title starts with
/// `prefix`.
fn frame_below<'a>(
    frames: &'a [FlameFrame],
    parent: &FlameFrame,
    row: f64,
    prefix: &str,
) -> Option<&'a FlameFrame> {
    frames.iter().find(|f| {
        f.y == parent.y + row
            && f.x >= parent.x
            && f.x + f.w <= parent.x + parent.w
            && f.title.starts_with(prefix)
    })
}

/// The frames of the flame graph `kprof plot` draws of `dir`.
fn plotted_frames(dir: &Path) -> Vec<FlameFrame> {
    assert_ok(&run(clean_cmd(&lib("kprof")).arg("plot").arg(dir)));
    let svg = std::fs::read_to_string(dir.join("plot-icicle.svg")).unwrap();
    flame_frames(&svg)
}

/// `kprof plot` of a sampled job (`sampling/mpi_op.c`, 2 ranks) merged by
/// `kprof merge`: below each construct's frame of the merged flame graph, the
/// ranks' call-stack samples are frames of kind `sample`, nested as the call
/// paths the ranks' profile.json hold (combined here by name path from the
/// outermost frame of each rank's `context`, summed, and started again at the
/// deepest function all the ranks' samples pass through),
/// each as wide as its samples summed over the ranks times 1/hz s divided by
/// the ranks (the mean rank's CPU time, as the constructs are the mean rank's
/// exclusive times; shared in proportion where wider than the construct's
/// mean exclusive time), and no other sample frame; the profile the job
/// reduced at `MPI_Finalize` draws the same sample frames.
#[test]
fn merged_flame_graph_draws_the_ranks_samples_below_their_constructs() {
    if !available() {
        return;
    }
    let dir = scratch("mpi_stack_samples_flame");
    assert_ok(&sampled_mpi_op(&dir));
    let rank_dirs = sampled_rank_dirs(&dir);
    let ranks: Vec<Value> = rank_dirs.iter().map(|d| read_profile(d)).collect();
    let merged = dir.join("merged");
    assert_ok(&run(clean_cmd(&lib("kprof"))
        .arg("merge")
        .args(&rank_dirs)
        .arg("-o")
        .arg(&merged)
        .arg("--no-trace")));
    let frames = plotted_frames(&merged);
    let mut ys: Vec<f64> = frames.iter().map(|f| f.y).collect();
    ys.sort_by(f64::total_cmp);
    ys.dedup();
    let row = ys[1] - ys[0];
    let root = frames.iter().find(|f| f.y == ys[0]).unwrap();
    // inferno leaves out frames under 0.01% of the whole (kprof's MIN_SHARE).
    let drawn = |w: f64| w >= 1e-4 * root.w as f64;
    let hz = ranks
        .iter()
        .map(|p| u(&p["stack_samples"]["hz"]))
        .max()
        .unwrap();
    assert!(ranks.iter().all(|p| u(&p["stack_samples"]["hz"]) == hz));
    let n = ranks.len() as f64;

    let mut want_frames = 0;
    let mut checked = Vec::new();
    for (path, c) in combined_constructs(&ranks) {
        if c.samples == 0 || c.paths.is_empty() {
            continue;
        }
        // Its mean exclusive time over the ranks (ns, the graph's unit), and
        // a sample's width: its CPU time over the ranks, or a share of that.
        let own = (c.self_ns as f64 / n).round();
        let per_sample = (1e9 / hz as f64 / n).min(own / c.samples as f64);
        if !c.paths.values().any(|&(s, _)| drawn(s as f64 * per_sample)) {
            continue;
        }
        // The construct's frame, by its names from the root.
        let mut at = root;
        for name in &path {
            at = frames
                .iter()
                .find(|f| {
                    f.y == at.y + row
                        && f.x >= at.x
                        && f.x + f.w <= at.x + at.w
                        && f.title.starts_with(&format!("{name} ("))
                        && !f.title.starts_with(&format!("{name} (sample, "))
                })
                .unwrap_or_else(|| panic!("no frame of {path:?}: {frames:#?}"));
        }
        let k = check_sample_frames(&frames, at, row, &c, per_sample, &drawn, &path);
        want_frames += k;
        checked.push((path, k));
    }
    // The samples outside every construct: a frame of their own at the top,
    // as wide as their CPU time over the ranks, their call paths below it.
    let mut outside = SampledConstruct::default();
    for p in &ranks {
        add_samples(&p["stack_samples"]["outside"], &mut outside);
    }
    assert!(outside.samples > 0, "rank_compute runs outside every call");
    let per_sample = 1e9 / hz as f64 / n;
    let frame = frame_below(&frames, root, row, "outside every construct (sample, ")
        .unwrap_or_else(|| panic!("no frame of the samples outside: {frames:#?}"));
    let want = outside.samples as f64 * per_sample;
    assert!(
        (frame.w as f64 - want).abs() <= 1.0,
        "{}: {} wide, {want} expected",
        frame.title,
        frame.w
    );
    let outside_path = vec!["outside every construct".to_string()];
    let k = check_sample_frames(
        &frames,
        frame,
        row,
        &outside,
        per_sample,
        &drawn,
        &outside_path,
    );
    assert!(k > 0, "no call path below {}", frame.title);
    want_frames += k + 1;
    assert!(frames.iter().any(|f| f.y > frame.y
        && f.x >= frame.x
        && f.x + f.w <= frame.x + frame.w
        && f.title.starts_with("rank_compute (sample, ")));
    // MPI_Allreduce among them, with op_work below it.
    assert!(
        checked
            .iter()
            .any(|(p, k)| p == &["MPI_Allreduce"] && *k > 0),
        "{checked:?}"
    );
    assert!(frames
        .iter()
        .any(|f| f.title.starts_with("op_work (sample, ")));
    let sample_frames: Vec<&FlameFrame> = frames
        .iter()
        .filter(|f| f.title.contains(" (sample, "))
        .collect();
    assert_eq!(sample_frames.len(), want_frames, "{sample_frames:#?}");

    // The profile reduced inside the job draws the same sample frames.
    let job = plotted_frames(&dir.join("kprof-mpi_op-job"));
    let samples_of = |fs: &[FlameFrame]| -> Vec<(String, u64, u64)> {
        fs.iter()
            .filter(|f| f.title.contains(" (sample, "))
            .map(|f| (f.title.clone(), f.x, f.w))
            .collect()
    };
    assert_eq!(samples_of(&job), samples_of(&frames));
}

/// The profile.cali of a sampled job's profile reduced at `MPI_Finalize`
/// (`sampling/mpi_op.c`, 2 ranks) holds Caliper's sampler records: per call
/// path and sampled function one record of the function's self samples summed
/// over the ranks, which caliper-reader, Hatchet and Thicket load as a node of
/// the function under its construct, checked against the ranks' own
/// profile.json (`caliper/check_samples.py --job`).
#[test]
fn in_job_cali_holds_the_ranks_samples() {
    if !available() {
        return;
    }
    let thicket = kprof_tests::openmp::deps_dir().join("thicket");
    let have = Command::new("python3")
        .args(["-c", "import caliperreader, hatchet, thicket"])
        .env("PYTHONPATH", &thicket)
        .output()
        .is_ok_and(|o| o.status.success());
    if skip_unless(
        have,
        "caliper-reader, llnl-hatchet and llnl-thicket (bash tests/setup.sh)",
    ) {
        return;
    }
    let dir = scratch("mpi_stack_samples_cali");
    assert_ok(&sampled_mpi_op(&dir));
    let rank_dirs = sampled_rank_dirs(&dir);
    let ranks: Vec<Value> = rank_dirs.iter().map(|d| read_profile(d)).collect();
    let job = dir.join("kprof-mpi_op-job");
    let joined: Vec<String> = rank_dirs
        .iter()
        .map(|d| d.to_string_lossy().into_owned())
        .collect();
    let mut cmd = Command::new("python3");
    cmd.arg(test_file("caliper/check_samples.py"))
        .arg(&job)
        .args(["--job", &joined.join(",")])
        .env("PYTHONPATH", &thicket);
    let out = run(&mut cmd);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    for loader in ["caliper-reader", "hatchet", "thicket"] {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("{loader}: "))
                && l.ends_with(" sampled functions match profile.json")),
            "{loader} not in\n{text}"
        );
    }
    // MPI_Allreduce's op_work, the ranks' samples summed.
    let op: u64 = ranks
        .iter()
        .map(|p| {
            let all = nodes(p);
            kprof_tests::sample_functions(&node(&all, &["MPI_Allreduce"])["stack_samples"])
                .get("op_work")
                .copied()
                .unwrap_or(0)
        })
        .sum();
    assert!(op > 0);
    let line = format!("hatchet: MPI_Allreduce/op_work {op}\n");
    assert!(text.contains(&line), "{line:?} not in\n{text}");
}
