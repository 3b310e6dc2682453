#!/usr/bin/env bash
# Installs llnl-hatchet (LLNL's call-tree analysis library, with its dependencies:
# pandas, numpy, ...) from PyPI into $KPROF_DEPS_DIR/hatchet with `pip install
# --target`, for tests/tests/analyses.rs, which loads kprof's tasktree.json with
# hatchet.GraphFrame.from_literal. Nothing goes into the system Python; the tests
# put the directory on PYTHONPATH. Pinned so that every machine checks against the
# same reader. Idempotent: <dir>/.kprof-installed records what was installed.
#
#   bash tests/scripts/install-hatchet.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEPS=${KPROF_DEPS_DIR:-$ROOT/target/deps}
case $DEPS in
    /*) ;;
    *) DEPS=$ROOT/$DEPS ;;
esac
DIR=$DEPS/hatchet
SPEC="llnl-hatchet==2026.2.0"

if [[ -f $DIR/.kprof-installed && $(cat "$DIR/.kprof-installed") == "$SPEC" ]]; then
    echo "install-hatchet: $SPEC already in $DIR" >&2
    exit 0
fi
echo "install-hatchet: installing $SPEC into $DIR" >&2
rm -rf "$DIR"
mkdir -p "$DIR"
if ! python3 -m pip install --quiet --disable-pip-version-check --target "$DIR" "$SPEC" >&2; then
    rm -rf "$DIR"
    echo "install-hatchet: error: pip could not install $SPEC" >&2
    exit 1
fi
PYTHONPATH=$DIR python3 -c "import hatchet" \
    || { echo "install-hatchet: error: hatchet does not import from $DIR" >&2; exit 1; }
echo "$SPEC" >"$DIR/.kprof-installed"
