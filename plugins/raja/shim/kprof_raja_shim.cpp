// The C++ half of libkprof_raja.so: a RAJA plugin object whose virtual functions
// forward to the Rust half (src/lib.rs) through a table of C function pointers.
//
// Compiled with _GLIBCXX_USE_CXX11_ABI=1 against ffi-headers/kprof_raja_plugin.hpp
// (the layout of RAJA's PluginStrategy / PluginContext / PluginOptions). Nothing here
// throws, allocates on the hot path or takes a lock; the only non-trivial work is
// finding an unnamed kernel's call site (see call_site).

#include <cstddef>
#include <cstdint>
#include <new>
#include <unwind.h>

#include "kprof_raja_plugin.hpp"

extern "C" {

// What the Rust half provides (src/lib.rs, `Hooks`). `kind`: 0 capture, 1 launch.
// `platform` is the raw value of the context's Platform. `name`/`len` are the
// kernel_name's data() and size() as read through libstdc++'s layout, unchecked:
// the Rust side decides whether they are plausible.
struct KprofRajaHooks {
  void (*init)(const char *opts, std::size_t len);
  void (*begin)(std::uint8_t kind, std::int32_t platform, const char *name,
                std::size_t len, std::uintptr_t site);
  void (*end)(std::uint8_t kind);
  void (*finalize)();
};

} // extern "C"

namespace {

const unsigned kCapture = 0;
const unsigned kLaunch = 1;

struct Walk {
  std::uintptr_t ips[4];
  int n;
};

_Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg) {
  Walk *w = static_cast<Walk *>(arg);
  w->ips[w->n++] = static_cast<std::uintptr_t>(_Unwind_GetIP(ctx));
  return w->n < 4 ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// The return address into the code that launched the kernel. RAJA calls runtime
// plugins from RuntimePluginLoader::preLaunch/preCapture (compiled in RAJA's
// library, the same address for every kernel), which is called from the
// header-inlined callPreLaunchPlugins / callPreCapturePlugins inside the
// application's forall/launch instantiation. Frames: [0] this function, [1] this
// plugin's pre-callback, [2] RAJA's loader, [3] the kernel's launch site. Found with the
// unwinder (.eh_frame), never by following frame pointers, so it is safe in code
// built without them. 0 when the stack is shallower.
__attribute__((noinline)) std::uintptr_t call_site() {
  Walk w = {{0, 0, 0, 0}, 0};
  _Unwind_Backtrace(collect, &w);
  return w.n == 4 ? w.ips[3] : 0;
}

// The call site found in preCapture, reused by the preLaunch of the same context
// (RAJA passes the same PluginContext object to both), so an unnamed kernel is
// unwound once, not twice.
thread_local const void *stashed_ctx = nullptr;
thread_local std::uintptr_t stashed_site = 0;

class KprofRajaPlugin final : public kprof_raja::PluginStrategy {
public:
  explicit KprofRajaPlugin(const KprofRajaHooks *h) : hooks(h) {}
  ~KprofRajaPlugin() override {}

  void init(const kprof_raja::PluginOptions &o) override {
    hooks->init(o.str.data(), o.str.size());
  }
  void preCapture(const kprof_raja::PluginContext &p) override {
    std::uintptr_t site = 0;
    if (p.kernel_name.size() == 0) {
      site = call_site();
      stashed_ctx = &p;
      stashed_site = site;
    }
    begin(kCapture, p, site);
  }
  void postCapture(const kprof_raja::PluginContext &) override {
    hooks->end(kCapture);
  }
  void preLaunch(const kprof_raja::PluginContext &p) override {
    std::uintptr_t site = 0;
    if (p.kernel_name.size() == 0) {
      if (stashed_ctx == &p) {
        site = stashed_site;
      } else {
        site = call_site();
      }
      stashed_ctx = nullptr;
    }
    begin(kLaunch, p, site);
  }
  void postLaunch(const kprof_raja::PluginContext &) override {
    hooks->end(kLaunch);
  }
  void finalize() override { hooks->finalize(); }

private:
  void begin(unsigned kind, const kprof_raja::PluginContext &p,
             std::uintptr_t site) {
    hooks->begin(static_cast<std::uint8_t>(kind),
                 static_cast<std::int32_t>(p.platform), p.kernel_name.data(),
                 p.kernel_name.size(), site);
  }

  const KprofRajaHooks *hooks;
};

} // namespace

// Called by the Rust half's RAJAGetPlugin/getPlugin. A new object per call: RAJA
// deletes what it gets. NULL when out of memory (RAJA then skips the plugin).
extern "C" kprof_raja::PluginStrategy *
kprof_raja_shim_new(const KprofRajaHooks *hooks) {
  return new (std::nothrow) KprofRajaPlugin(hooks);
}
