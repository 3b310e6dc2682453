//! Models of the runtime's concurrent protocols, checked with loom: each runs the
//! core's own code (built with `RUSTFLAGS="--cfg loom"`, which switches the
//! atomics, cells, fences and queues of `kprof_core::base::sync` to loom's)
//! through every interleaving and every value the memory model lets a load see,
//! within the bound each model states. What each covers, its bound, and how many
//! interleavings it explored: docs/concurrency-models.md.
//!
//! Each protocol also has a model run with one of its orderings weakened to
//! `Relaxed`, which must fail: the model sees what that ordering is there for.
//!
//!     RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!         cargo test --release -p kprof-core --test loom -- --nocapture
//!
//! In a normal build this file compiles to nothing.
#![cfg(loom)]

mod handoff;
mod publication;
mod shutdown;
mod start;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kprof_core::base::sync::order::{weaken, Site};

/// Explores `model` with loom, within `preemptions` preemptions per execution
/// when given (`LOOM_MAX_PREEMPTIONS` overrides it; `None`: every interleaving);
/// prints and returns how many executions (interleavings) it explored.
pub fn explore(
    name: &str,
    preemptions: Option<usize>,
    model: impl Fn() + Sync + Send + 'static,
) -> usize {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut b = loom::model::Builder::new();
    b.preemption_bound = b.preemption_bound.or(preemptions);
    let bound = match b.preemption_bound {
        Some(n) => format!("at most {n} preemptions"),
        None => "exhaustive".to_string(),
    };
    let counted = runs.clone();
    b.check(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let n = runs.load(Ordering::Relaxed);
    println!("loom model {name}: {n} interleavings explored ({bound})");
    assert!(
        n > 1,
        "{name}: a model with one interleaving checks nothing"
    );
    n
}

/// Explores `model` with `site` weakened to `Relaxed`; returns the failure's
/// message (panics when the model passes: it cannot see that ordering).
pub fn fails_weakened(
    name: &str,
    site: Site,
    preemptions: Option<usize>,
    model: impl Fn() + Sync + Send + 'static,
) -> String {
    let _weak = weaken(site);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        explore(name, preemptions, model)
    }));
    let Err(payload) = outcome else {
        panic!("{name}: the model passed with {site:?} weakened to Relaxed");
    };
    let msg = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    println!("loom model {name} with {site:?} weakened fails: {msg}");
    msg
}
