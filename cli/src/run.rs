//! `kprof run [options] -- program args...`

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

use kprof_abi::forward::FORWARDED;
use kprof_core::base::config::Config;

use crate::detect::{detect, find_program, Models};
use crate::{absolute, out_dir, show, Failure, Outcome};

/// Arguments of `kprof run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// Load the Kokkos plugin (libkprof.so).
    #[arg(long)]
    pub kokkos: bool,
    /// Load the OpenMP (OMPT) plugin (libkprof_ompt.so).
    #[arg(long)]
    pub openmp: bool,
    /// Load the OpenACC plugin (libkprof_acc.so).
    #[arg(long)]
    pub openacc: bool,
    /// Load the RAJA runtime plugin (libkprof_raja.so, through RAJA_PLUGINS; RAJA
    /// must be built with RAJA_ENABLE_RUNTIME_PLUGINS=ON).
    #[arg(long)]
    pub raja: bool,
    /// Load the CUDA GPU activity plugin (libkprof_cuda.so, through
    /// CUDA_INJECTION64_PATH; needs CUPTI at run time). Detected when the program
    /// links or contains the CUDA runtime.
    #[arg(long)]
    pub cuda: bool,
    /// Load the AMD GPU activity plugin (libkprof_rocm.so, through
    /// ROCP_TOOL_LIBRARIES; needs rocprofiler-sdk at run time). Detected when the
    /// program links the HIP runtime (libamdhip64).
    #[arg(long)]
    pub hip: bool,
    /// Load the MPI plugin (libkprof_mpi.so, through LD_PRELOAD; Open MPI or MPICH).
    /// Detected when the program links an MPI library (libmpi, libmpich).
    #[arg(long)]
    pub mpi: bool,
    /// Load the HClib-Actor / Conveyors plugin (libkprof_actor.so, preloaded):
    /// message matrices and the MAIN/PROC/COMM breakdown of FA-BSP programs.
    /// Detected when the program holds Conveyors (convey_begin) or links
    /// OpenSHMEM. Conveyors' entries are seen when the program was linked with
    /// kprof's wrappers (see ffi-headers/kprof_actor.h).
    #[arg(long)]
    pub actor: bool,
    /// Timeline traces: comma list of perfetto, json, otf2 (KPROF_TRACE).
    #[arg(long, value_name = "FORMATS")]
    pub trace: Option<String>,
    /// Output directory (KPROF_OUTPUT_DIR, which is honoured when -o is not given).
    /// Default: kprof-<program>-<pid of the program>, or a new name (.1, .2, ...).
    /// A DIR that exists is refused (exit 2) unless --force; %p, %r, %h, %e
    /// patterns expand per process (no existence check). Under an MPI launcher
    /// DIR is the job's profile and each rank writes DIR-rank<N>.
    #[arg(short, long, value_name = "DIR", alias = "output-dir")]
    pub output: Option<String>,
    /// Replace an existing -o DIR (its old files are removed; kprof says so).
    #[arg(long)]
    pub force: bool,
    /// MPI: 1 keeps each rank's own directory besides the job's profile
    /// (KPROF_PER_RANK, default 0).
    #[arg(long, value_name = "0|1")]
    pub per_rank: Option<String>,
    /// MPI: directory of the job's profile, written by rank 0 at MPI_Finalize
    /// (KPROF_JOB_OUTPUT_DIR; default kprof-<program>-job, or -o DIR).
    #[arg(long, value_name = "DIR")]
    pub job_output_dir: Option<String>,
    /// MiB of event buffers (KPROF_BUFFER_MB, default 64).
    #[arg(long, value_name = "MIB")]
    pub buffer_mb: Option<String>,
    /// MiB of those buffers faulted in at start, in the background
    /// (KPROF_PREFAULT_MB, default 0).
    #[arg(long, value_name = "MIB")]
    pub prefault_mb: Option<String>,
    /// Milliseconds between writer rounds (KPROF_FLUSH_MS, default 1000).
    #[arg(long, value_name = "MS")]
    pub flush_ms: Option<String>,
    /// Milliseconds between samples of the process and the node: CPU use, RSS,
    /// page faults, context switches, I/O, load, free memory, RAPL and GPU power
    /// (KPROF_SAMPLE_MS, 10 to 60000; default 0: off).
    #[arg(long, value_name = "MS")]
    pub sample_ms: Option<String>,
    /// Instances per call path kept as (start, duration) samples for scatterplots
    /// (KPROF_SAMPLES, 0 to 100000; default 1000, 0: off).
    #[arg(long, value_name = "N")]
    pub samples: Option<String>,
    /// 0: no summary on stderr at exit (KPROF_SUMMARY, default 1).
    #[arg(long, value_name = "0|1")]
    pub summary: Option<String>,
    /// Rows per summary table (KPROF_SUMMARY_TOP, default 20).
    #[arg(long, value_name = "N")]
    pub summary_top: Option<String>,
    /// 0: no complete output on SIGINT/SIGTERM/SIGHUP or a crash (KPROF_SIGNALS,
    /// default 1).
    #[arg(long, value_name = "0|1")]
    pub signals: Option<String>,
    /// 0: load the plugins but record nothing (KPROF_ENABLE, default 1).
    #[arg(long, value_name = "0|1")]
    pub enable: Option<String>,
    /// 1: keep Kokkos' global fences (KPROF_KOKKOS_FENCES, default 0).
    #[arg(long, value_name = "0|1")]
    pub kokkos_fences: Option<String>,
    /// 0: a forked child of the program records nothing; 1: it writes its own
    /// profile, from the fork on, into its own directory (KPROF_FORK, default 1).
    #[arg(long, value_name = "0|1")]
    pub fork: Option<String>,
    /// Deepest call path the profile keeps (KPROF_MAX_DEPTH, default 256).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<String>,
    /// MiB after which a trace stops growing; 0: no limit (KPROF_TRACE_MAX_MB,
    /// default 2048).
    #[arg(long, value_name = "MIB")]
    pub trace_max_mb: Option<String>,
    /// 1: without a trace, each thread aggregates its own events in place; 0:
    /// every event is a record for the writer thread (KPROF_IN_PLACE, default 1).
    #[arg(long, value_name = "0|1")]
    pub in_place: Option<String>,
    /// PAPI events read at the begin and end of each counted kernel and region:
    /// comma list (PAPI_TOT_INS,PAPI_TOT_CYC,perf::PAGE-FAULTS,...; at most 8;
    /// KPROF_COUNTERS; needs libpapi at run time).
    #[arg(long, value_name = "EVENTS")]
    pub counters: Option<String>,
    /// Which instances get counters: comma list of regions, kernels, parallel,
    /// loops, tasks, sync, data, target, gpu_api, mpi, all (KPROF_COUNTER_KINDS,
    /// default regions,kernels,parallel).
    #[arg(long, value_name = "KINDS")]
    pub counter_kinds: Option<String>,
    /// Print what is set and why, then run.
    #[arg(short, long)]
    pub verbose: bool,
    /// Print nothing of kprof run's own (the program and the runtime still print).
    #[arg(short, long)]
    pub quiet: bool,
    /// The program and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub command: Vec<OsString>,
}

