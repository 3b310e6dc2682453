/*
 * kokkos_host.c - loads a Kokkos tool library exactly as Kokkos does and drives it
 * through scripted, exactly-counted scenarios. Used by tests/tests/kokkos_harness.rs.
 *
 * Usage: kokkos_host <version> <scenario> [n] [--kokkos-tools-...=...]
 *
 *   version   4    Kokkos 4.5+ (interface 20240906): tool from KOKKOS_TOOLS_LIBS (or
 *                  the deprecated KOKKOS_PROFILE_LIBRARY; both set and different =>
 *                  abort) or --kokkos-tools-libs=; cut at the first ';'. Tool args from
 *                  --kokkos-tools-args= (argv [exe, args...]) or KOKKOS_TOOLS_ARGS (argv
 *                  [args...], no exe), else [exe]. kokkosp_parse_args is called TWICE.
 *             3.4  Kokkos 3.4.01 (interface 20210225): tool from KOKKOS_PROFILE_LIBRARY or
 *                  --kokkos-tools-library= (KOKKOS_TOOLS_LIBS is NOT read by 3.4), first
 *                  strtok(";") token. Tool args only from --kokkos-tools-args=
 *                  ([exe, args...]) else [exe]; kokkosp_parse_args is called ONCE.
 *   --kokkos-tools-help   same as the `help` scenario.
 *
 * Loader (both versions): dlopen(path, RTLD_NOW | RTLD_GLOBAL), never closed; one
 * dlsym per callback name, a missing symbol is never called. Kokkos 3.4.01 and 4.x
 * look up the same 28 non-tuning symbols (the 6 tuning symbols only with
 * Kokkos_ENABLE_TUNING, which the `tuning` scenario emulates):
 *   kokkosp_init_library kokkosp_finalize_library kokkosp_parse_args kokkosp_print_help
 *   kokkosp_request_tool_settings kokkosp_provide_tool_programming_interface
 *   kokkosp_begin/end_parallel_for  kokkosp_begin/end_parallel_reduce
 *   kokkosp_begin/end_parallel_scan kokkosp_begin/end_fence
 *   kokkosp_push/pop_profile_region kokkosp_allocate_data kokkosp_deallocate_data
 *   kokkosp_begin/end_deep_copy kokkosp_dual_view_sync kokkosp_dual_view_modify
 *   kokkosp_declare_metadata kokkosp_create/start/stop/destroy_profile_section
 *   kokkosp_profile_event
 *
 * Call order: init_library(0, version, 0, NULL) -> request_tool_settings(1, &s) with
 * s.requires_global_fencing = true on entry -> provide_tool_programming_interface(1,
 * tpi by value; tpi.fence = harness function, the 31 padding slots filled with
 * garbage as Kokkos leaves them uninitialised) -> [help: print_help(exe), finalize,
 * exit(0)] -> parse_args (x2 for 4, x1 for 3.4) -> 19 declare_metadata pairs ->
 * scenario -> finalize_library (at most once, unless the scenario says otherwise).
 *
 * When the tool leaves requires_global_fencing true, the harness does what Kokkos
 * does: before every begin/end of for/reduce/scan and every push/pop region it runs a
 * global fence, reported as begin_fence/end_fence named
 * "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence" on devID
 * 0x01000000 (OpenMP, instance 0: the emulated Kokkos has a single back end, OpenMP).
 * tpi.fence(devID) counts its calls and runs the same kind of global fence named
 * "Kokkos::Tools::Experimental::Impl::tool_invoked_fence: Tool Requested Fence" (the
 * names of Kokkos 4.x).
 *
 * Device ids: OpenMP kernels 0x01000001 (device "OpenMP", index 0, instance 1),
 * Serial kernels (threads scenario) 0x00000001, global fences 0x01000000.
 * Every kernel of basic/nofinalize/signal/annotate/settings spins >= 1000 ns.
 *
 * Scenarios and their exact expected numbers (N = [n], default 10; M = [n], default
 * 20000):
 *
 * basic / chain (chain is basic; the test puts a second tool after kprof in
 *   KOKKOS_TOOLS_LIBS, the harness still loads only the first):
 *   tree: "solve" region x1
 *           "iteration" region x3
 *             "axpy" parallel_for OpenMP/0/1 x3N
 *             "dot" parallel_reduce x3
 *             "prefix" parallel_scan x3
 *           "sync" fence OpenMP/0/instance 0 x1
 *           "x <- d_x" deep_copy x1      (dst Host "x", src Cuda "d_x", 8000 bytes)
 *           "d_x <- x" deep_copy x2      (dst Cuda "d_x", src Host "x", 8000 bytes each)
 *           "assemble" parallel_for x4   (inside profile section "assembly")
 *   sections: "assembly" count 4 (created once, started/stopped 4 times, destroyed)
 *   events: "checkpoint" x2
 *   memory: Host: allocations 4 (x 8000, y 8000, leaky 4096, tmp 100000), deallocations
 *             3 (tmp, x, y), current 4096, high water 120096, leaks [leaky 4096]
 *           Cuda: allocations 1 (d_x 8000), deallocations 1, current 0, high water 8000
 *   dual_views: "dv": sync_to_device 1, sync_to_host 1, modify_on_device 1,
 *             modify_on_host 2
 *   metadata: 19 keys, "Kokkos Version" = "4.6.1" (4) / "3.4.1" (3.4)
 *   total callbacks of each kind (what a chained tool must see): parallel_for 3N+4,
 *   parallel_reduce 3, parallel_scan 3, push/pop 4, fence 1, deep_copy 3,
 *   allocate 5, deallocate 4, section create 1/start 4/stop 4/destroy 1, event 2,
 *   dual_view_sync 2, dual_view_modify 3, declare_metadata 19, finalize 1.
 *
 * settings: prints "fencing=<0|1>" (what the tool answered) on stdout, then runs
 *   parallel_for "k" x2 at top level. With fencing=1 Kokkos also runs the tool fence
 *   before each begin (outside "k") and each end (inside "k"): 4 fence pairs.
 *
 * bad (anomalies, each marked [+counter]):
 *   parallel_for NULL [null_names]; parallel_for ""; parallel_reduce with a 1 MiB
 *   name ('A' x 1048576); parallel_for "bad\xff\xfename" [invalid_utf8_names];
 *   push NULL/pop [null_names]; push "reg\xc3("/pop [invalid_utf8_names];
 *   push ""/pop; profile_event NULL [null_names]; begin_fence NULL/end [null_names];
 *   end_parallel_for(unknown id) [unmatched_ends]; parallel_for "twice" ended twice
 *   [unmatched_ends]; pop with nothing pushed [unmatched_ends]; begin "outer_k", begin
 *   "inner_k", end outer [out_of_order_ends], end inner [unmatched_ends];
 *   start/stop section 999999 [unknown_sections x2]; deallocate of 0x1000 in Host
 *   [unknown_frees]; end_deep_copy without begin [unmatched_ends]; end_fence(unknown)
 *   [unmatched_ends];
 *   then normal: allocate Host "buf" 4096; region "after" { parallel_for "good" x10,
 *   parallel_reduce "good_r" x5 }; deallocate "buf";
 *   then push "open_region" + begin parallel_for "open_at_exit", never ended
 *   [unclosed_at_exit x2]; finalize;
 *   then after finalize: parallel_for "late" x3, push/pop "late_region", event
 *   "late", allocate "late", declare_metadata, finalize again (all to be ignored).
 *   Totals: null_names 4, invalid_utf8_names 2, unmatched_ends 6, out_of_order_ends 1,
 *   unclosed_at_exit 2, unknown_sections 2, unknown_frees 1, internal_errors 0.
 *
 * threads: 16 pthreads (started together), each: push "worker"; M parallel_for on
 *   Serial 0x00000001, even i named "shared_kernel", odd i "thread_<tt>" (tt = 00..15);
 *   pop. Tree: "worker" x16; "worker"/"shared_kernel" x16*ceil(M/2);
 *   "worker"/"thread_<tt>" x floor(M/2) each.
 *
 * nofinalize: region "solve" { parallel_for "axpy" x5, parallel_reduce "dot" x1 },
 *   allocate Host "nf_leak" 512 (never freed); returns from main WITHOUT finalize.
 *
 * signal: region "before" { parallel_for "pre" x7 }; push "dying"; parallel_for
 *   "inflight" x2; raise(SIGTERM) with "dying" still open. If the process survives it
 *   prints "kokkos_host: survived SIGTERM" on stderr and exits 3.
 *
 * help: init, request_tool_settings, provide_tpi, print_help(exe), finalize, exit(0).
 *
 * names: the names in the file KOKKOS_HOST_NAMES (each ended by a NUL byte: any
 *   other bytes, any length) through the entry points that take one: per name,
 *   push region NAME { parallel_for NAME; allocate and free Host label NAME
 *   (8 bytes) }; profile event NAME. Exits 3 when the file cannot be read.
 *
 * annotate (only when built with -DKPROF_ANNOTATE and linked with -lkprof_core):
 *   kprof_region_begin("app phase") { parallel_for "inner" x5; region "kregion"
 *   { parallel_reduce "r" x2 } } kprof_region_end("app phase"); finalize.
 *   Tree: "app phase" user_region x1 / "inner" x5, "kregion" x1 / "r" x2.
 *
 * teams: Kokkos 4.x's OpenMP back end (2 threads) growing its team scratch: per
 *   thread, deallocate Host "[unlabeled]" (a block allocated before the tool was
 *   loaded) then allocate Host "Kokkos::OpenMP::scratch_mem" 4096 (never freed while
 *   the tool runs); parallel_for "team_kernel" x1; allocate + deallocate Host "user"
 *   256; deallocate Host "[unlabeled]" 0x2000 and Host "ghost" 0x1000 (never
 *   allocated). Host: allocations 3, deallocations 1, no leaks, unknown_frees 2.
 *
 * tuning: as a Kokkos 4.x built with Kokkos_ENABLE_TUNING: the loader also looks up
 *   the 6 tuning symbols (kokkosp_declare_output_type, _declare_input_type,
 *   _request_values, _begin_context, _end_context, _declare_optimization_goal). Then:
 *   declare_output_type("team_size", 1, int64 ordinal set {32, 64, 128});
 *   declare_input_type("kernel_name", 2, string categorical unbounded);
 *   begin_context(1); declare_optimization_goal(1, {3, minimize});
 *   request_values(1, 1 input {2, "axpy"}, 1 output {1, 128 = the default});
 *   prints "have_tuning_tool=<0|1>" (request_values was found) and "tuned=<output>"
 *   on stdout; parallel_for "axpy" x1; end_context(1, {3, 1.5}).
 *
 * tune_known [n]: as `tuning` (a Kokkos 4.x built with Kokkos_ENABLE_TUNING), an
 *   application tuning a block size whose best value is known by construction:
 *   declare_input_type("kernel_name", 1, string categorical unbounded);
 *   declare_output_type("block", 2, int64 ordinal set {1, 2, 4, ..., 128}).
 *   N contexts (N = [n], default 120), each: begin_context(1) (Kokkos reuses
 *   context ids); request_values(1, {1, "stencil"}, {2, 16 = the default});
 *   prints "block=<value>" on stdout; parallel_for "stencil" spinning
 *   cost(block) = 20 us * (1 + 4 (log2(block) - 2)^2): 20 us at the best, 4,
 *   100 us at its neighbours 2 and 8, 340 us at the default, 16 (neighbours 5
 *   times slower, so that a preempted measurement cannot make one look best);
 *   end_context(1, {0, zeroed}) (no goal declared: what Kokkos passes).
 *
 * tune_bench [n]: three tuning problems whose best values are known by construction
 *   (as tune_known), interleaved: N rounds (N = [n], default 200), each one context
 *   per problem, in order. Input "kernel_name" (id 1: "tile_k", "chunk_k", "rows_k");
 *   outputs "tile" (id 3, int64 set {1, 2, 4, ..., 256}, default 8, best 32),
 *   "chunk" (id 4, the same set, default 64, best 4) and "rows" (id 5, int64 range
 *   [1, 512] by 1, default 128, best 300). A context with value v spins
 *   20 us * (1 + 4 |log2(v) - log2(best)|) for tile and chunk, 20 us * (1 + |v - 300| / 16)
 *   for rows: 20 us at the best. Prints "problem <name> default=<d> default_ns=<cost>
 *   best=<b> best_ns=20000" per problem first, then "<name>=<value> ns=<cost>" per
 *   context. With TUNE_BENCH_GRID=1 the scenario tunes itself, as a naive grid, and
 *   calls no tuning callback: each candidate (tile, chunk: the 9 values; rows: the
 *   9 points 1 + k * 511 / 8) 3 times, round-robin, timed with CLOCK_MONOTONIC, then
 *   the candidate with the lowest median of its 3 times for every later context.
 *
 * tune_misuse: the tuning interface misused, each once: a declaration with an
 *   undefined value type (7), one with an undefined candidate kind (9), one with a
 *   set of 4 values and a NULL array; then the valid "block" and "kernel_name" of
 *   tune_known; end_context(42) never begun; begin_context(1) twice;
 *   declare_optimization_goal(1, {77, minimize}) (undeclared); request_values(1,
 *   inputs {99 undeclared}, outputs {2, 3 (not in the set)}, {98 undeclared});
 *   request_values(1, 2 inputs at NULL, 1 output at NULL); end_context(1) twice;
 *   begin_context(5) never ended. Prints "survived=1" on stdout.
 *
 * device / device_gpu: a Kokkos 4.x with two back ends, OpenMP and Cuda (Kokkos::fence
 *   then reports one begin/end fence pair per back end: OpenMP 0x01000000 first, then
 *   Cuda 0x02000000). A Cuda kernel is asynchronous: its begin/end callbacks bracket
 *   the ~1 us launch, and each launch queues DEVICE_KERNEL_MS = 20 ms of device work;
 *   any fence of the Cuda back end (a global fence, tpi.fence, an instance fence)
 *   sleeps until the queued work is done, inside its Cuda begin/end fence pair.
 *   device_gpu first does what a GPU activity plugin does once attached: it dlopens
 *   KOKKOS_HOST_CORE (libkprof_core.so) with RTLD_NOLOAD (it must be the very core
 *   the tool loaded) and calls its table's gpu_activity(1); exit 2 if it cannot.
 *   Then both run: push "step" { parallel_for "cuda_axpy" Cuda/0/1 (0x02000001) xN
 *   (N = [n], default 3); parallel_reduce "cuda_dot" Cuda x1; parallel_for "host_k"
 *   OpenMP x3; parallel_for "serial_k" Serial x2; fence "sync" on the Cuda instance
 *   0x02000001 (one begin/end pair) } pop.
 *   Prints on stdout (tpi.fence calls, classified by the kernel end they came from):
 *     tool_fences=<all calls>
 *     device_ends=<N+1> fenced_once=<device kernel ends with exactly one call>
 *     host_ends=5 host_fences=<calls during host kernel ends>
 *     other_fences=<calls outside any kernel end> wrong_dev=<calls whose devID is
 *     not the ending kernel's>
 *
 * Nothing is printed on stdout except by the `settings`, `tuning`, `tune_known`,
 * `tune_bench`, `tune_misuse` and `device` scenarios.
 */
