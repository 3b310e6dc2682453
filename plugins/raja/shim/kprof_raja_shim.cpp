// The C++ half of libkprof_raja.so: a RAJA plugin object whose virtual functions
// forward to the Rust half (src/lib.rs) through a table of C function pointers.
//
// Compiled with _GLIBCXX_USE_CXX11_ABI=1 against ffi-headers/kprof_raja_plugin.hpp
// (the layout of RAJA's PluginStrategy / PluginContext / PluginOptions). Nothing here
// throws, allocates or takes a lock; the only non-trivial work is finding an
// unnamed kernel's launch site (see launch_site).
//
// A kernel is one instance, from preLaunch to postLaunch. preCapture/postCapture
// only matter when the Rust half asks for capture times (KPROF_RAJA_CAPTURE=1):
// otherwise they return at once.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <unwind.h>

#include "kprof_raja_plugin.hpp"

extern "C" {

// What the Rust half provides (src/lib.rs, `Hooks`). `platform` is the raw value
// of the context's Platform. `name`/`len` are a named kernel's kernel_name data()
// and size() (> 0) as read through libstdc++'s layout, unchecked: the Rust side
// decides whether they are plausible. `site` is an unnamed kernel's launch site
// (0: none found).
struct KprofRajaHooks {
  void (*init)(const char *opts, std::size_t len);
  void (*launch)(std::int32_t platform, const char *name, std::size_t len);
  void (*launch_at)(std::int32_t platform, std::uintptr_t site);
  void (*launch_end)();
  void (*capture)(unsigned phase);
  void (*finalize)();
  void (*duplicate)();
};

} // extern "C"

namespace {

// Whether preCapture/postCapture call the Rust half: until it connected (-1) they
// do, so that the first capture connects it and is measured; then 0 or 1.
std::atomic<int> capture_on{-1};

// ---------------------------------------------------------------------------
// One recording object per process.
//
// RAJA makes one plugin object per library it loads: from RAJA_PLUGINS at start,
// and again from the path an application passes to RAJA::util::init_plugins(path).
// When both name this library, dlopen returns the same library but RAJA holds two
// objects and calls both for every kernel. The first object that gets a callback
// records; any other stays inert (and the Rust half reports it once). When the
// recording object is deleted (finalize_plugins), the next one to be called
// takes over.
std::atomic<const void *> recorder{nullptr};

// ---------------------------------------------------------------------------
// Launch sites of unnamed kernels.
//
// RAJA calls runtime plugins from RuntimePluginLoader::preLaunch (compiled in
// RAJA's library: one return address for every kernel), which is called from the
// header-inlined callPreLaunchPlugins inside the application's forall/launch
// instantiation: the kernel's launch site is the return address of the loader's
// frame, two frames up. The unwinder (.eh_frame) finds it safely in code built
// without frame pointers, but costs hundreds of nanoseconds per kernel. So the
// first unwind from a given loader call (one return address into the loader, `ra`)
// learns how far above this plugin's frame the loader's frame ends (`delta`,
// between the two frames' canonical frame addresses: the loader's frame has a
// fixed size); later kernels read the launch site at that distance, one load.
// Each distinct launch site read that way is confirmed once by a full unwind
// before it is trusted (`sites`); a disagreement turns the shortcut off for that
// loader call. x86-64 only (where a return address sits just below the CFA).

struct Hop {
  std::atomic<std::uintptr_t> ra{0};
  std::atomic<std::intptr_t> delta{0}; // 0: not learnt; -1: never use
};
const unsigned kHops = 4;
Hop hops[kHops];

const unsigned kSites = 4096; // power of two
std::atomic<std::uintptr_t> sites[kSites];

bool site_known(std::uintptr_t s) {
  unsigned i = static_cast<unsigned>((s >> 4) ^ (s >> 17)) & (kSites - 1);
  for (unsigned k = 0; k < 8; k++, i = (i + 1) & (kSites - 1)) {
    std::uintptr_t v = sites[i].load(std::memory_order_relaxed);
    if (v == s) return true;
    if (v == 0) return false;
  }
  return false;
}

void site_add(std::uintptr_t s) {
  unsigned i = static_cast<unsigned>((s >> 4) ^ (s >> 17)) & (kSites - 1);
  for (unsigned k = 0; k < 8; k++, i = (i + 1) & (kSites - 1)) {
    std::uintptr_t v = 0;
    if (sites[i].compare_exchange_strong(v, s, std::memory_order_relaxed) ||
        v == s)
      return;
  }
  // Full around this slot: the site is unwound every time (still correct).
}

// The frames from unwind_site up: until two past RAJA's loader (the one whose
// return address is `ra`), at most kFrames.
const int kFrames = 8;
struct Walk {
  std::uintptr_t ra;
  std::uintptr_t ips[kFrames];
  std::uintptr_t cfas[kFrames];
  int n;
  int loader; // index of the loader's frame; -1: not seen yet
};

_Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg) {
  Walk *w = static_cast<Walk *>(arg);
  std::uintptr_t ip = static_cast<std::uintptr_t>(_Unwind_GetIP(ctx));
  w->ips[w->n] = ip;
  w->cfas[w->n] = static_cast<std::uintptr_t>(_Unwind_GetCFA(ctx));
  if (w->loader < 0 && w->n > 0 && ip == w->ra) w->loader = w->n;
  w->n++;
  bool done = w->n == kFrames || (w->loader >= 0 && w->n >= w->loader + 3);
  return done ? _URC_END_OF_STACK : _URC_NO_REASON;
}

