/*
 * kokkos_driver.c: emulates how Kokkos calls a profiling tool on its hot path,
 * for the overhead benchmark (tests/benches/kokkos_overhead.rs).
 *
 *   kokkos_driver THREADS PAIRS_PER_REP REPS [PAUSE_MS]
 *
 * Loading follows Kokkos (see shared/reference/kokkos-tools.md, "Loading" and
 * "Call order"): when KOKKOS_TOOLS_LIBS is set, its first entry (cut at ';') is
 * dlopen'ed with RTLD_NOW | RTLD_GLOBAL, each callback is looked up with dlsym (a
 * missing symbol is a callback never called), then
 *   kokkosp_init_library(0, 20240906, 0, NULL)
 *   kokkosp_request_tool_settings(1, &settings)   (requires_global_fencing=true on entry)
 *   kokkosp_provide_tool_programming_interface(1, tpi)   (when exported)
 *   kokkosp_parse_args(1, {exe, NULL})                   (when exported)
 * The tool's answer is honoured: when it keeps requires_global_fencing, a cheap
 * stand-in fence (a non-inlined function with a full memory barrier; NOT the cost of a
 * real Kokkos global fence's synchronisation) runs before every begin and every end,
 * and the output says so. Like Kokkos 4.x's global fence with two host back ends
 * (Serial and OpenMP), it reports itself to the tool as one begin_fence/end_fence pair
 * per back end (devIDs 0x00000000, 0x01000000), named "Kokkos::Tools::
 * invoke_kokkosp_callback: Kokkos Profile Tool Fence": 4 fence pairs per kernel.
 *
 * Hot path, per pair, as Kokkos::Tools::beginParallelFor / endParallelFor do it:
 *   if (begin_cb) { fence?; begin_cb("bench_kernel", 0x01000001, &kid); }
 *   if (end_cb)   { fence?; end_cb(kid); }
 * With no tool the same loop runs through the NULL checks. A compiler barrier per
 * pair makes the callback pointers be reloaded every time (as in Kokkos, where real
 * work runs between kernels), so the no-tool loop cannot be hoisted away.
 *
 * Each of THREADS pthreads runs one untimed warm-up repetition, then REPS timed
 * repetitions of PAIRS_PER_REP begin/end pairs; all threads start each repetition
 * together (barrier). Each repetition is timed with clock_gettime(CLOCK_MONOTONIC).
 * With PAUSE_MS > 0 (default 0), every thread sleeps PAUSE_MS milliseconds before
 * each timed repetition's barrier, outside the timed region: an application whose
 * kernel bursts are separated by other work (a tool's background threads can catch
 * up then instead of competing with the bursts).
 * Output (stdout, one key=value per line):
 *   tool=<path or none>  global_fencing=0|1  threads=  pairs_per_rep=  reps=  pause_ms=
 *   thread<i>_median_ns_per_pair=...      (per thread)
 *   min_ns_per_pair=  max_ns_per_pair=
 *   ns_per_pair=<median over all threads' repetitions>
 *   cpu_ns_per_pair=<process user+system CPU time (getrusage(RUSAGE_SELF), so all
 *       threads incl. the tool's background threads) from just before the warm-up to
 *       right after the last repetition, divided by all pairs executed by all threads
 *       (warm-up included): THREADS * (REPS + 1) * PAIRS_PER_REP. The pauses cost no
 *       CPU time, but a tool's background work done during them is counted.>
 * kokkosp_finalize_library runs at the end, outside the timed region and outside
 * cpu_ns_per_pair.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_timing.h"
#include "kokkos_tool.h"

typedef void (*fence_fn)(uint32_t);
typedef struct {
    fence_fn fence;
    fence_fn padding[31];
} ToolProgrammingInterface;

typedef void (*init_fn)(int, uint64_t, uint32_t, KokkosPDeviceInfo *);
typedef void (*finalize_fn)(void);
typedef void (*settings_fn)(uint32_t, ToolSettings *);
typedef void (*tpi_fn)(uint32_t, ToolProgrammingInterface);
typedef void (*parse_args_fn)(int, char **);
typedef void (*begin_fn)(const char *, uint32_t, uint64_t *);
typedef void (*end_fn)(uint64_t);

/* Callback table, like Kokkos' Experimental::current_callbacks. */
static begin_fn begin_parallel_for_cb;
static end_fn end_parallel_for_cb;
static begin_fn begin_fence_cb;
static end_fn end_fence_cb;
static bool global_fencing;

