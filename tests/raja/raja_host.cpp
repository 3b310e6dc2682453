/*
 * raja_host.cpp - loads RAJA runtime plugins and Kokkos-bridge tools exactly as RAJA
 * (v2025.09, RAJA_ENABLE_RUNTIME_PLUGINS=ON) does, and launches scripted kernels
 * with exactly known counts. Compiled against ffi-headers/kprof_raja_plugin.hpp, the
 * same layout the plugin is built against. Used by tests/tests/raja.rs.
 *
 * Usage: raja_host <scenario> [--init | --init=PATH] [--finalize] [--symbol=getPlugin]
 *                  [--kernels=N] [--reps=R] [--unnamed] [--name=TEXT]   (bench only)
 *
 * Loading (as RAJA's statically registered loaders do, before main):
 *   RuntimePluginLoader: RAJA_PLUGINS names a .so file or a directory whose *.so
 *     files are all loaded: dlopen(path, RTLD_NOW | RTLD_GLOBAL), dlsym
 *     "RAJAGetPlugin", falling back to the deprecated "getPlugin" (--symbol=getPlugin
 *     looks up only getPlugin), the object kept in a std::unique_ptr (deleted by
 *     finalize or at exit).
 *   KokkosPluginLoader: KOKKOS_PLUGINS the same way; dlsym kokkosp_init_library,
 *     kokkosp_begin_parallel_for, kokkosp_end_parallel_for, kokkosp_finalize_library;
 *     init_library(0, 20171029, 0, NULL) right after loading.
 *   Registry order: the runtime loader first, then the Kokkos loader; every
 *   callback visits them in that order (post callbacks too, not reversed).
 *
 * The loaders are in namespace RAJA::util, as RAJA's, so the program holds RAJA's
 * plugin-loader symbols (and the string RAJA_PLUGINS) like a program linked with a
 * static RAJA.
 *
 * A kernel (forall): PluginContext{platform, RAJA::Name or ""}; preCapture,
 * postCapture (RAJA captures the body between them), preLaunch, body, postLaunch.
 * The Kokkos loader's preLaunch calls begin_parallel_for("", 0, &ctx.kID), its
 * postLaunch end_parallel_for(ctx.kID).
 * --init: RAJA::util::init_plugins() first (the runtime loader loads from
 *   PluginOptions("") -- no path, nothing more -- then calls every plugin's init).
 * --init=PATH: RAJA::util::init_plugins(PATH): the runtime loader also loads the
 *   plugin(s) at PATH (a file or directory, as RAJA_PLUGINS), then calls every
 *   plugin's init.
 * --finalize: finalize_plugins() at the end (plugins' finalize, then deleted).
 *
 * Scenarios (capture and launch counts are equal):
 *   basic    named: "axpy" host x3, "dot" cuda x2, "scale" hip x1, "fill" sycl x1,
 *            "offload" omp_target x1, "mystery" undefined x1; unnamed: in function
 *            assemble() host x2, in relax() host x1 and cuda x1. Everything from
 *            forall down to the registry loop is always_inline as in RAJA, so an
 *            unnamed kernel's launch site is in assemble()/relax(), at the line
 *            marked LAUNCH SITE LINE (the innermost inlined frame of the call
 *            into the plugins' preLaunch).
 *   annotate (built with -DKPROF_ANNOTATE, linked with -lkprof_core):
 *            kprof_region_begin("solve"); "inner" host x2; assemble() (2 unnamed);
 *            kprof_region_end("solve"); then "outer" host x1.
 *   threads  2 threads x 5 "worker" host.
 *   abi      2 kernels whose kernel_name is not a libstdc++ string (data without
 *            NUL at size, size 1<<40), platform host; 1 with platform value 3 and
 *            an empty name; then "after" host x1.
 *   bridge   "axpy" host x3 (only the Kokkos loader sees them, with empty names).
 *   both     "axpy" host x2 with both loaders.
 *   sites    1000 x (assemble(), relax()): 2000 unnamed host kernels in assemble(),
 *            1000 host and 1000 cuda in relax(), interleaved (an unnamed
 *            kernel's launch site found again and again, from two functions).
 *   sites_threads  4 threads x 250 x (assemble(), relax()), started together:
 *            1000 unnamed host kernels in assemble() x 2, 1000 host and 1000
 *            cuda in relax() (the launch-site shortcut learnt concurrently).
 *   dynamic_loader  100 x (dyn_a(), dyn_b(), "named"), each one host kernel
 *            whose preLaunch goes through a loader frame of changing size
 *            (alloca): unnamed ones are named after dyn_a/dyn_b at the line
 *            marked DYNAMIC SITE LINE.
 *   capture  "slowcopy" host x2, whose body holds an object taking 2 ms to copy
 *            (RAJA copies the body between preCapture and postCapture), then
 *            "cheap" host x1.
 *   names    the names in the file RAJA_HOST_NAMES (../harness/names_file.h: each
 *            ended by a NUL byte, any other bytes, any length), each the
 *            RAJA::Name of 2 host kernels (the second finds what the first
 *            left); prints "names <n> sink <the kernels' sum>" on stdout.
 *   bench    for tests/benches/raja_overhead.rs: --kernels=N (default 100000)
 *            host kernels with an empty body, named "bench" (or TEXT with
 *            --name=TEXT, or unnamed with --unnamed), one untimed warm-up and
 *            --reps=R (default 7) timed
 *            repetitions; prints "ns_per_kernel <median>" (wall) and
 *            "cpu_ns_per_kernel <median>" (the thread's CPU time).
 */
