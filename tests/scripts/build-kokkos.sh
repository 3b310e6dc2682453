#!/usr/bin/env bash
# Builds a real Kokkos (3.4.01, Serial + OpenMP, with the tuning interface, Release,
# static) from the Kokkos sources vendored in PyPI's pykokkos-base 0.0.7 sdist,
# installs it, and builds the bundled example examples/kokkos/ against it with
# find_package(Kokkos). Kokkos_ENABLE_TUNING only makes Kokkos look up the tuning
# callbacks and run its tuners when asked (KOKKOS_TUNE_INTERNALS); without a tuning
# tool it behaves as without the option (tests/tests/kokkos_tuning.rs uses it).
#
#   bash tests/scripts/build-kokkos.sh      # prints the example binary's path last
#
# Directories (KPROF_DEPS_DIR defaults to <repo>/target/deps; a relative value is
# taken relative to the repository root, as tests/tests/kokkos_real.rs does):
#   $KPROF_DEPS_DIR/kokkos-3.4.01/download/   the sdist (sha256-checked)
#   $KPROF_DEPS_DIR/kokkos-3.4.01/src/        the unpacked sdist
#   $KPROF_DEPS_DIR/kokkos-3.4.01/build/      Kokkos' build tree
#   $KPROF_DEPS_DIR/kokkos-3.4.01/install/    Kokkos' install prefix
#   $KPROF_DEPS_DIR/kokkos-example/           the example's build tree, with kokkos_example
#
# Idempotent: the download, the Kokkos build and the install are skipped when done
# (install/.kprof-built records the configuration that built it); the example is
# re-configured and rebuilt incrementally by cmake/make each time (a no-op when
# nothing changed).
#
# Needs, on a fresh Debian 12 with gcc/g++, python3 and a Rust toolchain, the apt
# packages:   cmake make python3-pip
# (pip fetches pykokkos-base's build requirements as wheels from PyPI to prepare the
# sdist's metadata; nothing is installed into the system Python).
#
# Progress goes to stderr; stdout gets only the path of the example binary.
set -euo pipefail

