#!/usr/bin/env bash
# Installs LLNL's readers of Caliper's .cali files from PyPI into
# $KPROF_DEPS_DIR/thicket with `pip install --target`: caliper-reader, llnl-hatchet
# (GraphFrame.from_caliperreader) and llnl-thicket (Thicket.from_caliperreader,
# many runs with their metadata), with their dependencies (pandas, numpy, scipy,
# ...), for tests/tests/caliper.rs, which loads kprof's profile.cali with them.
# A directory of its own beside $KPROF_DEPS_DIR/hatchet, so that each pin set
# resolves alone. Nothing goes into the system Python; the tests put the
# directory on PYTHONPATH. Pinned so that every machine checks against the same
# readers. Idempotent: <dir>/.kprof-installed records what was installed.
#
#   bash tests/scripts/install-thicket.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEPS=${KPROF_DEPS_DIR:-$ROOT/target/deps}
case $DEPS in
    /*) ;;
    *) DEPS=$ROOT/$DEPS ;;
esac
DIR=$DEPS/thicket
SPECS=(llnl-thicket==2026.1.1 llnl-hatchet==2026.2.0 caliper-reader==0.4.1)

if [[ -f $DIR/.kprof-installed && $(cat "$DIR/.kprof-installed") == "${SPECS[*]}" ]]; then
    echo "install-thicket: ${SPECS[*]} already in $DIR" >&2
    exit 0
fi
echo "install-thicket: installing ${SPECS[*]} into $DIR" >&2
rm -rf "$DIR"
mkdir -p "$DIR"
if ! python3 -m pip install --quiet --disable-pip-version-check --target "$DIR" "${SPECS[@]}" >&2; then
    rm -rf "$DIR"
    echo "install-thicket: error: pip could not install ${SPECS[*]}" >&2
    exit 1
fi
PYTHONPATH=$DIR python3 -c "import caliperreader, hatchet, thicket" \
    || { echo "install-thicket: error: thicket does not import from $DIR" >&2; exit 1; }
echo "${SPECS[*]}" >"$DIR/.kprof-installed"
