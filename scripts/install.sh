#!/usr/bin/env bash
# Install lrtool for development and CI on a fresh Debian machine (Python 3.11, root, no GPU):
#   - system ffmpeg (video fixtures, torchcodec's FFmpeg libraries), git, and slurm-wlm + munge (the SLURM
#     scale-out test starts a single-node cluster with scripts/slurm-local.sh)
#   - a virtual environment in .venv with the CPU builds torch==2.13.0 and torchcodec==0.13.0 pinned
#     (an unpinned torch pulls GBs of CUDA packages; torchcodec 0.14+ are CUDA builds that fail to import
#     with a CPU torch), then lrtool itself with its loaders, dev (pytest, hypothesis, mkdocs and mkdocs-material
#     for the docs site), distributed (datatrove) and ray extras.
#   - a separate venv .venv-olah with the olah Hub mirror, used by one integration test.
#   - a separate venv .venv-lerobot with upstream lerobot 0.4.4 (its dataset writer and loader only), used by
#     scripts/write_real_fixtures.py and by the tests that load lrtool's output in upstream LeRobotDataset.
# Idempotent: re-running only installs what is missing. Users who just want the tool: `pip install .` (README.md).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v slurmctld >/dev/null 2>&1 || need_apt+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || need_apt+=(munge)
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
"${PIP[@]}" -e '.[loaders,dev,distributed,ray]'

if [ ! -x .venv-olah/bin/olah-cli ]; then
  "$PY" -m venv .venv-olah
  .venv-olah/bin/python -m pip install -q --disable-pip-version-check olah==0.5.4
fi
# Upstream lerobot, for the real-writer fixtures and round-trip tests. lerobot 0.4.4 pins torch<2.11,
# torchvision<0.26, torchcodec<0.11, datasets<5 and huggingface_hub<0.36, and pulls robot, simulation and
# logging stacks (wandb, rerun, gymnasium, opencv, diffusers) that its dataset code never imports. So lerobot goes in
# with --no-deps, next to exactly what lerobot.datasets imports: the same CPU torch/torchcodec as .venv (the torch
# pin is an upper bound of caution, the dataset code runs on 2.13), torchvision 0.28.0 (the release built for torch
# 2.13.0; PyPI only has its CUDA build, whose C++ ops cannot load beside a CPU torch: scripts/upstream_env.py
# handles that before the import), datasets/huggingface_hub/av/draccus inside lerobot's own ranges, pandas 2.
# About 1.5 GB and one minute. Bump LEROBOT_STACK to rebuild.
LEROBOT_STACK=(lerobot==0.4.4 torch==2.13.0 torchcodec==0.13.0 torchvision==0.28.0 datasets==4.8.5
  huggingface_hub==0.35.3 av==15.1.0 draccus==0.10.0 jsonlines==4.0.0 einops==0.8.2 accelerate==1.15.0
  pandas==2.3.3 'packaging>=24.2,<26')
LEROBOT_STAMP=.venv-lerobot/.lrtool-stack
if [ ! -f "$LEROBOT_STAMP" ] || [ "$(cat "$LEROBOT_STAMP")" != "${LEROBOT_STACK[*]}" ]; then
  [ -x .venv-lerobot/bin/python ] || "$PY" -m venv .venv-lerobot
  LPIP=(.venv-lerobot/bin/python -m pip install -q --disable-pip-version-check)
  "${LPIP[@]}" "${LEROBOT_STACK[@]:1}"
  # --no-warn-conflicts: the pins in lerobot's metadata that this stack does not meet are not met on purpose.
  "${LPIP[@]}" --no-deps --no-warn-conflicts "${LEROBOT_STACK[0]}"
  .venv-lerobot/bin/python scripts/upstream_env.py --check
  echo "${LEROBOT_STACK[*]}" > "$LEROBOT_STAMP"
fi

echo "lrtool installed: $(.venv/bin/lrtool --version)"