KOKKOS_VERSION=3.4.01
SDIST_NAME=pykokkos-base
SDIST_VERSION=0.0.7
SDIST_FILE=pykokkos-base-${SDIST_VERSION}.tar.gz
SDIST_SHA256=6339daced1e81a2748f381847d8717cd77d824407da3c263b9491b5630c642b0
JOBS=${KPROF_BUILD_JOBS:-2}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEPS=${KPROF_DEPS_DIR:-$ROOT/target/deps}
case $DEPS in
    /*) ;;
    *) DEPS=$ROOT/$DEPS ;;
esac
KDIR=$DEPS/kokkos-$KOKKOS_VERSION
INSTALL=$KDIR/install
EXAMPLE_BUILD=$DEPS/kokkos-example
EXAMPLE_BIN=$EXAMPLE_BUILD/kokkos_example

log() { printf 'build-kokkos: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in cmake make g++ python3; do
    command -v "$tool" >/dev/null || die "$tool not found (apt-get install -y cmake make g++ python3-pip)"
done

mkdir -p "$KDIR"
# One build at a time per deps directory.
if command -v flock >/dev/null; then
    exec 9>"$KDIR/.lock"
    flock 9
fi

KOKKOS_OPTIONS=(
    -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_CXX_STANDARD=14
    -DBUILD_SHARED_LIBS=OFF
    -DKokkos_ENABLE_SERIAL=ON
    -DKokkos_ENABLE_OPENMP=ON
    -DKokkos_ENABLE_TUNING=ON
    -DKokkos_ENABLE_TESTS=OFF
    -DKokkos_ENABLE_EXAMPLES=OFF
)
STAMP="kokkos $KOKKOS_VERSION from $SDIST_FILE; cxx $(command -v "${CXX:-g++}"); ${KOKKOS_OPTIONS[*]}"

if [[ -f $INSTALL/.kprof-built && $(cat "$INSTALL/.kprof-built") == "$STAMP" ]]; then
    log "Kokkos $KOKKOS_VERSION already installed in $INSTALL"
else
    # 1. the sdist
    sdist=$KDIR/download/$SDIST_FILE
    if [[ -f $sdist ]] && echo "$SDIST_SHA256  $sdist" | sha256sum -c --status; then
        log "using $sdist"
    else
        rm -rf "$KDIR/download"
        mkdir -p "$KDIR/download"
        log "downloading $SDIST_NAME==$SDIST_VERSION (sdist) from PyPI"
        # Only this package as source (--no-binary $SDIST_NAME): with ':all:' pip
        # would also build its build requirements (cmake, scikit-build, ...) from
        # source just to prepare the metadata, which takes many minutes.
        python3 -m pip download --quiet --no-deps --no-binary "$SDIST_NAME" \
            --dest "$KDIR/download" "$SDIST_NAME==$SDIST_VERSION" >&2
        [[ -f $sdist ]] || die "pip did not produce $sdist"
        echo "$SDIST_SHA256  $sdist" | sha256sum -c --status \
            || die "$sdist does not have the expected sha256 $SDIST_SHA256"
    fi

    # 2. unpack, and find Kokkos inside (external/kokkos in 0.0.7)
    rm -rf "$KDIR/src"
    mkdir -p "$KDIR/src"
    tar -xzf "$sdist" -C "$KDIR/src"
    ksrc=
    while IFS= read -r hist; do
        d=$(dirname "$hist")
        if [[ -f $d/CMakeLists.txt ]] \
            && grep -q 'set(Kokkos_VERSION_MAJOR 3)' "$d/CMakeLists.txt" \
            && grep -q 'set(Kokkos_VERSION_MINOR 4)' "$d/CMakeLists.txt" \
            && grep -q 'set(Kokkos_VERSION_PATCH 01)' "$d/CMakeLists.txt"; then
            ksrc=$d
            break
        fi
    done < <(find "$KDIR/src" -name master_history.txt -type f | sort)
    [[ -n $ksrc ]] || die "no Kokkos $KOKKOS_VERSION source tree found in $sdist"
    log "Kokkos source: $ksrc"

    # 3. build and install
    rm -rf "$KDIR/build" "$INSTALL"
    log "configuring Kokkos (log: $KDIR/build/configure.log)"
    mkdir -p "$KDIR/build"
    if ! cmake -S "$ksrc" -B "$KDIR/build" -DCMAKE_INSTALL_PREFIX="$INSTALL" \
        "${KOKKOS_OPTIONS[@]}" >"$KDIR/build/configure.log" 2>&1; then
        tail -n 40 "$KDIR/build/configure.log" >&2
        die "configuring Kokkos failed"
    fi
    log "building Kokkos with -j$JOBS (log: $KDIR/build/build.log)"
    if ! cmake --build "$KDIR/build" --parallel "$JOBS" >"$KDIR/build/build.log" 2>&1; then
        tail -n 40 "$KDIR/build/build.log" >&2
        die "building Kokkos failed"
    fi
    cmake --install "$KDIR/build" >"$KDIR/build/install.log" 2>&1 \
        || { tail -n 40 "$KDIR/build/install.log" >&2; die "installing Kokkos failed"; }
    [[ -f $INSTALL/lib/cmake/Kokkos/KokkosConfig.cmake || -f $INSTALL/lib64/cmake/Kokkos/KokkosConfig.cmake ]] \
        || die "no KokkosConfig.cmake under $INSTALL"
    printf '%s' "$STAMP" >"$INSTALL/.kprof-built"
    log "Kokkos $KOKKOS_VERSION installed in $INSTALL"
fi

# 4. the example (incremental)
log "building examples/kokkos in $EXAMPLE_BUILD"
mkdir -p "$EXAMPLE_BUILD"
if ! cmake -S "$ROOT/examples/kokkos" -B "$EXAMPLE_BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DKokkos_ROOT="$INSTALL" >"$EXAMPLE_BUILD/configure.log" 2>&1; then
    tail -n 40 "$EXAMPLE_BUILD/configure.log" >&2
    die "configuring the example failed"
fi
if ! cmake --build "$EXAMPLE_BUILD" --parallel "$JOBS" >"$EXAMPLE_BUILD/build.log" 2>&1; then
    tail -n 40 "$EXAMPLE_BUILD/build.log" >&2
    die "building the example failed"
fi
[[ -x $EXAMPLE_BIN ]] || die "$EXAMPLE_BIN was not built"
echo "$EXAMPLE_BIN"
