/*
 * probe_tool.c: an OMPT tool that prints every callback it receives, one line per
 * callback, to stderr: "<thread> <callback> <fields> @<module>+0x<offset>" (the code
 * pointer as an offset into its module, for addr2line). Used to establish what the
 * OpenMP runtime reports for the test programs (tests/tests/openmp.rs records the
 * facts it found); never loaded by the tests themselves for assertions on kprof.
 *
 * Build: gcc -O1 -g -shared -fPIC -I<dir of omp-tools.h> probe_tool.c -o probe.so -ldl
 * Run:   OMP_TOOL_LIBRARIES=./probe.so ./program
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp-tools.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int next_thread = 0;
static __thread int my_thread = -1;
static int next_task = 0;

static int thread_no(void)
{
    if (my_thread < 0) {
        my_thread = __atomic_fetch_add(&next_thread, 1, __ATOMIC_RELAXED);
    }
    return my_thread;
}

static void where(char *buf, size_t len, const void *ptr)
{
    Dl_info info;
    if (ptr && dladdr(ptr, &info) && info.dli_fname) {
        const char *base = strrchr(info.dli_fname, '/');
        snprintf(buf, len, "@%s+0x%lx", base ? base + 1 : info.dli_fname,
                 (unsigned long)((uintptr_t)ptr - (uintptr_t)info.dli_fbase));
    } else {
        snprintf(buf, len, "@%p", ptr);
    }
}

#define EMIT(ptr, ...)                                                                   \
    do {                                                                                 \
        char w_[256];                                                                    \
        where(w_, sizeof w_, (ptr));                                                     \
        pthread_mutex_lock(&out_lock);                                                   \
        fprintf(stderr, "T%d ", thread_no());                                           \
        fprintf(stderr, __VA_ARGS__);                                                    \
        fprintf(stderr, " %s\n", w_);                                                    \
        pthread_mutex_unlock(&out_lock);                                                 \
    } while (0)

static const char *ep(ompt_scope_endpoint_t e)
{
    return e == ompt_scope_begin ? "begin" : e == ompt_scope_end ? "end" : "beginend";
}

static void on_thread_begin(ompt_thread_t type, ompt_data_t *d)
{
    (void)d;
    EMIT(NULL, "thread_begin type=%d", (int)type);
}
static void on_thread_end(ompt_data_t *d)
{
    (void)d;
    EMIT(NULL, "thread_end");
}
static void on_parallel_begin(ompt_data_t *t, const ompt_frame_t *f, ompt_data_t *p,
                              unsigned int req, int flags, const void *ra)
{
    (void)t;
    (void)f;
    static int next_par = 0;
    p->value = (uint64_t)__atomic_add_fetch(&next_par, 1, __ATOMIC_RELAXED);
    EMIT(ra, "parallel_begin P%lu req=%u flags=0x%x", (unsigned long)p->value, req, flags);
}
static void on_parallel_end(ompt_data_t *p, ompt_data_t *t, int flags, const void *ra)
{
    (void)t;
    EMIT(ra, "parallel_end P%lu flags=0x%x", (unsigned long)p->value, flags);
}
static void on_implicit_task(ompt_scope_endpoint_t e, ompt_data_t *p, ompt_data_t *t,
                             unsigned int n, unsigned int idx, int flags)
{
    (void)t;
    EMIT(NULL, "implicit_task %s P%lu n=%u idx=%u flags=0x%x", ep(e),
         p ? (unsigned long)p->value : 0ul, n, idx, flags);
}
static void on_work(ompt_work_t w, ompt_scope_endpoint_t e, ompt_data_t *p, ompt_data_t *t,
                    uint64_t count, const void *ra)
{
    (void)t;
    EMIT(ra, "work %s kind=%d P%lu count=%lu", ep(e), (int)w, p ? (unsigned long)p->value : 0ul,
         (unsigned long)count);
}
static void on_dispatch(ompt_data_t *p, ompt_data_t *t, ompt_dispatch_t kind,
                        ompt_data_t instance)
{
    (void)p;
    (void)t;
    (void)instance;
    EMIT(NULL, "dispatch kind=%d", (int)kind);
}
static void on_sync_region(ompt_sync_region_t k, ompt_scope_endpoint_t e, ompt_data_t *p,
                           ompt_data_t *t, const void *ra)
{
    (void)p;
    (void)t;
    EMIT(ra, "sync_region %s kind=%d", ep(e), (int)k);
}
static void on_sync_wait(ompt_sync_region_t k, ompt_scope_endpoint_t e, ompt_data_t *p,
                         ompt_data_t *t, const void *ra)
{
    (void)p;
    (void)t;
    EMIT(ra, "sync_wait %s kind=%d", ep(e), (int)k);
}
static void on_reduction(ompt_sync_region_t k, ompt_scope_endpoint_t e, ompt_data_t *p,
                         ompt_data_t *t, const void *ra)
{
    (void)p;
    (void)t;
    EMIT(ra, "reduction %s kind=%d", ep(e), (int)k);
}
static void on_mutex_acquire(ompt_mutex_t k, unsigned int hint, unsigned int impl,
                             ompt_wait_id_t id, const void *ra)
{
    (void)hint;
    (void)impl;
    (void)id;
    EMIT(ra, "mutex_acquire kind=%d", (int)k);
}
static void on_mutex_acquired(ompt_mutex_t k, ompt_wait_id_t id, const void *ra)
{
    (void)id;
    EMIT(ra, "mutex_acquired kind=%d", (int)k);
}
static void on_mutex_released(ompt_mutex_t k, ompt_wait_id_t id, const void *ra)
{
    (void)id;
    EMIT(ra, "mutex_released kind=%d", (int)k);
}
static void on_nest_lock(ompt_scope_endpoint_t e, ompt_wait_id_t id, const void *ra)
{
    (void)id;
    EMIT(ra, "nest_lock %s", ep(e));
}
static void on_masked(ompt_scope_endpoint_t e, ompt_data_t *p, ompt_data_t *t, const void *ra)
{
    (void)p;
    (void)t;
    EMIT(ra, "masked %s", ep(e));
}
static void on_task_create(ompt_data_t *enc, const ompt_frame_t *f, ompt_data_t *t, int flags,
                           int has_deps, const void *ra)
{
    (void)enc;
    (void)f;
    t->value = (uint64_t)__atomic_add_fetch(&next_task, 1, __ATOMIC_RELAXED);
    EMIT(ra, "task_create K%lu flags=0x%x deps=%d", (unsigned long)t->value, flags, has_deps);
}
static void on_task_schedule(ompt_data_t *prior, ompt_task_status_t st, ompt_data_t *next)
{
    EMIT(NULL, "task_schedule K%lu status=%d -> K%lu", prior ? (unsigned long)prior->value : 0ul,
         (int)st, next ? (unsigned long)next->value : 0ul);
}
static void on_dependences(ompt_data_t *t, const ompt_dependence_t *deps, int n)
{
    (void)deps;
    EMIT(NULL, "dependences K%lu n=%d", (unsigned long)t->value, n);
}
static void on_task_dependence(ompt_data_t *src, ompt_data_t *sink)
{
    EMIT(NULL, "task_dependence K%lu -> K%lu", (unsigned long)src->value,
         (unsigned long)sink->value);
}
static void on_target(ompt_target_t k, ompt_scope_endpoint_t e, int dev, ompt_data_t *td,
                      ompt_id_t id, const void *ra)
{
    (void)td;
    (void)id;
    EMIT(ra, "target %s kind=%d dev=%d", ep(e), (int)k, dev);
}
static void on_target_emi(ompt_target_t k, ompt_scope_endpoint_t e, int dev, ompt_data_t *td,
                          ompt_data_t *tgt, const void *ra)
{
    (void)td;
    (void)tgt;
    EMIT(ra, "target_emi %s kind=%d dev=%d", ep(e), (int)k, dev);
}
static void on_data_op_emi(ompt_scope_endpoint_t e, ompt_data_t *tt, ompt_data_t *tgt,
                           ompt_id_t *hid, ompt_target_data_op_t op, void *sa, int sd, void *da,
                           int dd, size_t bytes, const void *ra)
{
    (void)tt;
    (void)tgt;
    (void)hid;
    (void)sa;
    (void)da;
    EMIT(ra, "data_op_emi %s op=%d %d->%d bytes=%zu", ep(e), (int)op, sd, dd, bytes);
}
static void on_submit_emi(ompt_scope_endpoint_t e, ompt_data_t *tgt, ompt_id_t *hid,
                          unsigned int teams)
{
    (void)tgt;
    (void)hid;
    EMIT(NULL, "submit_emi %s teams=%u", ep(e), teams);
}

static int initialize(ompt_function_lookup_t lookup, int dev, ompt_data_t *d)
{
    (void)dev;
    (void)d;
    ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
#define REG(ev, fn)                                                                              \
    fprintf(stderr, "probe: set " #ev " -> %d\n", (int)set(ev, (ompt_callback_t)fn))
    REG(ompt_callback_thread_begin, on_thread_begin);
    REG(ompt_callback_thread_end, on_thread_end);
    REG(ompt_callback_parallel_begin, on_parallel_begin);
    REG(ompt_callback_parallel_end, on_parallel_end);
    REG(ompt_callback_implicit_task, on_implicit_task);
    REG(ompt_callback_work, on_work);
    REG(ompt_callback_dispatch, on_dispatch);
    REG(ompt_callback_sync_region, on_sync_region);
    REG(ompt_callback_sync_region_wait, on_sync_wait);
    REG(ompt_callback_reduction, on_reduction);
    REG(ompt_callback_mutex_acquire, on_mutex_acquire);
    REG(ompt_callback_mutex_acquired, on_mutex_acquired);
    REG(ompt_callback_mutex_released, on_mutex_released);
    REG(ompt_callback_nest_lock, on_nest_lock);
    REG(ompt_callback_masked, on_masked);
    REG(ompt_callback_task_create, on_task_create);
    REG(ompt_callback_task_schedule, on_task_schedule);
    REG(ompt_callback_dependences, on_dependences);
    REG(ompt_callback_task_dependence, on_task_dependence);
    REG(ompt_callback_target_emi, on_target_emi);
    REG(ompt_callback_target, on_target);
    REG(ompt_callback_target_data_op_emi, on_data_op_emi);
    REG(ompt_callback_target_submit_emi, on_submit_emi);
    return 1;
}

static void finalize(ompt_data_t *d)
{
    (void)d;
    fprintf(stderr, "probe: finalize\n");
}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime)
{
    static ompt_start_tool_result_t result = {initialize, finalize, {0}};
    fprintf(stderr, "probe: start_tool %u %s\n", version, runtime);
    return &result;
}
