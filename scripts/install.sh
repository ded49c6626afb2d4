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
# One pip run for kvsim and its extras (each run re-resolves everything and rebuilds the
# editable wheel: ~10 s). ray: `--executor ray` and its tests (a throw-away local cluster)
# run in CI too. mooncake: the real store (store.kind: mooncake). pip installs nothing when
# it cannot resolve them all, so where the Mooncake package cannot be had, dev and ray are
# installed without it: the tests need them.
if ! "$PY" -m pip install --quiet -e '.[dev,ray,mooncake]'; then
  echo "install: the Mooncake package could not be installed; store.kind: mooncake is unavailable"
  "$PY" -m pip install --quiet -e '.[dev,ray]'
fi
# Model mode's core compiled with mypyc (a dev dependency; needs a C compiler): ~2x faster,
# the same results. Without it model mode runs interpreted.
"$PY" -m sim.native build || echo "install: warning: the compiled model core was not built"

# The real Mooncake store (store.kind: mooncake): the Python package imports libibverbs even
# over TCP. Without them kvsim still works with the modelled store; its real-store tests skip.
if ! ldconfig -p 2>/dev/null | grep -q 'libibverbs\.so\.1'; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install: apt-get install libibverbs1 (for the Mooncake store)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libibverbs1) \
      || echo "install: apt-get install libibverbs1 failed; the real Mooncake store will not import"
  else
    echo "install: the Mooncake store needs libibverbs1; run: sudo apt-get install -y libibverbs1"
  fi
fi
"$PY" -c "from sim.store.mooncake import mooncake_missing as m; w = m(); print('install: Mooncake store', 'ready' if w is None else 'unavailable: ' + w)"
command -v py-spy >/dev/null || echo "install: warning: py-spy is not on PATH; gil.audit: pyspy will say so and skip the audit"
"$PY" -c "import sim, connectors, torch, numba, simpy; print('install: kvsim ready (torch', torch.__version__ + ')')"
