//! The call-stack samples of `profile.json` (`KPROF_SAMPLE_HZ`): per call path,
//! the samples taken while it was its thread's innermost instance, by function,
//! by source line, and as the tree of the program's own call paths below it;
//! and, once per profile, how they were taken. (Not to be confused with the
//! per-instance samples of `KPROF_SAMPLES`, [`crate::output::samples`], or the
//! system samples of `KPROF_SAMPLE_MS`.)

use serde::{Deserialize, Serialize};

/// How the call-stack samples were taken, and those outside every instance.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StackSamplesInfo {
    /// Samples per second of each thread's CPU time.
    pub hz: u64,
    /// The real-time signal they came with (its number).
    pub signal: i32,
    /// Threads sampled: those that took at least one signal, whether they
    /// reached kprof or not.
    pub threads: u64,
    /// Samples taken, in timer periods: the kernel fires CPU-time timers at its
    /// tick, so above the tick's rate one signal stands for several periods
    /// (its overruns), and counts for all of them.
    pub samples: u64,
    /// Signals handled (each one unwind).
    #[serde(default)]
    pub signals: u64,
    /// Samples that could not be taken (the thread's buffer was full, or no
    /// frame could be read).
    pub lost: u64,
    /// Samples whose unwind stopped before the stack's outermost frame (kept
    /// with the frames found: their own function is right, their call path
    /// shorter).
    pub truncated: u64,
    /// Mean time the signal handler took per signal (unwind included), in ns;
    /// the kernel's delivery of the signal comes on top.
    pub handler_ns_mean: f64,
    /// Samples taken outside every instance (the threads' roots), those of the
    /// threads that never reached kprof among them.
    pub outside: NodeStackSamples,
}

/// The call-stack samples of one call path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStackSamples {
    /// Samples.
    pub samples: u64,
    /// Self samples by the function that was running (the innermost, inlined
    /// ones included), most first.
    pub functions: Vec<FunctionSamples>,
    /// Self samples by source line (with debug information only), most first.
    pub lines: Vec<LineSamples>,
    /// The frames above `paths` in one sample's stack, outermost first (where
    /// the program entered the construct, on one of its threads).
    pub context: Vec<String>,
    /// The program's call paths below the construct: from the deepest function
    /// every sample's stack passes through (a kernel's functor, an OpenMP
    /// outlined body) down to the running function.
    pub paths: Vec<SamplePath>,
}

/// Samples of one function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionSamples {
    /// Demangled name (`module+0xoffset` when neither debug information nor
    /// the symbol table names it).
    pub name: String,
    /// Samples.
    pub samples: u64,
}

/// Samples of one source line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineSamples {
    /// The function the line is in.
    pub function: String,
    /// Source file.
    pub file: String,
    /// Line.
    pub line: u32,
    /// Samples.
    pub samples: u64,
}

/// A node of the program's call paths below a construct.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplePath {
    /// The function.
    pub name: String,
    /// Samples in it and below it.
    pub samples: u64,
    /// Samples in it alone.
    pub self_samples: u64,
    /// The functions it called, most samples first.
    pub children: Vec<SamplePath>,
}
