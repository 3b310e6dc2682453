//! What `kprof merge` checks of the ranks it is given: each directory once and
//! there, each MPI rank once (a failure, exit 2); one program (a warning, as
//! `kprof diff` warns); and which ranks could not be read (a warning naming
//! them: the merge goes on with the others); and call-stack samples that do
//! not add up plainly (a warning: ranks sampled at different rates, or some
//! ranks not sampled).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use kprof_core::reduce::form::JobProfile;

use crate::fmt::ranks_text;
use crate::outcome::Failure;
use crate::path_text::show;

/// Every directory exists and is given once (the same one under two names
/// counts once).
pub fn distinct_dirs(dirs: &[PathBuf]) -> Result<(), Failure> {
    let mut seen: HashMap<PathBuf, &Path> = HashMap::new();
    for d in dirs {
        let full = std::fs::canonicalize(d).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Failure(format!("{}: no such directory", show(d)))
            } else {
                Failure(format!("{}: {e}", show(d)))
            }
        })?;
        if let Some(first) = seen.insert(full, d) {
            let also = if first == d.as_path() {
                String::new()
            } else {
                format!(" (as {})", show(first))
            };
            return Err(Failure(format!(
                "merge: {} is given twice{also}: give each rank's directory once",
                show(d)
            )));
        }
    }
    Ok(())
}

/// Each MPI rank is in one directory only (profiles without a rank, runs of
/// programs outside MPI, are not compared).
pub fn distinct_ranks(job: &JobProfile) -> Result<(), Failure> {
    let mut seen: BTreeMap<u64, Option<&str>> = BTreeMap::new();
    let mut ranks: Vec<_> = job.ranks.iter().collect();
    ranks.sort_by_key(|r| r.who);
    for r in ranks {
        let Some(rank) = r.rank else { continue };
        if let Some(first) = seen.insert(rank, r.dir.as_deref()) {
            return Err(Failure(format!(
                "merge: rank {rank} is in two directories, {} and {}: give one job's ranks, \
                 each once",
                first.unwrap_or("?"),
                r.dir.as_deref().unwrap_or("?")
            )));
        }
    }
    Ok(())
}

/// The warning when the ranks ran different programs (by file name): one line
/// naming them and how many ranks ran each.
pub fn programs_line(job: &JobProfile) -> Option<String> {
    let mut programs: BTreeMap<String, usize> = BTreeMap::new();
    for r in &job.ranks {
        let name = Path::new(&r.executable).file_name().map_or_else(
            || r.executable.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
        *programs.entry(name).or_insert(0) += 1;
    }
    (programs.len() > 1).then(|| {
        let list: Vec<String> = programs
            .iter()
            .map(|(name, n)| format!("{name} ({})", ranks_text(*n)))
            .collect();
        format!(
            "kprof merge: warning: the ranks ran different programs: {}",
            list.join(", ")
        )
    })
}

/// The warning when the ranks' call-stack samples are not alike: sampled at
/// different rates (a sample then stands for a different CPU time per rank, and
/// the sums mix them), or only some ranks sampled (the sums are theirs).
pub fn sampling_line(job: &JobProfile) -> Option<String> {
    let s = job.stack_sampling.as_ref()?;
    let mut why = Vec::new();
    if s.hz.min != s.hz.max {
        why.push(format!(
            "the ranks were sampled at different rates ({} to {} Hz): the merged sums \
             add samples of different CPU time",
            s.hz.min, s.hz.max
        ));
    }
    let (sampled, all) = (s.hz.ranks as usize, job.ranks.len());
    if sampled < all {
        why.push(format!(
            "{sampled} of {} have call-stack samples (kprof run --sample-hz): the merged \
             samples are theirs",
            ranks_text(all)
        ));
    }
    (!why.is_empty()).then(|| format!("kprof merge: warning: {}", why.join("; ")))
}

/// The warnings for the directories that could not be read (`skipped`: their
/// position in `dirs`, and why), one line each; then, when ranks are missing
/// from a job of `size` MPI ranks (0..size, as the ranks recorded it, else one
/// per directory), one line naming them.
pub fn left_out_lines(
    job: &JobProfile,
    size: u64,
    dirs: &[PathBuf],
    skipped: &[(usize, Failure)],
) -> Vec<String> {
    let mut out: Vec<String> = skipped
        .iter()
        .map(|(_, Failure(why))| format!("kprof merge: warning: {why}; left out of the merge"))
        .collect();
    let read = job.ranks.len();
    let present: BTreeSet<u64> = job.ranks.iter().filter_map(|r| r.rank).collect();
    let missing: Vec<u64> = if present.len() == read {
        (0..size).filter(|r| !present.contains(r)).collect()
    } else {
        Vec::new()
    };
    if skipped.is_empty() && missing.is_empty() {
        return out;
    }
    let total = size.max(dirs.len() as u64) as usize;
    let mut line = format!(
        "kprof merge: warning: merged {read} of {}",
        ranks_text(total)
    );
    if !missing.is_empty() {
        const SHOWN: usize = 20;
        let mut names: Vec<String> = missing.iter().take(SHOWN).map(u64::to_string).collect();
        if missing.len() > SHOWN {
            names.push(format!("... {} more", missing.len() - SHOWN));
        }
        line.push_str(&format!(
            "; missing: rank{} {}",
            if missing.len() == 1 { "" } else { "s" },
            names.join(", ")
        ));
        if let ([_], [(i, _)]) = (&missing[..], skipped) {
            line.push_str(&format!(" ({})", show(&dirs[*i])));
        }
    }
    out.push(line);
    out
}
