//! Reading the kernel's process and node figures for the system sampler
//! ([`crate::collect::sampler`]): each file is opened once and read again with
//! `pread` at offset 0 into a fixed buffer (procfs regenerates the text on every
//! read from the start), and parsed by the small pure functions below, which
//! allocate nothing.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Bytes read of one file: every file read here fits (`/proc/meminfo` is about
/// 1.5 KiB; only its first lines are needed).
pub const READ_BYTES: usize = 4096;

/// A procfs or sysfs file kept open and read again from its start.
pub struct Reader {
    file: File,
}

impl Reader {
    /// Opens `path` and reads it once: a file that opens but cannot be read
    /// (`/proc/self/io` without the right to trace oneself) is `None` too.
    pub fn open(path: &Path, buf: &mut [u8; READ_BYTES]) -> Option<Reader> {
        let r = Reader {
            file: File::open(path).ok()?,
        };
        r.read(buf)?;
        Some(r)
    }

    /// The file's current text (up to [`READ_BYTES`]), or None when it cannot be
    /// read.
    pub fn read<'a>(&self, buf: &'a mut [u8; READ_BYTES]) -> Option<&'a str> {
        let n = self.file.read_at(buf, 0).ok()?;
        std::str::from_utf8(&buf[..n]).ok()
    }
}

/// What the sampler takes from `/proc/self/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    /// Page faults served without I/O, all threads (`minflt`).
    pub minor_faults: u64,
    /// Page faults that needed I/O (`majflt`).
    pub major_faults: u64,
    /// Threads in the process (`num_threads`).
    pub threads: u64,
    /// Resident set in pages (`rss`).
    pub rss_pages: u64,
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses and
/// may hold spaces and parentheses itself, so fields are counted from the last
/// `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name: field n is rest's n-3.
    let mut fields = rest.split_ascii_whitespace();
    let mut field = |n: usize, from: &mut usize| -> Option<u64> {
        let v = fields.nth(n - *from)?;
        *from = n + 1;
        v.parse().ok()
    };
    let mut at = 3;
    let minor_faults = field(10, &mut at)?;
    let major_faults = field(12, &mut at)?;
    let threads = field(20, &mut at)?;
    let rss_pages = field(24, &mut at)?;
    Some(Stat {
        minor_faults,
        major_faults,
        threads,
        rss_pages,
    })
}

/// What the sampler takes from `/proc/self/io`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Io {
    /// Bytes passed to read-like calls (`rchar`: also pipes, sockets, cache hits).
    pub rchar: u64,
    /// Bytes passed to write-like calls (`wchar`).
    pub wchar: u64,
    /// Bytes fetched from storage (`read_bytes`).
    pub read_bytes: u64,
    /// Bytes sent towards storage (`write_bytes`).
    pub write_bytes: u64,
}

/// Parses `/proc/<pid>/io` (`key: value` lines).
pub fn parse_io(text: &str) -> Option<Io> {
    let mut io = Io::default();
    let mut seen = 0;
    for (key, value) in key_values(text) {
        let slot = match key {
            "rchar" => &mut io.rchar,
            "wchar" => &mut io.wchar,
            "read_bytes" => &mut io.read_bytes,
            "write_bytes" => &mut io.write_bytes,
            _ => continue,
        };
        *slot = value;
        seen += 1;
    }
    (seen == 4).then_some(io)
}

/// The 1-minute load average: the first field of `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// `MemAvailable` of `/proc/meminfo`, in bytes (the file says kB, meaning KiB).
pub fn parse_mem_available(text: &str) -> Option<u64> {
    key_values(text)
        .find(|(k, _)| *k == "MemAvailable")
        .map(|(_, kib)| kib.saturating_mul(1024))
}

/// The `key: number [unit]` lines of a procfs file (lines that do not parse are
/// skipped).
fn key_values(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines().filter_map(|line| {
        let (key, rest) = line.split_once(':')?;
        let value = rest.split_ascii_whitespace().next()?.parse().ok()?;
        Some((key.trim(), value))
    })
}

/// A counter in microjoules (`energy_uj` of a powercap zone), which wraps to 0
/// after `max_range` (`max_energy_range_uj`).
pub fn energy_delta(before: u64, now: u64, max_range: u64) -> u64 {
    if now >= before {
        now - before
    } else {
        // Wrapped once (a zone wraps after minutes at the least; samples are at
        // most a minute apart).
        max_range.saturating_sub(before).saturating_add(now)
    }
}

/// A number alone in a sysfs file (`energy_uj`).
pub fn parse_number(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_counted_after_the_name() {
        // A real line of a process whose name holds a space and a parenthesis.
        let line = "12345 (my prog) x) R 1 12345 12345 0 -1 4194560 5811 0 3 0 41 7 0 0 20 \
                    0 3 0 1022637 231493632 51339 18446744073709551615 1 1 0 0 0 0 0 0 0 \
                    0 0 0 17 1 0 0 0 0 0\n";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                minor_faults: 5811,
                major_faults: 3,
                threads: 3,
                rss_pages: 51339,
            })
        );
        assert_eq!(parse_stat("12 (short) R 1 2"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn stat_of_this_process() {
        let text = std::fs::read_to_string("/proc/self/stat").unwrap();
        let s = parse_stat(&text).unwrap();
        assert!(
            s.threads >= 1 && s.rss_pages > 0 && s.minor_faults > 0,
            "{s:?}"
        );
    }

    #[test]
    fn io_needs_every_key() {
        let text = "rchar: 6976\nwchar: 12\nsyscr: 10\nsyscw: 0\nread_bytes: 4096\n\
                    write_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(
            parse_io(text),
            Some(Io {
                rchar: 6976,
                wchar: 12,
                read_bytes: 4096,
                write_bytes: 8192,
            })
        );
        assert_eq!(parse_io("rchar: 1\nwchar: 2\n"), None);
    }

    #[test]
    fn loadavg_and_meminfo() {
        assert_eq!(parse_loadavg("1.52 0.98 0.50 3/412 98765\n"), Some(1.52));
        assert_eq!(parse_loadavg(""), None);
        let meminfo = "MemTotal:        8131200 kB\nMemFree:          254012 kB\n\
                       MemAvailable:    5230468 kB\nBuffers:          120000 kB\n";
        assert_eq!(parse_mem_available(meminfo), Some(5_230_468 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn energy_wraps_around_its_range() {
        assert_eq!(energy_delta(1_000, 5_000, 262_143_328_850), 4_000);
        assert_eq!(energy_delta(262_143_000_000, 500, 262_143_328_850), 329_350);
        assert_eq!(parse_number("123456789\n"), Some(123_456_789));
    }

    #[test]
    fn reader_reads_the_current_text_again() {
        let mut buf = [0; READ_BYTES];
        let r = Reader::open(Path::new("/proc/self/stat"), &mut buf).unwrap();
        let first = parse_stat(r.read(&mut buf).unwrap()).unwrap().minor_faults;
        // Touch fresh pages: the next read shows more minor faults.
        let v = vec![1u8; 8 << 20];
        std::hint::black_box(&v);
        let second = parse_stat(r.read(&mut buf).unwrap()).unwrap().minor_faults;
        assert!(second > first, "{first} -> {second}");
        assert!(Reader::open(Path::new("/proc/self/no-such-file"), &mut buf).is_none());
    }
}
