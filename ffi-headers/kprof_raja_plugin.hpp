/*
 * kprof_raja_plugin.hpp - classes with the same layout (and the same virtual
 * function table) as RAJA's runtime-plugin interface, written here from RAJA's
 * public interface (RAJA v2025.09: RAJA::util::PluginStrategy, PluginContext,
 * PluginOptions, RAJA::Platform) so that kprof's RAJA plugin and its test
 * harness can be compiled without RAJA. No RAJA source is copied.
 *
 * What must match RAJA for a plugin object to work inside a RAJA program
 * (Itanium C++ ABI, x86-64 / aarch64 Linux, GCC or Clang with libstdc++):
 *
 *   PluginStrategy   a polymorphic class without data members: one vtable
 *                    pointer. Virtual functions in declaration order, which is
 *                    vtable order: the destructor (two slots: complete object,
 *                    deleting), init, preCapture, postCapture, preLaunch,
 *                    postLaunch, finalize. All take their arguments by const
 *                    reference. RAJA owns the object it gets from
 *                    RAJAGetPlugin()/getPlugin() in a std::unique_ptr and deletes
 *                    it through the virtual (deleting) destructor: the object
 *                    must come from operator new.
 *   PluginContext    offset 0: Platform (an int-sized enum), offset 8:
 *                    std::string kernel_name (RAJA::Name given to the kernel;
 *                    empty when none), offset 40: a 64-bit word RAJA's Kokkos
 *                    bridge keeps its kernel id in. 48 bytes.
 *   PluginOptions    one std::string (the path given to init_plugins()).
 *   std::string      libstdc++'s C++11 ABI (_GLIBCXX_USE_CXX11_ABI=1, the default
 *                    since GCC 5): { char *data; size_t size; char sso[16] }, 32
 *                    bytes, data NUL-terminated. A RAJA built with the old
 *                    copy-on-write string (8 bytes) or with libc++ has a different
 *                    PluginContext layout; see docs/raja.md.
 *
 * Platform values are the flags RAJA (and camp) use: undefined 0, host 1,
 * cuda 2, omp_target 4, hip 8, sycl 16.
 */
#ifndef KPROF_RAJA_PLUGIN_HPP
#define KPROF_RAJA_PLUGIN_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace kprof_raja {

/* RAJA::Platform. */
enum class Platform : int {
  undefined = 0,
  host = 1,
  cuda = 2,
  omp_target = 4,
  hip = 8,
  sycl = 16
};

/* RAJA::util::PluginOptions. */
struct PluginOptions {
  explicit PluginOptions(const std::string &s) : str(s) {}
  std::string str;
};

/* RAJA::util::PluginContext: what a plugin learns about one kernel. */
struct PluginContext {
  PluginContext(Platform p, std::string name)
      : platform(p), kernel_name(std::move(name)), kokkos_kernel_id(0) {}

  Platform platform;
  std::string kernel_name;
  /* Private in RAJA (its Kokkos bridge's kernel id); here for the layout only. */
  mutable std::uint64_t kokkos_kernel_id;
};

/* RAJA::util::PluginStrategy. RAJA defines the constructor and the default
 * (empty) bodies in its library; here they are inline. */
class PluginStrategy {
public:
  PluginStrategy() {}
  virtual ~PluginStrategy() = default;
  virtual void init(const PluginOptions &) {}
  virtual void preCapture(const PluginContext &) {}
  virtual void postCapture(const PluginContext &) {}
  virtual void preLaunch(const PluginContext &) {}
  virtual void postLaunch(const PluginContext &) {}
  virtual void finalize() {}
};

} /* namespace kprof_raja */

#if defined(__GLIBCXX__)
static_assert(sizeof(std::string) == 32,
              "kprof's RAJA plugin assumes libstdc++'s C++11 std::string "
              "(_GLIBCXX_USE_CXX11_ABI=1)");
static_assert(offsetof(kprof_raja::PluginContext, kernel_name) == 8,
              "PluginContext layout");
static_assert(sizeof(kprof_raja::PluginContext) == 48, "PluginContext layout");
#endif

#endif /* KPROF_RAJA_PLUGIN_HPP */