#define _GNU_SOURCE
#define KOKKOSP_NO_PROTOTYPES
#include "kokkosp.h"

#ifdef KPROF_ANNOTATE
#include "kprof.h"
#endif

#include "kp_core_api.h"
#include "names_file.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEV_OPENMP 0x01000001u
#define DEV_SERIAL 0x00000001u
#define DEV_OPENMP_GLOBAL 0x01000000u
#define DEV_CUDA 0x02000001u
#define DEV_CUDA_GLOBAL 0x02000000u
#define DEVICE_KERNEL_MS 20
#define TOOL_FENCE_NAME "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence"
#define TOOL_REQUESTED_FENCE_NAME \
  "Kokkos::Tools::Experimental::Impl::tool_invoked_fence: Tool Requested Fence"

static struct {
  Kokkos_Profiling_initFunction init;
  Kokkos_Profiling_finalizeFunction finalize;
  Kokkos_Profiling_parseArgsFunction parse_args;
  Kokkos_Profiling_printHelpFunction print_help;
  Kokkos_Tools_requestToolSettingsFunction request_tool_settings;
  Kokkos_Tools_provideToolProgrammingInterfaceFunction provide_tpi;
  Kokkos_Profiling_beginFunction begin_for, begin_reduce, begin_scan;
  Kokkos_Profiling_endFunction end_for, end_reduce, end_scan;
  Kokkos_Profiling_beginFenceFunction begin_fence;
  Kokkos_Profiling_endFenceFunction end_fence;
  Kokkos_Profiling_pushFunction push_region;
  Kokkos_Profiling_popFunction pop_region;
  Kokkos_Profiling_createProfileSectionFunction create_section;
  Kokkos_Profiling_startProfileSectionFunction start_section;
  Kokkos_Profiling_stopProfileSectionFunction stop_section;
  Kokkos_Profiling_destroyProfileSectionFunction destroy_section;
  Kokkos_Profiling_profileEventFunction profile_event;
  Kokkos_Profiling_declareMetadataFunction declare_metadata;
  Kokkos_Profiling_allocateDataFunction allocate_data;
  Kokkos_Profiling_deallocateDataFunction deallocate_data;
  Kokkos_Profiling_beginDeepCopyFunction begin_deep_copy;
  Kokkos_Profiling_endDeepCopyFunction end_deep_copy;
  Kokkos_Profiling_dualViewSyncFunction dual_view_sync;
  Kokkos_Profiling_dualViewModifyFunction dual_view_modify;
  /* tuning, looked up only as by a Kokkos built with Kokkos_ENABLE_TUNING */
  Kokkos_Tools_outputTypeDeclarationFunction declare_output_type;
  Kokkos_Tools_inputTypeDeclarationFunction declare_input_type;
  Kokkos_Tools_requestValueFunction request_values;
  Kokkos_Tools_contextBeginFunction begin_context;
  Kokkos_Tools_contextEndFunction end_context;
  Kokkos_Tools_optimizationGoalDeclarationFunction declare_optimization_goal;
} cb;

