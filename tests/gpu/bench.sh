#!/usr/bin/env bash
# What a GPU tool adds to each kernel launch, on a machine with an NVIDIA GPU and
# the CUDA toolkit: host nanoseconds per launch of an empty kernel (launch_bench.cu)
# with no tool, with the minimal CUPTI activity tool (min_cupti_tool.c) and with
# kprof (libkprof_cuda.so), RUNS interleaved runs each; prints the medians and
# kprof's added cost over the minimal tool's (the target is at most 1.2x).
#
#   cargo build --release && bash tests/gpu/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
cuda=${CUDA_HOME:-/usr/local/cuda}
out=${OUT:-target/gpu-bench}
runs=${RUNS:-5}
launches=${LAUNCHES:-200000}
mkdir -p "$out"
nvcc -O2 -o "$out/launch_bench" tests/gpu/launch_bench.cu
# CUDA 12 keeps CUPTI under extras/CUPTI; CUDA 13 beside the runtime.
cupti_inc="$cuda/include" cupti_lib="$cuda/lib64"
if [[ -d $cuda/extras/CUPTI/lib64 ]]; then
    cupti_inc="$cuda/extras/CUPTI/include" cupti_lib="$cuda/extras/CUPTI/lib64"
fi
gcc -O2 -shared -fPIC -I"$cupti_inc" -I"$cuda/include" tests/gpu/min_cupti_tool.c \
    -o "$out/min_cupti_tool.so" -L"$cupti_lib" -lcupti -Wl,-rpath,"$cupti_lib"
kprof="$PWD/target/release/libkprof_cuda.so"
[[ -f $kprof ]] || { echo "bench.sh: build kprof first ($kprof missing)" >&2; exit 1; }

ns() { "$@" | awk '/^launch_ns/ {print $2}'; }
for i in $(seq "$runs"); do
    none=$(ns "$out/launch_bench" "$launches")
    min=$(CUDA_INJECTION64_PATH="$out/min_cupti_tool.so" ns "$out/launch_bench" "$launches" 2>/dev/null)
    kp=$(CUDA_INJECTION64_PATH="$kprof" KPROF_SUMMARY=0 KPROF_OUTPUT_DIR="$out/kprof-run-$i" \
        ns "$out/launch_bench" "$launches" 2>/dev/null)
    echo "$none $min $kp"
done | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
none, mini, kp = (statistics.median(c) for c in zip(*rows))
print(f"host ns per kernel launch (median of {len(rows)} runs): no tool {none:.0f}, "
      f"minimal CUPTI tool {mini:.0f} (+{mini - none:.0f}), kprof {kp:.0f} (+{kp - none:.0f})")
added = (kp - none) / max(mini - none, 1e-9)
print(f"kprof adds {added:.2f}x what the minimal CUPTI tool adds (target: at most 1.2x)")
'
