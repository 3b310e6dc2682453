/* odd_names: regions whose names a table must not print raw (a newline, a tab,
 * 100 000 characters), and metadata with NULL and invalid UTF-8 keys and values.
 * Used by tests/tests/cli.rs. */
#include <stdlib.h>
#include <string.h>

#include <kprof.h>

int main(void) {
    kprof_region_begin("two\nlines\tand a tab");
    kprof_region_end("two\nlines\tand a tab");
    size_t n = 100000;
    char *long_name = malloc(n + 1);
    memset(long_name, 'x', n);
    long_name[n] = '\0';
    kprof_region_begin(long_name);
    kprof_region_end(long_name);
    free(long_name);
    kprof_metadata(NULL, "value of a NULL key");
    kprof_metadata("key of a NULL value", NULL);
    kprof_metadata("bad \xff bytes", "ok");
    return 0;
}
