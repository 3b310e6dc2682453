//! `kprof run [options] -- program args...`: the program runs with the plugins
//! of the models it uses, and kprof says where the results are.
//!
//! [`main`] reads as the steps: the settings, the output directory, the models,
//! the plugins' variables, what kprof says before the start, the program's run
//! (its signals forwarded, see [`signals`]), and where the results are (see
//! [`places`]).

mod args;
mod places;
mod signals;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;

use kprof_core::base::config::Config;
use kprof_tables::models::{self, Loader, ModelId, CORE_LIBRARY, MODELS};
use kprof_tables::settings;

pub use args::RunArgs;
use places::{nothing_written, unfinished_traces, unused, written_dir, OutDir};
use signals::{block_forwarded, forward_signals, signal_name, CHILD, SIGNALS_LIB};

use crate::detect::{detect, find_program, Models};
use crate::out_dir;
use crate::outcome::{Failure, Outcome};
use crate::path_text::{absolute, show};

/// The plugin libraries: next to `kprof` (the cargo target directory) or in the
/// install prefix's `lib/`.
pub fn plugin_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    let bin = exe.parent()?;
    [bin.join("../lib"), bin.to_path_buf()]
        .into_iter()
        .find(|d| d.join(CORE_LIBRARY).is_file())
        .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
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

/// This process's rank when an MPI launcher started it (Open MPI, PMI, PMIx).
fn mpi_rank() -> Option<u32> {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// kprof run's own lines on stderr, unless `--quiet`.
#[derive(Clone, Copy)]
struct Voice {
    quiet: bool,
}

impl Voice {
    fn say(self, msg: &str) {
        if !self.quiet {
            eprintln!("kprof: {msg}");
        }
    }
}

/// Variables for the program: set, and removed from its environment.
#[derive(Default)]
struct Env {
    set: Vec<(&'static str, String)>,
    unset: Vec<&'static str>,
}

impl Env {
    fn push(&mut self, var: &'static str, value: String) {
        self.set.push((var, value));
    }
}

/// The program's name as given, and its file name (for the default directory).
struct Program {
    given: String,
    exe_name: String,
}

/// Entry point.
pub fn main(args: RunArgs) -> Outcome {
    let voice = Voice { quiet: args.quiet };
    let given = args.command[0].to_string_lossy().into_owned();
    let exe_name = Path::new(&given)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "app".into());
    let program = Program { given, exe_name };

    let mut env = settings_env(&args, voice)?;
    let place = output_place(&args, &program, &mut env, voice)?;
    let (models, detected) = choose_models(&args, &program, voice)?;
    let plugins = plugin_env(&args, &models, detected.as_ref(), &mut env, voice);
    before_start(&args, &models, &plugins, &program, &env, voice);

    // --force: the old results go just before the program starts (under a launcher
    // rank 0 removes them: the job's profile is written there at MPI_Finalize).
    if let (true, Some(c), None | Some(0)) = (place.replace, &place.claimed, place.rank) {
        out_dir::remove(c).map_err(Failure)?;
        voice.say(&format!(
            "replacing {} (--force): its old files were removed",
            show(c)
        ));
    }

    let ended = run_program(&args, &program, &env, &place)?;
    results(&place, &ended, &plugins, &models, &program, voice);
    Ok(ended.code)
}

/// The settings given as flags, validated by the runtime's own table, as
/// variables for the program; and the `KPROF_*` variables the program would
/// inherit, checked: an unknown name gets one line naming the nearest setting,
/// an invalid value ends kprof run before the program starts, as the flag would.
fn settings_env(args: &RunArgs, voice: Voice) -> Result<Env, Failure> {
    let mut cfg = Config::default();
    let mut env = Env::default();
    for (s, v) in &args.settings.0 {
        cfg.apply_arg(&format!("--{}={v}", s.name)).map_err(|e| {
            let text = e.to_string();
            Failure(text.split("; using").next().unwrap_or(&text).to_string())
        })?;
        env.push(s.var, v.clone());
    }
    let mut inherited: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.to_string_lossy().into_owned())))
        .filter(|(k, _)| k.starts_with("KPROF_"))
        .collect();
    inherited.sort();
    for (var, value) in inherited {
        if let Some(line) = settings::unknown_line(&var) {
            voice.say(&line);
            continue;
        }
        // A flag replaces it; kprof run chooses the output directory itself.
        let replaced = env.set.iter().any(|(k, _)| *k == var) || var == "KPROF_OUTPUT_DIR";
        if let Some(s) = settings::by_var(&var).filter(|_| !replaced) {
            s.check(&var, &value).map_err(Failure)?;
        }
    }
    Ok(env)
}