/// The plugin libraries: next to `kprof` (the cargo target directory) or in the
/// install prefix's `lib/`.
pub fn plugin_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let bin = exe.parent()?;
    [bin.join("../lib"), bin.to_path_buf()]
        .into_iter()
        .find(|d| d.join("libkprof_core.so").is_file())
        .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
}

/// The forwarded signals as a set.
fn forwarded_set() -> libc::sigset_t {
    // SAFETY: initialising a signal set we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in FORWARDED {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Blocks (`true`) or unblocks the forwarded signals in the calling thread. kprof
/// keeps them blocked from before the program starts to the end, and takes them
/// with `sigwaitinfo` on its forwarding thread; the program unblocks them before
/// it starts (`pre_exec`).
fn block_forwarded(block: bool) {
    let set = forwarded_set();
    let how = if block {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    // SAFETY: signal-mask manipulation of this thread with a valid set.
    unsafe {
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Whether `sig` is pending in any thread of process `pid`, or for the whole
/// process: it received the signal already (sent to the process group, which
/// kprof and the program share), and must not get it a second time.
fn already_pending(pid: i32, sig: libc::c_int) -> bool {
    let bit = 1u64 << (sig - 1);
    let has = |path: PathBuf| {
        std::fs::read_to_string(path).is_ok_and(|text| {
            text.lines().any(|l| {
                let Some((key, hex)) = l.split_once(':') else {
                    return false;
                };
                matches!(key, "SigPnd" | "ShdPnd")
                    && u64::from_str_radix(hex.trim(), 16).is_ok_and(|v| v & bit != 0)
            })
        })
    };
    let task_dir = PathBuf::from(format!("/proc/{pid}/task"));
    has(PathBuf::from(format!("/proc/{pid}/status")))
        || std::fs::read_dir(task_dir)
            .is_ok_and(|d| d.flatten().any(|t| has(t.path().join("status"))))
}

/// The program's pid while it runs (not yet reaped), 0 after.
static CHILD: AtomicI32 = AtomicI32::new(0);

/// The library `kprof run` preloads into the program so that a signal reaching
/// it both directly and forwarded is delivered once (see `plugins/signals`).
const SIGNALS_LIB: &str = "libkprof_signals.so";

/// Whether process `pid` has [`SIGNALS_LIB`] mapped: it tells a marked forwarded
/// copy from a direct one. A program without it (a static program, or one that
/// cleared `LD_PRELOAD`) gets a plain `kill`, as it always has.
fn pairs_copies(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/maps")).is_ok_and(|maps| {
        maps.split(|&b| b == b'\n')
            .any(|l| l.ends_with(SIGNALS_LIB.as_bytes()))
    })
}

/// Sends `sig`, which `origin` sent to kprof, on to the program: queued with a
/// value that marks it as forwarded and names `origin` where the program pairs
/// copies, so a copy it also received directly from `origin` is delivered once.
fn forward(child: i32, sig: libc::c_int, origin: u32) {
    if pairs_copies(child) {
        let value = libc::sigval {
            sival_ptr: kprof_abi::forward::encode(origin) as usize as *mut libc::c_void,
        };
        // SAFETY: sigqueue has no memory preconditions.
        if unsafe { libc::sigqueue(child, sig, value) } == 0 {
            return;
        }
    }
    // SAFETY: kill has no memory preconditions.
    unsafe {
        libc::kill(child, sig);
    }
}

/// Takes the forwarded signals (blocked in every kprof thread) and sends each to
/// the program, unless it has it already: from the terminal (the foreground group,
/// `SI_KERNEL`), or from a `kill` of the whole process group (still pending in the
/// program when kprof looks).
fn forward_signals(child: i32) {
    let set = forwarded_set();
    loop {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: waiting on a valid set; the kernel fills `info`.
        let sig = unsafe { libc::sigwaitinfo(&set, info.as_mut_ptr()) };
        if sig <= 0 {
            continue;
        }
        // SAFETY: sigwaitinfo returned a signal, so `info` is filled.
        let info = unsafe { info.assume_init() };
        let code = info.si_code;
        if code == libc::SI_KERNEL || already_pending(child, sig) {
            continue;
        }
        // Not once the program has ended: its pid may be reused.
        if CHILD.load(Ordering::SeqCst) != child {
            continue;
        }
        let origin = if matches!(code, libc::SI_USER | libc::SI_QUEUE | libc::SI_TKILL) {
            // SAFETY: these codes fill the sender's pid.
            unsafe { info.si_pid() as u32 }
        } else {
            kprof_abi::forward::NO_ORIGIN
        };
        forward(child, sig, origin);
    }
}

/// Name of a signal for the end-of-run lines.
fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {sig}"),
    };
    format!("signal {sig} ({name})")
}

