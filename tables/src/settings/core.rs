//! The core runtime's settings (`libkprof_core.so`): also `--name=value` in
//! `--kokkos-tools-args`, and most of them `kprof run` flags.

use super::setting::{Group, Kind, Setting};

/// The trace formats' names and synonyms.
pub const TRACE_WORDS: &[&str] = &["perfetto", "pftrace", "protobuf", "json", "chrome", "otf2"];

/// The trace formats.
pub const TRACE: Setting = Setting {
        name: "trace",
        var: "KPROF_TRACE",
        run_flag: true,
        kind: Kind::Words {
            words: TRACE_WORDS,
            expected: "a comma list of perfetto, json, otf2",
        },
        meta: "FORMATS",
        default: "none",
        doc: "comma list of trace formats: perfetto (trace.pftrace), json (trace.json), otf2 (otf2/traces.otf2, needs the OTF2 library); empty: none",
    };

/// Whether anything is recorded.
pub const ENABLE: Setting = Setting {
    name: "enable",
    var: "KPROF_ENABLE",
    run_flag: true,
    kind: Kind::Flag,
    meta: "0|1",
    default: "1",
    doc: "0 loads kprof but records nothing",
};

/// The hardware counters read.
pub const COUNTERS: Setting = Setting {
        name: "counters",
        var: "KPROF_COUNTERS",
        run_flag: true,
        kind: Kind::List,
        meta: "EVENTS",
        default: "none",
        doc: "comma list of PAPI events read at the begin and end of counted instances (PAPI_TOT_INS, perf::PAGE-FAULTS, sde:::lib::counter, ...; at most 8; needs libpapi at run time, or KPROF_PAPI_LIB); empty: none",
    };

/// The PAPI library.
pub const PAPI_LIB: Setting = Setting {
    name: "papi-lib",
    var: "KPROF_PAPI_LIB",
    run_flag: false,
    kind: Kind::Path,
    meta: "PATH",
    default: "libpapi.so from the loader's search",
    doc: "path of libpapi.so for KPROF_COUNTERS",
};

/// The OTF2 library.
pub const OTF2_LIB: Setting = Setting {
    name: "otf2-lib",
    var: "KPROF_OTF2_LIB",
    run_flag: false,
    kind: Kind::Path,
    meta: "PATH",
    default: "libotf2.so from the loader's search",
    doc: "path of libotf2.so for KPROF_TRACE=otf2",
};

/// The NVML library.
pub const NVML_LIB: Setting = Setting {
    name: "nvml-lib",
    var: "KPROF_NVML_LIB",
    run_flag: false,
    kind: Kind::Path,
    meta: "PATH",
    default: "libnvidia-ml.so.1 from the loader's search",
    doc: "path of NVML for the GPU power samples of KPROF_SAMPLE_MS",
};

/// The core library, for plugins (read by the ABI's loader).
pub const CORE_LIB: Setting = Setting {
    name: "core-lib",
    var: "KPROF_CORE_LIB",
    run_flag: false,
    kind: Kind::Path,
    meta: "PATH",
    default: "the one next to the plugin",
    doc: "path of libkprof_core.so when it is not next to the plugin",
};