/// Where the program's files go, as chosen before it starts.
struct Place {
    out: OutDir,
    /// The place -o names exactly: refused when it exists, unless --force.
    claimed: Option<PathBuf>,
    /// `--force` replaces what `claimed` holds.
    replace: bool,
    /// The MPI rank, under a launcher.
    rank: Option<u32>,
    /// The job's merged profile, under a launcher.
    job_dir: Option<PathBuf>,
}

/// The output directory: exact, so that kprof can say where the files are; the
/// default carries the program's pid (as the summary does), known once it runs.
/// Under an MPI launcher (`mpirun -np 4 kprof run -- ./app`) each rank gets
/// kprof-<program>-rank<N>, so that `kprof merge kprof-app-rank*` finds the job;
/// with a literal `-o DIR`, DIR is the job's profile and each rank writes
/// DIR-rank<N>. KPROF_OUTPUT_DIR, without -o, keeps the runtime's rule (a new
/// name when it exists).
fn output_place(
    args: &RunArgs,
    program: &Program,
    env: &mut Env,
    voice: Voice,
) -> Result<Place, Failure> {
    let exe_name = &program.exe_name;
    let rank = mpi_rank();
    let env_out = std::env::var("KPROF_OUTPUT_DIR")
        .ok()
        .filter(|v| !v.trim().is_empty());
    if let (Some(o), Some(e)) = (&args.output, &env_out) {
        voice.say(&format!("-o {o} overrides KPROF_OUTPUT_DIR={e}"));
    }
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
            "no output directory can be created ({why}); {} was not run",
            program.given
        )));
    }
    env.push(
        "KPROF_OUTPUT_DIR",
        match &out {
            OutDir::Pattern(p) => p.display().to_string(),
            OutDir::Exact(p) => absolute(p).display().to_string(),
            OutDir::ProgramPid(prefix) => format!("{}%p", absolute(prefix).display()),
        },
    );
    env.push(
        kprof_core::output::LAUNCHER_VAR,
        kprof_core::output::KPROF_RUN.into(),
    );
    let job_dir = job_place(args, rank, claimed.as_deref(), exe_name, env, voice);
    Ok(Place {
        out,
        claimed,
        replace,
        rank,
        job_dir,
    })
}

/// Under an MPI launcher the job's merged profile (rank 0 writes it at
/// MPI_Finalize) goes to -o DIR, or kprof-<program>-job unless the user named it.
fn job_place(
    args: &RunArgs,
    rank: Option<u32>,
    claimed: Option<&Path>,
    exe_name: &str,
    env: &mut Env,
    voice: Voice,
) -> Option<PathBuf> {
    const JOB: &str = "KPROF_JOB_OUTPUT_DIR";
    let user_job =
        args.settings.0.iter().any(|(s, _)| s.var == JOB) || std::env::var_os(JOB).is_some();
    match (rank, claimed) {
        (Some(_), Some(c)) => {
            if user_job {
                voice.say(&format!("-o {} overrides {JOB}", show(c)));
            }
            let d = absolute(c);
            env.set.retain(|(k, _)| *k != JOB);
            env.push(JOB, d.display().to_string());
            Some(d)
        }
        (Some(_), None) if !user_job => {
            let d = absolute(&unused(Path::new(&format!("kprof-{exe_name}-job"))));
            env.push(JOB, d.display().to_string());
            Some(d)
        }
        _ => None,
    }
}