/// Why `dir` could not be made: the first missing or unwritable directory on its
/// way, as the system says it; `None` when it could be.
fn unwritable(dir: &Path) -> Option<String> {
    let mut at = dir.parent()?;
    // The nearest directory that exists is where creating failed.
    while std::fs::symlink_metadata(at).is_err() {
        at = at.parent()?;
    }
    if !at.is_dir() {
        return Some(format!("{} is not a directory", show(at)));
    }
    let c = std::ffi::CString::new(at.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0 {
        return None;
    }
    Some(format!("{}: {}", show(at), std::io::Error::last_os_error()))
}

/// Where the program's files go.
enum OutDir {
    /// A directory chosen before the program starts.
    Exact(PathBuf),
    /// This prefix and the program's pid.
    ProgramPid(PathBuf),
    /// A pattern the runtime expands (`%p`, `%h`, ...).
    Pattern(PathBuf),
}

/// The directory the runtime made for `base`: `base` or the last of `base.1`,
/// `base.2`, ... made since `since`.
fn written_dir(base: &Path, since: std::time::SystemTime) -> Option<PathBuf> {
    let fresh = |p: &Path| {
        std::fs::symlink_metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t >= since)
    };
    let mut found = fresh(base).then(|| base.to_path_buf());
    for n in 1.. {
        let mut s = base.as_os_str().to_owned();
        s.push(format!(".{n}"));
        let p = PathBuf::from(s);
        if std::fs::symlink_metadata(&p).is_err() {
            break;
        }
        if fresh(&p) {
            found = Some(p);
        }
    }
    found
}

/// `base`, or `base.1`, `base.2`, ... : the first that does not exist.
fn unused(base: &Path) -> PathBuf {
    if std::fs::symlink_metadata(base).is_err() {
        return base.to_path_buf();
    }
    (1..)
        .map(|n| {
            let mut s = base.as_os_str().to_owned();
            s.push(format!(".{n}"));
            PathBuf::from(s)
        })
        .find(|p| std::fs::symlink_metadata(p).is_err())
        .unwrap_or_else(|| base.to_path_buf())
}

