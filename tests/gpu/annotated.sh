#!/usr/bin/env bash
# Runs tests/gpu/annotated.cu with the CUDA plugin on a machine with an NVIDIA GPU
# and checks the profile: each kernel under the region open at its launch, its
# launch count, its device time against the CUDA events around it, the copies,
# and the leak. Leaves profile.json and trace.pftrace in <out>/annotated.
#
#   tests/gpu/annotated.sh <dir with libkprof_core.so and libkprof_cuda.so> [out] [reps]
set -euo pipefail
lib="$(cd "$1" && pwd)"
out="${2:-/tmp/kprof-gpu}"
reps="${3:-5}"
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
mkdir -p "$out"
nvcc -O2 -I"$here/../../ffi-headers" -o "$out/annotated" "$here/annotated.cu" \
  -L"$lib" -lkprof_core -Xlinker -rpath -Xlinker "$lib"
rm -rf "$out/annotated-run"
CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" KPROF_TRACE=perfetto \
  KPROF_OUTPUT_DIR="$out/annotated-run" "$out/annotated" "$reps" >"$out/annotated.txt"
python3 - "$out/annotated.txt" "$out/annotated-run/profile.json" "$reps" <<'PY'
import json, sys
events, reps = {}, int(sys.argv[3])
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0] == "event":
        events.setdefault(f[1], []).append(float(f[3]))
p = json.load(open(sys.argv[2]))
def find(nodes, path):
    for n in nodes:
        if n["name"] == path[0]:
            return n if len(path) == 1 else find(n["children"], path[1:])
    return None
ok = True
def check(what, cond):
    global ok
    print(("ok  " if cond else "BAD ") + what)
    ok &= bool(cond)
for path, kernel in [(["step", "axpy(int, float, float const*, float*)"], "axpy"),
                     (["step", "rescale", "scale<float>(float*, float, int)"], "scale")]:
    n = find(p["tree"], path)
    check(f"{' / '.join(path)}: a gpu_kernel node", n is not None and n["kind"] == "gpu_kernel")
    if n is None:
        continue
    check(f"{kernel}: {n['count']} launches (expected {reps})", n["count"] == reps)
    # The first repetition's events also hold the module's lazy loading.
    ev = events[kernel][1:] or events[kernel]
    print(f"    {kernel}: device {n['mean_ns']/1e3:.1f} us mean (min {n['min_ns']/1e3:.1f}, "
          f"max {n['max_ns']/1e3:.1f}); CUDA events after the first: "
          f"{sum(ev)/len(ev)/1e3:.1f} us mean (min {min(ev)/1e3:.1f}, max {max(ev)/1e3:.1f})")
    # Events bracket the kernel on its stream: no launch of it lasts longer than
    # the shortest span of events around one (1 us for the events' resolution).
    check(f"{kernel}: every device time within the events around it", n["max_ns"] <= min(ev) + 1000)
for region, direction in [("upload", "memcpy HtoD"), ("download", "memcpy DtoH")]:
    n = find(p["tree"], [region])
    kids = [c for c in (n or {}).get("children", []) if c["kind"] == "gpu_memcpy"]
    check(f"{region}: a gpu_memcpy child ({[c['name'] for c in kids]})", len(kids) >= 1)
gpu = p.get("gpu", {})
for c in gpu.get("copies", []):
    print(f"    copy {c['device']} {c['direction']}: {c['count']}x {c['bytes']} B, {c['gb_per_s']:.1f} GB/s")
for d in gpu.get("devices", []):
    print(f"    device {d['device']}: busy {d['busy_ns']/1e6:.2f} ms, idle {d['idle_pct']:.1f}%, "
          f"high-water {d['memory_high_water_bytes']>>20} MiB, leaked {d['leaked_bytes']} B "
          f"in {d['leaked_allocations']}")
    check(f"{d['device']}: the 3 MiB leak", d["leaked_bytes"] == 3 << 20 and d["leaked_allocations"] == 1)
anom = {k: v for k, v in p["anomalies"].items() if v}
check(f"no anomalies ({anom})", not anom)
print("device_tool_ns", p["kprof"].get("device_tool_ns"))
sys.exit(0 if ok else 1)
PY
