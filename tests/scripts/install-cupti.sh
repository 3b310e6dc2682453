#!/usr/bin/env bash
# Installs NVIDIA's CUPTI headers and library from PyPI's wheels, for the CUDA
# plugin's tests on machines without a GPU or a CUDA driver (tests/tests/cuda.rs):
# the stand-in libcupti.so (tests/harness/cupti_standin.c) is compiled against the
# real headers, and the real libcupti.so is loaded to check that kprof says in one
# line that GPU activity is off and the program runs unchanged.
#
#   bash tests/scripts/install-cupti.sh
#
# Directories (KPROF_DEPS_DIR defaults to <repo>/target/deps; a relative value is
# taken relative to the repository root):
#   $KPROF_DEPS_DIR/cupti/12/   CUDA 12: nvidia-cuda-cupti-cu12 (cupti*.h, libcupti.so.12),
#                               nvidia-cuda-runtime-cu12 (cuda.h and the types CUPTI's
#                               headers include), nvidia-cuda-nvcc-cu12 (only its
#                               include/crt/, which cuda.h's types include; its
#                               compiler binaries are removed)
#   $KPROF_DEPS_DIR/cupti/13/   CUDA 13: nvidia-cuda-cupti, nvidia-cuda-runtime and
#                               nvidia-cuda-crt, all under nvidia/cu13/{include,lib}
#   $KPROF_DEPS_DIR/nvml/       NVML's header (nvidia-nvml-dev-cu12:
#                               nvidia/nvml_dev/include/nvml.h), for the stand-in
#                               libnvidia-ml.so of the system sampler's test
#                               (tests/harness/nvml_standin.c)
# Each is `pip install --no-deps --target`; nothing goes into the system Python.
# Versions are pinned so that every machine compiles the stand-in against the same
# record layouts. Idempotent: <dir>/.kprof-installed records what was installed.
# CUDA 13 and NVML are best effort (the tests that need them skip without them,
# and fail under KPROF_REQUIRE_ALL_TESTS=1).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEPS=${KPROF_DEPS_DIR:-$ROOT/target/deps}
case $DEPS in
    /*) ;;
    *) DEPS=$ROOT/$DEPS ;;
esac

log() { printf 'install-cupti: %s\n' "$*" >&2; }

# install <dir> <required: 1|0> <pip requirement>...
install() {
    local dir=$1 required=$2
    shift 2
    local spec="$*"
    if [[ -f $dir/.kprof-installed && $(cat "$dir/.kprof-installed") == "$spec" ]]; then
        log "$spec already in $dir"
        return 0
    fi
    log "installing $spec into $dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    if ! python3 -m pip install --quiet --no-deps --disable-pip-version-check \
        --target "$dir" "$@" >&2; then
        rm -rf "$dir"
        if [[ $required == 1 ]]; then
            log "error: pip could not install $spec"
            exit 1
        fi
        log "pip could not install $spec; the tests that need it will skip"
        return 0
    fi
    # nvcc's wheel is there for its include/crt/ headers only.
    rm -rf "$dir"/nvidia/cuda_nvcc/bin "$dir"/nvidia/cuda_nvcc/nvvm
    echo "$spec" >"$dir/.kprof-installed"
}

install "$DEPS/cupti/12" 1 \
    nvidia-cuda-cupti-cu12==12.9.79 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-nvcc-cu12==12.9.86
install "$DEPS/cupti/13" 0 \
    nvidia-cuda-cupti==13.5.25 nvidia-cuda-runtime==13.5.37 nvidia-cuda-crt==13.5.37
install "$DEPS/nvml" 0 nvidia-nvml-dev-cu12==12.9.79
