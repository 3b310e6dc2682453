#!/usr/bin/env bash
# Builds Kokkos (a source tree you provide: KOKKOS_SRC, a kokkos/kokkos checkout or
# release tarball, 4.x) for the Cuda back end, then runs tests/gpu/kokkos_gpu.cpp
# three ways: without kprof, with kprof's Kokkos plugin only (device kernels fenced
# at their end), and with the Kokkos and CUDA plugins (device times from CUPTI, no
# fence), and prints what each profile says about the kernels.
#
#   KOKKOS_SRC=/path/to/kokkos tests/gpu/kokkos_gpu.sh <dir with libkprof*.so> [work dir] [arch]
#   arch: a Kokkos_ARCH_ option (default HOPPER90)
set -euo pipefail
lib="$(cd "$1" && pwd)"
work="${2:-/tmp/kprof-kokkos-gpu}"
arch="${3:-HOPPER90}"
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
# nvcc_wrapper's own default arch (sm_70) is older than CUDA 13 supports, and
# CMake's compiler checks run before Kokkos adds its flags: a copy of the wrapper
# (in the work directory; the source stays as it is) defaults to the arch's
# compute capability, from its name's digits (HOPPER90 -> sm_90).
mkdir -p "$work"
wrapper="$work/nvcc_wrapper"
sed "s/^default_arch=.*/default_arch=\"sm_${arch//[!0-9]/}\"/" "$KOKKOS_SRC/bin/nvcc_wrapper" >"$wrapper"
chmod +x "$wrapper"
mkdir -p "$work"
if [ ! -f "$work/install/lib/cmake/Kokkos/KokkosConfig.cmake" ] && [ ! -f "$work/install/lib64/cmake/Kokkos/KokkosConfig.cmake" ]; then
  cmake -S "$KOKKOS_SRC" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$wrapper" -DCMAKE_INSTALL_PREFIX="$work/install" \
    -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ARCH_"$arch"=ON \
    -DKokkos_ENABLE_CUDA_LAMBDA=ON >/dev/null
  cmake --build "$work/build" -j "$(nproc)" >/dev/null
  cmake --install "$work/build" >/dev/null
fi
mkdir -p "$work/app"
cat >"$work/app/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(kokkos_gpu CXX)
find_package(Kokkos REQUIRED)
add_executable(kokkos_gpu $here/kokkos_gpu.cpp)
target_link_libraries(kokkos_gpu Kokkos::kokkos)
CM
cmake -S "$work/app" -B "$work/app/build" -DCMAKE_BUILD_TYPE=Release \
  -DKokkos_ROOT="$work/install" -DCMAKE_CXX_COMPILER="$wrapper" >/dev/null
cmake --build "$work/app/build" >/dev/null
app="$work/app/build/kokkos_gpu"
echo "== without kprof"; "$app"
echo "== Kokkos plugin only"
KOKKOS_TOOLS_LIBS="$lib/libkprof.so" KPROF_OUTPUT_DIR="$work/fenced" KPROF_SUMMARY=0 "$app"
echo "== Kokkos and CUDA plugins"
KOKKOS_TOOLS_LIBS="$lib/libkprof.so" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" \
  KPROF_OUTPUT_DIR="$work/cupti" KPROF_SUMMARY=0 KPROF_TRACE=perfetto "$app"
python3 - "$work/fenced/profile.json" "$work/cupti/profile.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    p = json.load(open(path))
    print(path, "| kokkos_device_timing:", p["metadata"].get("kokkos_device_timing"),
          "| anomalies:", {k: v for k, v in p["anomalies"].items() if v})
    def walk(nodes, depth=0):
        for n in nodes:
            if n["kind"] != "gpu_api":
                print("  " * depth + f"{n['name'][:90]} [{n['kind']}, {n.get('device')}] "
                      f"count {n['count']} total {n['total_ns']/1e3:.1f} us "
                      f"mean {n['mean_ns']/1e3:.1f} us")
            walk(n["children"], depth + 1)
    walk(p["tree"])
    for k in (p.get("gpu") or {}).get("kernels", []):
        print(f"  gpu kernel {k['name'][:70]}: {k['count']}x, {k['total_ns']/1e3:.1f} us")
PY
