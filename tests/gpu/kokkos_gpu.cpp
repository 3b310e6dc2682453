// A Kokkos program on the Cuda back end for the real-GPU check of kprof's Kokkos
// and CUDA plugins together (kokkos_gpu.sh): 5 rounds of a parallel_for "axpy"
// and a parallel_reduce "dot" inside a Kokkos region "solve", and deep copies both
// ways. Prints the reduction so the run's result can be compared with and without
// kprof.
#include <Kokkos_Core.hpp>
#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  {
    const int n = 1 << 24;
    Kokkos::View<double*> x("x", n), y("y", n);
    auto hx = Kokkos::create_mirror_view(x);
    for (int i = 0; i < n; ++i) hx(i) = 1.0;
    Kokkos::deep_copy(x, hx);
    Kokkos::deep_copy(y, 2.0);
    double sum = 0;
    for (int r = 0; r < 5; ++r) {
      Kokkos::Profiling::pushRegion("solve");
      Kokkos::parallel_for(
          "axpy", n, KOKKOS_LAMBDA(int i) { y(i) += 0.5 * x(i); });
      double dot = 0;
      Kokkos::parallel_reduce(
          "dot", n, KOKKOS_LAMBDA(int i, double& acc) { acc += x(i) * y(i); }, dot);
      sum += dot;
      Kokkos::Profiling::popRegion();
    }
    auto hy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), y);
    std::printf("sum %.1f y0 %.1f\n", sum, hy(0));
  }
  Kokkos::finalize();
  return 0;
}