// The full unwind. Frames: [0] this function, then the plugin's own (preLaunch,
// whose CFA is `cfa`, and what it called to get here), RAJA's loader (return
// address `ra`, looked for) and above it the launch site. Learns or checks the
// loader's frame size on the way. 0 when the stack is shallower or not as
// expected.
//
// libgcc's _Unwind_GetCFA, called back for frame i, answers the CFA of frame i-1
// (the stack pointer of frame i); the frame whose CFA is `cfa` is looked for
// rather than assumed, and the loader's CFA is the next one.
__attribute__((noinline, cold)) std::uintptr_t
unwind_site(std::uintptr_t ra, std::uintptr_t cfa, Hop *hop,
            std::uintptr_t predicted) {
  Walk w;
  w.ra = ra;
  w.n = 0;
  w.loader = -1;
  _Unwind_Backtrace(collect, &w);
  if (w.loader < 0 || w.loader + 1 >= w.n) return 0;
  std::uintptr_t site = w.ips[w.loader + 1];
#if defined(__x86_64__)
  if (hop != nullptr) {
    std::uintptr_t loader_cfa = 0;
    for (int j = 1; j + 1 < w.n; j++) {
      if (w.cfas[j] == cfa) {
        loader_cfa = w.cfas[j + 1];
        break;
      }
    }
    std::intptr_t delta = static_cast<std::intptr_t>(loader_cfa - cfa);
    bool sane = loader_cfa != 0 && delta >= 16 &&
                delta <= 4096 && delta % 8 == 0 &&
                *reinterpret_cast<const std::uintptr_t *>(loader_cfa - 8) == site;
    std::intptr_t learnt = hop->delta.load(std::memory_order_relaxed);
    if (!sane || (learnt > 0 && learnt != delta) ||
        (predicted != 0 && predicted != site)) {
      hop->delta.store(-1, std::memory_order_relaxed);
    } else {
      if (learnt == 0) hop->delta.store(delta, std::memory_order_relaxed);
      site_add(site);
    }
  }
#else
  (void)ra;
  (void)cfa;
  (void)hop;
  (void)predicted;
#endif
  return site;
}

// The launch site of an unnamed kernel whose preLaunch has return address `ra`
// and CFA `cfa`.
inline std::uintptr_t launch_site(std::uintptr_t ra, std::uintptr_t cfa) {
#if defined(__x86_64__)
  Hop *hop = nullptr;
  for (unsigned i = 0; i < kHops; i++) {
    std::uintptr_t r = hops[i].ra.load(std::memory_order_relaxed);
    if (r == ra) {
      hop = &hops[i];
      break;
    }
    if (r == 0) {
      // First sight of this loader call: claim a slot for it.
      if (hops[i].ra.compare_exchange_strong(r, ra, std::memory_order_relaxed) ||
          r == ra) {
        hop = &hops[i];
        break;
      }
    }
  }
  if (hop != nullptr) {
    std::intptr_t delta = hop->delta.load(std::memory_order_relaxed);
    if (delta > 0) {
      // The loader's frame is `delta` bytes above preLaunch's and holds the
      // return address into the launch site in its last word: live stack memory
      // of this thread, always readable.
      std::uintptr_t site =
          *reinterpret_cast<const std::uintptr_t *>(cfa + delta - 8);
      if (site != 0 && site_known(site)) return site;
      return unwind_site(ra, cfa, hop, site);
    }
    if (delta == 0) return unwind_site(ra, cfa, hop, 0);
  }
#endif
  return unwind_site(ra, cfa, nullptr, 0);
}

