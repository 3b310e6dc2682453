/* peak_rss OUT PROGRAM [ARGS...]: runs PROGRAM with its stdout into the file OUT
 * and prints its exit status and peak resident set size in KiB. PROGRAM is forked
 * from this small process, so its peak is its own: a test measuring a command it
 * forked itself would count its own memory too (a forked child's peak starts at
 * its parent's). Used by tests/tests/views_trust.rs. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: peak_rss OUT PROGRAM [ARGS...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0) {
            perror(argv[1]);
            _exit(127);
        }
        close(fd);
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) {
        perror("wait4");
        return 2;
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    printf("%d %ld\n", code, ru.ru_maxrss);
    return 0;
}
