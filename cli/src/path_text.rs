//! How paths appear in messages, and made absolute: a leaf every command uses.

use std::path::PathBuf;

/// Display form of a path for messages.
pub fn show(p: &std::path::Path) -> String {
    p.display().to_string()
}

/// `p` made absolute against the current directory (not resolving links).
pub fn absolute(p: &std::path::Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}
