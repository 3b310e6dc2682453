#!/usr/bin/env bash
# The one command that runs kprof's tests on a Debian 12 machine with a Rust toolchain:
# installs what the tests need and builds the real runtimes they run against
# (tests/setup.sh, idempotent), then runs every test in release mode and prints one
# closing line with the totals of every test binary.
#
#   bash tests/test.sh [extra cargo test arguments, e.g. -- openmp]
#
# KPROF_REQUIRE_ALL_TESTS=1 turns a skipped real-runtime test into a failure (CI sets it).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

echo "== setup (tests/setup.sh)"
bash tests/setup.sh

# --no-fail-fast: every test binary runs, so one failure does not hide the rest.
echo "== cargo test --release --workspace --no-fail-fast $*"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --release --workspace --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?
# The concurrency models (docs/concurrency-models.md): the core built with loom's
# atomics, in a target folder of their own so the build above is not redone. Each
# prints the interleavings it explored (--nocapture); their totals count below.
# Only when no test filter was given (a filter is for the tests above).
if [ "$#" -eq 0 ]; then
    echo "== loom models: RUSTFLAGS=--cfg loom cargo test --release -p kprof-core --test loom"
    RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom" \
        cargo test --release -p kprof-core --test loom -- --nocapture 2>&1 | tee -a "$log" || status=$?
fi
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?$/) p += $i; if ($(i+1) ~ /^failed;?$/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