/// The models to measure: asked for, or detected. The program is read either
/// way: what it is tells which variable its Kokkos reads. Returns them and what
/// detection found (none when the file could not be read).
fn choose_models(
    args: &RunArgs,
    program: &Program,
    voice: Voice,
) -> Result<(Models, Option<Models>), Failure> {
    let asked = !args.models.0.is_empty();
    let path = find_program(&program.given).map_err(Failure)?;
    let detected = match detect(&path) {
        Ok(m) => Some(m),
        Err(e) => {
            if !asked {
                voice.say(&format!(
                    "cannot detect the models of {} ({e}); give {}",
                    program.given,
                    models::flags_sentence()
                ));
            }
            None
        }
    };
    let models = match (&detected, asked) {
        (_, true) => {
            let d = detected.clone().unwrap_or_default();
            Models {
                found: args.models.0.iter().copied().collect(),
                conveyors_unwrapped: d.conveyors_unwrapped,
                stripped: d.stripped,
                newer_loader: d.newer_loader,
                reasons: d.reasons,
                ..Default::default()
            }
        }
        (Some(d), false) => d.clone(),
        (None, false) => Models::default(),
    };
    Ok((models, detected))
}

/// The plugins given to the program.
struct Plugins {
    /// Models whose plugin is loaded.
    loaded: Vec<&'static str>,
    /// Models whose plugin was not found.
    missing: Vec<&'static str>,
}

/// Each model's plugin, in the variable its runtime loads tools from (see the
/// model table), and the signal pairing library, preloaded.
fn plugin_env(
    args: &RunArgs,
    models: &Models,
    detected: Option<&Models>,
    env: &mut Env,
    voice: Voice,
) -> Plugins {
    let dir = plugin_dir();
    let mut plugins = Plugins {
        loaded: Vec::new(),
        missing: Vec::new(),
    };
    // Plugins that go into LD_PRELOAD, before any list already set.
    let mut preload: Vec<String> = Vec::new();
    let user = |var: &str| std::env::var(var).ok().filter(|v| !v.is_empty());
    for m in MODELS.iter().filter(|m| models.has(m.id)) {
        // A tool the user set (Nsight, another profiler) stays where the runtime
        // loads one tool only.
        if let Loader::One {
            var,
            yields: Some(what),
        } = m.loader
        {
            if let Some(v) = user(var) {
                voice.say(&format!(
                    "{var} is already set ({v}): {what} is not measured"
                ));
                continue;
            }
        }
        let Some(lib) = dir
            .as_ref()
            .map(|d| d.join(m.library))
            .filter(|p| p.is_file())
        else {
            voice.say(&format!(
                "{} not found next to kprof or in ../lib: {} is not measured",
                m.library, m.name
            ));
            plugins.missing.push(m.name);
            continue;
        };
        let lib = lib.display().to_string();
        match m.loader {
            Loader::List { var, sep, older } => {
                // A list the user already set stays, after kprof (which chains it).
                let theirs = user(var).or_else(|| older.and_then(|o| std::env::var(o).ok()));
                let v = chain_list(&lib, theirs.as_deref(), sep);
                match older {
                    None => env.push(var, v),
                    // Kokkos >= 3.5 reads KOKKOS_TOOLS_LIBS and warns on every run
                    // about KOKKOS_PROFILE_LIBRARY; Kokkos 3.4 reads only the latter.
                    // Unknown (the runtime not found in the file): both, as they
                    // must agree.
                    Some(older) => {
                        match (models.newer_loader, detected.is_some_and(|d| d.has(m.id))) {
                            (true, _) => {
                                env.push(var, v);
                                env.unset.push(older);
                            }
                            (false, true) => {
                                env.push(older, v);
                                env.unset.push(var);
                            }
                            (false, false) => {
                                env.push(var, v.clone());
                                env.push(older, v);
                            }
                        }
                    }
                }
            }
            Loader::One { var, .. } => env.push(var, lib),
            Loader::Preload => preload.push(lib),
        }
        plugins.loaded.push(m.name);
    }
    if models.has(ModelId::Actor) {
        actor_counter_kinds(args, env);
    }
    // Not a model: with it the program gets a signal that reaches it both
    // directly and through kprof once (see `signals`).
    if let Some(lib) = dir
        .as_ref()
        .map(|d| d.join(SIGNALS_LIB))
        .filter(|p| p.is_file())
    {
        preload.insert(0, lib.display().to_string());
        env.push(
            kprof_abi::forward::RUN_PID_VAR,
            std::process::id().to_string(),
        );
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
        env.push(
            "LD_PRELOAD",
            chain_list(&ours, Some(&theirs.join(":")), ':'),
        );
    }
    plugins
}

