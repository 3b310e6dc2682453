/* phases [slow-factor]: three annotated phases of controlled time, each a root
 * region, for tests/tests/diff_noise.rs:
 *   "setup"  once, sleeps 100 ms;
 *   "solve"  3 times, sleeps 50 ms each (times slow-factor, default 1);
 *   "halo"   6 times, a busy loop of about 20 us: tiny, and the phase a loaded
 *            machine slows the most in relative terms (kprof diff's absolute
 *            floor must keep it out of regressions).
 * Sleeps, not busy loops, make the measured phases: a loaded machine delays
 * their ends by the time a woken thread waits for a core (up to a few ms here),
 * a small part of 50 ms. */
#include <stdlib.h>
#include <time.h>

#include <kprof.h>

static volatile double sink;

static void sleep_ms(double ms) {
    long ns = (long)(ms * 1e6);
    struct timespec t = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static void busy_us(double us) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    double s = 0.0;
    do {
        for (int i = 1; i <= 200; i++)
            s += 1.0 / i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1e6 + (b.tv_nsec - a.tv_nsec) / 1e3 < us);
    sink = s;
}

int main(int argc, char **argv) {
    double slow = argc > 1 ? atof(argv[1]) : 1.0;
    kprof_region_begin("setup");
    sleep_ms(100.0);
    kprof_region_end("setup");
    for (int k = 0; k < 3; k++) {
        kprof_region_begin("solve");
        sleep_ms(50.0 * slow);
        kprof_region_end("solve");
        for (int h = 0; h < 2; h++) {
            kprof_region_begin("halo");
            busy_us(20.0);
            kprof_region_end("halo");
        }
    }
    return 0;
}
