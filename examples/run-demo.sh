#!/usr/bin/env bash
# Builds kprof and a real Kokkos (3.4.01) with the bundled example
# (examples/kokkos), then profiles the example: kprof's summary is printed on
# stderr and its files (profile, Perfetto and JSON traces) are written to
# ./kprof-demo (replaced on every run).
#
#   bash examples/run-demo.sh
#
# Needs cmake and make (apt-get install -y cmake make python3-pip), a Rust
# toolchain, g++ and python3 with pip; see tests/scripts/build-kokkos.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET in
    /*) ;;
    *) TARGET=$ROOT/$TARGET ;;
esac
LIB=$TARGET/release/libkprof.so
OUT=kprof-demo

echo "== building kprof (cargo build --release)" >&2
(cd "$ROOT" && cargo build --release)
[[ -f $LIB ]] || { echo "run-demo: $LIB was not built" >&2; exit 1; }

echo "== building Kokkos 3.4.01 and the example (tests/scripts/build-kokkos.sh)" >&2
EXE=$(bash "$ROOT/tests/scripts/build-kokkos.sh")

rm -rf -- "$OUT"
# Kokkos 3.4 reads KOKKOS_PROFILE_LIBRARY; Kokkos >= 3.5 reads KOKKOS_TOOLS_LIBS
# (and accepts both when they agree).
export KOKKOS_PROFILE_LIBRARY=$LIB KOKKOS_TOOLS_LIBS=$LIB
# Kokkos 3.4 prints a warning on stdout when OMP_PROC_BIND is unset.
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}
export KPROF_OUTPUT_DIR=$OUT
# A timeline too: open kprof-demo/trace.pftrace in https://ui.perfetto.dev
export KPROF_TRACE=${KPROF_TRACE:-perfetto,json}

echo "== KOKKOS_PROFILE_LIBRARY=$LIB KPROF_OUTPUT_DIR=$OUT $EXE" >&2
"$EXE"

echo "== profile files in $PWD/$OUT:" >&2
ls -l "$OUT" >&2