#include <alloca.h>
#include <dirent.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kprof_raja_plugin.hpp"
#include "../harness/names_file.h"

#ifdef KPROF_ANNOTATE
#include "kprof.h"
#endif

using kprof_raja::Platform;
using kprof_raja::PluginContext;
using kprof_raja::PluginOptions;
using kprof_raja::PluginStrategy;

static bool only_get_plugin = false;

static bool is_shared_object(const std::string &f) {
  return f.size() > 3 && f.compare(f.size() - 3, 3, ".so") == 0;
}

/* Loads every .so of `path` (a file or a directory) with `one`. */
template <typename F> static void load_path(const std::string &path, F one) {
  if (is_shared_object(path)) {
    one(path);
    return;
  }
  DIR *dir = opendir(path.c_str());
  if (dir == nullptr) {
    perror("[RuntimePluginLoader]: Could not open plugin directory");
    return;
  }
  while (struct dirent *e = readdir(dir)) {
    if (is_shared_object(e->d_name)) {
      one(path + "/" + e->d_name);
    }
  }
  closedir(dir);
}

namespace RAJA {
namespace util {

/* RAJA::util::RuntimePluginLoader (compiled in RAJA's library: not inlined). */
class RuntimePluginLoader final : public PluginStrategy {
public:
  RuntimePluginLoader() {
    const char *env = getenv("RAJA_PLUGINS");
    if (env != nullptr) {
      load_dir(env);
    }
  }
  __attribute__((noinline)) void init(const PluginOptions &o) override {
    load_dir(o.str);
    for (auto &p : plugins) p->init(o);
  }
  __attribute__((noinline)) void preCapture(const PluginContext &c) override {
    for (auto &p : plugins) p->preCapture(c);
  }
  __attribute__((noinline)) void postCapture(const PluginContext &c) override {
    for (auto &p : plugins) p->postCapture(c);
  }
  __attribute__((noinline)) void preLaunch(const PluginContext &c) override {
    for (auto &p : plugins) p->preLaunch(c);
  }
  /* Not RAJA's: preLaunch through a frame whose size changes with `words` (a
   * loader with a variable-length array), for the dynamic_loader scenario. */
  __attribute__((noinline)) void preLaunchDynamic(const PluginContext &c, int words) {
    volatile std::uint64_t *pad =
        static_cast<volatile std::uint64_t *>(alloca(sizeof(std::uint64_t) * (2 + 2 * words)));
    pad[0] = 0;
    for (auto &p : plugins) p->preLaunch(c);
    pad[1] = pad[0];
  }
  __attribute__((noinline)) void postLaunch(const PluginContext &c) override {
    for (auto &p : plugins) p->postLaunch(c);
  }
  __attribute__((noinline)) void finalize() override {
    for (auto &p : plugins) p->finalize();
    plugins.clear();
  }

private:
  void load_dir(const std::string &path) {
    load_path(path, [this](const std::string &file) { load_one(file); });
  }
  void load_one(const std::string &path) {
    dlerror();
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      printf("[RuntimePluginLoader]: dlopen failed: %s\n", dlerror());
    }
    typedef PluginStrategy *(*GetPlugin)();
    GetPlugin get = nullptr;
    if (!only_get_plugin) {
      get = reinterpret_cast<GetPlugin>(dlsym(h, "RAJAGetPlugin"));
    }
    if (get == nullptr) {
      dlerror();
      get = reinterpret_cast<GetPlugin>(dlsym(h, "getPlugin"));
    }
    if (get != nullptr) {
      plugins.push_back(std::unique_ptr<PluginStrategy>(get()));
    } else {
      printf("[RuntimePluginLoader]: dlsym failed: %s\n", dlerror());
    }
  }
  std::vector<std::unique_ptr<PluginStrategy>> plugins;
};

/* RAJA::util::KokkosPluginLoader. */
class KokkosPluginLoader final : public PluginStrategy {
  typedef void (*Init)(const int, const uint64_t, const uint32_t, void *);
  typedef void (*Pre)(const char *, const uint32_t, uint64_t *);
  typedef void (*Post)(uint64_t);
  typedef void (*Fin)();

public:
  KokkosPluginLoader() {
    const char *env = getenv("KOKKOS_PLUGINS");
    if (env == nullptr) return;
    load_path(env, [this](const std::string &f) { load_one(f); });
    for (auto f : inits) f(0, 20171029, 0, nullptr);
  }
  __attribute__((noinline)) void preLaunch(const PluginContext &c) override {
    for (auto f : pres) f("", 0, &c.kokkos_kernel_id);
  }
  __attribute__((noinline)) void postLaunch(const PluginContext &c) override {
    for (auto f : posts) f(c.kokkos_kernel_id);
  }
  __attribute__((noinline)) void finalize() override {
    for (auto f : fins) f();
    inits.clear();
    pres.clear();
    posts.clear();
    fins.clear();
  }

private:
  template <typename T> void get(void *h, std::vector<T> &v, const char *n) {
    T f = reinterpret_cast<T>(dlsym(h, n));
    if (f != nullptr)
      v.push_back(f);
    else
      printf("[KokkosPluginLoader]: dlsym failed: %s\n", dlerror());
  }
  void load_one(const std::string &path) {
    void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      printf("[KokkosPluginLoader]: dlopen failed: %s\n", dlerror());
    }
    get(h, inits, "kokkosp_init_library");
    get(h, pres, "kokkosp_begin_parallel_for");
    get(h, posts, "kokkosp_end_parallel_for");
    get(h, fins, "kokkosp_finalize_library");
  }
  std::vector<Init> inits;
  std::vector<Pre> pres;
  std::vector<Post> posts;
  std::vector<Fin> fins;
};