static int is_v4;           /* 1: Kokkos 4.x, 0: Kokkos 3.4 */
static int with_tuning;     /* emulate a Kokkos built with Kokkos_ENABLE_TUNING */
static int global_fencing;  /* the tool's answer to request_tool_settings */
static int finalized;
static volatile int tool_fence_calls;
static pthread_mutex_t tool_fence_lock = PTHREAD_MUTEX_INITIALIZER;
static int with_cuda;          /* the emulated Kokkos also has the Cuda back end */
static long cuda_queued_ms;    /* device work launched and not yet fenced */
/* tpi.fence calls by the kernel end they come from (device scenarios, one thread) */
static uint32_t ending_dev;    /* devID of the kernel whose end callback runs, or 0 */
static int ending;             /* an end callback is running */
static int fences_this_end, device_ends, fenced_once, host_ends, host_fences;
static int other_fences, wrong_dev;

/* ------------------------------------------------------------------ loader */

/* dlsym into a function pointer without a pedantic object/function cast. */
#define LOOKUP(handle, field, name)                        \
  do {                                                     \
    void *p_ = dlsym((handle), (name));                    \
    memcpy(&cb.field, &p_, sizeof(void *));                \
  } while (0)

static void load_tool(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    fprintf(stderr, "Error: Unable to load KokkosP library: %s\n", path);
    fprintf(stderr, "dlopen(%s, RTLD_NOW | RTLD_GLOBAL) failed with %s\n", path, dlerror());
    return;
  }
  /* Same lookup order as Kokkos' Tools::initialize. */
  LOOKUP(h, begin_scan, "kokkosp_begin_parallel_scan");
  LOOKUP(h, begin_for, "kokkosp_begin_parallel_for");
  LOOKUP(h, begin_reduce, "kokkosp_begin_parallel_reduce");
  LOOKUP(h, end_scan, "kokkosp_end_parallel_scan");
  LOOKUP(h, end_for, "kokkosp_end_parallel_for");
  LOOKUP(h, end_reduce, "kokkosp_end_parallel_reduce");
  LOOKUP(h, init, "kokkosp_init_library");
  LOOKUP(h, finalize, "kokkosp_finalize_library");
  LOOKUP(h, push_region, "kokkosp_push_profile_region");
  LOOKUP(h, pop_region, "kokkosp_pop_profile_region");
  LOOKUP(h, allocate_data, "kokkosp_allocate_data");
  LOOKUP(h, deallocate_data, "kokkosp_deallocate_data");
  LOOKUP(h, begin_deep_copy, "kokkosp_begin_deep_copy");
  LOOKUP(h, end_deep_copy, "kokkosp_end_deep_copy");
  LOOKUP(h, begin_fence, "kokkosp_begin_fence");
  LOOKUP(h, end_fence, "kokkosp_end_fence");
  LOOKUP(h, dual_view_sync, "kokkosp_dual_view_sync");
  LOOKUP(h, dual_view_modify, "kokkosp_dual_view_modify");
  LOOKUP(h, declare_metadata, "kokkosp_declare_metadata");
  LOOKUP(h, create_section, "kokkosp_create_profile_section");
  LOOKUP(h, start_section, "kokkosp_start_profile_section");
  LOOKUP(h, stop_section, "kokkosp_stop_profile_section");
  LOOKUP(h, destroy_section, "kokkosp_destroy_profile_section");
  LOOKUP(h, profile_event, "kokkosp_profile_event");
  LOOKUP(h, print_help, "kokkosp_print_help");
  LOOKUP(h, parse_args, "kokkosp_parse_args");
  LOOKUP(h, provide_tpi, "kokkosp_provide_tool_programming_interface");
  LOOKUP(h, request_tool_settings, "kokkosp_request_tool_settings");
  if (with_tuning) {
    LOOKUP(h, declare_output_type, "kokkosp_declare_output_type");
    LOOKUP(h, declare_input_type, "kokkosp_declare_input_type");
    LOOKUP(h, request_values, "kokkosp_request_values");
    LOOKUP(h, end_context, "kokkosp_end_context");
    LOOKUP(h, begin_context, "kokkosp_begin_context");
    LOOKUP(h, declare_optimization_goal, "kokkosp_declare_optimization_goal");
  }
}

/* ------------------------------------------------------ Kokkos-side wrappers */

static void spin_ns(long ns) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