/// The core's settings.
pub const GROUP: Group = Group {
    part: "core",
    settings: &[
        Setting {
            name: "output-dir",
            var: "KPROF_OUTPUT_DIR",
            // `kprof run -o DIR` chooses the exact directory itself.
            run_flag: false,
            kind: Kind::Text,
            meta: "DIR",
            default: "kprof-%e-%p",
            doc: "directory of this process's files; %p pid, %h host, %e executable, %r MPI rank",
        },
        Setting {
            name: "buffer-mb",
            var: "KPROF_BUFFER_MB",
            run_flag: true,
            kind: Kind::Count {
                min: 1,
                max: 65536,
                off: false,
                expected: "a whole number of MiB, 1 to 65536",
            },
            meta: "MIB",
            default: "64",
            doc: "MiB of event buffers; beyond it records are dropped and counted",
        },
        Setting {
            name: "prefault-mb",
            var: "KPROF_PREFAULT_MB",
            run_flag: true,
            kind: Kind::Count {
                min: 0,
                max: 65536,
                off: false,
                expected: "a whole number of MiB, 0 to 65536",
            },
            meta: "MIB",
            default: "0",
            doc: "MiB of those buffers faulted in by the writer at start, in the background, so that a measured phase after a setup phase records into ready memory",
        },
        TRACE,
        Setting {
            name: "trace-max-mb",
            var: "KPROF_TRACE_MAX_MB",
            run_flag: true,
            kind: Kind::Count {
                min: 0,
                max: 1 << 30,
                off: false,
                expected: "a whole number of MiB, 0 (no limit) to 1073741824",
            },
            meta: "MIB",
            default: "2048",
            doc: "MiB after which a trace file (or OTF2 archive) stops growing: it is completed there, with one line saying so; checked at each flush; 0: no limit",
        },
        Setting {
            name: "flush-ms",
            var: "KPROF_FLUSH_MS",
            run_flag: true,
            kind: Kind::Count {
                min: 10,
                max: 3_600_000,
                off: false,
                expected: "milliseconds, 10 to 3600000",
            },
            meta: "MS",
            default: "1000",
            doc: "ms between trace flushes (the writer's processing rounds); without a trace, records wait until half the buffer budget holds them, or exit",
        },
        Setting {
            name: "sample-ms",
            var: "KPROF_SAMPLE_MS",
            run_flag: true,
            // Sampling faster than every 10 ms would cost more than it shows.
            kind: Kind::Count {
                min: 10,
                max: 60_000,
                off: true,
                expected: "milliseconds, 10 to 60000, or 0 (off)",
            },
            meta: "MS",
            default: "0",
            doc: "ms between samples of the process and the node (CPU use, RSS, page faults, context switches, I/O, load, free memory, RAPL and NVML power), taken by the writer thread: counter tracks in traces, min/mean/max in profile.json's system section; 10 to 60000, 0: off",
        },
        Setting {
            name: "sample-hz",
            var: "KPROF_SAMPLE_HZ",
            run_flag: true,
            // Above a few kHz the handler's cost (a few microseconds a sample)
            // is no longer small beside the time it samples.
            kind: Kind::Count {
                min: 1,
                max: 10_000,
                off: true,
                expected: "samples per second of each thread's CPU time, 1 to 10000, or 0 (off)",
            },
            meta: "HZ",
            default: "0",
            doc: "call-stack samples per second of each thread's own CPU time (a timer per thread, a real-time signal, an unwind from .eh_frame), each tagged with the kprof call path the thread was in (threads that never reach kprof are found in /proc/self/task every 100 ms: their samples are the root's): profile.json's stack_samples per call path (self samples by function and line, the program's call paths below the construct), `kprof report --samples`; 1 to 10000, 0: off",
        },
        Setting {
            name: "samples",
            var: "KPROF_SAMPLES",
            run_flag: true,
            kind: Kind::Count {
                min: 0,
                max: 100_000,
                off: false,
                expected: "a whole number, 0 (off) to 100000",
            },
            meta: "N",
            default: "1000",
            doc: "instances per call path kept as (start, duration) samples for scatterplots (a uniform random sample over the run, whatever its length); profile.json holds them for the longest call paths; 0: none",
        },
        Setting {
            name: "max-depth",
            var: "KPROF_MAX_DEPTH",
            run_flag: true,
            kind: Kind::Count {
                min: 1,
                max: 100_000,
                off: false,
                expected: "a whole number, 1 to 100000",
            },
            meta: "N",
            default: "256",
            doc: "deepest call path the profile keeps; deeper instances are counted (anomaly beyond_max_depth) and their time stays in the node at this depth",
        },
        Setting {
            name: "summary",
            var: "KPROF_SUMMARY",
            run_flag: true,
            kind: Kind::Flag,
            meta: "0|1",
            default: "1",
            doc: "print the summary on stderr at exit",
        },
        Setting {
            name: "summary-top",
            var: "KPROF_SUMMARY_TOP",
            run_flag: true,
            kind: Kind::Count {
                min: 1,
                max: 100_000,
                off: false,
                expected: "a whole number, 1 to 100000",
            },
            meta: "N",
            default: "20",
            doc: "rows per summary table",
        },
        Setting {
            name: "signals",
            var: "KPROF_SIGNALS",
            run_flag: true,
            kind: Kind::Flag,
            meta: "0|1",
            default: "1",
            doc: "write complete output on SIGINT/SIGTERM/SIGHUP and on a crash (SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL), say which signal, then let the signal act; only where the program left the default disposition",
        },
        ENABLE,
        Setting {
            name: "kokkos-fences",
            var: "KPROF_KOKKOS_FENCES",
            run_flag: true,
            kind: Kind::Flag,
            meta: "0|1",
            default: "0",
            doc: "1 keeps Kokkos' global fences around kernels and regions",
        },
        Setting {
            name: "in-place",
            var: "KPROF_IN_PLACE",
            run_flag: true,
            kind: Kind::Flag,
            meta: "0|1",
            default: "1",
            doc: "without a trace, each thread adds its events to its own profile as they happen: no records, no background work; 0: records processed by the writer thread, as with a trace",
        },
        COUNTERS,
        Setting {
            name: "counter-kinds",
            var: "KPROF_COUNTER_KINDS",
            run_flag: true,
            kind: Kind::Text,
            meta: "KINDS",
            default: "regions,kernels,parallel",
            doc: "which instances get counters: comma list of regions, kernels, parallel, loops, tasks, sync, data, target, gpu_api, mpi, actor, all",
        },
        Setting {
            name: "fork",
            var: "KPROF_FORK",
            run_flag: true,
            kind: Kind::Flag,
            meta: "0|1",
            default: "1",
            doc: "a forked child measures itself from the fork on, into its own directory (%p is its pid); 0: it records nothing and says so once",
        },
        Setting {
            name: "per-rank",
            var: "KPROF_PER_RANK",
            run_flag: true,
            kind: Kind::Flag,
            meta: "0|1",
            default: "0",
            doc: "MPI: keep each rank's own directory besides the job's merged profile",
        },
        Setting {
            name: "job-output-dir",
            var: "KPROF_JOB_OUTPUT_DIR",
            run_flag: true,
            kind: Kind::Text,
            meta: "DIR",
            default: "kprof-%e-job",
            doc: "MPI: directory of the job's merged profile, written by rank 0 at MPI_Finalize; patterns as --output-dir",
        },
        PAPI_LIB,
        OTF2_LIB,
        NVML_LIB,
        CORE_LIB,
    ],
};
