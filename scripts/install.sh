#!/usr/bin/env bash
# Install kvsim and everything it needs into the current Python environment.
# Torch: where no NVIDIA GPU is present, take the CPU wheel (torch==2.13.0) first, so that the
# plain torch requirement of the package is already met and pip pulls no multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "install: NVIDIA GPU found; installing the default (CUDA) torch build"
    "$PY" -m pip install --quiet "torch>=2.3"
  else
    echo "install: no GPU; installing the CPU build torch==2.13.0"
    "$PY" -m pip install --quiet "torch==2.13.0"
  fi
fi
# ray: `--executor ray` and its tests (a throw-away local cluster) run in CI too.
"$PY" -m pip install --quiet -e '.[dev,ray]'
"$PY" -c "import sim, connectors, torch, numba, simpy; print('install: kvsim ready (torch', torch.__version__ + ')')"