/* A fence of one execution space: a Cuda one waits for the queued device work. */
static void k_space_fence(const char *name, uint32_t dev) {
  uint64_t handle = 0;
  if (cb.begin_fence) cb.begin_fence(name, dev, &handle);
  if ((dev >> 24) == 2 && cuda_queued_ms > 0) {
    struct timespec t = {cuda_queued_ms / 1000, (cuda_queued_ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
    cuda_queued_ms = 0;
  }
  if (cb.end_fence) cb.end_fence(handle);
}

/* Kokkos::fence(name): one begin/end pair per enabled back end (OpenMP, then Cuda
 * when enabled). */
static void k_global_fence(const char *name) {
  k_space_fence(name, DEV_OPENMP_GLOBAL);
  if (with_cuda) k_space_fence(name, DEV_CUDA_GLOBAL);
}

/* The fence Kokkos runs before callbacks that "may require global fencing". */
static void maybe_tool_fence(const void *callback) {
  if (callback != NULL && global_fencing) k_global_fence(TOOL_FENCE_NAME);
}

static void harness_tool_fence(const uint32_t devID) {
  /* Kokkos ignores devID: always a global fence */
  pthread_mutex_lock(&tool_fence_lock);
  tool_fence_calls++;
  if (!ending)
    other_fences++;
  else {
    fences_this_end++;
    if ((ending_dev >> 24) != 2) host_fences++;
    if (devID != ending_dev) wrong_dev++;
  }
  pthread_mutex_unlock(&tool_fence_lock);
  k_global_fence(TOOL_REQUESTED_FENCE_NAME);
}

enum kind { FOR, REDUCE, SCAN };

static uint64_t k_begin(enum kind k, const char *name, uint32_t dev) {
  uint64_t kid = 0;
  Kokkos_Profiling_beginFunction f =
      k == FOR ? cb.begin_for : k == REDUCE ? cb.begin_reduce : cb.begin_scan;
  maybe_tool_fence((const void *)(uintptr_t)f);
  if (f) f(name, dev, &kid);
  return kid;
}

static void k_end(enum kind k, uint64_t kid) {
  Kokkos_Profiling_endFunction f = k == FOR ? cb.end_for : k == REDUCE ? cb.end_reduce : cb.end_scan;
  maybe_tool_fence((const void *)(uintptr_t)f);
  if (f) f(kid);
}

/* A kernel of the device scenarios: its end callback is watched for tpi.fence
 * calls; a Cuda kernel queues DEVICE_KERNEL_MS of device work. */
static void k_watched_kernel(enum kind k, const char *name, uint32_t dev) {
  uint64_t kid = k_begin(k, name, dev);
  spin_ns(1000); /* the launch (Cuda) or the work (host) */
  if ((dev >> 24) == 2) cuda_queued_ms += DEVICE_KERNEL_MS;
  ending = 1;
  ending_dev = dev;
  fences_this_end = 0;
  k_end(k, kid);
  ending = 0;
  if ((dev >> 24) == 2) {
    device_ends++;
    if (fences_this_end == 1) fenced_once++;
  } else {
    host_ends++;
  }
}

/* One kernel launch with ~1 us of "work". */
static void k_kernel(enum kind k, const char *name, uint32_t dev) {
  uint64_t kid = k_begin(k, name, dev);
  spin_ns(1000);
  k_end(k, kid);
}

static void k_push(const char *name) {
  maybe_tool_fence((const void *)(uintptr_t)cb.push_region);
  if (cb.push_region) cb.push_region(name);
}

static void k_pop(void) {
  maybe_tool_fence((const void *)(uintptr_t)cb.pop_region);
  if (cb.pop_region) cb.pop_region();
}

static void k_named_fence(const char *name) { k_global_fence(name); }

static Kokkos_Profiling_SpaceHandle space(const char *name) {
  Kokkos_Profiling_SpaceHandle h;
  memset(&h, 0, sizeof h);
  strncpy(h.name, name, 63);
  return h;
}

static void k_alloc(const char *sp, const char *label, const void *ptr, uint64_t size) {
  if (cb.allocate_data) cb.allocate_data(space(sp), label, ptr, size);
}

static void k_dealloc(const char *sp, const char *label, const void *ptr, uint64_t size) {
  if (cb.deallocate_data) cb.deallocate_data(space(sp), label, ptr, size);
}

static void k_deep_copy(const char *dsp, const char *dlabel, const void *dptr, const char *ssp,
                        const char *slabel, const void *sptr, uint64_t size) {
  if (cb.begin_deep_copy)
    cb.begin_deep_copy(space(dsp), dlabel, dptr, space(ssp), slabel, sptr, size);
  spin_ns(1000);
  if (cb.end_deep_copy) cb.end_deep_copy();
}

static void k_event(const char *name) {
  if (cb.profile_event) cb.profile_event(name);
}

static void k_finalize(void) {
  if (finalized) return; /* Kokkos calls it at most once */
  finalized = 1;
  if (cb.finalize) cb.finalize();
}

/* ---------------------------------------------------------------- metadata */

static void declare_all_metadata(void) {
  static const char *const md[][2] = {
      {"Kokkos Version", NULL}, /* filled per version */
      {"Kokkos_ENABLE_DEBUG", "no"},
      {"Kokkos_ENABLE_DEBUG_BOUNDS_CHECK", "no"},
      {"Kokkos_ENABLE_DEBUG_DUALVIEW_MODIFY_CHECK", "no"},
      {"Kokkos_ENABLE_PROFILING_LOAD_PRINT", "no"},
      {"Kokkos_ENABLE_TUNING", "no"},
      {"Kokkos_ENABLE_LIBDL", "yes"},
      {"Kokkos_ENABLE_AGGRESSIVE_VECTORIZATION", "no"},
      {"Kokkos_ENABLE_HWLOC", "no"},
      {"Kokkos_ENABLE_LIBQUADMATH", "no"},
      {"KOKKOS_COMPILER_GNU", "1220"},
      {"KOKKOS_ARCH_AVX2", "yes"},
      {"Kokkos_ENABLE_ASM", "yes"},
      {"Kokkos_ENABLE_SERIAL", "no"},
      {"Kokkos_ENABLE_OPENMP", "yes"},
      {"Kokkos_ENABLE_CUDA", "no"},
      {"Default Device", "N6Kokkos6OpenMPE"},
      {"OpenMP thread_pool_size", "2"},
      {"Host Parallel Execution Space", "N6Kokkos6OpenMPE"},
  };
  _Static_assert(sizeof md / sizeof md[0] == 19, "19 metadata pairs");
  if (!cb.declare_metadata) return;
  for (size_t i = 0; i < sizeof md / sizeof md[0]; i++) {
    const char *v = md[i][1] ? md[i][1] : (is_v4 ? "4.6.1" : "3.4.1");
    cb.declare_metadata(md[i][0], v);
  }
}

/* --------------------------------------------------------------- tool args */

/* Splits on blanks and tabs like Kokkos; returns a NULL-terminated argv (owned). */
static char **tokenize(const char *exe, const char *args, int *argc) {
  size_t cap = 4 + (args ? strlen(args) : 0);
  char **argv = calloc(cap, sizeof(char *));
  int n = 0;
  if (exe) argv[n++] = strdup(exe);
  if (args) {
    const char *p = args;
    while (*p) {
      while (*p == ' ' || *p == '\t') p++;
      if (!*p) break;
      const char *s = p;
      while (*p && *p != ' ' && *p != '\t') p++;
      argv[n++] = strndup(s, (size_t)(p - s));
    }
  }
  argv[n] = NULL;
  *argc = n;
  return argv;
}

static void free_argv(char **argv, int argc) {
  for (int i = 0; i < argc; i++) free(argv[i]);
  free(argv);
}

static void call_parse_args(const char *exe, const char *cmd_args, const char *env_args) {
  if (!cb.parse_args) return;
  int argc;
  char **argv;
  if (cmd_args)
    argv = tokenize(exe, cmd_args, &argc); /* [exe, args...] */
  else if (is_v4 && env_args)
    argv = tokenize(NULL, env_args, &argc); /* [args...], no exe */
  else
    argv = tokenize(exe, NULL, &argc); /* [exe] */
  if (argc > 0) cb.parse_args(argc, argv);
  free_argv(argv, argc);
}

/* ---------------------------------------------------------------- scenarios */

/* KOKKOS_HOST_STARTS=FILE (basic): the CLOCK_MONOTONIC ns at which each axpy
 * is launched (before its begin callback), written to FILE as 3N native
 * uint64 in launch order: a sampled instance's start maps to its index. */
static uint64_t *axpy_starts;
static size_t axpy_launched;

static uint64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void write_axpy_starts(void) {
  const char *path = getenv("KOKKOS_HOST_STARTS");
  if (!path || !axpy_starts) return;
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(axpy_starts, sizeof *axpy_starts, axpy_launched, f) != axpy_launched) {
    fprintf(stderr, "kokkos_host: cannot write %s\n", path);
    exit(3);
  }
  fclose(f);
}

static void scenario_basic(int n) {
  static double x[1000], y[1000], leaky[512], dx[1000], tmp[12500];
  static char dv[64];
  if (getenv("KOKKOS_HOST_STARTS")) axpy_starts = malloc(3 * (size_t)n * sizeof *axpy_starts);
  k_push("solve");
  k_alloc("Host", "x", x, 8000);
  k_alloc("Host", "y", y, 8000);
  k_alloc("Host", "leaky", leaky, 4096);
  k_alloc("Cuda", "d_x", dx, 8000);
  for (int it = 0; it < 3; it++) {
    k_push("iteration");
    if (it == 0) k_alloc("Host", "tmp", tmp, 100000);
    for (int i = 0; i < n; i++) {
      if (axpy_starts) axpy_starts[axpy_launched++] = mono_ns();
      k_kernel(FOR, "axpy", DEV_OPENMP);
    }
    k_kernel(REDUCE, "dot", DEV_OPENMP);
    k_kernel(SCAN, "prefix", DEV_OPENMP);
    if (it == 0) k_dealloc("Host", "tmp", tmp, 100000);
    k_pop();
  }
  k_named_fence("sync");
  k_deep_copy("Host", "x", x, "Cuda", "d_x", dx, 8000);
  k_deep_copy("Cuda", "d_x", dx, "Host", "x", x, 8000);
  k_deep_copy("Cuda", "d_x", dx, "Host", "x", x, 8000);

  uint32_t sid = 0;
  if (cb.create_section) cb.create_section("assembly", &sid);
  for (int i = 0; i < 4; i++) {
    if (cb.start_section) cb.start_section(sid);
    k_kernel(FOR, "assemble", DEV_OPENMP);
    if (cb.stop_section) cb.stop_section(sid);
  }
  if (cb.destroy_section) cb.destroy_section(sid);

  k_event("checkpoint");
  if (cb.dual_view_modify) {
    cb.dual_view_modify("dv", dv, false);
    cb.dual_view_modify("dv", dv, false);
  }
  if (cb.dual_view_sync) cb.dual_view_sync("dv", dv, true);
  if (cb.dual_view_modify) cb.dual_view_modify("dv", dv, true);
  if (cb.dual_view_sync) cb.dual_view_sync("dv", dv, false);
  k_event("checkpoint");

  k_dealloc("Host", "x", x, 8000);
  k_dealloc("Host", "y", y, 8000);
  k_dealloc("Cuda", "d_x", dx, 8000);
  k_pop();
  write_axpy_starts();
  free(axpy_starts);
}

/* Kokkos 4.x's OpenMP back end (2 threads) growing its team scratch for a team
 * kernel: per thread, the buffer allocated at start-up (before the tool was loaded)
 * is freed as "[unlabeled]" and a bigger one allocated as
 * "Kokkos::OpenMP::scratch_mem"; Kokkos frees those only after finalizing the tool. */
static void scenario_teams(void) {
  static char old_pool[2][64], new_pool[2][4096], user[256];
  for (int t = 0; t < 2; t++) {
    k_dealloc("Host", "[unlabeled]", old_pool[t], 64);
    k_alloc("Host", "Kokkos::OpenMP::scratch_mem", new_pool[t], 4096);
  }
  k_kernel(FOR, "team_kernel", DEV_OPENMP);
  k_alloc("Host", "user", user, 256);
  k_dealloc("Host", "user", user, 256);
  /* two frees of blocks never allocated: an unlabeled one nothing replaces, and a
   * labelled one */
  k_dealloc("Host", "[unlabeled]", (const void *)(uintptr_t)0x2000, 32);
  k_dealloc("Host", "ghost", (const void *)(uintptr_t)0x1000, 64);
}

/* ---- tune_known / tune_misuse (documented at the top) ---- */

static int64_t block_sizes[8] = {1, 2, 4, 8, 16, 32, 64, 128};

static void declare_block_problem(Kokkos_Tools_VariableInfo *out_info,
                                  Kokkos_Tools_VariableInfo *in_info) {
  memset(out_info, 0, sizeof *out_info);
  memset(in_info, 0, sizeof *in_info);
  in_info->type = kokkos_value_string;
  in_info->category = kokkos_value_categorical;
  in_info->valueQuantity = kokkos_value_unbounded;
  out_info->type = kokkos_value_int64;
  out_info->category = kokkos_value_ordinal;
  out_info->valueQuantity = kokkos_value_set;
  out_info->candidates.set.size = 8;
  out_info->candidates.set.values.int_value = block_sizes;
  if (cb.declare_input_type) cb.declare_input_type("kernel_name", 1, in_info);
  if (cb.declare_output_type) cb.declare_output_type("block", 2, out_info);
}

/* 20 us * (1 + 4 (log2(block) - 2)^2) */
static long block_cost_ns(int64_t block) {
  double x = -2.0;
  for (int64_t b = block; b > 1; b >>= 1) x += 1.0;
  return (long)(20000.0 * (1.0 + 4.0 * x * x));
}

static void scenario_tune_known(int n) {
  Kokkos_Tools_VariableInfo out_info, in_info;
  declare_block_problem(&out_info, &in_info);
  for (int i = 0; i < n; i++) {
    if (cb.begin_context) cb.begin_context(1);
    Kokkos_Tools_VariableValue in, out;
    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    in.type_id = 1;
    strcpy(in.value.string_value, "stencil");
    in.metadata = &in_info;
    out.type_id = 2;
    out.value.int_value = 16; /* the application's default */
    out.metadata = &out_info;
    if (cb.request_values) cb.request_values(1, 1, &in, 1, &out);
    printf("block=%lld\n", (long long)out.value.int_value);
    uint64_t kid = k_begin(FOR, "stencil", DEV_OPENMP);
    spin_ns(block_cost_ns(out.value.int_value));
    k_end(FOR, kid);
    Kokkos_Tools_VariableValue none; /* no goal declared: Kokkos passes a zeroed value */
    memset(&none, 0, sizeof none);
    if (cb.end_context) cb.end_context(1, none);
  }
  fflush(stdout);
}

/* tune_bench (documented at the top) */
struct bench_problem {
  const char *name, *kernel;
  size_t id;
  int64_t dflt, best;
  int is_range;
  Kokkos_Tools_VariableInfo info;
  int64_t grid[9];
  double grid_ns[9][3];
  int settled; /* grid index once settled, else -1 */
};

static int64_t bench_set[9] = {1, 2, 4, 8, 16, 32, 64, 128, 256};

static int ilog2(int64_t v) {
  int l = 0;
  while (v > 1) {
    v >>= 1;
    l++;
  }
  return l;
}

static long bench_cost_ns(const struct bench_problem *p, int64_t v) {
  if (p->is_range) {
    double d = (double)(v > 300 ? v - 300 : 300 - v);
    return (long)(20000.0 * (1.0 + d / 16.0));
  }
  int d = ilog2(v) - ilog2(p->best);
  return 20000L * (1 + 4 * (d < 0 ? -d : d));
}

static double median3(const double *x) {
  double a = x[0], b = x[1], c = x[2];
  if (a > b) { double t = a; a = b; b = t; }
  if (b > c) { double t = b; b = c; c = t; }
  if (a > b) { double t = a; a = b; b = t; }
  return b;
}

static void scenario_tune_bench(int n) {
  int grid = getenv("TUNE_BENCH_GRID") && strcmp(getenv("TUNE_BENCH_GRID"), "1") == 0;
  static struct bench_problem ps[3] = {
      {.name = "tile", .kernel = "tile_k", .id = 3, .dflt = 8, .best = 32},
      {.name = "chunk", .kernel = "chunk_k", .id = 4, .dflt = 64, .best = 4},
      {.name = "rows", .kernel = "rows_k", .id = 5, .dflt = 128, .best = 300, .is_range = 1},
  };
  Kokkos_Tools_VariableInfo in_info;
  memset(&in_info, 0, sizeof in_info);
  in_info.type = kokkos_value_string;
  in_info.category = kokkos_value_categorical;
  in_info.valueQuantity = kokkos_value_unbounded;
  if (!grid && cb.declare_input_type) cb.declare_input_type("kernel_name", 1, &in_info);
  for (int k = 0; k < 3; k++) {
    struct bench_problem *p = &ps[k];
    memset(&p->info, 0, sizeof p->info);
    p->info.type = kokkos_value_int64;
    p->info.category = kokkos_value_ordinal;
    if (p->is_range) {
      p->info.valueQuantity = kokkos_value_range;
      p->info.candidates.range.lower.int_value = 1;
      p->info.candidates.range.upper.int_value = 512;
      p->info.candidates.range.step.int_value = 1;
      for (int g = 0; g < 9; g++) p->grid[g] = 1 + g * 511 / 8;
    } else {
      p->info.valueQuantity = kokkos_value_set;
      p->info.candidates.set.size = 9;
      p->info.candidates.set.values.int_value = bench_set;
      for (int g = 0; g < 9; g++) p->grid[g] = bench_set[g];
    }
    p->settled = -1;
    if (!grid && cb.declare_output_type) cb.declare_output_type(p->name, p->id, &p->info);
    printf("problem %s default=%lld default_ns=%ld best=%lld best_ns=20000\n", p->name,
           (long long)p->dflt, bench_cost_ns(p, p->dflt), (long long)p->best);
  }
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 3; k++) {
      struct bench_problem *p = &ps[k];
      int64_t v = p->dflt;
      int g = -1;
      if (grid) {
        if (i < 27) {
          /* round-robin: context i of this problem runs candidate i % 9 */
          g = i % 9;
          v = p->grid[g];
        } else {
          if (p->settled < 0) {
            int b = 0;
            for (int c = 1; c < 9; c++)
              if (median3(p->grid_ns[c]) < median3(p->grid_ns[b])) b = c;
            p->settled = b;
          }
          v = p->grid[p->settled];
        }
      } else {
        if (cb.begin_context) cb.begin_context(1);
        Kokkos_Tools_VariableValue in, out;
        memset(&in, 0, sizeof in);
        memset(&out, 0, sizeof out);
        in.type_id = 1;
        strcpy(in.value.string_value, p->kernel);
        in.metadata = &in_info;
        out.type_id = p->id;
        out.value.int_value = p->dflt;
        out.metadata = &p->info;
        if (cb.request_values) cb.request_values(1, 1, &in, 1, &out);
        v = out.value.int_value;
      }
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      uint64_t kid = k_begin(FOR, p->kernel, DEV_OPENMP);
      spin_ns(bench_cost_ns(p, v));
      k_end(FOR, kid);
      clock_gettime(CLOCK_MONOTONIC, &b);
      if (g >= 0)
        p->grid_ns[g][i / 9] =
            (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
      if (!grid && cb.end_context) {
        Kokkos_Tools_VariableValue none;
        memset(&none, 0, sizeof none);
        cb.end_context(1, none);
      }
      printf("%s=%lld ns=%ld\n", p->name, (long long)v, bench_cost_ns(p, v));
    }
  }
  fflush(stdout);
}

