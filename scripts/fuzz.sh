#!/usr/bin/env bash
# Fuzzes kprof's readers of outside input with libFuzzer (cargo-fuzz), each target
# for a bounded time, seeded from tests/fuzz-corpus/, and prints libFuzzer's last
# stats line per target (executions, coverage). Needs a nightly toolchain and
# cargo-fuzz (`cargo install cargo-fuzz`); not run by CI (a fresh machine has
# only stable). Crashes are left in fuzz/artifacts/<target>/.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(profile_json job_form settings tuning_cache elf pftrace)
tc=+nightly
if ! cargo +nightly --version >/dev/null 2>&1; then
    # No nightly: stable's compiler accepts -Z flags under RUSTC_BOOTSTRAP.
    tc=; export RUSTC_BOOTSTRAP=1
fi
seed() {
    local t=$1 d=fuzz/corpus/$1
    mkdir -p "$d"
    case $t in
        profile_json) cp tests/fuzz-corpus/profile/*.json "$d"/ ;;
        job_form) cp tests/fuzz-corpus/form/*.bin "$d"/ ;;
        settings) printf '1' >"$d/flag"; printf '64' >"$d/count"; printf 'off' >"$d/word" ;;
        tuning_cache) cp tests/fuzz-corpus/tuning-cache/*.json "$d"/ ;;
        # A program built here, as the property test builds it (no binary is committed).
        elf) cc -O2 -g tests/fuzz-corpus/elf/seed.c -o "$d/seed" \
                -Wl,--no-as-needed -lm -Wl,-rpath,/opt/kokkos/lib ;;
        pftrace) cp tests/fuzz-corpus/pftrace/*.pftrace "$d"/ ;;
    esac
}
for t in "${targets[@]}"; do
    seed "$t"
    log=fuzz/$t.log
    # -rss_limit_mb: the memory cap per input; -max_len: the input size cap.
    cargo $tc fuzz run --release "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
        >"$log" 2>&1 && rc=0 || rc=$?
    execs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    last=$(grep -E '^#[0-9]+' "$log" | tail -1)
    echo "$t: rc=$rc ${secs}s executions=${execs:-?} last: ${last:-none}"
done
