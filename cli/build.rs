//! Sets `KPROF_COMMIT` for `kprof --version`: the commit kprof is built from
//! (`git rev-parse --short HEAD`), or `unknown` where git or the repository is
//! missing (a source archive), so the build never needs git.

use std::path::PathBuf;
use std::process::Command;

/// `git <args>`'s first line of output, when git ran and succeeded.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}

fn main() {
    let commit = git(&["rev-parse", "--short=7", "HEAD"]);
    println!(
        "cargo:rustc-env=KPROF_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    // Rebuilt when HEAD moves: HEAD itself (a checkout), the branch it names (a
    // commit) and packed-refs (a branch packed by git gc). --git-path finds
    // each in a worktree too, where HEAD and the branches are in two places.
    // Without git, only this script: a path that does not exist would rerun
    // the script on every build.
    println!("cargo:rerun-if-changed=build.rs");
    if commit.is_none() {
        return;
    }
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
            if PathBuf::from(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
}