static void scenario_tune_misuse(void) {
  Kokkos_Tools_VariableInfo bad;
  memset(&bad, 0, sizeof bad);
  bad.type = (enum Kokkos_Tools_VariableInfo_ValueType)7;
  if (cb.declare_output_type) cb.declare_output_type("bad_type", 10, &bad);
  bad.type = kokkos_value_int64;
  bad.valueQuantity = (enum Kokkos_Tools_VariableInfo_CandidateValueType)9;
  if (cb.declare_output_type) cb.declare_output_type("bad_kind", 11, &bad);
  bad.valueQuantity = kokkos_value_set;
  bad.candidates.set.size = 4;
  bad.candidates.set.values.int_value = NULL;
  if (cb.declare_output_type) cb.declare_output_type("null_set", 12, &bad);
  Kokkos_Tools_VariableInfo out_info, in_info;
  declare_block_problem(&out_info, &in_info);
  Kokkos_Tools_VariableValue none;
  memset(&none, 0, sizeof none);
  if (cb.end_context) cb.end_context(42, none);
  if (cb.begin_context) cb.begin_context(1);
  if (cb.begin_context) cb.begin_context(1);
  Kokkos_Tools_OptimizationGoal goal = {77, Kokkos_Tools_Minimize};
  if (cb.declare_optimization_goal) cb.declare_optimization_goal(1, goal);
  Kokkos_Tools_VariableValue in, outs[2];
  memset(&in, 0, sizeof in);
  memset(outs, 0, sizeof outs);
  in.type_id = 99;
  outs[0].type_id = 2;
  outs[0].value.int_value = 3;
  outs[1].type_id = 98;
  if (cb.request_values) cb.request_values(1, 1, &in, 2, outs);
  if (cb.request_values) cb.request_values(1, 2, NULL, 1, NULL);
  if (cb.end_context) cb.end_context(1, none);
  if (cb.end_context) cb.end_context(1, none);
  if (cb.begin_context) cb.begin_context(5);
  printf("survived=1\n");
  fflush(stdout);
}

