//! Who the measured process is: executable, pid, host, MPI rank, and when it
//! started.

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
    /// When the process started (its fork), in CLOCK_MONOTONIC nanoseconds: the
    /// kernel's start time of the process (`/proc/self/stat`, in clock ticks
    /// since boot), so it is earlier than the true start by less than one tick
    /// (10 ms at the usual 100 ticks per second); `None` where it cannot be read.
    pub start_ns: Option<u64>,
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
            start_ns: start_ns(),
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

/// This process's start in CLOCK_MONOTONIC nanoseconds (see
/// [`ProcessInfo::start_ns`]).
fn start_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    // The kernel counts the start from boot on CLOCK_BOOTTIME (suspended time
    // included); CLOCK_MONOTONIC differs from it by the time suspended.
    let mono = clock_ns(libc::CLOCK_MONOTONIC)?;
    let boot = clock_ns(libc::CLOCK_BOOTTIME)?;
    start_from(&stat, hz, mono, boot)
}

/// The start of the process whose `/proc/<pid>/stat` line is `stat`, in
/// CLOCK_MONOTONIC nanoseconds, with `hz` clock ticks per second, `mono` and
/// `boot` read together now.
fn start_from(stat: &str, hz: u64, mono: u64, boot: u64) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold anything: the
    // fields after its last ')' start at field 3; `starttime` is field 22.
    let (_, rest) = stat.rsplit_once(')')?;
    let ticks: u64 = rest.split_ascii_whitespace().nth(22 - 3)?.parse().ok()?;
    let since_boot = u64::try_from(u128::from(ticks) * 1_000_000_000 / u128::from(hz)).ok()?;
    let age = boot.checked_sub(since_boot)?;
    mono.checked_sub(age)
}

fn clock_ns(id: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_reads_field_22_after_the_command_name() {
        // A command name with spaces and a ')' of its own; starttime = 250
        // ticks at 100 Hz: 2.5 s after boot.
        let stat = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 250 \
                    1000 10 18446744073709551615";
        // Now: 10 s after boot, 9 s of CLOCK_MONOTONIC (1 s suspended).
        let got = start_from(stat, 100, 9_000_000_000, 10_000_000_000);
        assert_eq!(got, Some(1_500_000_000));
        assert_eq!(start_from("42 (x", 100, 1, 1), None);
    }

    #[test]
    fn this_process_started_before_now() {
        let start = start_ns().expect("/proc/self/stat");
        let now = clock_ns(libc::CLOCK_MONOTONIC).unwrap();
        assert!(start <= now, "{start} > {now}");
        // The test binary started at most minutes ago.
        assert!(now - start < 3600 * 1_000_000_000, "{start} {now}");
    }
}
