/* Fork and exec under kprof's call-stack samples, for tests/tests/stack_sampling.rs.
 * Inside region "parent" (so this thread has its sampling timer) it computes ~150 ms,
 * prints the
 * process's POSIX timers ("parent_timers N", from /proc/self/timers), then forks:
 * the child computes ~100 ms of CPU time (time for a timer left behind to fire, whose
 * signal's default action would kill it), prints "child_timers N" and execs `cat
 * /proc/self/timers` (what an exec'd program inherits), which prints nothing when
 * no timer survived. The parent waits for the child and exits with its status.
 */
#include <kprof.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int timers(void) {
    FILE *f = fopen("/proc/self/timers", "r");
    if (!f)
        return -1;
    int n = 0;
    char line[256];
    while (fgets(line, sizeof line, f))
        n += line[0] == 'I'; /* one "ID: n" line per timer */
    fclose(f);
    return n;
}

__attribute__((noinline, noclone)) double compute(double x, long n) {
    for (long i = 0; i < n; i++)
        x = x * 0.9999999 + 1e-9;
    return x;
}

int main(void) {
    kprof_region_begin("parent");
    double x = compute(1.0, 100000000);
    printf("parent_timers %d (%.3f)\n", timers(), x);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        x = compute(x, 60000000);
        printf("child_timers %d (%.3f)\n", timers(), x);
        printf("exec:\n");
        fflush(stdout);
        execlp("cat", "cat", "/proc/self/timers", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    kprof_region_end("parent");
    printf("child_status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return 0;
}
