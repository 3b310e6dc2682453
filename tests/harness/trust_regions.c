/* Annotation programs for tests/tests/trust_regions.rs.
 *
 *   trust_regions mismatch   ends regions by the wrong name: "a" over "b", a name
 *                            never opened, a NULL end, and one with nothing open
 *   trust_regions names N    N distinct empty regions inside "outer": kprof adds a
 *                            call path for each (and grows its tables) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kprof.h"

static void mismatch(void) {
    kprof_region_begin("a");
    kprof_region_begin("b");
    kprof_region_end("a"); /* closes "b", then "a" */
    kprof_region_begin("c");
    kprof_region_end("x"); /* no "x" open: ignored, "c" stays open */
    kprof_region_end("c");
    kprof_region_begin("d");
    kprof_region_end(NULL); /* NULL: the innermost, whatever its name */
    kprof_region_end("e");  /* nothing open */
}

static void names(long n) {
    char name[32];
    kprof_region_begin("outer");
    for (long i = 0; i < n; i++) {
        snprintf(name, sizeof name, "kernel_%ld", i);
        kprof_region_begin(name);
        kprof_region_end(name);
    }
    kprof_region_end("outer");
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "mismatch") == 0) {
        mismatch();
    } else if (argc >= 3 && strcmp(argv[1], "names") == 0) {
        names(atol(argv[2]));
    } else {
        fprintf(stderr, "usage: trust_regions mismatch | names N\n");
        return 2;
    }
    printf("done\n");
    return 0;
}
