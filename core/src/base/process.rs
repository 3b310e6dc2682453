//! Who the measured process is: executable, pid, host and MPI rank.

/// Identity of the measured process.
#[derive(Debug, Clone)]
pub struct ProcessInfo {
    /// Executable file name.
    pub executable: String,
    /// Process id.
    pub pid: u32,
    /// Host name.
    pub host: String,
    /// MPI rank from the launcher's environment, if any.
    pub rank: Option<u64>,
}

/// Launcher variables holding the MPI rank, in order of preference.
const RANK_VARS: [&str; 4] = [
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_PROCID",
];

impl ProcessInfo {
    /// This process.
    pub fn current() -> ProcessInfo {
        let executable = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown".into());
        ProcessInfo {
            executable,
            pid: std::process::id(),
            host: host_name(),
            rank: RANK_VARS
                .iter()
                .find_map(|v| std::env::var(v).ok()?.trim().parse().ok()),
        }
    }
}

fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