/* Kokkos' tuning interface (Kokkos::Tools::Experimental, Kokkos 4.x built with
 * Kokkos_ENABLE_TUNING) as an application's tuner drives it; each call reaches the
 * tool only when it exports the callback. */
static void scenario_tuning(void) {
  static int64_t team_sizes[3] = {32, 64, 128};
  Kokkos_Tools_VariableInfo out_info, in_info;
  memset(&out_info, 0, sizeof out_info);
  memset(&in_info, 0, sizeof in_info);
  out_info.type = kokkos_value_int64;
  out_info.category = kokkos_value_ordinal;
  out_info.valueQuantity = kokkos_value_set;
  out_info.candidates.set.size = 3;
  out_info.candidates.set.values.int_value = team_sizes;
  in_info.type = kokkos_value_string;
  in_info.category = kokkos_value_categorical;
  in_info.valueQuantity = kokkos_value_unbounded;
  const size_t out_id = 1, in_id = 2, goal_id = 3, ctx = 1;
  if (cb.declare_output_type) cb.declare_output_type("team_size", out_id, &out_info);
  if (cb.declare_input_type) cb.declare_input_type("kernel_name", in_id, &in_info);

  if (cb.begin_context) cb.begin_context(ctx);
  Kokkos_Tools_OptimizationGoal goal = {goal_id, Kokkos_Tools_Minimize};
  if (cb.declare_optimization_goal) cb.declare_optimization_goal(ctx, goal);
  Kokkos_Tools_VariableValue in, out;
  memset(&in, 0, sizeof in);
  memset(&out, 0, sizeof out);
  in.type_id = in_id;
  strcpy(in.value.string_value, "axpy");
  in.metadata = &in_info;
  out.type_id = out_id;
  out.value.int_value = 128; /* the application's default */
  out.metadata = &out_info;
  /* Kokkos calls the tool only when it has request_values (have_tuning_tool()). */
  if (cb.request_values) cb.request_values(ctx, 1, &in, 1, &out);
  printf("have_tuning_tool=%d\ntuned=%lld\n", cb.request_values ? 1 : 0,
         (long long)out.value.int_value);
  fflush(stdout);
  k_kernel(FOR, "axpy", DEV_OPENMP);
  Kokkos_Tools_VariableValue result;
  memset(&result, 0, sizeof result);
  result.type_id = goal_id;
  result.value.double_value = 1.5;
  if (cb.end_context) cb.end_context(ctx, result);
}