class KprofRajaPlugin final : public kprof_raja::PluginStrategy {
public:
  explicit KprofRajaPlugin(const KprofRajaHooks *h) : hooks(h) {}
  ~KprofRajaPlugin() override {
    const void *self = this;
    recorder.compare_exchange_strong(self, nullptr);
  }

  void init(const kprof_raja::PluginOptions &o) override {
    if (records()) hooks->init(o.str.data(), o.str.size());
  }
  void preCapture(const kprof_raja::PluginContext &) override {
    if (capture_on.load(std::memory_order_relaxed) != 0 && records())
      hooks->capture(0);
  }
  void postCapture(const kprof_raja::PluginContext &) override {
    if (capture_on.load(std::memory_order_relaxed) != 0 && records())
      hooks->capture(1);
  }
  // A named kernel: one test and a jump to the Rust half. An unnamed one: its
  // launch site first (the unwind frames: see unwind_site).
  __attribute__((noinline)) void
  preLaunch(const kprof_raja::PluginContext &p) override {
    std::uintptr_t ra =
        reinterpret_cast<std::uintptr_t>(__builtin_return_address(0));
    std::uintptr_t cfa = reinterpret_cast<std::uintptr_t>(__builtin_dwarf_cfa());
    const void *r = recorder.load(std::memory_order_relaxed);
    if (__builtin_expect(r == this, 1)) {
      launch(p, ra, cfa);
    } else {
      launch_claiming(r, p, ra, cfa);
    }
  }
  void postLaunch(const kprof_raja::PluginContext &) override {
    if (records()) hooks->launch_end();
  }
  void finalize() override {
    if (records()) hooks->finalize();
  }

private:
  __attribute__((always_inline)) void
  launch(const kprof_raja::PluginContext &p, std::uintptr_t ra,
         std::uintptr_t cfa) {
    std::int32_t platform = static_cast<std::int32_t>(p.platform);
    std::size_t len = p.kernel_name.size();
    if (__builtin_expect(len != 0, 1)) {
      hooks->launch(platform, p.kernel_name.data(), len);
    } else {
      unnamed(platform, ra, cfa);
    }
  }

  // preLaunch when this object was not (yet) the recording one.
  __attribute__((noinline, cold)) void
  launch_claiming(const void *r, const kprof_raja::PluginContext &p,
                  std::uintptr_t ra, std::uintptr_t cfa) {
    if (claim(r)) launch(p, ra, cfa);
  }

  // preLaunch of an unnamed kernel (preLaunch's return address and CFA).
  __attribute__((noinline)) void unnamed(std::int32_t platform,
                                         std::uintptr_t ra,
                                         std::uintptr_t cfa) {
    hooks->launch_at(platform, launch_site(ra, cfa));
  }

  // Whether this object is the process's recording one (claiming the role when
  // nobody holds it).
  bool records() {
    const void *r = recorder.load(std::memory_order_relaxed);
    if (__builtin_expect(r == this, 1)) return true;
    return claim(r);
  }
  __attribute__((noinline, cold)) bool claim(const void *r) {
    if (r == nullptr &&
        (recorder.compare_exchange_strong(r, this) || r == this))
      return true;
    if (!warned.exchange(true, std::memory_order_relaxed)) hooks->duplicate();
    return false;
  }

  const KprofRajaHooks *hooks;
  std::atomic<bool> warned{false};
};

} // namespace

// Called by the Rust half's RAJAGetPlugin/getPlugin. A new object per call: RAJA
// deletes what it gets. NULL when out of memory (RAJA then skips the plugin).
extern "C" kprof_raja::PluginStrategy *
kprof_raja_shim_new(const KprofRajaHooks *hooks) {
  return new (std::nothrow) KprofRajaPlugin(hooks);
}

// Called by the Rust half once it is connected: whether to report captures.
extern "C" void kprof_raja_shim_capture(bool on) {
  capture_on.store(on ? 1 : 0, std::memory_order_relaxed);
}
