#!/usr/bin/env bash
# Installs what kprof's tests need on a Debian 12 machine that has a Rust toolchain,
# then builds the real runtimes the tests run against (Kokkos 3.4.01 from PyPI's
# pykokkos-base sdist). Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake make gcc g++ python3 python3-pip protobuf-compiler)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

bash tests/scripts/build-kokkos.sh
