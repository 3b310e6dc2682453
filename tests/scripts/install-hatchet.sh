#!/usr/bin/env bash
# Installs llnl-hatchet (LLNL's call-tree analysis library, with its dependencies:
# pandas, numpy, ...) from PyPI into $KPROF_DEPS_DIR/hatchet with `pip install
# --target`, for tests/tests/analyses.rs, which loads kprof's tasktree.json with
# hatchet.GraphFrame.from_literal. Pinned so that every machine checks against the
# same reader. Idempotent: <dir>/.kprof-installed records what was installed.
#
#   bash tests/scripts/install-hatchet.sh
set -euo pipefail

# shellcheck source=pip-target.sh
source "$(dirname "${BASH_SOURCE[0]}")/pip-target.sh"
pip_target hatchet "hatchet" llnl-hatchet==2026.2.0
