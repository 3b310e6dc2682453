#!/usr/bin/env bash
# Host cost per kernel launch (tests/gpu/streams.cu's loop of empty launches): no
# tool, the minimal CUPTI tool (activities only; activities + empty API callbacks),
# and kprof's CUDA plugin, interleaved, `rounds` rounds; then per variant the
# median and the minimum ns per launch, and what each adds to no tool (medians).
#
#   [PIN=2-5] tests/gpu/overhead.sh <dir with libkprof_cuda.so and libkprof_core.so> [launches] [rounds]
set -u
lib="$(cd "$1" && pwd)"
n="${2:-50000}"
rounds="${3:-9}"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
export PATH="$PATH:/usr/local/cuda/bin"
cuda="$(dirname "$(dirname "$(command -v nvcc)")")"
cupti_inc="$(dirname "$(find "$cuda"/ /usr/local/cuda/ -name cupti.h 2>/dev/null | head -1)")"
cupti_lib="$(dirname "$(find "$cuda"/ /usr/local/cuda/ -name 'libcupti.so' 2>/dev/null | head -1)")"
nvcc -O2 -o "$out/streams" "$here/streams.cu" || exit 1
gcc -O2 -shared -fPIC -I"$cupti_inc" -I"$cuda/include" "$here/minimal_tool.c" \
  -o "$out/libminimal_tool.so" -L"$cupti_lib" -Wl,-rpath,"$cupti_lib" -lcupti || exit 1
# Every variant on the same cores (PIN, a taskset list; empty: unpinned), so that
# the scheduler's placement does not differ between them.
pin="${PIN-2-5}"
per_launch() {
  ${pin:+taskset -c "$pin"} "$@" 2>/dev/null | sed -n 's/^launch loop: .*, \([0-9]*\) ns per launch$/\1/p'
}
for r in $(seq "$rounds"); do
  echo "round $r: none $(per_launch env "$out/streams" "$n")" \
    "minimal $(per_launch env CUDA_INJECTION64_PATH="$out/libminimal_tool.so" "$out/streams" "$n")" \
    "minimal+callbacks $(per_launch env MINIMAL_CALLBACKS=1 CUDA_INJECTION64_PATH="$out/libminimal_tool.so" "$out/streams" "$n")" \
    "minimal+kinds+callbacks $(per_launch env MINIMAL_KINDS=all MINIMAL_CALLBACKS=1 CUDA_INJECTION64_PATH="$out/libminimal_tool.so" "$out/streams" "$n")" \
    "kprof $(per_launch env KPROF_SUMMARY=0 KPROF_OUTPUT_DIR="$out/k$r" CUDA_INJECTION64_PATH="$lib/libkprof_cuda.so" "$out/streams" "$n")"
done | tee "$out/rounds"
python3 - "$out/rounds" <<'PY'
import statistics, sys
v = {}
for line in open(sys.argv[1]):
    f = line.split()[2:]
    for k, x in zip(f[::2], f[1::2]):
        v.setdefault(k, []).append(int(x))
med = {k: statistics.median(x) for k, x in v.items()}
for k, x in v.items():
    print(f"{k:18} median {med[k]:7.0f} ns  min {min(x):6d} ns per launch")
add = {k: med[k] - med["none"] for k in v if k != "none"}
for k, a in add.items():
    print(f"{k:18} adds {a:7.0f} ns per launch (medians)")
for base in ("minimal", "minimal+callbacks", "minimal+kinds+callbacks"):
    if add.get(base, 0) > 0:
        print(f"kprof / {base}: {add['kprof'] / add[base]:.2f}x the added cost")
PY
