#!/usr/bin/env bash
# Install lrtool for development and CI on a fresh Debian machine (Python 3.11, root, no GPU):
#   - system ffmpeg (video fixtures, torchcodec's FFmpeg libraries), git
#   - a virtual environment in .venv with the CPU builds torch==2.13.0 and torchcodec==0.13.0 pinned
#     (an unpinned torch pulls GBs of CUDA packages; torchcodec 0.14+ are CUDA builds that fail to import
#     with a CPU torch), then lrtool itself with its loaders and dev extras.
#   - a separate venv .venv-olah with the olah Hub mirror, used by one integration test.
# Idempotent: re-running only installs what is missing. Users who just want the tool: `pip install .`
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)
command -v git >/dev/null 2>&1 || need_apt+=(git)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=(.venv/bin/python -m pip install -q --disable-pip-version-check)
.venv/bin/python -c "import torch, torchcodec" >/dev/null 2>&1 || "${PIP[@]}" torch==2.13.0 torchcodec==0.13.0
"${PIP[@]}" -e '.[loaders,dev]'

if [ ! -x .venv-olah/bin/olah-cli ]; then
  "$PY" -m venv .venv-olah
  .venv-olah/bin/python -m pip install -q --disable-pip-version-check olah==0.5.4
fi
echo "lrtool installed: $(.venv/bin/lrtool --version)"
