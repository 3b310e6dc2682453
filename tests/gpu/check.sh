#!/usr/bin/env bash
# Runs tests/gpu/streams.cu on a machine with an NVIDIA GPU, nvcc and CUPTI: without
# kprof, with libkprof_cuda.so injected (KPROF_CUDA_DEBUG=1 prints every translated
# record), and through `kprof run` when the kprof binary is there. Each profile is
# checked by tests/gpu/expect.py (kernel counts as launched, no unknown correlation,
# the leak; `kprof run`'s CUPTI line); exits 1 when any check failed.
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
run() { # label, env..., args; stderr also in $out/<label's first word>.err
  echo "== $1"; shift
  env KPROF_SUMMARY=1 ${cupti:+KPROF_CUPTI_LIB=$cupti} "$@" 2> >(tee "$out/last.err" >&2)
  wait
}
failed=0
expect() { # profile dir, launches, [stderr file]
  python3 "$here/expect.py" "$@" || failed=1
}
run "kprof, debug records" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" KPROF_CUDA_DEBUG=1 \
  KPROF_OUTPUT_DIR="$out/debug" "$out/streams" 10
expect "$out/debug" 10 "$out/last.err"
run "kprof, 20000 launches" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" \
  KPROF_OUTPUT_DIR="$out/launches" "$out/streams" 20000
expect "$out/launches" 20000 "$out/last.err"
run "kprof, 20000 launches, shared cudart" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" \
  KPROF_OUTPUT_DIR="$out/launches_shared" "$out/streams_shared" 20000
expect "$out/launches_shared" 20000 "$out/last.err"
if [ -x "$lib/kprof" ]; then
  run "kprof run (detection)" "$lib/kprof" run -v -o "$out/run" -- "$out/streams" 10
  expect "$out/run" 10 "$out/last.err"
  run "kprof run (shared cudart)" "$lib/kprof" run -v -o "$out/run_shared" -- "$out/streams_shared" 10
  expect "$out/run_shared" 10 "$out/last.err"
else
  echo "FAIL: no kprof binary in $lib: the detection by kprof run is not checked"
  failed=1
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
if [ "$failed" != 0 ]; then
  echo "check.sh: FAILED (see the FAIL lines above)"
  exit 1
fi
echo "check.sh: every check passed"
