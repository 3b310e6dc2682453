/* Threads that record many annotation regions, for tests/tests/in_place.rs (each
 * thread's profile aggregated in place, or built from records with a trace). Linked
 * with libkprof_core.so (annotation API). Modes:
 *
 *   many T N      main records region "setup" once; T threads wait at a barrier, then
 *                 each does N iterations of: "outer" { "inner" } on even iterations,
 *                 "outer" { "thread_<tt>" } on odd ones (tt = 00..T-1): 2N begin/end
 *                 pairs per thread. Main joins them and returns.
 *   exited T N MS T threads record N regions "early" { "early_inner" } each and are
 *                 joined; then T new threads record N regions "late" each and are
 *                 joined; then main records regions "main_after" for MS ms (counted;
 *                 prints "main_after <n>" on stdout) and returns.
 *   term T WHO    T threads record "work_<tt>" regions in a loop, forever; one more
 *                 thread opens region "waiting" and blocks on a condition variable that
 *                 is never signalled. Once every worker has recorded 1000 regions and
 *                 "waiting" is open, main prints "ready" on stdout and waits forever
 *                 for a signal. WHO = main: main takes a process signal (it waits in
 *                 pause()); WHO = worker: main and the waiting thread block SIGTERM, so
 *                 the kernel gives it to a worker, in the middle of its loop.
 *   exit T MS     T threads record "busy_<tt>" regions (kind Region) in a loop through
 *                 the core's plugin table, counting the begins the runtime took (a
 *                 nonzero GUID); MS ms after every thread recorded its first region,
 *                 main calls exit() while they go on. kprof
 *                 ends the run in its exit handler; the program's own exit handler
 *                 (registered before kprof's, so it runs after it) then stops the
 *                 workers and prints "recorded <n>": the begins kprof took.
 *   churn T       T threads, one after the other (each joined before the next
 *                 starts), each records one region "task"; then prints the peak
 *                 resident memory: "maxrss_kb <n>".
 */
#include <kprof.h>
#include <pthread.h>

#include "kp_core_api.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

static pthread_barrier_t start_line;
static long iterations;
/* Names live as long as the program: kprof may keep the pointer. */
static char names[MAX_THREADS][32];

static void name_threads(int threads, const char *prefix) {
    for (int i = 0; i < threads; i++)
        snprintf(names[i], sizeof names[i], "%s_%02d", prefix, i);
}

static void *many_worker(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start_line);
    for (long i = 0; i < iterations; i++) {
        const char *inner = (i % 2 == 0) ? "inner" : names[id];
        kprof_region_begin("outer");
        kprof_region_begin(inner);
        kprof_region_end(inner);
        kprof_region_end("outer");
    }
    return NULL;
}

static void join_all(pthread_t *t, int threads) {
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
}

static void many(int threads) {
    pthread_t t[MAX_THREADS];
    name_threads(threads, "thread");
    kprof_region_begin("setup");
    kprof_region_end("setup");
    pthread_barrier_init(&start_line, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, many_worker, (void *)i);
    join_all(t, threads);
}

static void *early_worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start_line);
    for (long i = 0; i < iterations; i++) {
        kprof_region_begin("early");
        kprof_region_begin("early_inner");
        kprof_region_end("early_inner");
        kprof_region_end("early");
    }
    return NULL;
}

