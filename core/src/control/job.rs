//! A job's profile, reduced inside the job: the entries the MPI plugin calls at
//! `MPI_Finalize` (the core knows nothing of MPI; it ends this process's
//! profile, folds forms and writes one).
//!
//! 1. [`profile`]: ends this process's profile now. Its own files are written
//!    as always (a reduction that never completes loses nothing), its summary is
//!    held back, and its reducible form ([`crate::reduce`]) is returned.
//! 2. [`fold`]: folds two forms (the plugin's tree over MPI calls it).
//! 3. [`write()`] (rank 0): writes the job's merged profile (`kprof merge`'s schema)
//!    into `KPROF_JOB_OUTPUT_DIR` and prints the job's summary.
//! 4. [`done`]: the process's part is in the job's profile: its own profile files
//!    are removed, unless `KPROF_PER_RANK=1`; or it is not: its summary is printed
//!    as without a reduction.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use prost::Message;

use crate::control::start;
use crate::hot::runtime::{self, Phase};
use crate::output::cali_job;
use crate::output::calltree::CallTree;
use crate::output::report::Report;
use crate::output::{create_unique_dir, expand, hold_summary, write_whole, OutputError};
use crate::reduce::{self, Fold};

/// The rank the reduction names this process (set before the writer keeps its
/// form).
static RANK: AtomicU64 = AtomicU64::new(0);

/// What the writer left for the reduction.
struct Held {
    form: Option<Vec<u8>>,
    dir: Option<PathBuf>,
    summary: Option<String>,
}

static HELD: Mutex<Option<Held>> = Mutex::new(None);

/// The writer's part, installed as the output's summary holder while the
/// reduction takes this process's profile: `report` (its call-path tree `tree`)
/// as a form, where its files went, and its summary.
fn keep(report: &Report, tree: &dyn CallTree, dir: Option<&Path>, summary: Option<String>) {
    let rank = RANK.load(Ordering::Acquire);
    let mut r = report.clone();
    r.program.rank = Some(rank);
    let who = u32::try_from(rank).unwrap_or(u32::MAX);
    let shown = dir.map(|d| d.display().to_string());
    let form = reduce::from_report(&r, tree, who, shown, false).encode_to_vec();
    let mut h = HELD.lock().unwrap_or_else(|p| p.into_inner());
    *h = Some(Held {
        form: Some(form),
        dir: dir.map(Path::to_path_buf),
        summary,
    });
}

/// Ends this process's profile for a job's reduction and returns its form,
/// naming the process `rank`; None when the runtime is not recording.
pub fn profile(rank: u64) -> Option<Vec<u8>> {
    if runtime::phase() != Phase::Running {
        return None;
    }
    RANK.store(rank, Ordering::Release);
    hold_summary(Some(keep));
    start::shutdown();
    let mut h = HELD.lock().unwrap_or_else(|p| p.into_inner());
    h.as_mut()?.form.take()
}

/// Folds form `b` into form `a`.
pub fn fold(a: &[u8], b: &[u8]) -> Result<Vec<u8>, reduce::FormError> {
    let mut f = Fold::decode(a)?;
    f.fold(Fold::decode(b)?.into_form());
    Ok(f.encode())
}

/// Writes the job's merged profile from `form` into a new directory named by
/// `KPROF_JOB_OUTPUT_DIR`, and prints the job's summary.
pub fn write(form: &[u8]) -> Result<PathBuf, String> {
    let fold = Fold::decode(form).map_err(|e| e.to_string())?;
    let merged = reduce::render(fold.form());
    let ranks = fold.processes();
    drop(fold);
    let cfg = runtime::config().clone();
    let Some(rt) = runtime::get() else {
        return Err("kprof is not running".into());
    };
    let wanted = PathBuf::from(expand(&cfg.job_output_dir, &rt.process));
    let dir = create_unique_dir(&wanted).map_err(|e| e.to_string())?;
    let path = dir.join("profile.json");
    write_whole(&path, |f| {
        serde_json::to_writer(&mut *f, &merged).map_err(|source| OutputError::Encode {
            path: path.display().to_string(),
            source,
        })?;
        f.write_all(b"\n").map_err(|source| OutputError::File {
            path: path.display().to_string(),
            source,
        })
    })
    .map_err(|e| e.to_string())?;
    // Caliper's readers load the job's statistics over its ranks; a failure
    // leaves profile.json, which is the job's profile, and says why.
    let own = rt.metadata.lock().map(|m| m.clone()).unwrap_or_default();
    if let Err(e) = cali_job::write_job(&dir, &merged, &own) {
        eprintln!("kprof: no profile.cali for the job: {e}");
    }
    if cfg.summary {
        let text = reduce::summary::render(&merged, ranks, &dir, cfg.summary_top);
        let _ = std::io::stderr().write_all(text.as_bytes());
    }
    Ok(dir)
}

/// Ends the reduction for this process: `merged` says its profile is in the
/// job's. Then its own profile files go (unless `KPROF_PER_RANK=1`; a directory
/// left empty goes too); otherwise its summary is printed as without a
/// reduction.
pub fn done(merged: bool) {
    hold_summary(None);
    let Some(held) = HELD.lock().unwrap_or_else(|p| p.into_inner()).take() else {
        return;
    };
    let per_rank = runtime::config().per_rank;
    if !merged {
        if let Some(s) = held.summary {
            let _ = std::io::stderr().write_all(s.as_bytes());
        }
        return;
    }
    if per_rank {
        return;
    }
    if let Some(dir) = held.dir {
        // The profile files and the analysis files made from the same tree.
        for f in [
            "profile.json",
            "profile.csv",
            "tasktree.json",
            "taskgraph.dot",
            "profile.cali",
        ] {
            let _ = std::fs::remove_file(dir.join(f));
        }
        // Only when nothing else (a trace) is in it.
        let _ = std::fs::remove_dir(&dir);
    }
}