/* What a GPU activity plugin does once attached: tells the very core the tool
 * loaded that device times come from it. */
static void gpu_plugin_attaches(void) {
  const char *path = getenv("KOKKOS_HOST_CORE");
  void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (h == NULL) {
    fprintf(stderr, "kokkos_host: the tool's core %s is not loaded\n", path ? path : "(unset)");
    exit(2);
  }
  const kp_core_api *(*get)(uint32_t);
  void *p = dlsym(h, "kprof_core_api");
  memcpy(&get, &p, sizeof p);
  const kp_core_api *api = get ? get(1) : NULL;
  if (api == NULL || api->size != sizeof(kp_core_api)) {
    fprintf(stderr, "kokkos_host: core table of %zu bytes, kp_core_api.h has %zu\n",
            api ? api->size : 0, sizeof(kp_core_api));
    exit(2);
  }
  if (!api->gpu_activity(1) || !api->gpu_activity(0)) {
    fprintf(stderr, "kokkos_host: gpu_activity(1) did not hold\n");
    exit(2);
  }
}

static void scenario_device(int n, int gpu) {
  if (gpu) gpu_plugin_attaches();
  k_push("step");
  for (int i = 0; i < n; i++) k_watched_kernel(FOR, "cuda_axpy", DEV_CUDA);
  k_watched_kernel(REDUCE, "cuda_dot", DEV_CUDA);
  for (int i = 0; i < 3; i++) k_watched_kernel(FOR, "host_k", DEV_OPENMP);
  for (int i = 0; i < 2; i++) k_watched_kernel(FOR, "serial_k", DEV_SERIAL);
  k_space_fence("sync", DEV_CUDA);
  k_pop();
  printf("tool_fences=%d\ndevice_ends=%d fenced_once=%d\nhost_ends=%d host_fences=%d\n"
         "other_fences=%d wrong_dev=%d\n",
         tool_fence_calls, device_ends, fenced_once, host_ends, host_fences, other_fences,
         wrong_dev);
  fflush(stdout);
}

static void scenario_settings(void) {
  printf("fencing=%d\n", global_fencing ? 1 : 0);
  fflush(stdout);
  k_kernel(FOR, "k", DEV_OPENMP);
  k_kernel(FOR, "k", DEV_OPENMP);
}

static void scenario_bad(void) {
  uint64_t k, a, b, h = 0;
  /* names */
  k = k_begin(FOR, NULL, DEV_OPENMP);
  k_end(FOR, k);
  k = k_begin(FOR, "", DEV_OPENMP);
  k_end(FOR, k);
  {
    size_t len = 1u << 20;
    char *big = malloc(len + 1);
    memset(big, 'A', len);
    big[len] = '\0';
    k = k_begin(REDUCE, big, DEV_OPENMP);
    k_end(REDUCE, k);
    free(big);
  }
  k = k_begin(FOR, "bad\xff\xfename", DEV_OPENMP);
  k_end(FOR, k);
  k_push(NULL);
  k_pop();
  k_push("reg\xc3(");
  k_pop();
  k_push("");
  k_pop();
  k_event(NULL);
  if (cb.begin_fence) cb.begin_fence(NULL, DEV_OPENMP_GLOBAL, &h);
  if (cb.end_fence) cb.end_fence(h);

  /* unbalanced */
  k_end(FOR, UINT64_C(0xdeadbeefdeadbeef));
  k = k_begin(FOR, "twice", DEV_OPENMP);
  k_end(FOR, k);
  k_end(FOR, k);
  k_pop();
  a = k_begin(FOR, "outer_k", DEV_OPENMP);
  b = k_begin(FOR, "inner_k", DEV_OPENMP);
  k_end(FOR, a);
  k_end(FOR, b);
  if (cb.start_section) cb.start_section(999999);
  if (cb.stop_section) cb.stop_section(999999);
  k_dealloc("Host", "ghost", (const void *)(uintptr_t)0x1000, 64);
  if (cb.end_deep_copy) cb.end_deep_copy();
  if (cb.end_fence) cb.end_fence(UINT64_C(0xfeedfacefeedface));

  /* normal work, must still be exact */
  static char buf[4096];
  k_alloc("Host", "buf", buf, 4096);
  k_push("after");
  for (int i = 0; i < 10; i++) k_kernel(FOR, "good", DEV_OPENMP);
  for (int i = 0; i < 5; i++) k_kernel(REDUCE, "good_r", DEV_OPENMP);
  k_pop();
  k_dealloc("Host", "buf", buf, 4096);

  /* left open at finalize */
  k_push("open_region");
  (void)k_begin(FOR, "open_at_exit", DEV_OPENMP);
  k_finalize();

  /* after finalize: raw calls, all to be ignored */
  for (int i = 0; i < 3; i++) {
    k = 0;
    if (cb.begin_for) cb.begin_for("late", DEV_OPENMP, &k);
    if (cb.end_for) cb.end_for(k);
  }
  if (cb.push_region) cb.push_region("late_region");
  if (cb.pop_region) cb.pop_region();
  if (cb.profile_event) cb.profile_event("late");
  static char late[8];
  if (cb.allocate_data) cb.allocate_data(space("Host"), "late", late, 8);
  if (cb.declare_metadata) cb.declare_metadata("late", "1");
  if (cb.finalize) cb.finalize();
}

struct thread_arg {
  int index;
  int m;
  pthread_barrier_t *barrier;
};

static void *thread_main(void *p) {
  struct thread_arg *t = p;
  char own[32];
  snprintf(own, sizeof own, "thread_%02d", t->index);
  pthread_barrier_wait(t->barrier);
  k_push("worker");
  for (int i = 0; i < t->m; i++) {
    uint64_t kid = k_begin(FOR, (i % 2 == 0) ? "shared_kernel" : own, DEV_SERIAL);
    k_end(FOR, kid);
  }
  k_pop();
  return NULL;
}

static void scenario_threads(int m) {
  enum { T = 16 };
  pthread_t th[T];
  struct thread_arg args[T];
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, T);
  for (int i = 0; i < T; i++) {
    args[i].index = i;
    args[i].m = m;
    args[i].barrier = &barrier;
    if (pthread_create(&th[i], NULL, thread_main, &args[i]) != 0) {
      fprintf(stderr, "kokkos_host: pthread_create failed\n");
      exit(2);
    }
  }
  for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
}

static void scenario_nofinalize(void) {
  static char leak[512];
  k_push("solve");
  for (int i = 0; i < 5; i++) k_kernel(FOR, "axpy", DEV_OPENMP);
  k_kernel(REDUCE, "dot", DEV_OPENMP);
  k_pop();
  k_alloc("Host", "nf_leak", leak, 512);
}

static void scenario_signal(void) {
  k_push("before");
  for (int i = 0; i < 7; i++) k_kernel(FOR, "pre", DEV_OPENMP);
  k_pop();
  k_push("dying");
  for (int i = 0; i < 2; i++) k_kernel(FOR, "inflight", DEV_OPENMP);
  raise(SIGTERM);
  fprintf(stderr, "kokkos_host: survived SIGTERM\n");
  exit(3);
}