/* RAJA's PluginRegistry: the statically registered loaders, in order. */
static std::vector<std::unique_ptr<PluginStrategy>> &registry() {
  static std::vector<std::unique_ptr<PluginStrategy>> r;
  return r;
}

/* RAJA::util::init_plugins(path) (RAJA's library). */
__attribute__((noinline)) void init_plugins(const std::string &path) {
  for (auto &p : registry()) p->init(PluginOptions(path));
}

/* RAJA::util::finalize_plugins() (RAJA's library). */
__attribute__((noinline)) void finalize_plugins() {
  for (auto &p : registry()) p->finalize();
}

} /* namespace util */
} /* namespace RAJA */

using RAJA::util::registry;

/* RAJA's header-inlined plugin calls (RAJA_INLINE: always_inline). */
#define RAJA_INLINE inline __attribute__((always_inline))
static RAJA_INLINE void call_pre_capture(const PluginContext &c) {
  for (auto &p : registry()) p->preCapture(c);
}
static RAJA_INLINE void call_post_capture(const PluginContext &c) {
  for (auto &p : registry()) p->postCapture(c);
}
static RAJA_INLINE void call_pre_launch(const PluginContext &c) {
  for (auto &p : registry()) p->preLaunch(c); /* LAUNCH SITE LINE */
}
static RAJA_INLINE void call_post_launch(const PluginContext &c) {
  for (auto &p : registry()) p->postLaunch(c);
}

static volatile double sink;

/* RAJA::forall (RAJA_INLINE, like everything between it and the plugin calls). */
template <typename Body>
RAJA_INLINE void forall(Platform plat, const char *name, int n,
                                      Body body) {
  PluginContext ctx(plat, name != nullptr ? std::string(name) : std::string());
  call_pre_capture(ctx);
  Body captured = body;
  call_post_capture(ctx);
  call_pre_launch(ctx);
  for (int i = 0; i < n; i++) captured(i);
  call_post_launch(ctx);
}

