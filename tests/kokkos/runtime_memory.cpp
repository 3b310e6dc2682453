// A Kokkos program as users write them, for tests/tests/kokkos_real.rs: team
// kernels with scratch memory (Kokkos grows its own per-thread scratch buffers,
// first allocated before any tool is loaded and freed after tools are finalized),
// a profile section created inside a loop, and one deallocation reported for memory
// kprof never saw allocated. Per run (any number of OpenMP threads):
//
//   View "team_out" (64 doubles), freed at the end of the scope
//   parallel_for "team_scratch"        TeamPolicy<OpenMP>, 32 KiB of team scratch
//   parallel_for "serial_team_scratch" TeamPolicy<Serial>, 32 KiB, then 64 KiB
//   3 x { create section "loop_section"; start; parallel_for "in_section"; stop;
//         destroy }
//   Kokkos::Profiling::deallocateData(Host, "ghost", 0x1000, 64)
//
// Prints one checksum line on stdout, the same whatever the thread count.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>

namespace {

constexpr int LEAGUE = 64;

template <class Space>
double team_sum(const char* name, int league, int values) {
  using Policy = Kokkos::TeamPolicy<Space>;
  using Member = typename Policy::member_type;
  using Scratch = Kokkos::View<double*, typename Space::scratch_memory_space,
                               Kokkos::MemoryUnmanaged>;
  const size_t bytes = Scratch::shmem_size(values);
  double total = 0.0;
  Kokkos::parallel_reduce(
      name,
      Policy(league, Kokkos::AUTO).set_scratch_size(0, Kokkos::PerTeam(bytes)),
      KOKKOS_LAMBDA(const Member& team, double& sum) {
        Scratch s(team.team_scratch(0), values);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, values),
                             [&](const int i) { s(i) = i % 5; });
        team.team_barrier();
        double part = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, values),
            [&](const int i, double& p) { p += s(i); }, part);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { sum += part; });
      },
      total);
  return total;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  {
    Kokkos::View<double*> out("team_out", LEAGUE);
    double a = team_sum<Kokkos::OpenMP>("team_scratch", LEAGUE, 4096);
    double b = team_sum<Kokkos::Serial>("serial_team_scratch", 4, 4096);
    double c = team_sum<Kokkos::Serial>("serial_team_scratch", 4, 8192);

    for (int it = 0; it < 3; ++it) {
      uint32_t id = 0;
      Kokkos::Profiling::createProfileSection("loop_section", &id);
      Kokkos::Profiling::startSection(id);
      Kokkos::parallel_for(
          "in_section", LEAGUE, KOKKOS_LAMBDA(const int i) { out(i) += i; });
      Kokkos::Profiling::stopSection(id);
      Kokkos::Profiling::destroyProfileSection(id);
    }

    Kokkos::Profiling::deallocateData(
        Kokkos::Profiling::make_space_handle("Host"), "ghost",
        reinterpret_cast<const void*>(static_cast<uintptr_t>(0x1000)), 64);

    double d = 0.0;
    Kokkos::parallel_reduce(
        "sum_out", LEAGUE,
        KOKKOS_LAMBDA(const int i, double& s) { s += out(i); }, d);
    std::printf("checksum = %.1f %.1f %.1f %.1f\n", a, b, c, d);
  }
  Kokkos::finalize();
  return 0;
}
