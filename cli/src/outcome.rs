//! What every command hands back to `main`: its exit status or one line of
//! failure. A leaf: every module returns these without importing the root.

/// An error of a command: printed as one line `kprof: <message>`, exit status 2.
#[derive(Debug)]
pub struct Failure(pub String);

impl<T: std::fmt::Display> From<T> for Failure {
    fn from(e: T) -> Self {
        Failure(e.to_string())
    }
}

/// Result of a command: its exit status, or a failure.
pub type Outcome = Result<u8, Failure>;
