#!/usr/bin/env bash
# Runs kprof's multi-threaded scenarios with the core and the plugins built under
# ThreadSanitizer, and prints per scenario the tests' result and the races found.
#
# Builds every cdylib of the workspace (the core and each plugin) with
# `-Zsanitizer=thread` and an instrumented standard library (`-Zbuild-std`; needs a
# nightly toolchain with rust-src) into its own target folder, then runs chosen
# integration tests against those libraries: KPROF_TEST_LIB_DIR points the tests at
# them, KPROF_TEST_PRELOAD preloads the TSan runtime into every program the tests
# start (the programs themselves are not instrumented, so the runtime must be
# loaded before the libraries that call it). Not run by CI (nightly, and minutes).
#
#   scripts/tsan.sh [SCENARIO...]        (default: all; see `scenarios` below)
#
# Exits 1 when a report is left that no suppression names.
#
# TSAN_TARGET_DIR: the instrumented build's target folder (default
# $CARGO_TARGET_DIR/tsan). Logs: $TSAN_TARGET_DIR/logs/<scenario>/ (one file per
# process, tsan.<pid>; cargo's output in test.log). Suppressions: scripts/tsan.supp,
# each with the report it silences and why that report is benign.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CARGO_TERM_COLOR=never
target=${CARGO_TARGET_DIR:-$root/target}
tsan_target=${TSAN_TARGET_DIR:-$target/tsan}
triple=x86_64-unknown-linux-gnu

if ! cargo +nightly --version >/dev/null 2>&1 ||
    ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q '^rust-src'; then
    echo "tsan: needs a nightly toolchain with rust-src (rustup toolchain install nightly" \
        "--component rust-src); nothing run" >&2
    exit 1
fi

# The TSan runtime, as a shared library to preload (Rust's own is a static archive,
# built without -fPIC, linked into instrumented executables only): GCC's, else
# clang's.
rt=
for c in "$(gcc -print-file-name=libtsan.so 2>/dev/null)" \
    "$(clang -print-file-name=libclang_rt.tsan-x86_64.so 2>/dev/null)"; do
    if [ -n "$c" ] && [ -f "$c" ]; then rt=$(readlink -f "$c"); break; fi
done
[ -n "$rt" ] || { echo "tsan: no TSan runtime (apt install libtsan2 or clang)" >&2; exit 1; }

