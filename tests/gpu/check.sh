#!/usr/bin/env bash
# Runs tests/gpu/streams.cu on a machine with an NVIDIA GPU, nvcc and CUPTI: without
# kprof, with libkprof_cuda.so injected (KPROF_CUDA_DEBUG=1 prints every translated
# record), and through `kprof run` when the kprof binary is there.
#
#   tests/gpu/check.sh <dir with libkprof_cuda.so and libkprof_core.so [and kprof]> [out dir]
set -u
lib="$(cd "$1" && pwd)"
out="${2:-/tmp/kprof-gpu}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")" && pwd)"
export PATH="$PATH:/usr/local/cuda/bin"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc --version | tail -1
echo "CUPTI libraries:"; find / -xdev -name 'libcupti.so*' 2>/dev/null | head -5
nvcc -O2 -o "$out/streams" "$here/streams.cu" || exit 1
nvcc -O2 -cudart shared -o "$out/streams_shared" "$here/streams.cu" || exit 1
echo "NEEDED (static cudart):"; readelf -d "$out/streams" | grep NEEDED
echo "'libcuda.so.1' in the static program: $(grep -c 'libcuda\.so\.1' "$out/streams")"

echo "== without kprof"
"$out/streams" 20000
cupti=""
if [ -z "${KPROF_CUPTI_LIB:-}" ] && ! ldconfig -p | grep -q libcupti; then
  cupti="$(find / -xdev -name 'libcupti.so*' 2>/dev/null | head -1)"
fi
run() { # label, env..., args
  echo "== $1"; shift
  env KPROF_SUMMARY=1 ${cupti:+KPROF_CUPTI_LIB=$cupti} "$@"
}
run "kprof, debug records" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" KPROF_CUDA_DEBUG=1 \
  KPROF_OUTPUT_DIR="$out/debug" "$out/streams" 10
run "kprof, 20000 launches" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" \
  KPROF_OUTPUT_DIR="$out/launches" "$out/streams" 20000
run "kprof, 20000 launches, shared cudart" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" \
  KPROF_OUTPUT_DIR="$out/launches_shared" "$out/streams_shared" 20000
if [ -x "$lib/kprof" ]; then
  run "kprof run (detection)" "$lib/kprof" run -v -o "$out/run" -- "$out/streams" 10
  run "kprof run (shared cudart)" "$lib/kprof" run -v -o "$out/run_shared" -- "$out/streams_shared" 10
fi
for d in "$out"/debug "$out"/run; do
  [ -f "$d/profile.json" ] && python3 - "$d/profile.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
print(sys.argv[1], "metadata:", {k: v for k, v in p.get("metadata", {}).items() if "CUPTI" in k or "CUDA" in k or "GPU" in k})
print("memory:", json.dumps(p.get("memory"))[:600])
print("anomalies:", {k: v for k, v in p.get("anomalies", {}).items() if v})
PY
done
