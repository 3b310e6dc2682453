//! The system sampler (`KPROF_SAMPLE_MS`): every period, the writer thread reads
//! how the process and the node are doing. It runs on the writer thread, which
//! otherwise naps (no thread of its own, nothing on application threads): the
//! writer wakes at the sample period while sampling is on.
//!
//! Per sample: the program's CPU use (`getrusage`: user + system time of every
//! thread, to the microsecond, as a number of cores and as a share of the cores
//! the process may run on; `/proc/self/stat` counts in clock ticks, 10 ms), its
//! resident set, threads and page faults (`/proc/self/stat`), its context
//! switches (`getrusage`: `/proc/self/status` counts only the main thread's), its
//! I/O (`/proc/self/io`, when readable), the
//! node's 1-minute load (`/proc/loadavg`) and available memory (`/proc/meminfo`),
//! the power of each RAPL zone (`/sys/class/powercap/intel-rapl:*`, where the
//! node has them and they are readable) and of each NVIDIA GPU (NVML, where the
//! driver is installed). Counts that only grow become rates over
//! the interval since the previous sample. CPU time, faults and context
//! switches leave out the writer thread's own, and `rchar` the sampler's reads,
//! so that an idle program shows idle (kprof's own cost is in the profile's
//! `kprof` section). Files are opened once and read again with `pread` into one
//! buffer: a sample allocates nothing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::collect::nvml::Nvml;
use crate::collect::procfs::{self, Reader, READ_BYTES};
use crate::consume::system::{Metric, Ranges, Unit};
use crate::hot::clock::{thread_cpu_ns, Clock};
use crate::output::report::System;

/// Where the kernel lists the RAPL power zones.
const POWERCAP: &str = "/sys/class/powercap";

/// The metrics every sampler has, in this order (index into the values).
const CPU_CORES: usize = 0;
const CPU_SHARE: usize = 1;
const RSS: usize = 2;
const THREADS: usize = 3;
const MINOR_FAULTS: usize = 4;
const MAJOR_FAULTS: usize = 5;
const VOLUNTARY: usize = 6;
const INVOLUNTARY: usize = 7;
const LOAD: usize = 8;
const MEM_AVAILABLE: usize = 9;
/// The first of the optional ones (I/O, then power).
const OPTIONAL: usize = 10;

/// The fixed metrics: name, unit, description.
const FIXED: [(&str, Unit, &str); OPTIONAL] = [
    (
        "cpu_cores",
        Unit::Cores,
        "CPU time of the program's threads (user + system; kprof's writer left out) per elapsed time",
    ),
    (
        "cpu_share",
        Unit::Percent,
        "CPU use of the program as a share of the cores the process may run on",
    ),
    ("rss", Unit::Bytes, "resident set of the process"),
    ("threads", Unit::Count, "threads of the process"),
    (
        "minor_faults",
        Unit::PerSecond,
        "page faults served without I/O, per second (kprof's writer left out)",
    ),
    (
        "major_faults",
        Unit::PerSecond,
        "page faults that waited for I/O, per second (kprof's writer left out)",
    ),
    (
        "voluntary_switches",
        Unit::PerSecond,
        "context switches of the program's threads that waited (I/O, locks, sleep), per second",
    ),
    (
        "involuntary_switches",
        Unit::PerSecond,
        "context switches of the program's threads that were preempted, per second",
    ),
    (
        "load",
        Unit::Count,
        "the node's 1-minute load average (/proc/loadavg)",
    ),
    (
        "mem_available",
        Unit::Bytes,
        "memory available on the node for new allocations (MemAvailable)",
    ),
];

/// The I/O metrics, when `/proc/self/io` is readable.
const IO: [(&str, Unit, &str); 4] = [
    (
        "io_read",
        Unit::BytesPerSecond,
        "bytes the process read from storage, per second (read_bytes)",
    ),
    (
        "io_write",
        Unit::BytesPerSecond,
        "bytes the process wrote towards storage, per second (write_bytes)",
    ),
    (
        "io_rchar",
        Unit::BytesPerSecond,
        "bytes the process passed to read calls (files, pipes, sockets; not the sampler's), per second",
    ),
    (
        "io_wchar",
        Unit::BytesPerSecond,
        "bytes the process passed to write calls, per second",
    ),
];

