// Prints the layout facts of RAJA's runtime-plugin interface that kprof's RAJA
// plugin depends on, one "name value" line each: compiled against kprof's own
// ffi-headers/kprof_raja_plugin.hpp (tests/tests/raja.rs, in CI) and against a
// real RAJA install (-DKPROF_PROBE_REAL_RAJA, tests/scripts/check-real-raja.sh).
// The two outputs must be identical; tests/raja/real_layout.txt holds the one
// the script printed for real RAJA, so CI compares kprof's header with it.
//
// Virtual function slots come from pointers to virtual member functions: in the
// Itanium C++ ABI such a pointer holds 1 + the function's byte offset in the
// vtable. The destructor's two slots (complete, deleting) come first when init
// is slot 2.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#ifdef KPROF_PROBE_REAL_RAJA
#include "RAJA/util/PluginStrategy.hpp"
namespace ns = RAJA::util;
using Platform = RAJA::Platform;
#else
#include "kprof_raja_plugin.hpp"
namespace ns = kprof_raja;
using Platform = kprof_raja::Platform;
#endif

template <typename F> static long slot(F f) {
  struct {
    std::uintptr_t ptr;
    std::ptrdiff_t adj;
  } raw;
  static_assert(sizeof(raw) == sizeof(f), "Itanium pointer to member");
  std::memcpy(&raw, &f, sizeof raw);
  if ((raw.ptr & 1) == 0)
    return -1; // not virtual
  return static_cast<long>((raw.ptr - 1) / sizeof(void *));
}

#pragma GCC diagnostic ignored "-Winvalid-offsetof"

int main() {
  std::printf("sizeof_string %zu\n", sizeof(std::string));
  std::printf("sizeof_platform %zu\n", sizeof(Platform));
  std::printf("platform_undefined %d\n", static_cast<int>(Platform::undefined));
  std::printf("platform_host %d\n", static_cast<int>(Platform::host));
  std::printf("platform_cuda %d\n", static_cast<int>(Platform::cuda));
  std::printf("platform_omp_target %d\n",
              static_cast<int>(Platform::omp_target));
  std::printf("platform_hip %d\n", static_cast<int>(Platform::hip));
  std::printf("platform_sycl %d\n", static_cast<int>(Platform::sycl));
  std::printf("sizeof_plugin_options %zu\n", sizeof(ns::PluginOptions));
  std::printf("offset_plugin_options_str %zu\n",
              offsetof(ns::PluginOptions, str));
  std::printf("sizeof_plugin_context %zu\n", sizeof(ns::PluginContext));
  std::printf("offset_plugin_context_platform %zu\n",
              offsetof(ns::PluginContext, platform));
  std::printf("offset_plugin_context_kernel_name %zu\n",
              offsetof(ns::PluginContext, kernel_name));
  std::printf("sizeof_plugin_strategy %zu\n", sizeof(ns::PluginStrategy));
  std::printf("slot_init %ld\n", slot(&ns::PluginStrategy::init));
  std::printf("slot_pre_capture %ld\n", slot(&ns::PluginStrategy::preCapture));
  std::printf("slot_post_capture %ld\n",
              slot(&ns::PluginStrategy::postCapture));
  std::printf("slot_pre_launch %ld\n", slot(&ns::PluginStrategy::preLaunch));
  std::printf("slot_post_launch %ld\n", slot(&ns::PluginStrategy::postLaunch));
  std::printf("slot_finalize %ld\n", slot(&ns::PluginStrategy::finalize));
  return 0;
}
