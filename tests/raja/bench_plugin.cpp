/*
 * bench_plugin.cpp - baselines for the RAJA overhead benchmark
 * (tests/benches/raja_overhead.rs), built against ffi-headers/kprof_raja_plugin.hpp
 * like libkprof_raja.so and loaded by raja_host.cpp the way RAJA loads plugins.
 *
 * Default: an empty PluginStrategy -- the cost of RAJA's virtual dispatch alone.
 * -DFLOOR: the physical floor of a tracing plugin that records one slice per
 * kernel, as kprof does: preLaunch and postLaunch each read the TSC and store one
 * 16-byte record (timestamp, platform) into a reused thread-local ring (64 KiB,
 * stays in cache); the capture callbacks are empty. No names, no writer:
 * whatever kprof adds on top is its own cost.
 */
#include <cstdint>
#include <x86intrin.h>

#include "kprof_raja_plugin.hpp"

using kprof_raja::PluginContext;
using kprof_raja::PluginStrategy;

namespace {

#ifdef FLOOR
struct Record {
  uint64_t ts;
  uint64_t what;
};
constexpr uint64_t RECORDS = 4096; /* power of two: 64 KiB per thread */
thread_local struct {
  uint64_t next;
  Record buf[RECORDS];
} ring;

inline void record(const PluginContext &ctx) {
  Record &r = ring.buf[ring.next++ & (RECORDS - 1)];
  r.ts = __rdtsc();
  r.what = static_cast<uint64_t>(ctx.platform);
}

class BenchPlugin : public PluginStrategy {
public:
  void preLaunch(const PluginContext &c) override { record(c); }
  void postLaunch(const PluginContext &c) override { record(c); }
};
#else
class BenchPlugin : public PluginStrategy {};
#endif

} /* namespace */

extern "C" __attribute__((visibility("default"))) PluginStrategy *RAJAGetPlugin() {
  return new BenchPlugin();
}