/// One RAPL zone: its counter and where it wraps.
struct Zone {
    energy: Reader,
    max_range: u64,
    last: u64,
}

/// The counters of the previous sample, for the rates.
#[derive(Default, Clone, Copy)]
struct Counts {
    cpu_us: u64,
    voluntary: u64,
    involuntary: u64,
    stat: procfs::Stat,
    io: procfs::Io,
}

/// The sampler: its files, the previous sample's counters, and every metric's
/// range so far.
pub struct Sampler {
    period: Duration,
    next: Instant,
    metrics: Vec<Metric>,
    values: Vec<f64>,
    ranges: Ranges,
    unavailable: Vec<String>,
    buf: Box<[u8; READ_BYTES]>,
    stat: Option<Reader>,
    io: Option<Reader>,
    loadavg: Option<Reader>,
    meminfo: Option<Reader>,
    zones: Vec<Zone>,
    nvml: Option<Nvml>,
    /// Raw time of the previous sample.
    last_raw: u64,
    last: Counts,
    page_bytes: f64,
    cores: f64,
    /// The writer's CPU time spent sampling.
    cpu_ns: u64,
    /// Bytes the sampler read from files, taken out of the process's `rchar`.
    read_bytes: u64,
}

impl Sampler {
    /// Opens the files and takes the first counters (the base of the first
    /// sample's rates); the first sample is due a period later.
    pub fn new(period_ms: u64, clock: &Clock) -> Sampler {
        let cpu0 = thread_cpu_ns();
        let mut buf = Box::new([0u8; READ_BYTES]);
        let proc_file = |name: &str, buf: &mut [u8; READ_BYTES]| {
            Reader::open(&Path::new("/proc").join(name), buf)
        };
        let stat = proc_file("self/stat", &mut buf);
        let io = proc_file("self/io", &mut buf);
        let loadavg = proc_file("loadavg", &mut buf);
        let meminfo = proc_file("meminfo", &mut buf);
        let mut metrics: Vec<Metric> = FIXED
            .iter()
            .map(|&(name, unit, description)| Metric {
                name: name.into(),
                unit,
                description,
            })
            .collect();
        let mut unavailable = Vec::new();
        for (what, ok) in [
            (
                "/proc/self/stat (rss, threads, page faults)",
                stat.is_some(),
            ),
            ("/proc/loadavg (load)", loadavg.is_some()),
            ("/proc/meminfo (mem_available)", meminfo.is_some()),
        ] {
            if !ok {
                unavailable.push(format!("{what} is not readable"));
            }
        }
        if io.is_some() {
            metrics.extend(IO.iter().map(|&(name, unit, description)| Metric {
                name: name.into(),
                unit,
                description,
            }));
        } else {
            unavailable.push("/proc/self/io is not readable here: no I/O metrics".into());
        }
        let (zones, names, unreadable) = rapl_zones(Path::new(POWERCAP), &mut buf);
        metrics.extend(names.into_iter().map(|name| Metric {
            name: format!("power {name}"),
            unit: Unit::Watts,
            description: "power of a RAPL zone (energy_uj per elapsed time)",
        }));
        if unreadable > 0 {
            unavailable.push(format!(
                "{unreadable} RAPL zone(s) in {POWERCAP} whose energy_uj is not readable \
                 (root only on this node): no power for them"
            ));
        }
        let nvml = match Nvml::open() {
            None => None,
            Some(Ok(n)) => Some(n),
            Some(Err(e)) => {
                unavailable.push(format!("{e}: no GPU power"));
                None
            }
        };
        if let Some(n) = &nvml {
            metrics.extend(n.indices().map(|i| Metric {
                name: format!("power gpu{i}"),
                unit: Unit::Watts,
                description: "power draw of an NVIDIA GPU (NVML)",
            }));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let n = metrics.len();
        let period = Duration::from_millis(period_ms);
        let mut s = Sampler {
            period,
            next: Instant::now() + period,
            values: vec![f64::NAN; n],
            ranges: Ranges::new(period_ms, n),
            metrics,
            unavailable,
            buf,
            stat,
            io,
            loadavg,
            meminfo,
            zones,
            nvml,
            last_raw: 0,
            last: Counts::default(),
            page_bytes: if page > 0 { page as f64 } else { 4096.0 },
            cores,
            cpu_ns: 0,
            read_bytes: 0,
        };
        (s.last_raw, s.last) = s.counts(clock);
        s.cpu_ns = thread_cpu_ns().saturating_sub(cpu0);
        s
    }

    /// The metrics, in the order of the values of [`Sampler::sample`].
    pub fn metrics(&self) -> &[Metric] {
        &self.metrics
    }

    /// Samples taken so far.
    pub fn samples(&self) -> u64 {
        self.ranges.samples()
    }

    /// How long until the next sample is due (zero: now).
    pub fn until_next(&self) -> Duration {
        self.next.saturating_duration_since(Instant::now())
    }

    /// The time since the previous sample at raw time `raw`, in ns.
    pub fn since_last(&self, clock: &Clock, raw: u64) -> u64 {
        clock.delta_ns(self.last_raw, raw)
    }

    /// Takes a sample now: adds it to the ranges and returns its raw time, the
    /// metrics and each one's value (NaN: none this time).
    pub fn sample(&mut self, clock: &Clock) -> (u64, &[Metric], &[f64]) {
        let cpu0 = thread_cpu_ns();
        let now = Instant::now();
        self.next += self.period;
        if self.next <= now {
            // Fell behind (a long round): the next period starts now.
            self.next = now + self.period;
        }
        let before = self.last;
        let (raw, now_counts) = self.counts(clock);
        let dt_ns = clock.delta_ns(self.last_raw, raw).max(1);
        let secs = dt_ns as f64 * 1e-9;
        let rate = |before: u64, after: u64| after.saturating_sub(before) as f64 / secs;
        let v = &mut self.values;
        v.fill(f64::NAN);
        let cores = (now_counts.cpu_us.saturating_sub(before.cpu_us) as f64 * 1e3) / dt_ns as f64;
        v[CPU_CORES] = cores;
        v[CPU_SHARE] = 100.0 * cores / self.cores;
        v[VOLUNTARY] = rate(before.voluntary, now_counts.voluntary);
        v[INVOLUNTARY] = rate(before.involuntary, now_counts.involuntary);
        if self.stat.is_some() {
            let (b, n) = (before.stat, now_counts.stat);
            v[RSS] = n.rss_pages as f64 * self.page_bytes;
            v[THREADS] = n.threads as f64;
            v[MINOR_FAULTS] = rate(b.minor_faults, n.minor_faults);
            v[MAJOR_FAULTS] = rate(b.major_faults, n.major_faults);
        }
        let mut at = OPTIONAL;
        if self.io.is_some() {
            let (b, n) = (before.io, now_counts.io);
            v[at] = rate(b.read_bytes, n.read_bytes);
            v[at + 1] = rate(b.write_bytes, n.write_bytes);
            v[at + 2] = rate(b.rchar, n.rchar);
            v[at + 3] = rate(b.wchar, n.wchar);
            at += 4;
        }
        if let Some(r) = &self.loadavg {
            let text = counted(r.read(&mut self.buf), &mut self.read_bytes);
            if let Some(l) = text.and_then(procfs::parse_loadavg) {
                v[LOAD] = l;
            }
        }
        if let Some(r) = &self.meminfo {
            let text = counted(r.read(&mut self.buf), &mut self.read_bytes);
            if let Some(m) = text.and_then(procfs::parse_mem_available) {
                v[MEM_AVAILABLE] = m as f64;
            }
        }
        for z in &mut self.zones {
            let text = counted(z.energy.read(&mut self.buf), &mut self.read_bytes);
            if let Some(e) = text.and_then(procfs::parse_number) {
                let uj = procfs::energy_delta(z.last, e, z.max_range);
                z.last = e;
                v[at] = uj as f64 * 1e-6 / secs;
            }
            at += 1;
        }
        if let Some(n) = &self.nvml {
            n.watts(&mut v[at..]);
        }
        self.last = now_counts;
        self.last_raw = raw;
        self.ranges.add(&self.values);
        self.cpu_ns += thread_cpu_ns().saturating_sub(cpu0);
        (raw, &self.metrics, &self.values)
    }

    /// The growing counters now, and the raw time they are of (taken right
    /// after the CPU times, which make the finest rate); a figure that cannot be
    /// read keeps its last value.
    /// CPU time, page faults and context switches are the program's: the
    /// writer's own (this thread: sampling, napping, faulting in buffers,
    /// writing traces) are taken out, as are the bytes the sampler reads from
    /// `rchar` (kprof's cost is in the profile's `kprof` section).
    fn counts(&mut self, clock: &Clock) -> (u64, Counts) {
        let mut c = self.last;
        let (process, writer) = (rusage(libc::RUSAGE_SELF), rusage(libc::RUSAGE_THREAD));
        let raw = clock.now();
        let (Some(process), Some(writer)) = (process, writer) else {
            return (raw, c);
        };
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        let cpu = |u: &libc::rusage| us(u.ru_utime) + us(u.ru_stime);
        c.cpu_us = cpu(&process).saturating_sub(cpu(&writer));
        c.voluntary = (process.ru_nvcsw as u64).saturating_sub(writer.ru_nvcsw as u64);
        c.involuntary = (process.ru_nivcsw as u64).saturating_sub(writer.ru_nivcsw as u64);
        let (writer_minor, writer_major) = (writer.ru_minflt as u64, writer.ru_majflt as u64);
        if let Some(mut s) = self
            .stat
            .as_ref()
            .and_then(|r| counted(r.read(&mut self.buf), &mut self.read_bytes))
            .and_then(procfs::parse_stat)
        {
            s.minor_faults = s.minor_faults.saturating_sub(writer_minor);
            s.major_faults = s.major_faults.saturating_sub(writer_major);
            c.stat = s;
        }
        // `rchar` counts a read once it returns: every read of the sampler so
        // far, not this one.
        let read_before = self.read_bytes;
        if let Some(mut io) = self
            .io
            .as_ref()
            .and_then(|r| counted(r.read(&mut self.buf), &mut self.read_bytes))
            .and_then(procfs::parse_io)
        {
            io.rchar = io.rchar.saturating_sub(read_before);
            c.io = io;
        }
        (raw, c)
    }

    /// The profile's `system` section.
    pub fn report(&self) -> System {
        let mut s = self.ranges.report(&self.metrics, self.unavailable.clone());
        s.sampler_cpu_ns = self.cpu_ns;
        s
    }
}

/// `getrusage(who)`.
fn rusage(who: libc::c_int) -> Option<libc::rusage> {
    // SAFETY: getrusage writes one rusage into the zeroed struct we own.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        (libc::getrusage(who, &mut u) == 0).then_some(u)
    }
}

