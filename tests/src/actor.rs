//! Building and running the FA-BSP test programs of `tests/actor/` (the
//! stand-in Conveyors, a static library, linked into them) on OpenSHMEM PEs.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::{scratch, test_file, workspace_root};

/// The programs built with the wrappers, and some without them.
pub struct Programs {
    /// The histogram, wrapped.
    pub histo: PathBuf,
    /// Index-gather, wrapped.
    pub ig: PathBuf,
    /// The histogram without the wrappers.
    pub histo_unwrapped: PathBuf,
    /// The triangle count, wrapped.
    pub triangle: PathBuf,
    /// The elastic conveyor program, wrapped.
    pub elastic: PathBuf,
    /// The elastic conveyor program without the wrappers.
    pub elastic_unwrapped: PathBuf,
}

/// Whether Open MPI's OpenSHMEM compiler and launcher work.
pub fn have_oshmem() -> bool {
    Command::new("oshcc")
        .arg("--showme:version")
        .output()
        .is_ok_and(|o| o.status.success())
        && Command::new("oshrun")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
}

/// Runs oshcc with the tests' warning flags; panics with its stderr on failure.
pub fn oshcc(args: &[&str]) {
    let out = Command::new("oshcc")
        .args(["-O2", "-g", "-Wall", "-Wextra", "-Werror"])
        .args(args)
        .output()
        .expect("run oshcc");
    assert!(
        out.status.success(),
        "oshcc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The wrapped entries (the link line kprof_actor.h documents).
pub const WRAP: &str = "-Wl,--wrap=convey_new,--wrap=convey_begin,--wrap=convey_push,--wrap=convey_pull,--wrap=convey_advance,--wrap=convey_free,--wrap=convey_epush,--wrap=convey_epull";

/// The programs, built once per test process.
pub fn programs() -> &'static Programs {
    static BUILT: OnceLock<Programs> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = scratch("actor_build");
        let d = |f: &str| dir.join(f).display().to_string();
        let src = |f: &str| test_file(&format!("actor/{f}")).display().to_string();
        let headers = workspace_root().join("ffi-headers").display().to_string();
        let wrap_c = workspace_root()
            .join("ffi-headers/kprof_actor_wrap.c")
            .display()
            .to_string();
        let inc = format!("-I{}", test_file("actor").display());
        oshcc(&["-c", &src("convey/convey.c"), "-o", &d("convey.o")]);
        let ar = Command::new("ar")
            .args(["rcs", &d("libconvey.a"), &d("convey.o")])
            .status()
            .expect("run ar");
        assert!(ar.success());
        let libdir = format!("-L{}", dir.display());
        for (name, wrapped) in [
            ("histo", true),
            ("ig", true),
            ("histo", false),
            ("triangle", true),
            ("elastic", true),
            ("elastic", false),
        ] {
            let out = if wrapped {
                d(name)
            } else {
                d(&format!("{name}_unwrapped"))
            };
            let s = src(&format!("{name}.c"));
            let mut args = vec![inc.as_str(), "-I", &headers, &s];
            if wrapped {
                args.push(&wrap_c);
                args.push(WRAP);
            }
            args.extend([libdir.as_str(), "-lconvey", "-o", &out]);
            oshcc(&args);
        }
        Programs {
            histo: dir.join("histo"),
            ig: dir.join("ig"),
            histo_unwrapped: dir.join("histo_unwrapped"),
            triangle: dir.join("triangle"),
            elastic: dir.join("elastic"),
            elastic_unwrapped: dir.join("elastic_unwrapped"),
        }
    })
}

/// One `oshrun` at a time: 4 busy-polling PEs per run already fill a small
/// machine, and the phase times are compared within 1%.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `oshrun -np <np>` of `args` (the variables of `env` set and exported), with
/// what Open MPI needs to run PEs as root, oversubscribed, on one machine.
///
/// A job that fails before any PE printed a line (the launcher or OpenSHMEM's
/// start-up, not the program, which prints its results) runs once more, saying
/// so: seen once in thirty runs on a loaded 2-core machine. So does a job whose
/// PE crashed inside Open MPI's own finalization (`PMIx_Finalize` on the crash's
/// backtrace, after every PE printed its results): seen once, a `free` in
/// `pmix_class_finalize` at a load of 8 on 2 cores, and not again in 60 runs of
/// the same job (under kprof and without), where kprof calls nothing during
/// the finalization. Any other failure after printing is never retried.
pub fn oshrun(np: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let first = oshrun_once(np, args, env);
    let stderr = String::from_utf8_lossy(&first.stderr);
    let why = if first.status.success() {
        return first;
    } else if first.stdout.is_empty() {
        "failed at start-up"
    } else if stderr.contains("PMIx_Finalize") && stderr.contains("Caught signal") {
        "crashed in Open MPI's finalization"
    } else {
        return first;
    };
    eprintln!(
        "oshrun {args:?} {why} ({:?}), once more; its stderr:\n{stderr}",
        first.status
    );
    oshrun_once(np, args, env)
}

fn oshrun_once(np: usize, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("timeout");
    cmd.args(["300", "oshrun", "-np", &np.to_string()]);
    // More PEs than cores: the stand-in's idle advances yield the CPU (busy
    // polling PEs would otherwise wait for their peers' time slices).
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut env = env.to_vec();
    if np > cores {
        env.push(("STANDIN_CONVEY_YIELD", "1"));
    }
    for (k, _) in &env {
        cmd.args(["-x", k]);
    }
    cmd.args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("OMPI_MCA_osc", "^rdma")
        .env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("KPROF_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in &env {
        cmd.env(k, v);
    }
    cmd.output().expect("run oshrun")
}
