/* kernels N [exit-code]: N annotated "kernel" regions of fixed work inside
 * "main loop", then echoes stdin to stdout (prefixed), prints its arguments and
 * exits with exit-code. Used by tests/tests/cli.rs for run, report and diff. */
#include <stdio.h>
#include <stdlib.h>

#include <kprof.h>

static volatile double sink;

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1;
    int code = argc > 2 ? atoi(argv[2]) : 0;
    kprof_region_begin("main loop");
    for (int k = 0; k < n; k++) {
        kprof_region_begin("kernel");
        double s = 0.0;
        for (int i = 1; i <= 2000000; i++)
            s += 1.0 / i;
        sink = s;
        kprof_region_end("kernel");
    }
    kprof_region_end("main loop");
    char line[256];
    while (fgets(line, sizeof line, stdin))
        printf("in: %s", line);
    printf("kernels %d\n", n);
    return code;
}
