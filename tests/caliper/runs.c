/* runs [problem]: a small annotated program for tests/tests/caliper.rs, whose
 * profile.cali Caliper's readers, Hatchet and Thicket load. Nested regions of
 * short busy loops (main > init, main > solve > halo, main > solve > update),
 * and metadata pairs: the problem named on the command line, and a value with
 * the characters a .cali line escapes. */
#include <stdlib.h>
#include <time.h>

#include <kprof.h>

static volatile double sink;

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
    kprof_metadata("problem", argc > 1 ? argv[1] : "small");
    kprof_metadata("note", "a, b = c\\d");
    kprof_region_begin("main");
    kprof_region_begin("init");
    busy_us(200.0);
    kprof_region_end("init");
    for (int k = 0; k < 3; k++) {
        kprof_region_begin("solve");
        for (int h = 0; h < 2; h++) {
            kprof_region_begin("halo");
            busy_us(50.0);
            kprof_region_end("halo");
        }
        kprof_region_begin("update");
        busy_us(100.0);
        kprof_region_end("update");
        kprof_region_end("solve");
    }
    kprof_region_end("main");
    return 0;
}