/* A forall whose preLaunch goes through RuntimePluginLoader::preLaunchDynamic
 * with a frame of `words`-dependent size (Kokkos loader and others skipped). */
static RAJA_INLINE void forall_dynamic(const char *name, int words) {
  PluginContext ctx(Platform::host, name != nullptr ? std::string(name) : std::string());
  call_pre_capture(ctx);
  call_post_capture(ctx);
  static_cast<RAJA::util::RuntimePluginLoader *>(registry()[0].get())->preLaunchDynamic(ctx, words); /* DYNAMIC SITE LINE */
  call_post_launch(ctx);
}

/* A context whose kernel_name is not what libstdc++ would have written. */
static void launch_raw(int platform, const char *data, uint64_t size) {
  alignas(PluginContext) unsigned char raw[sizeof(PluginContext)];
  memset(raw, 0, sizeof raw);
  int32_t p = platform;
  memcpy(raw, &p, sizeof p);
  memcpy(raw + 8, &data, sizeof data);
  memcpy(raw + 16, &size, sizeof size);
  const PluginContext &ctx = *reinterpret_cast<const PluginContext *>(raw);
  call_pre_capture(ctx);
  call_post_capture(ctx);
  call_pre_launch(ctx);
  call_post_launch(ctx);
}

static void work(int i) { sink = sink + i * 0.5; }

/* Unnamed kernels in two application functions. */
__attribute__((noinline)) static void assemble() {
  for (int k = 0; k < 2; k++) forall(Platform::host, nullptr, 100, [](int i) { work(i); });
}
__attribute__((noinline)) static void relax() {
  forall(Platform::host, nullptr, 100, [](int i) { work(i + 1); });
  forall(Platform::cuda, nullptr, 100, [](int i) { work(i + 2); });
}

/* Unnamed kernels through a loader frame of changing size, from two functions
 * (with different bodies, or the compiler folds them into one). */
__attribute__((noinline)) static void dyn_a(int words) { forall_dynamic(nullptr, words); }
__attribute__((noinline)) static void dyn_b(int words) { forall_dynamic(nullptr, 3 - words); }

static double now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* An object whose copy takes 2 ms: a loop body holding it is slow to capture. */
struct SlowCopy {
  SlowCopy() {}
  SlowCopy(const SlowCopy &) {
    double until = now_ns() + 2e6;
    while (now_ns() < until) {
    }
  }
};

static double thread_cpu_ns() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Back-to-back empty kernels: what the plugins cost per kernel, nothing else.
 * Prints the median over repetitions of the wall time per kernel and of this
 * thread's CPU time per kernel (which leaves out time other processes took the
 * CPU: steadier on a loaded machine). */
static void bench(long kernels, int reps, bool unnamed, const std::string &text) {
  const char *name = unnamed ? nullptr : text.c_str();
  std::vector<double> per_kernel, cpu_per_kernel;
  for (int r = 0; r <= reps; r++) {
    double c0 = thread_cpu_ns();
    double t0 = now_ns();
    for (long k = 0; k < kernels; k++) forall(Platform::host, name, 0, [](int i) { work(i); });
    double t1 = now_ns();
    double c1 = thread_cpu_ns();
    if (r > 0) {
      per_kernel.push_back((t1 - t0) / kernels);
      cpu_per_kernel.push_back((c1 - c0) / kernels);
    }
  }
  std::sort(per_kernel.begin(), per_kernel.end());
  std::sort(cpu_per_kernel.begin(), cpu_per_kernel.end());
  printf("ns_per_kernel %.2f\n", per_kernel[per_kernel.size() / 2]);
  printf("cpu_ns_per_kernel %.2f\n", cpu_per_kernel[cpu_per_kernel.size() / 2]);
}

