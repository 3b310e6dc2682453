#!/usr/bin/env bash
# Checks kprof's RAJA plugin against a real RAJA install (not run by CI: RAJA is in
# none of the package registries CI reaches). Build RAJA outside this repository
# with runtime plugins, e.g. from a RAJA v2025.09.0 checkout with its submodules:
#
#   cmake -S raja -B raja-build -DCMAKE_INSTALL_PREFIX=$PWD/raja-install \
#     -DRAJA_ENABLE_RUNTIME_PLUGINS=On -DENABLE_OPENMP=On -DRAJA_ENABLE_TESTS=Off \
#     -DRAJA_ENABLE_EXAMPLES=Off -DRAJA_ENABLE_EXERCISES=Off && make -C raja-build -j install
#   bash tests/scripts/check-real-raja.sh $PWD/raja-install [--record]
#
# 1. tests/raja/layout_probe.cpp compiled against real RAJA and against
#    ffi-headers/kprof_raja_plugin.hpp must print the same lines (and those of
#    tests/raja/real_layout.txt; --record rewrites that file's lines).
# 2. tests/raja/real_forall.cpp, built against real RAJA, run plainly and under
#    `kprof run`: the same checksum, and kprof counts axpy 5, scale 3 and the
#    unnamed kernel (named by its caller, main) 2, each a raja_launch.
# Needs `cargo build --release` first (target/release/kprof and the plugins).
set -euo pipefail
cd "$(dirname "$0")/../.."
prefix=${1:?usage: check-real-raja.sh RAJA_PREFIX [--record]}
record=${2:-}
kprof=${CARGO_TARGET_DIR:-target}/release/kprof
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
raja_flags=(-std=c++17 -O2 -fopenmp -I"$prefix/include")

g++ "${raja_flags[@]}" -DKPROF_PROBE_REAL_RAJA tests/raja/layout_probe.cpp -o "$work/real_probe"
g++ -std=c++17 -O2 -Iffi-headers tests/raja/layout_probe.cpp -o "$work/our_probe"
"$work/real_probe" > "$work/real.txt"
"$work/our_probe" > "$work/ours.txt"
if ! diff -u "$work/real.txt" "$work/ours.txt"; then
    echo "FAIL: kprof_raja_plugin.hpp differs from real RAJA's layout (above: -real +ours)"
    exit 1
fi
if [[ $record == --record ]]; then
    { grep '^#' tests/raja/real_layout.txt; cat "$work/real.txt"; } > "$work/recorded"
    mv "$work/recorded" tests/raja/real_layout.txt
fi
if ! diff -u <(grep -v '^#' tests/raja/real_layout.txt) "$work/real.txt"; then
    echo "FAIL: tests/raja/real_layout.txt is not what this RAJA prints (rerun with --record)"
    exit 1
fi
echo "layout: $(wc -l < "$work/real.txt") facts identical (vtable slots, PluginContext, PluginOptions, Platform)"

g++ "${raja_flags[@]}" tests/raja/real_forall.cpp -L"$prefix/lib" -L"$prefix/lib64" \
    -lRAJA -lcamp -ldl -o "$work/real_forall"
plain=$("$work/real_forall")
measured=$("$kprof" run -o "$work/out" -- "$work/real_forall" 2>"$work/kprof.err" | grep checksum)
if [[ $plain != "$measured" ]]; then
    echo "FAIL: the program's result changed under kprof: '$plain' vs '$measured'"
    exit 1
fi
grep -q 'raja' "$work/kprof.err" || { echo "FAIL: kprof run did not load the RAJA plugin:"; cat "$work/kprof.err"; exit 1; }
rows=$("$kprof" report "$work/out" --csv | awk -F, 'NR > 1 { print $1, $2, $4 }' | sort)
want=$'axpy raja_launch 5\nmain raja_launch 2\nscale raja_launch 3'
if [[ $rows != "$want" ]]; then
    echo "FAIL: kprof's counts differ from the program's:"
    echo "$rows"
    exit 1
fi
echo "real RAJA run: $plain unchanged; counts axpy 5, scale 3, unnamed 2 as the program runs them"
echo "check-real-raja: OK"
