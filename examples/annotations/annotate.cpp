// The kprof annotation API from C++ (kprof.hpp: RAII regions). Profile it:
//
//   c++ -O2 -g annotate.cpp -I<prefix>/include/kprof -L<prefix>/lib -lkprof_core \
//       -Wl,-rpath,<prefix>/lib -o annotate_cpp
//   kprof run -- ./annotate_cpp 5
#include <cstdio>
#include <cstdlib>

#include <kprof.hpp>

static double work(int n) {
    KPROF_SCOPE("work");
    double s = 0.0;
    for (int i = 1; i <= n; i++)
        s += 1.0 / (static_cast<double>(i) * i);
    return s;
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? std::atoi(argv[1]) : 5;
    kprof::metadata("example", "annotate.cpp");
    double s = 0.0;
    {
        kprof::Region solve("solve");
        for (int i = 0; i < steps; i++) {
            kprof::Region step("step");
            s += work(200000);
            kprof::counter("partial sum", s);
        }
    }
    kprof::event("done");
    std::printf("sum %.6f\n", s);
    return 0;
}