static void basic() {
  for (int k = 0; k < 3; k++) forall(Platform::host, "axpy", 100, [](int i) { work(i); });
  for (int k = 0; k < 2; k++) forall(Platform::cuda, "dot", 100, [](int i) { work(i); });
  forall(Platform::hip, "scale", 100, [](int i) { work(i); });
  forall(Platform::sycl, "fill", 100, [](int i) { work(i); });
  forall(Platform::omp_target, "offload", 100, [](int i) { work(i); });
  forall(Platform::undefined, "mystery", 100, [](int i) { work(i); });
  assemble();
  relax();
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: raja_host <scenario> [--init] [--finalize] [--symbol=getPlugin] [--kernels=N --reps=R --unnamed]\n");
    return 2;
  }
  std::string scenario = argv[1];
  bool init = false, fin = false, unnamed = false;
  std::string init_path;
  long kernels = 100000;
  int reps = 7;
  std::string bench_name = "bench";
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--init") init = true;
    else if (a.rfind("--init=", 0) == 0) {
      init = true;
      init_path = a.substr(7);
    }
    else if (a == "--unnamed") unnamed = true;
    else if (a.rfind("--name=", 0) == 0) bench_name = a.substr(7);
    else if (a.rfind("--kernels=", 0) == 0) kernels = std::max(1L, atol(a.c_str() + 10));
    else if (a.rfind("--reps=", 0) == 0) reps = std::max(1, atoi(a.c_str() + 7));
    else if (a == "--finalize") fin = true;
    else if (a == "--symbol=getPlugin") only_get_plugin = true;
    else {
      fprintf(stderr, "raja_host: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  /* RAJA registers (constructs) its loaders during static initialisation. */
  registry().emplace_back(new RAJA::util::RuntimePluginLoader());
  registry().emplace_back(new RAJA::util::KokkosPluginLoader());
  if (init) {
    RAJA::util::init_plugins(init_path);
  }

  if (scenario == "basic") {
    basic();
  } else if (scenario == "annotate") {
#ifdef KPROF_ANNOTATE
    kprof_region_begin("solve");
    for (int k = 0; k < 2; k++) forall(Platform::host, "inner", 100, [](int i) { work(i); });
    assemble();
    kprof_region_end("solve");
    forall(Platform::host, "outer", 100, [](int i) { work(i); });
#else
    fprintf(stderr, "raja_host: built without -DKPROF_ANNOTATE\n");
    return 2;
#endif
  } else if (scenario == "threads") {
    std::vector<std::thread> ts;
    for (int t = 0; t < 2; t++) {
      ts.emplace_back([] {
        for (int k = 0; k < 5; k++) forall(Platform::host, "worker", 100, [](int i) { work(i); });
      });
    }
    for (auto &t : ts) t.join();
  } else if (scenario == "abi") {
    static const char bogus[8] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    launch_raw(1, bogus, 4);          /* no NUL at data[size] */
    launch_raw(1, bogus, 1ull << 40); /* implausible size */
    launch_raw(3, nullptr, 0);        /* not a platform */
    forall(Platform::host, "after", 100, [](int i) { work(i); });
  } else if (scenario == "bridge") {
    for (int k = 0; k < 3; k++) forall(Platform::host, "axpy", 100, [](int i) { work(i); });
  } else if (scenario == "sites") {
    for (int k = 0; k < 1000; k++) {
      assemble();
      relax();
    }
  } else if (scenario == "sites_threads") {
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++) {
      ts.emplace_back([] {
        for (int k = 0; k < 250; k++) {
          assemble();
          relax();
        }
      });
    }
    for (auto &t : ts) t.join();
  } else if (scenario == "dynamic_loader") {
    for (int k = 0; k < 100; k++) {
      dyn_a(k % 4);
      dyn_b(k % 4);
      forall_dynamic("named", k % 4);
    }
  } else if (scenario == "capture") {
    SlowCopy slow;
    for (int k = 0; k < 2; k++)
      forall(Platform::host, "slowcopy", 100, [slow](int i) { work(i); });
    forall(Platform::host, "cheap", 100, [](int i) { work(i); });
  } else if (scenario == "names") {
    names_file nf = names_file_read("RAJA_HOST_NAMES", "raja_host");
    unsigned n = 0;
    for (const char *name; (name = names_file_next(&nf)) != nullptr; n++)
      for (int k = 0; k < 2; k++) forall(Platform::host, name, 100, [](int i) { work(i); });
    names_file_free(&nf);
    printf("names %u sink %.1f\n", n, (double)sink);
  } else if (scenario == "bench") {
    bench(kernels, reps, unnamed, bench_name);
  } else if (scenario == "both") {
    for (int k = 0; k < 2; k++) forall(Platform::host, "axpy", 100, [](int i) { work(i); });
  } else {
    fprintf(stderr, "raja_host: unknown scenario %s\n", scenario.c_str());
    return 2;
  }

  if (fin) {
    RAJA::util::finalize_plugins();
  }
  printf("raja_host: %s done\n", scenario.c_str());
  return 0;
}
