#!/usr/bin/env bash
# Installs what kprof's tests need on a Debian 12 machine that has a Rust toolchain,
# then builds the real runtimes the tests run against (Kokkos 3.4.01 from PyPI's
# pykokkos-base sdist). Idempotent: a second run only checks.
#
#   bash tests/setup.sh          # everything the tests need
#   bash tests/setup.sh --demo   # only what examples/run-demo.sh needs (apt packages)
set -euo pipefail
cd "$(dirname "$0")/.."

demo=0
[[ ${1:-} == --demo ]] && demo=1

# clang + libomp-dev: LLVM 14's OpenMP runtime with OMPT (the default libomp.so.5);
# clang-tools-14: clang-offload-bundler etc. for host offload with clang-14;
# libclang-rt-14-dev: clang's sanitizer runtimes (tests/tests/sanitizers.rs);
# gfortran: OpenACC Fortran tests (gcc -fopenacc runs in host fallback) and the
# MPI plugin's Fortran tests (with mpifort from openmpi-bin, mpifort.mpich from mpich);
# libopen-trace-format2-dev, otf2-tools: the OTF2 library kprof writes with, and
# otf2-print to read the archives back; pkg-config: the install checks;
# libpapi-dev: PAPI 7 and its software-defined events (sde_lib.h, libsde) for the
# counters tests (tests/tests/counters.rs); openmpi-bin, libopenmpi-dev: Open MPI
# 4.1 with OSHMEM (mpicc, mpirun, oshcc, oshrun) for the MPI and actor plugins;
# mpich, libmpich-dev: MPICH 4.0 beside it (mpicc.mpich, mpirun.mpich) for the MPI
# plugin's MPICH tests; Open MPI stays the default mpicc/mpirun (its alternatives
# priority, 50, is above MPICH's);
# graphviz: dot reads taskgraph.dot back, chromium: renders kprof plot's page
# headless (tests/tests/analyses.rs); lmod, and tcl8.6 for Environment Modules
# (unpacked below): the installed module files, loaded by both tools
# (tests/tests/modules.rs); linux-perf: `perf record -e cpu-clock`, the reference the
# call-stack samples are compared with (tests/tests/stack_sampling.rs).
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

packages=(cmake make gcc g++ gfortran pkg-config python3 python3-pip protobuf-compiler clang libomp-dev clang-tools-14 libclang-rt-14-dev libopen-trace-format2-dev otf2-tools libpapi-dev openmpi-bin libopenmpi-dev mpich libmpich-dev graphviz chromium lmod tcl8.6 linux-perf)
# The demo builds kprof and Kokkos (cmake, make, g++; pip fetches the sdist's build
# requirements) and runs the example.
[[ $demo == 1 ]] && packages=(cmake make gcc g++ python3 python3-pip)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[[ $demo == 1 ]] && exit 0

# clang-19 and clang-tools-19 (clang-offload-packager), for host offload
# (clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu) against the private
# libomp 19 below. Best effort: the offload tests skip without it (fail under
# KPROF_REQUIRE_ALL_TESTS=1). Without recommends it pulls no libomp-19-dev.
if ! command -v clang-19 >/dev/null || ! command -v clang-offload-packager-19 >/dev/null; then
    echo "setup: installing clang-19 clang-tools-19"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-19 clang-tools-19 >/dev/null \
        || echo "setup: clang-19 is not installable here; the target offload tests will skip"
fi

# LLVM 19's OpenMP runtime, unpacked privately: only one libomp-dev can be installed
# at a time (libomp-19-dev replaces libomp-dev 14 and repoints libomp.so.5). Layout:
#   target/deps/libomp19/root/    the two .debs, dpkg -x'ed
#   target/deps/libomp19/lib/     libomp.so.5, libomp.so, libomptarget.so*, and
#                                 libgomp.so.1 -> libomp.so.5 (gcc-built programs)
#   target/deps/libomp19/include/ omp.h, omp-tools.h
# Tests run the same binaries on it with LD_LIBRARY_PATH=target/deps/libomp19/lib.
OMP19=${KPROF_DEPS_DIR:-target/deps}/libomp19
OMP19_VERSION=$(apt-cache policy libomp5-19 2>/dev/null | awk '/Candidate:/ {print $2}')
if [[ -z $OMP19_VERSION || $OMP19_VERSION == "(none)" ]]; then
    echo "setup: libomp5-19 is not in the apt sources; the libomp 19 tests will skip"