/* Kokkos::fence(name) reports itself once per enabled back end (global instance 0). */
#define TOOL_FENCE_NAME "Kokkos::Tools::invoke_kokkosp_callback: Kokkos Profile Tool Fence"
static const uint32_t fence_devices[2] = {0x00000000u /* Serial */, 0x01000000u /* OpenMP */};

static unsigned long pairs_per_rep;
static int reps;
static unsigned long pause_ms;
static pthread_barrier_t barrier;
static double *samples; /* [thread * reps + rep], ns per pair */
/* One cache line per thread: fences counted without sharing. */
static struct {
    unsigned long long n;
    char pad[56];
} fence_count[64];

/* Stand-in for Kokkos' global fence: a call and a full barrier per back end, each
 * reported to the tool as a fence begin/end pair. */
__attribute__((noinline)) static void stand_in_fence(int thread)
{
    for (int b = 0; b < 2; b++) {
        uint64_t handle = 0;
        begin_fn bf = begin_fence_cb;
        if (bf)
            bf(TOOL_FENCE_NAME, fence_devices[b], &handle);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        end_fn ef = end_fence_cb;
        if (ef)
            ef(handle);
    }
    fence_count[thread].n++;
}

/* The tpi.fence handed to the tool (never called on the timed path by this driver). */
static void tpi_fence(uint32_t dev)
{
    (void)dev;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void run_pairs(int thread, unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        uint64_t kid = 0;
        /* Callback pointers are reloaded every pair, as after real work. */
        __asm__ __volatile__("" ::: "memory");
        begin_fn b = begin_parallel_for_cb;
        if (b) {
            if (global_fencing)
                stand_in_fence(thread);
            b("bench_kernel", 0x01000001u, &kid);
        }
        __asm__ __volatile__("" ::: "memory");
        end_fn e = end_parallel_for_cb;
        if (e) {
            if (global_fencing)
                stand_in_fence(thread);
            e(kid);
        }
    }
}

static void sleep_ms(unsigned long ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ; /* EINTR: sleep the rest */
}

