#!/bin/sh
# Builds jacobi.c with gcc -fopenacc and profiles it with kprof's OpenACC plugin,
# writing both traces. Run from anywhere after `cargo build --release`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${TMPDIR:-/tmp}/kprof-openacc-example
mkdir -p "$out"
gcc -O2 -g -fopenacc "$here/jacobi.c" -o "$out/jacobi" -lm
cd "$out"
ACC_PROFLIB="$root/target/release/libkprof_acc.so" KPROF_TRACE=perfetto,json ./jacobi
