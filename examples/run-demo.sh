#!/usr/bin/env bash
# Builds kprof and a real Kokkos (3.4.01) with the bundled example
# (examples/kokkos), then profiles the example: kprof's summary is printed on
# stderr and its files (profile, Perfetto and JSON traces) are written to
# ./kprof-demo (replaced on every run).
#
#   bash examples/run-demo.sh
#
# Needs a Debian 12 machine with a Rust toolchain: what else it needs (cmake, make,
# g++, python3 with pip) is installed with apt first (tests/setup.sh --demo).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

echo "== installing what the demo needs (tests/setup.sh --demo)" >&2
bash "$ROOT/tests/setup.sh" --demo >&2
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
# Kokkos 3.4 prints a warning on stdout when OMP_PROC_BIND is unset.
export OMP_PROC_BIND=${OMP_PROC_BIND:-spread} OMP_PLACES=${OMP_PLACES:-threads}

# kprof run detects the (static) Kokkos in the example and loads libkprof.so; the
# summary goes to stderr, the files (profile, Perfetto and JSON traces) to ./kprof-demo.
echo "== $TARGET/release/kprof run --trace perfetto,json -o $OUT -- $EXE" >&2
"$TARGET/release/kprof" run --trace perfetto,json -o "$OUT" -- "$EXE"

echo "== profile files in $PWD/$OUT (open $OUT/trace.pftrace in https://ui.perfetto.dev):" >&2
ls -l "$OUT" >&2
