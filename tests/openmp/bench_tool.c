/*
 * bench_tool.c: the reference OMPT tools of the OpenMP overhead benchmark
 * (tests/benches/openmp_overhead.rs). Both register the same 16 callbacks kprof's
 * plugin uses most (thread, parallel, implicit task, work, dispatch, sync region and
 * wait, mutex, masked, task create/schedule, reduction).
 * - built plain: every callback is empty (the runtime's dispatch cost: the floor
 *   of any tool);
 * - built with -DRDTSC: every callback reads the TSC and stores 16 bytes (the TSC and
 *   an event code) into a per-thread buffer of 64 KiB that is reused (wraps), never
 *   grown: the least a tool that records every event can do.
 * - with -DCOUNTS as well: it also counts the parallel regions the runtime reported
 *   (a plain add in parallel-begin, on the encountering thread) and prints
 *   "bench_tool: N parallel regions" on stderr at finalize, so that a benchmark can
 *   check kprof's count against the runtime's (tests/benches/openmp_app.rs).
 */
#include <omp-tools.h>
#include <stdint.h>
#ifdef COUNTS
#include <stdio.h>
static uint64_t parallel_regions;
#define COUNT_REGION() (parallel_regions++)
#else
#define COUNT_REGION() ((void)0)
#endif

#ifdef RDTSC
#include <x86intrin.h>
#define SLOTS 4096
struct slot {
    uint64_t tsc;
    uint64_t code;
};
static __thread struct slot buffer[SLOTS];
static __thread unsigned pos;
static uint64_t sink;
#define REC(c_)                                                                            \
    do {                                                                                   \
        unsigned p_ = pos++ & (SLOTS - 1);                                                 \
        buffer[p_].tsc = __rdtsc();                                                        \
        buffer[p_].code = (uint64_t)(c_);                                                  \
    } while (0)
#else
#define REC(c_) ((void)(c_))
#endif

static void on_thread_begin(ompt_thread_t t, ompt_data_t *d) { (void)d; REC(1 + t); }
static void on_thread_end(ompt_data_t *d) { (void)d; REC(2); }
static void on_parallel_begin(ompt_data_t *t, const ompt_frame_t *f, ompt_data_t *p,
                              unsigned int r, int fl, const void *ra)
{
    (void)t; (void)f; (void)p; (void)r; (void)fl;
    COUNT_REGION();
    REC((uint64_t)(uintptr_t)ra);
}
static void on_parallel_end(ompt_data_t *p, ompt_data_t *t, int fl, const void *ra)
{
    (void)p; (void)t; (void)fl;
    REC((uint64_t)(uintptr_t)ra);
}
static void on_implicit_task(ompt_scope_endpoint_t e, ompt_data_t *p, ompt_data_t *t,
                             unsigned int n, unsigned int i, int fl)
{
    (void)p; (void)t; (void)n; (void)i; (void)fl;
    REC(e);
}
static void on_work(ompt_work_t w, ompt_scope_endpoint_t e, ompt_data_t *p, ompt_data_t *t,
                    uint64_t c, const void *ra)
{
    (void)w; (void)p; (void)t; (void)c;
    REC((uint64_t)(uintptr_t)ra + e);
}
static void on_dispatch(ompt_data_t *p, ompt_data_t *t, ompt_dispatch_t k, ompt_data_t i)
{
    (void)p; (void)t; (void)i;
    REC(k);
}
static void on_sync(ompt_sync_region_t k, ompt_scope_endpoint_t e, ompt_data_t *p,
                    ompt_data_t *t, const void *ra)
{
    (void)k; (void)p; (void)t;
    REC((uint64_t)(uintptr_t)ra + e);
}
static void on_mutex_acquire(ompt_mutex_t k, unsigned int h, unsigned int i, ompt_wait_id_t w,
                             const void *ra)
{
    (void)k; (void)h; (void)i; (void)ra;
    REC(w);
}
static void on_mutex(ompt_mutex_t k, ompt_wait_id_t w, const void *ra)
{
    (void)k; (void)ra;
    REC(w);
}
static void on_masked(ompt_scope_endpoint_t e, ompt_data_t *p, ompt_data_t *t, const void *ra)
{
    (void)p; (void)t; (void)ra;
    REC(e);
}
static void on_task_create(ompt_data_t *e, const ompt_frame_t *f, ompt_data_t *t, int fl,
                           int d, const void *ra)
{
    (void)e; (void)f; (void)t; (void)fl; (void)d;
    REC((uint64_t)(uintptr_t)ra);
}
static void on_task_schedule(ompt_data_t *p, ompt_task_status_t s, ompt_data_t *n)
{
    (void)p; (void)n;
    REC(s);
}

static int initialize(ompt_function_lookup_t lookup, int dev, ompt_data_t *d)
{
    (void)dev; (void)d;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
    set(ompt_callback_thread_begin, (ompt_callback_t)on_thread_begin);
    set(ompt_callback_thread_end, (ompt_callback_t)on_thread_end);
    set(ompt_callback_parallel_begin, (ompt_callback_t)on_parallel_begin);
    set(ompt_callback_parallel_end, (ompt_callback_t)on_parallel_end);
    set(ompt_callback_implicit_task, (ompt_callback_t)on_implicit_task);
    set(ompt_callback_work, (ompt_callback_t)on_work);
    set(ompt_callback_dispatch, (ompt_callback_t)on_dispatch);
    set(ompt_callback_sync_region, (ompt_callback_t)on_sync);
    set(ompt_callback_sync_region_wait, (ompt_callback_t)on_sync);
    set(ompt_callback_reduction, (ompt_callback_t)on_sync);
    set(ompt_callback_mutex_acquire, (ompt_callback_t)on_mutex_acquire);
    set(ompt_callback_mutex_acquired, (ompt_callback_t)on_mutex);
    set(ompt_callback_mutex_released, (ompt_callback_t)on_mutex);
    set(ompt_callback_masked, (ompt_callback_t)on_masked);
    set(ompt_callback_task_create, (ompt_callback_t)on_task_create);
    set(ompt_callback_task_schedule, (ompt_callback_t)on_task_schedule);
    return 1;
}

static void finalize(ompt_data_t *d)
{
    (void)d;
#ifdef RDTSC
    sink += buffer[0].tsc;
#endif
#ifdef COUNTS
    fprintf(stderr, "bench_tool: %llu parallel regions\n", (unsigned long long)parallel_regions);
#endif
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime)
{
    static ompt_start_tool_result_t result = {initialize, finalize, {0}};
    (void)version;
    (void)runtime;
    return &result;
}
