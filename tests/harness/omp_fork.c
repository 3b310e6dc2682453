/* An OpenMP program that forks: N parallel regions, fork; the child runs C
 * parallel regions and returns from main; the parent waits for it, runs N more
 * and returns. Prints "child <pid>" on stdout. Built with clang -fopenmp (libomp,
 * which has the OMPT tool interface). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int work(int n) {
    int sum = 0;
    for (int i = 0; i < n; i++) {
#pragma omp parallel reduction(+ : sum)
        sum += omp_get_thread_num() + 1;
    }
    return sum;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 5;
    int c = argc > 2 ? atoi(argv[2]) : 7;
    int sum = work(n);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        return work(c) > 0 ? 0 : 1;
    printf("child %d\n", (int)pid);
    fflush(stdout);
    int status = 0;
    waitpid(pid, &status, 0);
    sum += work(n);
    return sum > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