/// Counters of an FA-BSP program go to its MAIN/PROC/COMM segments too, unless
/// the kinds were chosen.
fn actor_counter_kinds(args: &RunArgs, env: &mut Env) {
    use settings::core::COUNTERS;
    const KINDS: &str = "KPROF_COUNTER_KINDS";
    let flag = |var: &str| {
        args.settings
            .0
            .iter()
            .find(|(s, _)| s.var == var)
            .map(|(_, v)| v.clone())
    };
    let counters = flag(COUNTERS.var).or_else(|| COUNTERS.get());
    if counters.is_some_and(|c| !c.trim().is_empty())
        && flag(KINDS).is_none()
        && std::env::var_os(KINDS).is_none()
    {
        env.push(
            KINDS,
            format!("{},actor", kprof_core::base::counter_kinds::DEFAULT_KINDS),
        );
    }
}

/// What kprof says before the program starts: with --verbose what was detected
/// and set, the hints on what cannot be measured, and what is measured.
fn before_start(
    args: &RunArgs,
    models: &Models,
    plugins: &Plugins,
    program: &Program,
    env: &Env,
    voice: Voice,
) {
    let exe_name = &program.exe_name;
    if args.verbose && !args.quiet {
        for r in &models.reasons {
            eprintln!("kprof: detected {r}");
        }
        for (k, v) in &env.set {
            eprintln!("kprof: {k}={v}");
        }
    }
    if models.raja_without_loader && !models.has(ModelId::Raja) {
        voice.say(&format!(
            "{} holds RAJA built without runtime plugins: rebuild RAJA with \
             -DRAJA_ENABLE_RUNTIME_PLUGINS=ON to measure its kernels",
            program.given
        ));
    }
    const LINK_WRAPPERS: &str = "link it with kprof_actor_wrap.c and \
         -Wl,--wrap=convey_new,--wrap=convey_begin,--wrap=convey_push,--wrap=convey_pull,\
         --wrap=convey_advance,--wrap=convey_free,--wrap=convey_epush,--wrap=convey_epull \
         (see kprof_actor.h)";
    let actor = models.has(ModelId::Actor);
    if actor && models.conveyors_unwrapped {
        voice.say(&format!(
            "{exe_name} holds Conveyors without kprof's link-time wrappers and its entries \
             cannot be hooked on this architecture: its messages are not counted (only \
             OpenSHMEM calls are); {LINK_WRAPPERS}"
        ));
    } else if actor && models.stripped {
        voice.say(&format!(
            "{exe_name} is stripped: if it holds Conveyors, its messages are not counted \
             (only OpenSHMEM calls are); keep its symbols or {LINK_WRAPPERS}"
        ));
    }
    if models.gomp_only && !models.has(ModelId::OpenMp) {
        voice.say(&format!(
            "{exe_name} runs on GCC's libgomp, which has no OpenMP tool interface: OpenMP \
             regions are not measured (LLVM's libomp has one: clang -fopenmp, or a \
             libgomp.so.1 -> libomp.so.5 link first on LD_LIBRARY_PATH)"
        ));
    }
    if plugins.loaded.is_empty() && !models.annotations {
        if plugins.missing.is_empty() && !models.gomp_only {
            voice.say(&format!(
                "no {} runtime found in {}: nothing will be measured unless it uses the \
                 annotation API (give {} to force)",
                models::runtimes_sentence(),
                program.given,
                models::flags_sentence()
            ));
        }
    } else if !args.quiet {
        let mut what = plugins.loaded.clone();
        if models.annotations {
            what.push("annotations");
        }
        let how = if args.models.0.is_empty() {
            " (detected)"
        } else {
            ""
        };
        eprintln!("kprof: measuring {}{how}", what.join(", "));
    }
}