/// `ours` first, then the user's list (`theirs`) without `ours` in it.
fn chain_list(ours: &str, theirs: Option<&str>, sep: char) -> String {
    let mut list = vec![ours];
    list.extend(
        theirs
            .unwrap_or_default()
            .split(sep)
            .filter(|x| !x.is_empty() && *x != ours),
    );
    list.join(&sep.to_string())
}

/// The real reason no output directory appeared, for the end-of-run line.
fn nothing_written(
    dir: &Path,
    killed: Option<i32>,
    loaded: &[&str],
    missing: &[&str],
    models: &Models,
    exe_name: &str,
) -> String {
    if let Some(why) = unwritable(dir) {
        return format!("the output directory cannot be created ({why})");
    }
    let active = !loaded.is_empty() || models.annotations;
    if let (Some(sig), true) = (killed, active) {
        return format!(
            "the program was killed by {} before kprof wrote anything",
            signal_name(sig)
        );
    }
    if active {
        return "nothing was recorded, or the program ended without running its exit \
                handlers (_exit, exec)"
            .into();
    }
    if !missing.is_empty() {
        return format!(
            "the {} plugin was not found next to kprof (see above)",
            missing.join(", ")
        );
    }
    if models.gomp_only {
        return format!(
            "{exe_name} runs on GCC's libgomp, which has no OpenMP tool interface (see above)"
        );
    }
    let mut line = "no kprof plugin or annotation was active".to_string();
    if let Some(sig) = killed {
        line.push_str(&format!("; the program was killed by {}", signal_name(sig)));
    }
    line
}

/// One line for each trace in `dir` that the runtime did not complete: those
/// still under their partial name (`trace.pftrace.partial`), saying what each
/// holds.
fn unfinished_traces(dir: &Path) -> Vec<String> {
    use kprof_core::consume::trace::PARTIAL;
    use kprof_core::output::{bytes_on_disk, readable::bytes};
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && n.ends_with(PARTIAL))
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| {
            let path = dir.join(name);
            let size = bytes_on_disk(&path);
            if name.starts_with("otf2") {
                format!(
                    "{} is an unfinished OTF2 archive ({}): OTF2 writes its definitions at \
                     the end, so OTF2 tools cannot read it",
                    show(&path),
                    bytes(size)
                )
            } else if size == 0 {
                format!(
                    "{} is empty: the program ended before kprof first wrote to it (every \
                     KPROF_FLUSH_MS)",
                    show(&path)
                )
            } else {
                format!(
                    "{} is incomplete ({}): it holds what kprof wrote up to its last flush \
                     (every KPROF_FLUSH_MS), not the end of the run",
                    show(&path),
                    bytes(size)
                )
            }
        })
        .collect()
}

