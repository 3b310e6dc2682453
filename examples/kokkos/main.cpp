// kprof's bundled Kokkos example: a toy iterative "solver" with a KNOWN structure,
// so that a profile of it can be checked exactly (tests/tests/kokkos_real.rs).
//
// Per run (independent of the number of threads):
//   region "setup"                          (once)
//     parallel_for "init_x", "init_y", "init_tmp", "combine"   (1 each)
//     View "setup_tmp" (N doubles) exists only during setup
//   region "solve"                          (once)
//     region "iteration"                    (ITERATIONS times)
//       parallel_for    "axpy"              (1 per iteration)
//       parallel_reduce "dot"               (1 per iteration)
//       parallel_scan   "prefix_sum"        (1 per iteration)
//       parallel_for    solver::Clamp functor, no name (1 per iteration)
//   profile section "solver_iteration": started/stopped once per iteration
//   profile events "checkpoint" (iterations 2 and 4) and "solve_done" (once)
//   a named fence (Kokkos >= 3.5; Kokkos 3.4 has no named fences and reports none)
//   deep_copy x_host <- x (N doubles)
//   a 4096-byte HostSpace buffer "leaked_buffer" that is deliberately never freed
//
// With more than one host thread, the deep_copy runs a Kokkos-internal parallel_for
// (with one thread it is a plain memcpy).
//
// All values are small integers stored in doubles, so every result printed on
// stdout is exact and identical whatever the number of threads or the order of the
// reduction.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>

namespace solver {

constexpr int N = 100000;
constexpr int ITERATIONS = 5;

using Vec = Kokkos::View<double*>;
using Offsets = Kokkos::View<int64_t*>;

// Launched without a name: Kokkos names the kernel after the functor's type
// (Kokkos 3.4 passes typeid(Clamp).name(), "N6solver5ClampE"; newer Kokkos
// passes the demangled "solver::Clamp").
struct Clamp {
  Vec x;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    x(i) = x(i) > 5.0 ? x(i) - 5.0 : x(i) + 1.0;
  }
};

}  // namespace solver

using namespace solver;

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  // Kokkos removes its own options (--kokkos-...) from argv.
  std::printf("arguments left after Kokkos::initialize: %d\n", argc - 1);
  {
    Vec x("x", N);
    Vec y("y", N);
    Offsets offsets("offsets", N + 1);
    Kokkos::View<double*, Kokkos::HostSpace> x_host("x_host", N);

    // A raw allocation the program forgets to free (shows up in kprof's leak report).
    void* leaked = Kokkos::HostSpace().allocate("leaked_buffer", 4096);
    (void)leaked;

    Kokkos::Profiling::pushRegion("setup");
    {
      Vec tmp("setup_tmp", N);
      Kokkos::parallel_for(
          "init_x", N, KOKKOS_LAMBDA(const int i) { x(i) = i % 10; });
      Kokkos::parallel_for(
          "init_y", N, KOKKOS_LAMBDA(const int i) { y(i) = 1.0; });
      Kokkos::parallel_for(
          "init_tmp", N, KOKKOS_LAMBDA(const int i) { tmp(i) = i % 3; });
      Kokkos::parallel_for(
          "combine", N, KOKKOS_LAMBDA(const int i) { x(i) += tmp(i); });
    }
    Kokkos::Profiling::popRegion();

    uint32_t section = 0;
    Kokkos::Profiling::createProfileSection("solver_iteration", &section);

    Kokkos::Profiling::pushRegion("solve");
    int64_t total = 0;
    for (int it = 1; it <= ITERATIONS; ++it) {
      Kokkos::Profiling::startSection(section);
      Kokkos::Profiling::pushRegion("iteration");

      Kokkos::parallel_for(
          "axpy", N, KOKKOS_LAMBDA(const int i) { y(i) += 2.0 * x(i); });

      double dot = 0.0;
      Kokkos::parallel_reduce(
          "dot", N,
          KOKKOS_LAMBDA(const int i, double& sum) { sum += x(i) * y(i); },
          dot);

      Kokkos::parallel_scan(
          "prefix_sum", N,
          KOKKOS_LAMBDA(const int i, int64_t& partial, const bool final) {
            partial += static_cast<int64_t>(y(i)) % 4;
            if (final) offsets(i + 1) = partial;
          },
          total);

      Kokkos::parallel_for(N, Clamp{x});

      Kokkos::Profiling::popRegion();
      Kokkos::Profiling::stopSection(section);

      if (it % 2 == 0) Kokkos::Profiling::markEvent("checkpoint");
      std::printf("iteration %d: dot = %.1f, scan total = %lld\n", it, dot,
                  static_cast<long long>(total));
    }
    Kokkos::Profiling::popRegion();
    Kokkos::Profiling::markEvent("solve_done");
    Kokkos::Profiling::destroyProfileSection(section);

#if KOKKOS_VERSION >= 30500
    Kokkos::fence("kprof_example: solve complete");
#else
    Kokkos::fence();
#endif

    Kokkos::deep_copy(x_host, x);
    double checksum = 0.0;
    for (int i = 0; i < N; ++i) checksum += x_host(i) * (i % 7);
    std::printf("checksum = %.1f\n", checksum);
    std::printf("execution space = %s\n",
                Kokkos::DefaultExecutionSpace::name());
  }
  Kokkos::finalize();
  return 0;
}