/// How the program ended.
struct Ended {
    /// kprof run's exit status: the program's, or 128 + the signal that killed it.
    code: u8,
    /// The signal that killed it.
    killed: Option<i32>,
    /// The directory it wrote, when known before (with its pid).
    out_dir: Option<PathBuf>,
    /// A second before it started: directories made since are its.
    started: std::time::SystemTime,
}

/// Runs the program with `env`, the forwarded signals blocked in kprof and
/// taken by a forwarding thread, and waits for its end.
fn run_program(
    args: &RunArgs,
    program: &Program,
    env: &Env,
    place: &Place,
) -> Result<Ended, Failure> {
    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    for k in &env.unset {
        cmd.env_remove(k);
    }
    for (k, v) in &env.set {
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
    let given = &program.given;
    let mut child = spawned.map_err(|e| Failure(format!("cannot run {given}: {e}")))?;
    let started = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    let out_dir = match &place.out {
        OutDir::Exact(p) => Some(p.clone()),
        OutDir::ProgramPid(prefix) => {
            let mut p = prefix.as_os_str().to_owned();
            p.push(child.id().to_string());
            Some(PathBuf::from(p))
        }
        OutDir::Pattern(_) => None,
    };
    wait_unreaped(child.id());
    CHILD.store(0, Ordering::SeqCst);
    let status = child
        .wait()
        .map_err(|e| Failure(format!("waiting for {given}: {e}")))?;
    let killed = status.signal();
    let code = match (status.code(), killed) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => {
            Voice { quiet: args.quiet }.say(&format!("{given} was killed by {}", signal_name(sig)));
            (128 + sig) as u8
        }
        _ => 1,
    };
    Ok(Ended {
        code,
        killed,
        out_dir,
        started,
    })
}

/// Waits for process `pid` to end without reaping it, so the forwarding thread
/// stops sending before the pid can be reused.
fn wait_unreaped(pid: u32) {
    loop {
        // SAFETY: a zeroed siginfo_t for the kernel to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waiting on our own child with a valid siginfo_t.
        let rc =
            unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if rc == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
}

/// Where the results are, or why there are none.
fn results(
    place: &Place,
    ended: &Ended,
    plugins: &Plugins,
    models: &Models,
    program: &Program,
    voice: Voice,
) {
    let base = match (&place.out, &ended.out_dir) {
        (OutDir::Pattern(p), _) => {
            voice.say(&format!("results in directories named {}", show(p)));
            return;
        }
        (_, None) => return,
        (_, Some(base)) => base,
    };
    // The runtime appends .1, .2, ... to a directory that exists already.
    let dir = written_dir(base, ended.started).unwrap_or_else(|| base.clone());
    let job = place
        .job_dir
        .as_deref()
        .and_then(|j| written_dir(j, ended.started))
        .filter(|j| j.join("profile.json").is_file());
    if let (Some(job), Some(0)) = (&job, place.rank) {
        voice.say(&format!(
            "the job's profile is in {} (read it with: kprof report {})",
            show(job),
            show(job)
        ));
    }
    if job.is_some() && !dir.exists() {
        // This rank's profile is in the job's (KPROF_PER_RANK=1 keeps its own).
    } else if dir.join("profile.json").is_file() {
        voice.say(&format!(
            "results in {} (read them with: kprof report {})",
            show(&dir),
            show(&dir)
        ));
    } else if dir.is_dir() {
        let why = match ended.killed {
            Some(sig) => format!(
                "the program was killed by {} before kprof could write it",
                signal_name(sig)
            ),
            None => "the program ended without running its exit handlers (_exit, exec or a \
                     crash) before kprof could write it"
                .into(),
        };
        voice.say(&format!("{} holds no profile.json ({why})", show(&dir)));
        for line in unfinished_traces(&dir) {
            voice.say(&line);
        }
    } else {
        voice.say(&format!(
            "no output was written to {}: {}",
            show(&dir),
            nothing_written(
                &dir,
                ended.killed,
                &plugins.loaded,
                &plugins.missing,
                models,
                &program.exe_name
            )
        ));
    }
}