static void scenario_names(void) {
  names_file nf = names_file_read("KOKKOS_HOST_NAMES", "kokkos_host");
  static char block[8];
  for (const char *name; (name = names_file_next(&nf)) != NULL;) {
    k_push(name);
    k_kernel(FOR, name, DEV_OPENMP);
    k_alloc("Host", name, block, 8);
    k_dealloc("Host", name, block, 8);
    k_pop();
    k_event(name);
  }
  names_file_free(&nf);
}

static int scenario_annotate(void) {
#ifdef KPROF_ANNOTATE
  kprof_region_begin("app phase");
  for (int i = 0; i < 5; i++) k_kernel(FOR, "inner", DEV_OPENMP);
  k_push("kregion");
  for (int i = 0; i < 2; i++) k_kernel(REDUCE, "r", DEV_OPENMP);
  k_pop();
  kprof_region_end("app phase");
  return 0;
#else
  fprintf(stderr, "kokkos_host: built without -DKPROF_ANNOTATE\n");
  return 2;
#endif
}

/* --------------------------------------------------------------------- main */

static const char *strip_prefix(const char *arg, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(arg, prefix, n) == 0 ? arg + n : NULL;
}

static char *strip_quotes(const char *s) {
  char *r = strdup(s);
  size_t n = strlen(r);
  if (n > 0 && r[n - 1] == '"') r[--n] = '\0';
  if (r[0] == '"') memmove(r, r + 1, n);
  return r;
}

int main(int argc, char **argv) {
  const char *cmd_libs = NULL;
  char *cmd_args = NULL;
  int help = 0;
  const char *pos[3] = {NULL, NULL, NULL};
  int npos = 0;
  const char *exe = argv[0];

  /* Kokkos strips its own options from argv; the rest is positional. */
  for (int i = 1; i < argc; i++) {
    const char *v;
    if ((v = strip_prefix(argv[i], "--kokkos-tools-libs=")) ||
        (v = strip_prefix(argv[i], "--kokkos-tools-library=")))
      cmd_libs = v;
    else if ((v = strip_prefix(argv[i], "--kokkos-tools-args=")))
      cmd_args = strip_quotes(v);
    else if (strcmp(argv[i], "--kokkos-tools-help") == 0)
      help = 1;
    else if (npos < 3)
      pos[npos++] = argv[i];
  }
  if (npos < 2) {
    fprintf(stderr, "usage: kokkos_host <4|3.4> <scenario> [n] [--kokkos-tools-...]\n");
    return 2;
  }
  if (strcmp(pos[0], "4") == 0)
    is_v4 = 1;
  else if (strcmp(pos[0], "3.4") == 0)
    is_v4 = 0;
  else {
    fprintf(stderr, "kokkos_host: unknown version %s\n", pos[0]);
    return 2;
  }
  const char *scenario = pos[1];
  long n = pos[2] ? strtol(pos[2], NULL, 10) : -1;
  if (strcmp(scenario, "help") == 0) help = 1;
  if (strncmp(scenario, "tun", 3) == 0) with_tuning = 1;
  if (strncmp(scenario, "device", 6) == 0) with_cuda = 1;

  /* ---- which tool ---- */
  const char *lib_spec = NULL;
  char *tool_path = NULL;
  if (is_v4) {
    const char *env_libs = getenv("KOKKOS_TOOLS_LIBS");
    const char *env_old = getenv("KOKKOS_PROFILE_LIBRARY");
    if (env_libs && env_old && strcmp(env_libs, env_old) != 0) {
      fprintf(stderr,
              "Error: expecting a match between KOKKOS_TOOLS_LIBS and "
              "KOKKOS_PROFILE_LIBRARY if both are set.\n");
      abort();
    }
    lib_spec = cmd_libs ? cmd_libs : env_libs ? env_libs : env_old;
    if (lib_spec) {
      tool_path = strdup(lib_spec);
      char *semi = strchr(tool_path, ';');
      if (semi) *semi = '\0';
    }
  } else {
    const char *env_old = getenv("KOKKOS_PROFILE_LIBRARY");
    if (cmd_libs && env_old && strcmp(cmd_libs, env_old) != 0) {
      fprintf(stderr,
              "Error: expecting a match between --kokkos-tools-library and "
              "KOKKOS_PROFILE_LIBRARY if both are set.\n");
      abort();
    }
    lib_spec = cmd_libs ? cmd_libs : env_old;
    if (lib_spec) {
      char *copy = strdup(lib_spec);
      char *tok = strtok(copy, ";");
      if (tok) tool_path = strdup(tok);
      free(copy);
    }
  }

  /* ---- Kokkos::initialize: back ends are up, then the tool ---- */
  if (tool_path && tool_path[0] != '\0') load_tool(tool_path);

  const uint64_t version = is_v4 ? KOKKOSP_INTERFACE_VERSION_4_5 : KOKKOSP_INTERFACE_VERSION_3_4;
  if (cb.init) cb.init(0, version, 0, NULL);

  static Kokkos_Tools_ToolSettings settings; /* a static in Kokkos: padding zeroed */
  settings.requires_global_fencing = true;
  if (cb.request_tool_settings) cb.request_tool_settings(1, &settings);
  global_fencing = settings.requires_global_fencing ? 1 : 0;

  Kokkos_Tools_ToolProgrammingInterface tpi;
  memset(&tpi, 0xA5, sizeof tpi); /* Kokkos does not initialise the padding */
  tpi.fence = harness_tool_fence;
  if (cb.provide_tpi) cb.provide_tpi(1, tpi);

  if (help) {
    if (cb.print_help)
      cb.print_help((char *)exe);
    else
      fprintf(stderr, "Tool has not provided a help message\n");
    k_finalize();
    exit(0);
  }

  const char *env_args = is_v4 ? getenv("KOKKOS_TOOLS_ARGS") : NULL;
  call_parse_args(exe, cmd_args, env_args);
  if (is_v4) call_parse_args(exe, cmd_args, env_args);

  declare_all_metadata();

  /* ---- the application ---- */
  int rc = 0;
  if (strcmp(scenario, "basic") == 0 || strcmp(scenario, "chain") == 0)
    scenario_basic(n > 0 ? (int)n : 10);
  else if (strcmp(scenario, "settings") == 0)
    scenario_settings();
  else if (strcmp(scenario, "tuning") == 0)
    scenario_tuning();
  else if (strcmp(scenario, "tune_known") == 0)
    scenario_tune_known(n > 0 ? (int)n : 120);
  else if (strcmp(scenario, "tune_bench") == 0)
    scenario_tune_bench(n > 0 ? (int)n : 200);
  else if (strcmp(scenario, "tune_misuse") == 0)
    scenario_tune_misuse();
  else if (strcmp(scenario, "device") == 0 || strcmp(scenario, "device_gpu") == 0)
    scenario_device(n > 0 ? (int)n : 3, strcmp(scenario, "device_gpu") == 0);
  else if (strcmp(scenario, "teams") == 0)
    scenario_teams();
  else if (strcmp(scenario, "bad") == 0)
    scenario_bad();
  else if (strcmp(scenario, "threads") == 0)
    scenario_threads(n > 0 ? (int)n : 20000);
  else if (strcmp(scenario, "nofinalize") == 0) {
    scenario_nofinalize();
    free(tool_path);
    free(cmd_args);
    return 0; /* no Kokkos::finalize() */
  } else if (strcmp(scenario, "signal") == 0)
    scenario_signal();
  else if (strcmp(scenario, "annotate") == 0)
    rc = scenario_annotate();
  else if (strcmp(scenario, "names") == 0)
    scenario_names();
  else {
    fprintf(stderr, "kokkos_host: unknown scenario %s\n", scenario);
    rc = 2;
  }

  /* ---- Kokkos::finalize ---- */
  k_finalize();
  if (getenv("KOKKOS_HOST_VERBOSE"))
    fprintf(stderr, "kokkos_host: tool_fence_calls=%d\n", tool_fence_calls);
  free(tool_path);
  free(cmd_args);
  return rc;
}
