// A Kokkos program whose team kernels Kokkos' own team-size tuner tunes
// (Kokkos_ENABLE_TUNING, run with KOKKOS_TUNE_INTERNALS=1 or --kokkos-tune-internals),
// for tests/tests/kokkos_tuning.rs. Per run:
//
//   ITERATIONS x parallel_reduce "team_rows" over TeamPolicy<>(ROWS, Kokkos::AUTO):
//     each team sums a row of COLS values with a TeamThreadRange reduction
//
// Prints "sum=<value>" on stdout: an integer-valued sum, the same whatever team
// size Kokkos (or a tuning tool) picks; "iterations=<ITERATIONS>".
#include <Kokkos_Core.hpp>

#include <cstdio>

namespace {

constexpr int ROWS = 256;
constexpr int COLS = 512;
constexpr int ITERATIONS = 300;

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  {
    Kokkos::View<double**> a("matrix", ROWS, COLS);
    Kokkos::parallel_for(
        "fill", Kokkos::MDRangePolicy<Kokkos::Rank<2>>({0, 0}, {ROWS, COLS}),
        KOKKOS_LAMBDA(int i, int j) { a(i, j) = static_cast<double>((i * 7 + j * 3) % 11); });
    using Policy = Kokkos::TeamPolicy<>;
    using Member = Policy::member_type;
    double total = 0.0;
    for (int it = 0; it < ITERATIONS; ++it) {
      double sum = 0.0;
      Kokkos::parallel_reduce(
          "team_rows", Policy(ROWS, Kokkos::AUTO),
          KOKKOS_LAMBDA(const Member& team, double& acc) {
            const int row = team.league_rank();
            double row_sum = 0.0;
            Kokkos::parallel_reduce(
                Kokkos::TeamThreadRange(team, COLS),
                [&](int j, double& s) { s += a(row, j); }, row_sum);
            Kokkos::single(Kokkos::PerTeam(team), [&]() { acc += row_sum; });
          },
          sum);
      total += sum;
    }
    std::printf("sum=%.1f\niterations=%d\n", total, ITERATIONS);
  }
  Kokkos::finalize();
  return 0;
}
