// Uses kprof.hpp: kprof::Region closes its region at the end of its scope, also
// when an exception leaves it. Expected profile for argument N: "solve" (count 1)
// holding "step" (count N) holding "inner" (count N); "cleanup" (count 1) at the
// root, closed by an exception; counter "step" with N values 1..N; event "done".
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include <kprof.hpp>

static volatile double sink;

static void inner() {
    KPROF_SCOPE("inner");
    double s = 0.0;
    for (int i = 1; i <= 100000; i++)
        s += 1.0 / i;
    sink = s;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 3;
    kprof::metadata("consumer", "annotated.cpp");
    {
        kprof::Region solve("solve");
        for (int i = 1; i <= n; i++) {
            kprof::Region step(std::string("step"));
            inner();
            kprof::counter("step", i);
        }
    }
    try {
        kprof::Region cleanup("cleanup");
        throw std::runtime_error("leaves the scope");
    } catch (const std::exception &) {
    }
    kprof::event("done");
    std::printf("annotated %d\n", n);
    return 0;
}
