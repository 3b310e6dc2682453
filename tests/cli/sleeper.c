/* Waits for a signal: prints "ready" (so the test knows the handler is set), then
 * pauses; on SIGTERM/SIGINT/SIGHUP prints the signal's number and exits 40 + it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_signal(int sig) {
    char msg[32];
    int len = snprintf(msg, sizeof msg, "got %d\n", sig);
    if (write(1, msg, (size_t)len) < 0)
        _exit(1);
    _exit(40 + sig);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    printf("ready\n");
    fflush(stdout);
    for (;;)
        pause();
}
