#!/usr/bin/env bash
# Prints the layout facts of the real rocprofiler-sdk headers that kprof's ROCm
# plugin depends on, and compares them with the facts recorded for that SDK
# version in tests/rocm/real_layout/ (which plugins/rocm/src/sys.rs's unit tests
# hold the Rust declarations to). Not run by CI: ROCm's headers are in none of the
# package registries CI reaches.
#
#   bash tests/scripts/check-real-rocprofiler.sh /opt/rocm/include [--record]
#
# INCLUDE_DIR must hold rocprofiler-sdk/ and the HSA (hsa/, hsakmt/) and HIP (hip/)
# headers it includes, as a ROCm install's include directory does. --record
# writes tests/rocm/real_layout/sdk-<version>.txt (a new SDK version: then run
# `cargo test -p kprof-rocm` to see whether the declarations still match).
set -euo pipefail
cd "$(dirname "$0")/../.."
inc=${1:?usage: check-real-rocprofiler.sh INCLUDE_DIR [--record]}
record=${2:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++17 -D__HIP_PLATFORM_AMD__ -I"$inc" tests/rocm/layout_probe.cpp -o "$work/probe"
"$work/probe" > "$work/real.txt"
v=$(awk '$1 == "version" { print $2 }' "$work/real.txt")
name=sdk-$((v / 10000)).$((v / 100 % 100)).$((v % 100)).txt
file=tests/rocm/real_layout/$name
if [[ $record == --record ]]; then
    {
        echo "# Printed by tests/rocm/layout_probe.cpp compiled (g++, $(uname -m)) against the"
        echo "# headers in $inc, by tests/scripts/check-real-rocprofiler.sh INCLUDE_DIR --record."
        echo "# plugins/rocm/src/sys.rs's unit tests require the Rust declarations to print the same."
        cat "$work/real.txt"
    } > "$file"
    echo "recorded $file ($(wc -l < "$work/real.txt") facts)"
    exit 0
fi
if [[ ! -f $file ]]; then
    echo "no recorded facts for this SDK ($name): rerun with --record, then cargo test -p kprof-rocm"
    exit 1
fi
if ! diff -u <(grep -v '^#' "$file") "$work/real.txt"; then
    echo "FAIL: the headers in $inc differ from $file (above: -recorded +headers)"
    exit 1
fi
echo "check-real-rocprofiler: $(wc -l < "$work/real.txt") facts of $name as recorded: OK"