# Every package whose library is a cdylib: the core and the plugins.
packages=()
for toml in core/Cargo.toml plugins/*/Cargo.toml; do
    grep -q 'cdylib' "$toml" || continue
    packages+=(-p "$(sed -n 's/^name = "\(.*\)"/\1/p' "$toml" | head -1)")
done
echo "== build ($(( ${#packages[@]} / 2 )) packages) with -Zsanitizer=thread -Zbuild-std into $tsan_target"
# --cfg kprof_tsan: the plugins tell TSan the orderings their uninstrumented
# runtimes make (plugins/ompt/src/handoff.rs). Legacy symbol names: the runtime's
# symbolizer demangles them (C++ style), so reports and suppressions read as paths.
RUSTFLAGS="-Zsanitizer=thread --cfg kprof_tsan -Zunstable-options -Csymbol-mangling-version=legacy" \
    CARGO_TARGET_DIR=$tsan_target \
    cargo +nightly build --quiet -Zbuild-std --target $triple --release "${packages[@]}"

# The folder the tests use as lib_dir(): the instrumented libraries and the command
# (not instrumented: it starts programs, it does not record them; it finds the
# plugins next to itself).
cargo build --quiet --release -p kprof-cli
libs=$tsan_target/libs
rm -rf "$libs" && mkdir -p "$libs"
cp "$tsan_target/$triple/release/"*.so "$libs/"
cp "$target/release/kprof" "$libs/"
preload=$rt
if ! nm -D --defined-only "$rt" | grep -q ' __tsan_memcpy$'; then
    # An older runtime than the compiler: give it the memory functions it lacks.
    gcc -O2 -shared -fPIC tests/sanitizers/tsan_memfns.c -o "$libs/libtsan_memfns.so"
    preload=$rt:$libs/libtsan_memfns.so
fi
defined=$(nm -D --defined-only "$rt" "$libs"/libtsan_memfns.so 2>/dev/null | awk '{print $3}' | sort -u)
needed=$(for so in "$libs"/libkprof*.so; do nm -D --undefined-only "$so"; done |
    awk '$2 ~ /^__tsan_/ {print $2}' | sort -u)
missing=$(comm -23 <(echo "$needed") <(echo "$defined") | tr '\n' ' ')
[ -z "$missing" ] || { echo "tsan: the runtime $rt lacks: $missing" >&2; exit 1; }

# name | test file | test name filters (each run with --exact).
scenarios() {
    cat <<'EOF'
kokkos_openmp|kokkos_real|example_under_kprof example_same_profile_in_place_and_from_records
ompt|openmp|loops_libomp14 tasks_libomp14 sync_libomp19 nested_libomp14
ompt_16_threads|-|loops tasks sync
traces|traces|sixteen_threads_lose_nothing_in_the_traces basic_scenario_traces_are_exact_in_both_formats cross_thread_children_get_flows_from_their_parent a_trace_stops_cleanly_at_its_size_limit
fork|robustness|forked_child_exits_at_once_with_its_own_profile forked_openmp_child_exits_at_once_with_its_own_profile fork_exec_stays_instant
signals|robustness|program_with_its_own_sigterm_handler_keeps_every_event second_signal_during_the_flush_waits_for_the_output crash_signals_write_the_profile_and_name_the_signal worker_calling_exit_first_leaves_complete_output simultaneous_first_calls_lose_nothing
mpi_reduction|mpi|job_profile_reduced_at_finalize_equals_the_ranks_profiles
EOF
}
want=("$@")
picked() { [ ${#want[@]} -eq 0 ] || printf '%s\n' "${want[@]}" | grep -qx "$1"; }

# One line per report: its kind and, for each of its first two stacks, the
# innermost frame outside the standard library and the TSan runtime (else the
# innermost), without addresses or symbol hashes; a report repeated in many
# processes counts once.
signatures() {
    awk 'function close_stack() { if (open) { sig = sig " | " pick; open = 0 } }
         function flush() { close_stack(); if (sig != "") print sig; sig = "" }
         /^WARNING: ThreadSanitizer:/ { flush(); sig = $0; sub(/ \(pid=[0-9]+\)/, "", sig); n = 0; next }
         /^SUMMARY:/ { flush(); next }
         /^  [A-Z]/ { close_stack(); if (sig != "" && n < 2) { open = 1; n++; pick = ""; inner = 0 } next }
         /^    #[0-9]+ / && open {
             f = $2; sub(/::h[0-9a-f]+$/, "", f); loc = $3; sub(/.*\//, "", loc)
             if (pick == "") pick = f " " loc
             if (!inner && $3 !~ /rustlib|libsanitizer|<null>|^src\//) { pick = f " " loc; inner = 1 }
         }
         END { flush() }' "$@"
}

# OMPT at 16 threads: programs of tests/openmp/ (clang 14, libomp 14) with 16
# threads each, every event to both traces; each must exit 0 with a profile that
# `kprof report` reads. (The openmp tests' exact trees are for 2 threads.)
direct_ompt_16_threads() {
    local logs=$1 ok=0 failed=0 p d
    shift
    for p in "$@"; do
        d=$logs/$p
        mkdir -p "$d"
        clang -O2 -g -fopenmp "tests/openmp/$p.c" -o "$d/$p"
        if (cd "$d" && env -u LD_LIBRARY_PATH OMP_NUM_THREADS=16 OMP_PROC_BIND=false \
            OMP_TOOL_LIBRARIES="$libs/libkprof_ompt.so" KPROF_OUTPUT_DIR="$d/out" \
            KPROF_TRACE=perfetto,json KPROF_SUMMARY=0 LD_PRELOAD="$preload" "./$p" \
            >"$d/stdout" 2>"$d/stderr") &&
            "$libs/kprof" report "$d/out" >"$d/report" 2>&1 &&
            grep -q '"omp_implicit_task"' "$d/out/profile.json"; then
            ok=$((ok + 1))
        else
            failed=$((failed + 1))
        fi
    done
    echo "programs: $ok ran and reported at 16 threads, $failed failed"
}

echo "== runtime $rt; $(rustc +nightly --version)"
cargo test --quiet --release -p kprof-tests --no-run \
    $(scenarios | cut -d'|' -f2 | grep -vx -- - | sort -u | sed 's/^/--test /') 2>&1 | tail -3
total=0
while IFS='|' read -r name file tests; do
    picked "$name" || continue
    logs=$tsan_target/logs/$name
    rm -rf "$logs" && mkdir -p "$logs"
    start=$(date +%s)
    # exitcode=0: a report does not change the program's status (the tests check
    # their own); die_after_fork=0: a forked child starts its own writer thread;
    # handle_*=0: a crash signal reaches kprof's handler, as without TSan.
    export TSAN_OPTIONS="suppressions=$root/scripts/tsan.supp halt_on_error=0 exitcode=0 \
die_after_fork=0 print_suppressions=1 log_path=$logs/tsan handle_segv=0 handle_sigbus=0 \
handle_abort=0 handle_sigill=0 handle_sigfpe=0"
    if [ "$file" = - ]; then
        result=$(direct_"$name" "$logs" $tests)
    else
        KPROF_TEST_LIB_DIR=$libs KPROF_TEST_PRELOAD=$preload \
            cargo test --release -p kprof-tests --test "$file" -- --exact $tests \
            >"$logs/test.log" 2>&1 || true
        result=$(grep -E '^test result:' "$logs/test.log" | tail -1 | sed 's/; finished.*//')
    fi
    unset TSAN_OPTIONS
    took=$(($(date +%s) - start))
    files=("$logs"/tsan.*)
    reports=0 unique=0 suppressed=0
    if [ -e "${files[0]}" ]; then
        reports=$(cat "${files[@]}" | grep -c '^WARNING: ThreadSanitizer:' || true)
        signatures "${files[@]}" | sort -u >"$logs/unique.txt"
        unique=$(wc -l <"$logs/unique.txt")
        suppressed=$(cat "${files[@]}" | awk '/^ThreadSanitizer: Matched/ {n += $3} END {print n + 0}')
    fi
    total=$((total + unique))
    echo "$name: ${took}s ${result:-no test result (see $logs/test.log)}; TSan reports: $reports ($unique unique), suppressed: $suppressed"
    [ ! -s "$logs/unique.txt" ] || sed 's/^/    /' "$logs/unique.txt"
done < <(scenarios)
echo "tsan: $total unique reports not suppressed (logs in $tsan_target/logs)"
# A report left is a finding: fixed in kprof, or named in scripts/tsan.supp.
[ "$total" -eq 0 ]
