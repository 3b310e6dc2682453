// A Kokkos program under MPI, as users write them, for tests/tests/mpi.rs: each
// rank owns N cells of a 1-D grid with one halo cell on each side (a ring of
// ranks). Per iteration, in the Kokkos region "iteration" inside "solve":
//
//   parallel_for "smooth"       y(i) = (x(i-1) + x(i) + x(i+1)) / 3
//   parallel_reduce "norm"      the rank's sum of y(i)^2, then MPI_Allreduce
//   2 x MPI_Sendrecv            the halo cells of y, with both neighbours
//   deep_copy x <- y
//
// Every rank sends 2 messages of one double per iteration to each neighbour
// (4 to the one neighbour of a 2-rank job). Prints one line per rank:
// "rank <r> of <n>: norm <global norm>", the same with or without a tool.
#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>

namespace {
constexpr int N = 4096;
constexpr int ITERATIONS = 6;
}  // namespace

int main(int argc, char* argv[]) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int left = (rank + size - 1) % size, right = (rank + 1) % size;
  Kokkos::initialize(argc, argv);
  {
    Kokkos::View<double*, Kokkos::HostSpace> x("x", N + 2), y("y", N + 2);
    const int r = rank;
    Kokkos::parallel_for(
        "init", N + 2, KOKKOS_LAMBDA(const int i) { x(i) = r + (i % 7); });
    double global = 0.0;
    Kokkos::Profiling::pushRegion("solve");
    for (int it = 0; it < ITERATIONS; ++it) {
      Kokkos::Profiling::pushRegion("iteration");
      Kokkos::parallel_for(
          "smooth", Kokkos::RangePolicy<>(1, N + 1),
          KOKKOS_LAMBDA(const int i) { y(i) = (x(i - 1) + x(i) + x(i + 1)) / 3.0; });
      double local = 0.0;
      Kokkos::parallel_reduce(
          "norm", Kokkos::RangePolicy<>(1, N + 1),
          KOKKOS_LAMBDA(const int i, double& s) { s += y(i) * y(i); }, local);
      MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      Kokkos::fence();
      MPI_Sendrecv(y.data() + N, 1, MPI_DOUBLE, right, 0, y.data(), 1, MPI_DOUBLE, left, 0,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Sendrecv(y.data() + 1, 1, MPI_DOUBLE, left, 1, y.data() + N + 1, 1, MPI_DOUBLE,
                   right, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      Kokkos::deep_copy(x, y);
      Kokkos::Profiling::popRegion();
    }
    Kokkos::Profiling::popRegion();
    std::printf("rank %d of %d: norm %.6e\n", rank, size, global);
  }
  Kokkos::finalize();
  MPI_Finalize();
  return 0;
}
