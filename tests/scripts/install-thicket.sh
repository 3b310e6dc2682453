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

# shellcheck source=pip-target.sh
source "$(dirname "${BASH_SOURCE[0]}")/pip-target.sh"
pip_target thicket "caliperreader, hatchet, thicket" llnl-thicket==2026.1.1 llnl-hatchet==2026.2.0 caliper-reader==0.4.1
