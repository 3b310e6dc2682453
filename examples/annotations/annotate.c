/* The kprof annotation API from C. Profile it:
 *
 *   cc -O2 -g annotate.c -I<prefix>/include/kprof -L<prefix>/lib -lkprof_core \
 *      -Wl,-rpath,<prefix>/lib -o annotate_c
 *   kprof run -- ./annotate_c 5
 *
 * (or `cc annotate.c $(pkg-config --cflags --libs kprof) -o annotate_c`).
 */
#include <stdio.h>
#include <stdlib.h>

#include <kprof.h>

static double work(int n) {
    double s = 0.0;
    for (int i = 1; i <= n; i++)
        s += 1.0 / ((double)i * i);
    return s;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 5;
    kprof_metadata("example", "annotate.c");
    double s = 0.0;
    kprof_region_begin("solve");
    for (int i = 0; i < steps; i++) {
        kprof_region_begin("step");
        s += work(200000);
        kprof_counter("partial sum", s);
        kprof_region_end("step");
    }
    kprof_region_end("solve");
    kprof_event("done");
    printf("sum %.6f\n", s);
    return 0;
}