static void *late_worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&start_line);
    for (long i = 0; i < iterations; i++) {
        kprof_region_begin("late");
        kprof_region_end("late");
    }
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void exited(int threads, int ms) {
    pthread_t t[MAX_THREADS];
    pthread_barrier_init(&start_line, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, early_worker, (void *)i);
    join_all(t, threads);
    pthread_barrier_destroy(&start_line);
    pthread_barrier_init(&start_line, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, late_worker, (void *)i);
    join_all(t, threads);
    long n = 0;
    double end = now_ms() + ms;
    while (now_ms() < end) {
        kprof_region_begin("main_after");
        usleep(1000);
        kprof_region_end("main_after");
        n++;
    }
    printf("main_after %ld\n", n);
    fflush(stdout);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;
static int warmed_up, waiting_open;
static int block_term;

static void block_sigterm(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static void *term_worker(void *arg) {
    long id = (long)arg;
    for (long i = 0;; i++) {
        kprof_region_begin(names[id]);
        kprof_region_end(names[id]);
        if (i == 1000) {
            pthread_mutex_lock(&lock);
            warmed_up++;
            pthread_cond_broadcast(&progress);
            pthread_mutex_unlock(&lock);
        }
    }
    return NULL;
}

static void *waiter(void *arg) {
    (void)arg;
    if (block_term)
        block_sigterm();
    kprof_region_begin("waiting");
    pthread_mutex_lock(&lock);
    waiting_open = 1;
    pthread_cond_broadcast(&progress);
    for (;;)
        pthread_cond_wait(&never, &lock);
    return NULL;
}

static void term(int threads) {
    pthread_t t[MAX_THREADS + 1];
    name_threads(threads, "work");
    /* The workers start with SIGTERM deliverable; main blocks it (when asked) only
     * after creating them, so they do not inherit the blocked mask. */
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, term_worker, (void *)i);
    pthread_create(&t[threads], NULL, waiter, NULL);
    if (block_term)
        block_sigterm();
    pthread_mutex_lock(&lock);
    while (warmed_up < threads || !waiting_open)
        pthread_cond_wait(&progress, &lock);
    pthread_mutex_unlock(&lock);
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}

static int stop_busy;
static int busy_started;
static long busy_recorded[MAX_THREADS];
static int busy_threads;
static pthread_t busy_tids[MAX_THREADS];
static const kp_core_api *api;
enum { KIND_REGION = 5 };

static void *busy_worker(void *arg) {
    long id = (long)arg;
    long recorded = 0;
    while (!__atomic_load_n(&stop_busy, __ATOMIC_ACQUIRE)) {
        uint64_t g = api->begin(KIND_REGION, names[id], 0, 0);
        recorded += g != 0;
        api->end(KIND_REGION, g);
        if (recorded == 1 && g != 0)
            __atomic_add_fetch(&busy_started, 1, __ATOMIC_RELEASE);
    }
    busy_recorded[id] = recorded;
    return NULL;
}

/* Runs after kprof's exit handler: stop the workers, say what kprof took. */
static void busy_report(void) {
    __atomic_store_n(&stop_busy, 1, __ATOMIC_RELEASE);
    long total = 0;
    for (int i = 0; i < busy_threads; i++) {
        pthread_join(busy_tids[i], NULL);
        total += busy_recorded[i];
    }
    printf("recorded %ld\n", total);
    fflush(stdout);
}

static void busy_exit(int threads, int ms) {
    atexit(busy_report);
    api = kprof_core_api(1);
    if (!api || !api->attach("in_place")) {
        fprintf(stderr, "in_place: no core table\n");
        exit(2);
    }
    busy_threads = threads;
    name_threads(threads, "busy");
    for (long i = 0; i < threads; i++)
        pthread_create(&busy_tids[i], NULL, busy_worker, (void *)i);
    struct timespec tick = {0, 100000L};
    while (__atomic_load_n(&busy_started, __ATOMIC_ACQUIRE) < threads)
        nanosleep(&tick, NULL);
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
    exit(0);
}

static void *churn_worker(void *arg) {
    (void)arg;
    kprof_region_begin("task");
    kprof_region_end("task");
    return NULL;
}

static void churn(int threads) {
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        pthread_create(&t, NULL, churn_worker, NULL);
        pthread_join(t, NULL);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("maxrss_kb %ld\n", ru.ru_maxrss);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr,
                "usage: in_place many T N | exited T N MS | term T main|worker | exit T MS"
                " | churn T\n");
        return 2;
    }
    const char *mode = argv[1];
    int threads = atoi(argv[2]);
    if (threads < 1 || (threads > MAX_THREADS && strcmp(mode, "churn"))) {
        fprintf(stderr, "in_place: 1 to %d threads\n", MAX_THREADS);
        return 2;
    }
    if (!strcmp(mode, "many") && argc > 3) {
        iterations = atol(argv[3]);
        many(threads);
        return 0;
    }
    if (!strcmp(mode, "exited") && argc > 4) {
        iterations = atol(argv[3]);
        exited(threads, atoi(argv[4]));
        return 0;
    }
    if (!strcmp(mode, "term") && argc > 3) {
        block_term = !strcmp(argv[3], "worker");
        term(threads);
        return 0;
    }
    if (!strcmp(mode, "churn")) {
        churn(threads);
        return 0;
    }
    if (!strcmp(mode, "exit") && argc > 3) {
        busy_exit(threads, atoi(argv[3]));
        return 0;
    }
    fprintf(stderr, "in_place: unknown mode %s\n", mode);
    return 2;
}