/// This process's rank when an MPI launcher started it (Open MPI, PMI, PMIx).
fn mpi_rank() -> Option<u32> {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Entry point.
pub fn main(args: RunArgs) -> Outcome {
    let say = |msg: &str| {
        if !args.quiet {
            eprintln!("kprof: {msg}");
        }
    };
    let program = args.command[0].to_string_lossy().into_owned();
    let exe_name = Path::new(&program)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "app".into());

    // Settings, validated by the runtime's own option table.
    let mut cfg = Config::default();
    let mut env: Vec<(&str, String)> = Vec::new();
    for (name, var, value) in [
        ("trace", "KPROF_TRACE", &args.trace),
        ("buffer-mb", "KPROF_BUFFER_MB", &args.buffer_mb),
        ("prefault-mb", "KPROF_PREFAULT_MB", &args.prefault_mb),
        ("flush-ms", "KPROF_FLUSH_MS", &args.flush_ms),
        ("sample-ms", "KPROF_SAMPLE_MS", &args.sample_ms),
        ("samples", "KPROF_SAMPLES", &args.samples),
        ("summary", "KPROF_SUMMARY", &args.summary),
        ("summary-top", "KPROF_SUMMARY_TOP", &args.summary_top),
        ("signals", "KPROF_SIGNALS", &args.signals),
        ("enable", "KPROF_ENABLE", &args.enable),
        ("kokkos-fences", "KPROF_KOKKOS_FENCES", &args.kokkos_fences),
        ("fork", "KPROF_FORK", &args.fork),
        ("max-depth", "KPROF_MAX_DEPTH", &args.max_depth),
        ("trace-max-mb", "KPROF_TRACE_MAX_MB", &args.trace_max_mb),
        ("in-place", "KPROF_IN_PLACE", &args.in_place),
        ("counters", "KPROF_COUNTERS", &args.counters),
        ("counter-kinds", "KPROF_COUNTER_KINDS", &args.counter_kinds),
        ("per-rank", "KPROF_PER_RANK", &args.per_rank),
        (
            "job-output-dir",
            "KPROF_JOB_OUTPUT_DIR",
            &args.job_output_dir,
        ),
    ] {
        if let Some(v) = value {
            cfg.apply_arg(&format!("--{name}={v}")).map_err(|e| {
                let text = e.to_string();
                let text = text.split("; using").next().unwrap_or(&text).to_string();
                Failure(text)
            })?;
            env.push((var, v.clone()));
        }
    }

    // The output directory: exact, so that we can say where the files are; the
    // default carries the program's pid (as the summary does), known once it runs.
    // Under an MPI launcher (`mpirun -np 4 kprof run -- ./app`) each rank gets
    // kprof-<program>-rank<N>, so that `kprof merge kprof-app-rank*` finds the job;
    // with a literal `-o DIR`, DIR is the job's profile and each rank writes
    // DIR-rank<N>. KPROF_OUTPUT_DIR, without -o, keeps the runtime's rule (a new
    // name when it exists).
    let rank = mpi_rank();
    let env_out = std::env::var("KPROF_OUTPUT_DIR")
        .ok()
        .filter(|v| !v.trim().is_empty());
    if let (Some(o), Some(e)) = (&args.output, &env_out) {
        say(&format!("-o {o} overrides KPROF_OUTPUT_DIR={e}"));
    }
    // The place -o names exactly: refused when it exists, unless --force.
    let claimed = args
        .output
        .as_deref()
        .filter(|o| !o.contains('%'))
        .map(PathBuf::from);
    let out = match (&args.output, &env_out, rank) {
        (Some(o), _, _) if o.contains('%') => OutDir::Pattern(PathBuf::from(o)),
        (Some(o), _, Some(r)) => OutDir::Exact(unused(Path::new(&format!("{o}-rank{r}")))),
        (Some(o), _, None) => OutDir::Exact(PathBuf::from(o)),
        (None, Some(e), None) if !e.contains('%') => OutDir::Exact(unused(Path::new(e))),
        // As the runtime alone would: each rank expands it.
        (None, Some(e), _) => OutDir::Pattern(PathBuf::from(e)),
        (None, None, Some(r)) => {
            OutDir::Exact(unused(Path::new(&format!("kprof-{exe_name}-rank{r}"))))
        }
        (None, None, None) => OutDir::ProgramPid(PathBuf::from(format!("kprof-{exe_name}-"))),
    };
    let replace = match &claimed {
        Some(c) => out_dir::claim(c, args.force, "-o").map_err(Failure)?,
        None => false,
    };
    let base = match &out {
        OutDir::Exact(p) | OutDir::Pattern(p) | OutDir::ProgramPid(p) => out_dir::fixed_base(p),
    };
    if let Some(why) = out_dir::cannot_create_under(&base) {
        return Err(Failure(format!(
            "no output directory can be created ({why}); {program} was not run"
        )));
    }
    env.push((
        "KPROF_OUTPUT_DIR",
        match &out {
            OutDir::Pattern(p) => p.display().to_string(),
            OutDir::Exact(p) => absolute(p).display().to_string(),
            OutDir::ProgramPid(prefix) => format!("{}%p", absolute(prefix).display()),
        },
    ));
    env.push((
        kprof_core::output::LAUNCHER_VAR,
        kprof_core::output::KPROF_RUN.into(),
    ));
    // Under an MPI launcher the job's merged profile (rank 0 writes it at
    // MPI_Finalize) goes to -o DIR, or kprof-<program>-job unless the user named it.
    let user_job =
        args.job_output_dir.is_some() || std::env::var_os("KPROF_JOB_OUTPUT_DIR").is_some();
    let job_dir = match (rank, &claimed) {
        (Some(_), Some(c)) => {
            if user_job {
                say(&format!("-o {} overrides KPROF_JOB_OUTPUT_DIR", show(c)));
            }
            let d = absolute(c);
            env.retain(|(k, _)| *k != "KPROF_JOB_OUTPUT_DIR");
            env.push(("KPROF_JOB_OUTPUT_DIR", d.display().to_string()));
            Some(d)
        }
        (Some(_), None) if !user_job => {
            let d = absolute(&unused(Path::new(&format!("kprof-{exe_name}-job"))));
            env.push(("KPROF_JOB_OUTPUT_DIR", d.display().to_string()));
            Some(d)
        }
        _ => None,
    };

    // Models: asked for, or detected. The program is read either way: what it is
    // tells which variable its Kokkos reads.
    let asked = args.kokkos
        || args.openmp
        || args.openacc
        || args.raja
        || args.cuda
        || args.hip
        || args.mpi
        || args.actor;
    let path = find_program(&program).map_err(Failure)?;
    let detected = match detect(&path) {
        Ok(m) => Some(m),
        Err(e) => {
            if !asked {
                say(&format!(
                    "cannot detect the models of {program} ({e}); give --kokkos, --openmp, --openacc, --raja, --cuda, --hip, --mpi or --actor"
                ));
            }
            None
        }
    };
    let models = if asked {
        Models {
            kokkos: args.kokkos,
            openmp: args.openmp,
            openacc: args.openacc,
            raja: args.raja,
            cuda: args.cuda,
            hip: args.hip,
            mpi: args.mpi,
            actor: args.actor,
            conveyors_unwrapped: detected.as_ref().is_some_and(|m| m.conveyors_unwrapped),
            stripped: detected.as_ref().is_some_and(|m| m.stripped),
            kokkos_tools_libs: detected.as_ref().is_some_and(|m| m.kokkos_tools_libs),
            reasons: detected
                .as_ref()
                .map(|m| m.reasons.clone())
                .unwrap_or_default(),
            ..Default::default()
        }
    } else {
        detected.clone().unwrap_or_default()
    };
    let dir = plugin_dir();
    let mut unset: Vec<&str> = Vec::new();
    let mut loaded = Vec::new();
    let mut wanted = Vec::new();
    if models.kokkos {
        wanted.push(("kokkos", "libkprof.so"));
    }
    if models.openmp {
        wanted.push(("openmp", "libkprof_ompt.so"));
    }
    if models.openacc {
        wanted.push(("openacc", "libkprof_acc.so"));
    }
    if models.raja {
        wanted.push(("raja", "libkprof_raja.so"));
    }
    // A CUDA tool the user set (Nsight, another profiler) stays: the driver loads
    // one injection library only.
    let user_injection = std::env::var("CUDA_INJECTION64_PATH")
        .ok()
        .filter(|v| !v.is_empty());
    if models.cuda {
        match &user_injection {
            Some(v) => say(&format!(
                "CUDA_INJECTION64_PATH is already set ({v}): GPU activity is not measured"
            )),
            None => wanted.push(("cuda", "libkprof_cuda.so")),
        }
    }
    if models.hip {
        wanted.push(("hip", "libkprof_rocm.so"));
    }
    if models.mpi {
        wanted.push(("mpi", "libkprof_mpi.so"));
    }
    if models.actor {
        wanted.push(("actor", "libkprof_actor.so"));
        // Counters of an FA-BSP program go to its MAIN/PROC/COMM segments too,
        // unless the kinds were chosen.
        let counters = args
            .counters
            .clone()
            .or_else(|| std::env::var("KPROF_COUNTERS").ok());
        if counters.is_some_and(|c| !c.trim().is_empty())
            && args.counter_kinds.is_none()
            && std::env::var_os("KPROF_COUNTER_KINDS").is_none()
        {
            env.push((
                "KPROF_COUNTER_KINDS",
                format!("{},actor", kprof_core::base::counter_kinds::DEFAULT_KINDS),
            ));
        }
    }
    let mut missing = Vec::new();
    // Plugins that go into LD_PRELOAD, before any list already set.
    let mut preload: Vec<String> = Vec::new();
    for (model, libname) in wanted {
        let Some(lib) = dir
            .as_ref()
            .map(|d| d.join(libname))
            .filter(|p| p.is_file())
        else {
            say(&format!(
                "{libname} not found next to kprof or in ../lib: {model} is not measured"
            ));
            missing.push(model);
            continue;
        };
        let lib = lib.display().to_string();
        match model {
            "kokkos" => {
                // A tool the user already set stays, after kprof (which chains it).
                let user = std::env::var("KOKKOS_TOOLS_LIBS")
                    .ok()
                    .filter(|v| !v.is_empty())
                    .or_else(|| std::env::var("KOKKOS_PROFILE_LIBRARY").ok());
                let v = chain_list(&lib, user.as_deref(), ';');
                // Kokkos >= 3.5 reads KOKKOS_TOOLS_LIBS and warns on every run about
                // KOKKOS_PROFILE_LIBRARY; Kokkos 3.4 reads only the latter. Unknown
                // (no Kokkos found in the file): both, as they must agree.
                match (
                    models.kokkos_tools_libs,
                    detected.as_ref().is_some_and(|m| m.kokkos),
                ) {
                    (true, _) => {
                        env.push(("KOKKOS_TOOLS_LIBS", v));
                        unset.push("KOKKOS_PROFILE_LIBRARY");
                    }
                    (false, true) => {
                        env.push(("KOKKOS_PROFILE_LIBRARY", v));
                        unset.push("KOKKOS_TOOLS_LIBS");
                    }
                    (false, false) => {
                        env.push(("KOKKOS_TOOLS_LIBS", v.clone()));
                        env.push(("KOKKOS_PROFILE_LIBRARY", v));
                    }
                }
            }
            "openmp" => env.push((
                "OMP_TOOL_LIBRARIES",
                chain_list(
                    &lib,
                    std::env::var("OMP_TOOL_LIBRARIES").ok().as_deref(),
                    ':',
                ),
            )),
            "raja" => env.push(("RAJA_PLUGINS", lib)),
            "cuda" => env.push(("CUDA_INJECTION64_PATH", lib)),
            // The program's MPI calls bind to the plugin's MPI_* functions, which
            // forward to the library's PMPI_* ones; the actor plugin's shmem_* come
            // before liboshmem's weak ones, and the wrappers linked into the program
            // find it with dlsym. Both go into one LD_PRELOAD.
            "mpi" | "actor" => preload.push(lib),
            // rocprofiler-sdk loads every tool of the list.
            "hip" => env.push((
                "ROCP_TOOL_LIBRARIES",
                chain_list(
                    &lib,
                    std::env::var("ROCP_TOOL_LIBRARIES").ok().as_deref(),
                    ':',
                ),
            )),
            _ => env.push(("ACC_PROFLIB", lib)),
        }
        loaded.push(model);
    }
    // Not a model: with it the program gets a signal that reaches it both
    // directly and through kprof once (see `forward`).
    if let Some(lib) = dir
        .as_ref()
        .map(|d| d.join(SIGNALS_LIB))
        .filter(|p| p.is_file())
    {
        preload.insert(0, lib.display().to_string());
        env.push((
            kprof_abi::forward::RUN_PID_VAR,
            std::process::id().to_string(),
        ));
    }
    if !preload.is_empty() {
        let ours = preload.join(":");
        let theirs = std::env::var("LD_PRELOAD").ok();
        let theirs: Vec<&str> = theirs
            .as_deref()
            .unwrap_or_default()
            .split(':')
            .filter(|x| !x.is_empty() && !preload.iter().any(|p| p == x))
            .collect();
        env.push((
            "LD_PRELOAD",
            chain_list(&ours, Some(&theirs.join(":")), ':'),
        ));
    }
    if args.verbose && !args.quiet {
        for r in &models.reasons {
            eprintln!("kprof: detected {r}");
        }
        for (k, v) in &env {
            eprintln!("kprof: {k}={v}");
        }
    }
    if models.raja_without_loader && !models.raja {
        say(&format!(
            "{program} holds RAJA built without runtime plugins: rebuild RAJA with \
             -DRAJA_ENABLE_RUNTIME_PLUGINS=ON to measure its kernels"
        ));
    }
    const LINK_WRAPPERS: &str = "link it with kprof_actor_wrap.c and \
         -Wl,--wrap=convey_new,--wrap=convey_begin,--wrap=convey_push,--wrap=convey_pull,\
         --wrap=convey_advance,--wrap=convey_free,--wrap=convey_epush,--wrap=convey_epull \
         (see kprof_actor.h)";
    if models.actor && models.conveyors_unwrapped {
        say(&format!(
            "{exe_name} holds Conveyors without kprof's link-time wrappers and its entries \
             cannot be hooked on this architecture: its messages are not counted (only \
             OpenSHMEM calls are); {LINK_WRAPPERS}"
        ));
    } else if models.actor && models.stripped {
        say(&format!(
            "{exe_name} is stripped: if it holds Conveyors, its messages are not counted \
             (only OpenSHMEM calls are); keep its symbols or {LINK_WRAPPERS}"
        ));
    }
    if models.gomp_only && !models.openmp {
        say(&format!(
            "{exe_name} runs on GCC's libgomp, which has no OpenMP tool interface: OpenMP \
             regions are not measured (LLVM's libomp has one: clang -fopenmp, or a \
             libgomp.so.1 -> libomp.so.5 link first on LD_LIBRARY_PATH)"
        ));
    }
    if loaded.is_empty() && !models.annotations {
        if missing.is_empty() && !models.gomp_only {
            say(&format!(
                "no Kokkos, OpenMP, OpenACC, RAJA, CUDA, HIP, MPI or OpenSHMEM runtime found in {program}: \
                 nothing will be measured unless it uses the annotation API (give --kokkos, \
                 --openmp, --openacc, --raja, --cuda, --hip, --mpi or --actor to force)"
            ));
        }
    } else if !args.quiet {
        let mut what: Vec<&str> = loaded.clone();
        if models.annotations {
            what.push("annotations");
        }
        let how = if asked { "" } else { " (detected)" };
        eprintln!("kprof: measuring {}{how}", what.join(", "));
    }

    // --force: the old results go just before the program starts (under a launcher
    // rank 0 removes them: the job's profile is written there at MPI_Finalize).
    if let (true, Some(c), None | Some(0)) = (replace, &claimed, rank) {
        out_dir::remove(c).map_err(Failure)?;
        say(&format!(
            "replacing {} (--force): its old files were removed",
            show(c)
        ));
    }

    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    for k in &unset {
        cmd.env_remove(k);
    }
    for (k, v) in &env {
        cmd.env(k, v);
    }
    // SAFETY: getpid has no preconditions.
    let kprof_pid = unsafe { libc::getpid() };
    // SAFETY: the closure only calls pthread_sigmask, prctl, getppid and raise, all
    // async-signal-safe, between fork and exec: the program starts with the
    // forwarded signals unblocked, and gets SIGTERM (it writes its output and
    // ends) if kprof dies, even by SIGKILL, instead of running on as an orphan.
    unsafe {
        cmd.pre_exec(move || {
            block_forwarded(false);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            // kprof died before the death signal was armed.
            if libc::getppid() != kprof_pid {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        });
    }
    block_forwarded(true);
    let spawned = cmd.spawn();
    if let Ok(child) = &spawned {
        let pid = child.id() as i32;
        CHILD.store(pid, Ordering::SeqCst);
        let _ = std::thread::Builder::new()
            .name("forward".into())
            .spawn(move || forward_signals(pid));
    }
    let mut child = spawned.map_err(|e| Failure(format!("cannot run {program}: {e}")))?;
    let started = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    let out_dir = match &out {
        OutDir::Exact(p) => Some(p.clone()),
        OutDir::ProgramPid(prefix) => {
            let mut p = prefix.as_os_str().to_owned();
            p.push(child.id().to_string());
            Some(PathBuf::from(p))
        }
        OutDir::Pattern(_) => None,
    };
    // Wait for the end without reaping, so the forwarding thread stops sending
    // before the pid can be reused.
    loop {
        // SAFETY: a zeroed siginfo_t for the kernel to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waiting on our own child with a valid siginfo_t.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                child.id(),
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    CHILD.store(0, Ordering::SeqCst);
    let status = child
        .wait()
        .map_err(|e| Failure(format!("waiting for {program}: {e}")))?;
    let killed = status.signal();
    let code = match (status.code(), killed) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => {
            say(&format!("{program} was killed by {}", signal_name(sig)));
            (128 + sig) as u8
        }
        _ => 1,
    };

    match (&out, out_dir) {
        (OutDir::Pattern(p), _) => say(&format!("results in directories named {}", show(p))),
        (_, None) => {}
        (_, Some(base)) => {
            // The runtime appends .1, .2, ... to a directory that exists already.
            let dir = written_dir(&base, started).unwrap_or(base);
            let job = job_dir
                .as_deref()
                .and_then(|j| written_dir(j, started))
                .filter(|j| j.join("profile.json").is_file());
            if let (Some(job), Some(0)) = (&job, rank) {
                say(&format!(
                    "the job's profile is in {} (read it with: kprof report {})",
                    show(job),
                    show(job)
                ));
            }
            if job.is_some() && !dir.exists() {
                // This rank's profile is in the job's (KPROF_PER_RANK=1 keeps its own).
            } else if dir.join("profile.json").is_file() {
                say(&format!(
                    "results in {} (read them with: kprof report {})",
                    show(&dir),
                    show(&dir)
                ));
            } else if dir.is_dir() {
                let why = match killed {
                    Some(sig) => format!("the program was killed by {} before kprof could write it", signal_name(sig)),
                    None => "the program ended without running its exit handlers (_exit, exec or a crash) before kprof could write it".into(),
                };
                say(&format!("{} holds no profile.json ({why})", show(&dir)));
                for line in unfinished_traces(&dir) {
                    say(&line);
                }
            } else {
                say(&format!(
                    "no output was written to {}: {}",
                    show(&dir),
                    nothing_written(&dir, killed, &loaded, &missing, &models, &exe_name)
                ));
            }
        }
    }
    Ok(code)
}
