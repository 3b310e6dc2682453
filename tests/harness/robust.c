/* Programs that end or branch in unusual ways, for tests/tests/robustness.rs. Linked
 * with libkprof_core.so (annotation API). Modes:
 *
 *   race T R      T threads wait at a barrier, then each makes its first kprof call
 *                 at the same moment: R regions "r"; main joins them and returns.
 *   exit T R      as race, then thread 0 calls exit(0) while the others wait.
 *   fork P C      P regions "parent", fork; the child records C regions "child" and
 *                 returns from main; the parent waits for it, records P regions
 *                 "after" and returns. Prints "child <pid>" on stdout.
 *   forkexec N    N regions "parent", then N times fork + exec of /bin/true.
 *   hold T R      T threads record R regions "r" each, then "ready" on stdout, and
 *                 every thread waits forever (for a signal).
 *   handler T R   as hold, with its own SIGTERM handler installed after kprof's
 *                 start: on SIGTERM it records R more regions "late" per thread and
 *                 returns from main.
 *   busy T        its own SIGTERM handler, then T threads whose first kprof calls
 *                 race record regions "r" until SIGTERM; main joins them, prints
 *                 "calls <n>" (regions recorded) and returns from main.
 *   crash R SIG   R regions "r", then the signal: segv (a NULL store), bus, abort.
 *   count R       its own handlers that count deliveries and go on running: SIGTERM
 *                 (sigaction, SA_SIGINFO), SIGUSR1 (signal()) and SIGUSR2
 *                 (SA_RESETHAND). Checks that sigaction and signal return the
 *                 actions as set, prints "ready", then for each line on stdin
 *                 records R regions "r" and prints "term T usr1 U usr2 V reset X
 *                 code C from P" (deliveries so far; X: SIGUSR2's action is
 *                 SIG_DFL again; si_code and si_pid of the last SIGTERM); returns
 *                 from main at the end of its input.
 */
#include <kprof.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_barrier_t start_line, done_line;
static int regions;
static int exit_mode;
static volatile sig_atomic_t got_term;

static void record(const char *name, int n) {
    for (int i = 0; i < n; i++) {
        kprof_region_begin(name);
        kprof_region_end(name);
    }
}

static void *worker(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start_line);
    record("r", regions);
    if (exit_mode) {
        pthread_barrier_wait(&done_line);
        if (id == 0)
            exit(0);
        for (;;)
            pause();
    }
    return NULL;
}

static void run_threads(int threads, int wait_forever) {
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    pthread_barrier_init(&start_line, NULL, (unsigned)threads);
    pthread_barrier_init(&done_line, NULL, (unsigned)threads);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    if (wait_forever)
        for (;;)
            pause();
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    free(t);
}

static void *holder(void *arg) {
    (void)arg;
    record("r", regions);
    pthread_barrier_wait(&done_line);
    while (!got_term)
        usleep(1000);
    record("late", regions);
    pthread_barrier_wait(&start_line);
    return NULL;
}

static void on_term(int sig) {
    (void)sig;
    got_term = 1;
}

static void hold(int threads, int own_handler) {
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    kprof_event("start");
    if (own_handler) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
    }
    pthread_barrier_init(&done_line, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, holder, NULL);
    pthread_barrier_wait(&done_line);
    printf("ready\n");
    fflush(stdout);
    if (!own_handler)
        for (;;)
            pause();
    /* The handler interrupts this thread's sleep; the workers poll the flag. */
    while (!got_term)
        usleep(1000);
    pthread_barrier_wait(&start_line);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    free(t);
}

static long busy_counts[256];

static void *busy_worker(void *arg) {
    long id = (long)arg;
    pthread_barrier_wait(&start_line);
    while (!got_term) {
        kprof_region_begin("r");
        kprof_region_end("r");
        busy_counts[id]++;
    }
    return NULL;
}

static void busy(int threads) {
    pthread_t t[256];
    if (threads > 256)
        threads = 256;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    pthread_barrier_init(&start_line, NULL, (unsigned)threads + 1);
    for (long i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, busy_worker, (void *)i);
    pthread_barrier_wait(&start_line);
    printf("ready\n");
    fflush(stdout);
    long total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += busy_counts[i];
    }
    printf("calls %ld\n", total);
    fflush(stdout);
}

static volatile sig_atomic_t term_count, usr1_count, usr2_count, term_code, term_from;

static void count_term(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    (void)ctx;
    term_count++;
    term_code = info->si_code;
    term_from = info->si_pid;
}

static void count_usr1(int sig) {
    (void)sig;
    usr1_count++;
}

static void count_usr2(int sig) {
    (void)sig;
    usr2_count++;
}

static int count(int r) {
    struct sigaction sa, q;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = count_term;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    sigaction(SIGTERM, &sa, NULL);
    memset(&q, 0, sizeof q);
    sigaction(SIGTERM, NULL, &q);
    if (q.sa_sigaction != count_term || (q.sa_flags & (SA_SIGINFO | SA_RESTART)) != (SA_SIGINFO | SA_RESTART) ||
        !sigismember(&q.sa_mask, SIGUSR2) || sigismember(&q.sa_mask, SIGUSR1)) {
        fprintf(stderr, "robust: sigaction returned another SIGTERM action\n");
        return 3;
    }
    if (signal(SIGUSR1, count_usr1) != SIG_DFL || signal(SIGUSR1, count_usr1) != count_usr1) {
        fprintf(stderr, "robust: signal returned another SIGUSR1 handler\n");
        return 3;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count_usr2;
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(SIGUSR2, &sa, NULL);
    printf("ready\n");
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        record("r", r);
        sigaction(SIGUSR2, NULL, &q);
        printf("term %d usr1 %d usr2 %d reset %d code %d from %d\n", (int)term_count, (int)usr1_count,
               (int)usr2_count, q.sa_handler == SIG_DFL, (int)term_code, (int)term_from);
        fflush(stdout);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: robust MODE ARGS\n");
        return 2;
    }
    const char *mode = argv[1];
    int a = atoi(argv[2]);
    int b = argc > 3 ? atoi(argv[3]) : 0;
    if (!strcmp(mode, "race") || !strcmp(mode, "exit")) {
        regions = b;
        exit_mode = !strcmp(mode, "exit");
        run_threads(a, 0);
        return 0;
    }
    if (!strcmp(mode, "fork")) {
        record("parent", a);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            record("child", b);
            return 0;
        }
        printf("child %d\n", (int)pid);
        fflush(stdout);
        int status = 0;
        waitpid(pid, &status, 0);
        record("after", a);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    if (!strcmp(mode, "forkexec")) {
        record("parent", a);
        for (int i = 0; i < a; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                execl("/bin/true", "true", (char *)NULL);
                _exit(127);
            }
            waitpid(pid, NULL, 0);
        }
        return 0;
    }
    if (!strcmp(mode, "hold") || !strcmp(mode, "handler")) {
        regions = b;
        hold(a, !strcmp(mode, "handler"));
        return 0;
    }
    if (!strcmp(mode, "busy")) {
        busy(a);
        return 0;
    }
    if (!strcmp(mode, "count"))
        return count(a);
    if (!strcmp(mode, "crash") && argc > 3) {
        record("r", a);
        if (!strcmp(argv[3], "segv"))
        {
            volatile int *volatile p = NULL;
            *p = 1;
        }
        else if (!strcmp(argv[3], "bus"))
            raise(SIGBUS);
        else
            abort();
        return 0;
    }
    fprintf(stderr, "robust: unknown mode %s\n", mode);
    return 2;
}
