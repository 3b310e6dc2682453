// A RAJA program for tests/scripts/check-real-raja.sh: built against a real RAJA
// (with runtime plugins) and run with RAJA_PLUGINS naming libkprof_raja.so. Its
// kernels and their counts are fixed: "axpy" 5 times (sequential), "scale" 3
// times (OpenMP), one unnamed sequential kernel 2 times. It prints a checksum so
// the script can check that the program's result is unchanged under kprof.
#include <RAJA/RAJA.hpp>

#include <cstdio>
#include <vector>

int main() {
  const int n = 1000;
  std::vector<double> x(n, 1.0), y(n, 2.0);
  double *xp = x.data(), *yp = y.data();
  for (int r = 0; r < 5; ++r)
    RAJA::forall<RAJA::seq_exec>(RAJA::TypedRangeSegment<int>(0, n),
                                 RAJA::Name("axpy"),
                                 [=](int i) { yp[i] += 0.5 * xp[i]; });
  for (int r = 0; r < 3; ++r)
    RAJA::forall<RAJA::omp_parallel_for_exec>(
        RAJA::TypedRangeSegment<int>(0, n), RAJA::Name("scale"),
        [=](int i) { xp[i] *= 1.01; });
  for (int r = 0; r < 2; ++r)
    RAJA::forall<RAJA::seq_exec>(RAJA::TypedRangeSegment<int>(0, n),
                                 [=](int i) { yp[i] -= xp[i]; });
  double sum = 0;
  for (int i = 0; i < n; ++i)
    sum += y[i];
  std::printf("checksum %.6f\n", sum);
  return 0;
}