/// `text`, adding its length to `total` (the bytes the sampler read).
fn counted<'a>(text: Option<&'a str>, total: &mut u64) -> Option<&'a str> {
    if let Some(t) = text {
        *total += t.len() as u64;
    }
    text
}

/// The readable RAPL zones under `root` (zones `intel-rapl:N` and their
/// subzones `intel-rapl:N:M`), their names (a subzone's after its package's:
/// `package-0/core`), and how many zones there are whose counter cannot be read.
fn rapl_zones(root: &Path, buf: &mut [u8; READ_BYTES]) -> (Vec<Zone>, Vec<String>, usize) {
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(root) {
        Ok(d) => d
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("intel-rapl:"))
            })
            .collect(),
        Err(_) => return (Vec::new(), Vec::new(), 0),
    };
    dirs.sort();
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let (mut zones, mut names, mut unreadable) = (Vec::new(), Vec::new(), 0);
    for dir in dirs {
        let Some(name) = read(&dir.join("name")).map(|n| n.trim().to_string()) else {
            continue;
        };
        // A subzone (intel-rapl:0:1) is named after its zone (intel-rapl:0).
        let id = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let name = match id.rsplit_once(':') {
            Some((parent, _)) if parent.contains(':') => {
                match read(&root.join(parent).join("name")) {
                    Some(p) => format!("{}/{name}", p.trim()),
                    None => name,
                }
            }
            _ => name,
        };
        let max_range = read(&dir.join("max_energy_range_uj"))
            .and_then(|t| procfs::parse_number(&t))
            .unwrap_or(u64::MAX);
        let Some(energy) = Reader::open(&dir.join("energy_uj"), buf) else {
            unreadable += 1;
            continue;
        };
        let Some(last) = energy.read(buf).and_then(procfs::parse_number) else {
            unreadable += 1;
            continue;
        };
        zones.push(Zone {
            energy,
            max_range,
            last,
        });
        names.push(name);
    }
    (zones, names, unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rapl_zones_of_a_powercap_tree() {
        let root = std::env::temp_dir().join(format!("kprof-rapl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (id, name, energy) in [
            ("intel-rapl:0", "package-0", "1000000"),
            ("intel-rapl:0:0", "core", "400000"),
            ("intel-rapl:1", "package-1", "x"),
            ("dtpm", "dtpm", "1"),
        ] {
            let d = root.join(id);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
            std::fs::write(d.join("energy_uj"), format!("{energy}\n")).unwrap();
            std::fs::write(d.join("max_energy_range_uj"), "262143328850\n").unwrap();
        }
        let mut buf = [0; READ_BYTES];
        let (zones, names, unreadable) = rapl_zones(&root, &mut buf);
        assert_eq!(names, ["package-0", "package-0/core"]);
        assert_eq!(unreadable, 1);
        assert_eq!(zones[0].last, 1_000_000);
        assert_eq!(zones[1].max_range, 262_143_328_850);
        let _ = std::fs::remove_dir_all(&root);
        assert!(rapl_zones(&root, &mut buf).0.is_empty());
    }

    #[test]
    fn a_sample_of_this_process() {
        let clock = Clock::new();
        let mut s = Sampler::new(10, &clock);
        // Another thread busy for ~30 ms, touching 32 MiB (the sampling thread's
        // own CPU time is left out, as the writer's is).
        let worker = std::thread::spawn(|| {
            let t = Instant::now();
            let v = vec![1u8; 32 << 20];
            std::hint::black_box(&v);
            while t.elapsed() < Duration::from_millis(30) {
                std::hint::black_box(0);
            }
            (v, thread_cpu_ns())
        });
        let (kept, worker_ns) = worker.join().unwrap();
        let names: Vec<&str> = s.metrics().iter().map(|m| m.name.as_str()).collect();
        assert_eq!(&names[..OPTIONAL], FIXED.map(|f| f.0));
        let since = s.since_last(&clock, clock.now()) as f64;
        let v = s.sample(&clock).2.to_vec();
        // Other tests' threads may add to it, never take away (within the
        // microsecond rounding of getrusage).
        let worker_cores = worker_ns as f64 / since;
        assert!(
            v[CPU_CORES] >= worker_cores * 0.9 && v[CPU_CORES] < 8.0,
            "{worker_cores} {v:?}"
        );
        assert!(v[RSS] >= (32 << 20) as f64, "{v:?}");
        assert!(v[MINOR_FAULTS] > 0.0 && v[THREADS] >= 2.0, "{v:?}");
        assert!(v[MEM_AVAILABLE] > 0.0 && v[LOAD] >= 0.0, "{v:?}");
        drop(kept);
        let r = s.report();
        assert_eq!((r.samples, s.samples()), (1, 1));
        assert_eq!(r.metrics[RSS].samples, 1);
        assert!(r.sampler_cpu_ns > 0);
    }
}
