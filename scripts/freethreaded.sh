#!/usr/bin/env bash
# `make freethreaded`: a free-threaded CPython with kvsim installed, for `interpreter:` in a
# config (configs/gil_on_off.yaml; docs/columns.md §GIL off). Prints its python's path last.
#
# Which interpreter: FT_PYTHON if set, else python3.14t or python3.13t on PATH, else CPython
# 3.13 built with --disable-gil from Debian's source package (the machine's own apt mirror, read
# from /etc/apt/sources.list.d/debian.sources at run time; apt's own state is left untouched).
# Everything lands in a cache outside the repository; a second run finds its stamps and costs
# nothing. The venv gets the dependencies that have free-threaded wheels (no numba, no torch:
# the variants that need them are refused at validation under this interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
CACHE="${KVSIM_FT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvsim/freethreaded}"
SUITES="${FT_SUITES:-forky trixie}"
mkdir -p "$CACHE"

is_ft() { "$1" -c 'import sys, sysconfig; sys.exit(0 if sysconfig.get_config_var("Py_GIL_DISABLED") else 1)' 2>/dev/null; }

# Builds CPython 3.13 (free-threaded) into $CACHE/prefix unless its stamp is there.
build_from_debian() {
  local prefix="$CACHE/prefix" src="$CACHE/src" stamp="$CACHE/prefix/.kvsim-built"
  if [ -f "$stamp" ] && is_ft "$(cat "$stamp")"; then
    return 0
  fi
  local sources=/etc/apt/sources.list.d/debian.sources
  [ -r "$sources" ] || { echo "freethreaded: no $sources to find a Debian mirror in; set FT_PYTHON=/path/to/python3.13t" >&2; exit 1; }
  # The main archive's stanza (its suites carry no '-security'/'-updates'): its URIs and key.
  local uris key
  uris="$(awk 'BEGIN{RS=""} /Suites:/ && !/-security/ {for(i=1;i<=NF;i++) if($i=="URIs:"){print $(i+1); exit}}' "$sources")"
  key="$(awk 'BEGIN{RS=""} /Suites:/ && !/-security/ {for(i=1;i<=NF;i++) if($i=="Signed-By:"){print $(i+1); exit}}' "$sources")"
  [ -n "$uris" ] || { echo "freethreaded: no URIs: line in $sources" >&2; exit 1; }
  local apt="$CACHE/apt"
  rm -rf "$apt" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/parts" "$src"
  local tarball=""
  for suite in $SUITES; do
    {
      echo "Types: deb-src"
      echo "URIs: $uris"
      echo "Suites: $suite"
      echo "Components: main"
      [ -n "$key" ] && echo "Signed-By: $key"
    } >"$apt/parts/src.sources"
    local opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt/parts"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "APT::Sandbox::User=$(id -un)")
    echo "freethreaded: fetching Debian's python3.13 source ($suite)"
    if apt-get -qq "${opts[@]}" update && (cd "$src" && apt-get -qq "${opts[@]}" source --download-only python3.13); then
      tarball="$(ls -1 "$src"/python3.13_*.orig.tar.xz 2>/dev/null | sort -V | tail -1)"
      [ -n "$tarball" ] && break
    fi
    echo "freethreaded: suite $suite gave no python3.13 source"
  done
  [ -n "$tarball" ] || { echo "freethreaded: Debian's python3.13 source could not be fetched (suites: $SUITES); set FT_PYTHON=/path/to/python3.13t" >&2; exit 1; }
  echo "freethreaded: building $(basename "$tarball") with --disable-gil (~6-10 min)"
  local tree="$src/build"
  rm -rf "$tree" && mkdir -p "$tree"
  tar -xf "$tarball" -C "$tree" --strip-components=1
  (cd "$tree" && ./configure --disable-gil --prefix="$prefix" >"$CACHE/configure.log" 2>&1 \
    && make -j"$(nproc)" >"$CACHE/make.log" 2>&1 && make install >"$CACHE/install.log" 2>&1) \
    || { echo "freethreaded: the build failed; see $CACHE/*.log" >&2; exit 1; }
  rm -rf "$tree"
  is_ft "$prefix/bin/python3.13t" || { echo "freethreaded: $prefix/bin/python3.13t is not free-threaded" >&2; exit 1; }
  echo "$prefix/bin/python3.13t" >"$stamp"
}

base=""
if [ -n "${FT_PYTHON:-}" ]; then
  base="$(command -v "$FT_PYTHON" || true)"
  [ -n "$base" ] && is_ft "$base" || { echo "freethreaded: FT_PYTHON=$FT_PYTHON is not a free-threaded python (sysconfig Py_GIL_DISABLED unset)" >&2; exit 1; }
else
  for name in python3.14t python3.13t; do
    if command -v "$name" >/dev/null && is_ft "$(command -v "$name")"; then
      base="$(command -v "$name")"
      break
    fi
  done
  if [ -z "$base" ]; then
    build_from_debian
    base="$(cat "$CACHE/prefix/.kvsim-built")"
  fi
fi

# One venv per base interpreter. Its deps stamp names the base and the hash of
# pyproject.toml and this script: only a change there rebuilds it (another checkout does not:
# point children import the kvsim of the process that starts them, from their PYTHONPATH).
base="$(readlink -f "$base")"
venv="$CACHE/venv-$(echo "$base" | sha256sum | cut -c1-12)"
py="$venv/bin/python"
want="$base $(sha256sum pyproject.toml scripts/freethreaded.sh | sha256sum | cut -c1-16)"
if [ ! -f "$venv/.kvsim-deps" ] || [ "$(cat "$venv/.kvsim-deps")" != "$want" ]; then
  echo "freethreaded: venv $venv from $base"
  "$base" -m venv --clear "$venv"
  # pip's site constraints pin versions for the default interpreter; free-threaded wheels may
  # exist only for other versions, so they do not apply here.
  export PIP_CONSTRAINT=""
  "$py" -m pip install --quiet --upgrade pip
  # Wheels where they exist (a newer sdist would otherwise be compiled: numpy takes 20 min
  # on two cores); PyYAML has no free-threaded wheel and builds from its sdist.
  "$py" -m pip install --quiet --prefer-binary --only-binary=numpy,pydantic-core,matplotlib \
    "numpy>=1.26" "pydantic>=2.6" "simpy>=4.1,<4.2" "rich>=13.0" "pyyaml>=6.0" \
    "matplotlib>=3.8" "pytest>=8" "pytest-timeout>=2.2"
  rm -f "$venv/.kvsim-checkout"
  echo "$want" >"$venv/.kvsim-deps"
fi
# kvsim itself, editable from this checkout (`$py -m sim` then runs it), once per checkout.
if [ "$(cat "$venv/.kvsim-checkout" 2>/dev/null)" != "$REPO" ]; then
  "$py" -m pip install --quiet --no-deps -e .
  "$py" -c "import sys, sim, numpy, simpy, yaml, pydantic; print('freethreaded: kvsim imports; GIL enabled after imports:', sys._is_gil_enabled())"
  echo "$REPO" >"$venv/.kvsim-checkout"
fi
echo "$venv/bin/python"
