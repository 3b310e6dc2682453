/* recursive: "fib" regions nested in themselves (fib(n) opens fib(n-1) and
 * fib(n-2)), with fixed work in each, under "main". Used by tests/tests/cli.rs to
 * check that the summary and kprof report agree on recursive regions. */
#include <kprof.h>

static volatile double sink;

static void fib(int n) {
    kprof_region_begin("fib");
    double s = 0.0;
    for (int i = 1; i <= 20000; i++)
        s += 1.0 / i;
    sink = s;
    if (n > 1) {
        fib(n - 1);
        fib(n - 2);
    }
    kprof_region_end("fib");
}

int main(void) {
    kprof_region_begin("main");
    fib(6);
    kprof_region_end("main");
    return 0;
}
