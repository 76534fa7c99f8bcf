#!/usr/bin/env bash
# Install the speed benchmark's anchor, robovet (PyPI "robovet", "Vet your robot datasets"), in a side venv.
#
# robovet is never a dependency of lrtool and is never installed in CI: benchmarks/bench_speed.py compares
# `lrtool validate` with `robovet doctor` and looks for it in .venv-robovet (or --robovet PATH).
# The `video` extra installs PyAV, so robovet probes every video as lrtool does (without it robovet skips its
# video checks).
#
#   benchmarks/setup_robovet.sh            # creates .venv-robovet in the repository root (idempotent)
#   ROBOVET_VENV=/some/dir benchmarks/setup_robovet.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${ROBOVET_VENV:-$ROOT/.venv-robovet}
PY=${PYTHON:-python3}
VERSION=${ROBOVET_VERSION:-0.2.2}
if [ ! -x "$VENV/bin/robovet" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "robovet[video]==$VERSION"
fi
"$VENV/bin/python" -c 'import importlib.metadata as m; print("robovet", m.version("robovet"), "av", m.version("av"))'
echo "robovet: $VENV/bin/robovet"
