// Known shares of CPU time between named functions inside REAL Kokkos kernels,
// for the call-stack samples of tests/tests/stack_sampling.rs (the Kokkos twin
// of tests/sampling/split.c).
//
//   sampling_split UNITS [STEP]
//
// UNITS times, on the default execution space with one loop iteration per
// thread (a static schedule gives each thread one):
//   parallel_for "split": split_seventy (7 steps) then split_thirty (3 steps): 70/30;
//   parallel_for "chain": chain_outer (2 steps of its own, then) -> chain_middle
//                         (3 steps, then) -> chain_inner (5 steps): self shares
//                         20/30/50, on the call path outer / middle / inner.
// A step is STEP (default 6000000, about 10 ms) dependent floating-point
// operations, the same cost in every function (the constants differ so that no
// two bodies are identical and folded into one). Prints the sum of the results
// (the same whatever the thread count) and the execution space, and exits 0.
#include <Kokkos_Core.hpp>

#include <cstdio>
#include <cstdlib>

namespace {

long STEP = 6000000;

#define STEPS(n, a, b)                                \
  do {                                                \
    for (long i = 0; i < (long)(n) * STEP; i++)       \
      x = x * (a) + (b);                              \
  } while (0)

}  // namespace

__attribute__((noinline, noclone)) double split_seventy(double x) {
  STEPS(7, 0.9999999, 1e-9);
  return x;
}

__attribute__((noinline, noclone)) double split_thirty(double x) {
  STEPS(3, 0.9999998, 2e-9);
  return x;
}

__attribute__((noinline, noclone)) double chain_inner(double x) {
  STEPS(5, 0.9999997, 3e-9);
  return x;
}

__attribute__((noinline, noclone)) double chain_middle(double x) {
  STEPS(3, 0.9999996, 4e-9);
  return chain_inner(x) + 1.0;
}

__attribute__((noinline, noclone)) double chain_outer(double x) {
  STEPS(2, 0.9999995, 5e-9);
  return chain_middle(x) + 1.0;
}

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 0;
  {
    long units = argc > 1 ? std::atol(argv[1]) : 6;
    if (argc > 2) STEP = std::atol(argv[2]);
    using Space = Kokkos::DefaultExecutionSpace;
    const int threads = Space().concurrency();
    Kokkos::View<double*> x("x", threads);
    Kokkos::deep_copy(x, 1.0);
    using Policy = Kokkos::RangePolicy<Space, Kokkos::Schedule<Kokkos::Static>>;
    for (long u = 0; u < units; u++) {
      Kokkos::parallel_for(
          "split", Policy(0, threads), KOKKOS_LAMBDA(const int i) {
            x(i) = split_thirty(split_seventy(x(i)));
          });
      Kokkos::parallel_for(
          "chain", Policy(0, threads),
          KOKKOS_LAMBDA(const int i) { x(i) = chain_outer(x(i)); });
    }
    Kokkos::fence();
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
    // Every thread's value is the same: print one, and whether they agree.
    for (int i = 1; i < threads; i++)
      if (h(i) != h(0)) status = 1;
    std::printf("result %.6f\n", h(0));
    std::printf("execution space = %s\n", Space::name());
  }
  Kokkos::finalize();
  return status;
}