elif [[ -f $OMP19/.kprof-unpacked && $(cat "$OMP19/.kprof-unpacked") == "$OMP19_VERSION" ]]; then
    echo "setup: libomp $OMP19_VERSION already unpacked in $OMP19"
else
    echo "setup: unpacking libomp $OMP19_VERSION into $OMP19"
    rm -rf "$OMP19"
    mkdir -p "$OMP19/debs" "$OMP19/root" "$OMP19/lib" "$OMP19/include"
    # apt-get download writes into the current directory; _apt may not write there.
    (cd "$OMP19/debs" && apt-get download -qq "libomp5-19=$OMP19_VERSION" "libomp-19-dev=$OMP19_VERSION" 2>/dev/null) \
        || (cd "$OMP19/debs" && apt-get download -qq libomp5-19 libomp-19-dev)
    for deb in "$OMP19"/debs/*.deb; do
        dpkg -x "$deb" "$OMP19/root"
    done
    llvm19=$(cd "$OMP19/root/usr/lib/llvm-19/lib" && pwd)
    [[ -f $llvm19/libomp.so.5 ]] || { echo "setup: no libomp.so.5 in the libomp 19 packages" >&2; exit 1; }
    for f in "$llvm19"/libomp.so.5 "$llvm19"/libomptarget.so*; do
        ln -sfn "../root/usr/lib/llvm-19/lib/$(basename "$f")" "$OMP19/lib/$(basename "$f")"
    done
    ln -sfn libomp.so.5 "$OMP19/lib/libomp.so"
    ln -sfn libomp.so.5 "$OMP19/lib/libgomp.so.1"
    cp "$llvm19"/clang/19/include/omp.h "$llvm19"/clang/19/include/omp-tools.h "$OMP19/include/"
    echo "$OMP19_VERSION" >"$OMP19/.kprof-unpacked"
fi

# Environment Modules 5 beside Lmod, unpacked privately: Debian's two packages
# conflict (both are `module`). Its modulecmd.tcl runs from any directory with
# tclsh8.6 and says where it is (`modulecmd.tcl bash autoinit`). Layout:
#   target/deps/environment-modules/root/   the .deb, dpkg -x'ed
#     usr/lib/modulecmd.tcl                 the command
EM=${KPROF_DEPS_DIR:-target/deps}/environment-modules
EM_VERSION=$(apt-cache policy environment-modules 2>/dev/null | awk '/Candidate:/ {print $2}')
if [[ -z $EM_VERSION || $EM_VERSION == "(none)" ]]; then
    echo "setup: environment-modules is not in the apt sources; its module test will skip"
elif [[ -f $EM/.kprof-unpacked && $(cat "$EM/.kprof-unpacked") == "$EM_VERSION" ]]; then
    echo "setup: environment-modules $EM_VERSION already unpacked in $EM"
else
    echo "setup: unpacking environment-modules $EM_VERSION into $EM"
    rm -rf "$EM"
    mkdir -p "$EM/debs" "$EM/root"
    # apt-get download writes into the current directory; _apt may not write there.
    (cd "$EM/debs" && apt-get download -qq "environment-modules=$EM_VERSION" 2>/dev/null) \
        || (cd "$EM/debs" && apt-get download -qq environment-modules)
    dpkg -x "$EM"/debs/environment-modules_*.deb "$EM/root"
    [[ -f $EM/root/usr/lib/modulecmd.tcl ]] || { echo "setup: no modulecmd.tcl in environment-modules" >&2; exit 1; }
    echo "$EM_VERSION" >"$EM/.kprof-unpacked"
fi

bash tests/scripts/build-kokkos.sh

# CUPTI's headers and library (CUDA 12 and 13) from PyPI's wheels, for the CUDA
# plugin's tests without a GPU (tests/tests/cuda.rs).
bash tests/scripts/install-cupti.sh

# llnl-hatchet from PyPI, which loads kprof's tasktree.json (tests/tests/analyses.rs).
bash tests/scripts/install-hatchet.sh

# caliper-reader, llnl-hatchet and llnl-thicket from PyPI, which load kprof's
# profile.cali (tests/tests/caliper.rs).
bash tests/scripts/install-thicket.sh
