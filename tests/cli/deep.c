/* deep DEPTH REPS: REPS times, regions "d0", "d1", ... nested DEPTH deep, with a
 * little work in the innermost. Used by tests/tests/cli.rs for deep call paths:
 * the depth cap and reading deep profiles back. */
#include <stdio.h>
#include <stdlib.h>

#include <kprof.h>

static volatile double sink;

static void nest(int level, int depth) {
    char name[16];
    snprintf(name, sizeof name, "d%d", level);
    kprof_region_begin(name);
    if (level + 1 < depth) {
        nest(level + 1, depth);
    } else {
        double s = 0.0;
        for (int i = 1; i <= 1000; i++)
            s += 1.0 / i;
        sink = s;
    }
    kprof_region_end(name);
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 10;
    int reps = argc > 2 ? atoi(argv[2]) : 1;
    for (int r = 0; r < reps; r++)
        nest(0, depth);
    return 0;
}