/* Process CPU time (user + system, all threads), in ns. */
static double cpu_ns(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

static void *thread_main(void *arg)
{
    int thread = (int)(intptr_t)arg;
    pthread_barrier_wait(&barrier);
    run_pairs(thread, pairs_per_rep); /* warm-up, untimed */
    for (int r = 0; r < reps; r++) {
        if (pause_ms)
            sleep_ms(pause_ms); /* other application work, untimed */
        pthread_barrier_wait(&barrier);
        double t0 = bench_now_ns();
        run_pairs(thread, pairs_per_rep);
        double t1 = bench_now_ns();
        samples[thread * reps + r] = (t1 - t0) / (double)pairs_per_rep;
    }
    return NULL;
}

static unsigned long parse_ulong(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v == 0) {
        fprintf(stderr, "kokkos_driver: bad %s '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s THREADS PAIRS_PER_REP REPS [PAUSE_MS]\n", argv[0]);
        return 2;
    }
    int threads = (int)parse_ulong(argv[1], "THREADS");
    pairs_per_rep = parse_ulong(argv[2], "PAIRS_PER_REP");
    reps = (int)parse_ulong(argv[3], "REPS");
    if (argc == 5) {
        char *end;
        const char *s = argv[4];
        pause_ms = strtoul(s, &end, 10);
        if (*s == '\0' || *s == '-' || *end != '\0' || pause_ms > 3600000UL) {
            fprintf(stderr, "kokkos_driver: bad PAUSE_MS '%s'\n", s);
            return 2;
        }
    }
    if (threads > 64) {
        fprintf(stderr, "kokkos_driver: at most 64 threads\n");
        return 2;
    }

    finalize_fn finalize = NULL;
    char tool_path[4096] = "none";
    const char *libs = getenv("KOKKOS_TOOLS_LIBS");
    if (libs && *libs) {
        size_t len = strcspn(libs, ";");
        if (len >= sizeof tool_path) {
            fprintf(stderr, "kokkos_driver: KOKKOS_TOOLS_LIBS too long\n");
            return 2;
        }
        memcpy(tool_path, libs, len);
        tool_path[len] = '\0';
        void *h = dlopen(tool_path, RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            /* Kokkos prints an error and runs without a tool; a benchmark must not. */
            fprintf(stderr, "kokkos_driver: dlopen(%s): %s\n", tool_path, dlerror());
            return 1;
        }
        init_fn init = (init_fn)dlsym(h, "kokkosp_init_library");
        settings_fn settings = (settings_fn)dlsym(h, "kokkosp_request_tool_settings");
        tpi_fn tpi = (tpi_fn)dlsym(h, "kokkosp_provide_tool_programming_interface");
        parse_args_fn parse_args = (parse_args_fn)dlsym(h, "kokkosp_parse_args");
        finalize = (finalize_fn)dlsym(h, "kokkosp_finalize_library");
        begin_fn b = (begin_fn)dlsym(h, "kokkosp_begin_parallel_for");
        end_fn e = (end_fn)dlsym(h, "kokkosp_end_parallel_for");
        begin_fence_cb = (begin_fn)dlsym(h, "kokkosp_begin_fence");
        end_fence_cb = (end_fn)dlsym(h, "kokkosp_end_fence");

        if (init)
            init(0, 20240906u, 0, NULL);
        /* Kokkos asks for settings with fencing on; without the symbol it keeps fencing. */
        ToolSettings s;
        memset(&s, 0, sizeof s);
        s.requires_global_fencing = true;
        if (settings)
            settings(1, &s);
        global_fencing = s.requires_global_fencing;
        if (tpi) {
            ToolProgrammingInterface t;
            memset(&t, 0, sizeof t);
            t.fence = tpi_fence;
            tpi(1, t);
        }
        if (parse_args) {
            char *pargv[2] = {argv[0], NULL};
            parse_args(1, pargv);
        }
        begin_parallel_for_cb = b;
        end_parallel_for_cb = e;
        if (!b || !e)
            fprintf(stderr, "kokkos_driver: warning: %s lacks kokkosp_%s_parallel_for\n",
                    tool_path, b ? "end" : "begin");
    }

    samples = calloc((size_t)threads * (size_t)reps, sizeof *samples);
    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    if (!samples || !tids) {
        fprintf(stderr, "kokkos_driver: out of memory\n");
        return 1;
    }
    pthread_barrier_init(&barrier, NULL, (unsigned)threads);
    /* Before any worker exists, so before the warm-up starts. */
    double cpu0 = cpu_ns();
    for (int t = 0; t < threads; t++) {
        int rc = pthread_create(&tids[t], NULL, thread_main, (void *)(intptr_t)t);
        if (rc) {
            fprintf(stderr, "kokkos_driver: pthread_create: %s\n", strerror(rc));
            return 1;
        }
    }
    for (int t = 0; t < threads; t++)
        pthread_join(tids[t], NULL);
    /* Right after the last repetition (workers joined), before finalize. */
    double cpu1 = cpu_ns();
    double total_pairs = (double)threads * (double)(reps + 1) * (double)pairs_per_rep;

    printf("tool=%s\n", tool_path);
    printf("global_fencing=%d\n", global_fencing ? 1 : 0);
    if (global_fencing) {
        unsigned long long fences = 0;
        for (int i = 0; i < 64; i++)
            fences += fence_count[i].n;
        printf("note=tool requires global fencing: a stand-in fence (call + mfence per "
               "back end, each reported through begin/end_fence; not a real Kokkos fence's "
               "synchronisation) ran before every begin and end (%llu fences)\n",
               fences);
    }
    printf("threads=%d\npairs_per_rep=%lu\nreps=%d\npause_ms=%lu\n", threads, pairs_per_rep,
           reps, pause_ms);
    for (int t = 0; t < threads; t++) {
        double tmp[reps];
        memcpy(tmp, &samples[t * reps], sizeof tmp);
        printf("thread%d_median_ns_per_pair=%.3f\n", t, bench_median(tmp, (size_t)reps));
    }
    size_t n = (size_t)threads * (size_t)reps;
    double med = bench_median(samples, n); /* sorts samples */
    printf("min_ns_per_pair=%.3f\nmax_ns_per_pair=%.3f\n", samples[0], samples[n - 1]);
    printf("ns_per_pair=%.3f\n", med);
    printf("cpu_ns_per_pair=%.3f\n", (cpu1 - cpu0) / total_pairs);
    fflush(stdout);

    if (finalize)
        finalize();
    free(samples);
    free(tids);
    return 0;
}
