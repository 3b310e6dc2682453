//! The thread the commands that read profiles run on, with a stack deep enough
//! for the deepest profile they accept.

use crate::outcome::{Failure, Outcome};

/// Stack of the commands that read profiles: they walk trees recursively, and a
/// profile may nest up to `load::MAX_JSON_DEPTH` deep. Reserved, not committed:
/// only what a deep tree uses is ever touched.
pub const READER_STACK: usize = 1 << 30;

/// Runs `f` on a thread with [`READER_STACK`] of stack.
pub fn on_reader_stack(f: impl FnOnce() -> Outcome + Send + 'static) -> Outcome {
    std::thread::Builder::new()
        .name("kprof".into())
        .stack_size(READER_STACK)
        .spawn(f)
        .map_err(|e| Failure(format!("cannot start: {e}")))?
        .join()
        .unwrap_or_else(|_| {
            Err(Failure(
                "internal error (a bug in kprof; please report it)".into(),
            ))
        })
}
