"""The README's commands: the examples it gives show what they are for."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sim.config import parse_config
from sim.workload.plan import request_bytes
from tests.e2e.nested_venv import make_venv

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def readme_commands() -> list[str]:
    """Every command line of the README's bash blocks, comments dropped, in order."""
    lines: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


def test_the_search_example_is_bound_by_the_gil_not_the_store() -> None:
    """`kvsim search` on a config whose store saturates first says the same rate for every
    variant (the quickstart: ~9 GB a request, 43 req/s). The README's example must leave the
    store room: its capacity at least 10x the rate the search starts from, so that what the
    search finds is the rate the load threads' shared GIL allows (the README and the
    config's comment give the rates found)."""
    searches = [c for c in readme_commands() if c.startswith("kvsim search configs/")]
    assert searches, "the README shows no `kvsim search` on a shipped config"
    for command in searches:
        config = ROOT / shlex.split(command)[2]
        _cfg, points = parse_config(config)
        variants = {p.config.connector.variant for p in points}
        assert {"scalar", "numpy"} <= variants, command
        assert {p.config.connector.workers for p in points} == {4}, command
        for p in points:
            c = p.config
            nbytes = request_bytes(c.model, c.workload.tokens.value)
            store_capacity_rps = c.store.bandwidth_gb_per_s * 1e9 / nbytes
            assert store_capacity_rps >= 10 * c.workload.arrival.rate_rps, (
                f"{command}: the store saturates at {store_capacity_rps:.0f} req/s"
            )


def test_the_shipped_store_settings_are_the_ones_the_study_accounts_for() -> None:
    """configs/store_real_vs_model.yaml's modelled store is a fit from one busy day; the study
    README says where it comes from and what `kvsim calibrate store` changes. A re-fit that
    updates the config must update that account too."""
    config = ROOT / "configs" / "store_real_vs_model.yaml"
    study = (ROOT / "experiments" / "store_real_vs_model" / "README.md").read_text()
    cfg, _ = parse_config(config)
    shipped = (
        f"shipped: `latency_ms: {cfg.store.latency_ms:g}`,\n`bandwidth_gb_per_s: "
        f"{cfg.store.bandwidth_gb_per_s:g}`"
    )
    assert shipped in study
    assert "kvsim calibrate store results/store_real_vs_model" in config.read_text()
    assert "`kvsim calibrate store RUN` **changes no file**" in study


# --- The README followed literally, in a fresh virtual environment ---------------------------

#: What each README command gets added so that the walk stays small and bounded: fewer
#: requests and one repeat (the same for every command on the quickstart, so that --resume
#: and --dry-run see the run `make quickstart` made), a short search and calibration.
#: Two of the quickstart's three variants (4 points, not 6), which the calibration below
#: then measures for the model-mode line.
_QUICK = "--set workload.requests=20 --set repeats=1 --set 'sweep.connector.variant=[scalar,numpy]'"
_SHRINK = (
    ("make quickstart", f'ARGS="{_QUICK}"'),
    ("make test", "ARGS=tests/e2e/test_install_stamp.py"),
    ("kvsim validate configs/quickstart.yaml", _QUICK),
    ("kvsim run configs/quickstart.yaml", _QUICK),
    ("kvsim search ", "--max-runs 2 --set workload.requests=30 --set repeats=1"),
    ("kvsim bench connectors", "--chunks 16 --repeats 3"),
    ("kvsim run configs/whatif_free_threading.yaml", "--set workload.requests=200"),
    # GIL on and off under the free-threaded python `make freethreaded` set up just before
    (
        "kvsim run configs/gil_on_off.yaml",
        "--set workload.requests=6 --set repeats=1 --set 'sweep.connector.workers=[1]' "
        "--set workload.arrival.rate_rps=20",
    ),
    # the model against it: a calibration in that build, then both levels on one thread
    ("kvsim calibrate gil --python", "--handlers per_group --chunks 8,1024 --reps 1"),
    (
        "kvsim validate-model configs/gil_on_off.yaml",
        "--repeats 1 --set workload.requests=6 --set 'sweep.connector.workers=[1]' "
        "--set workload.arrival.rate_rps=20",
    ),
)
#: `kvsim calibrate` measures every variant at eight sizes; the walk measures what the
#: model-mode lines after it need (the quickstart's variants and geometry).
_CALIBRATE = "--variants scalar,numpy --handlers per_group --chunks 8,1024 --reps 1 --no-engine"
_IGNORED = {".git", ".venv", "results", "build", "__pycache__", ".kvsim-installed"}
#: The one build the walk takes along: model mode's compiled core, which the first install
#: made (scripts/install.sh). Its stamp names the sources' digest, the ABI and the mypyc that
#: compiled it, so the walk's install keeps it (``native: ... kept``) instead of compiling
#: the same C again (~30 s); it compiles where the first install built none. Compiling
#: from a clean checkout is that first install's part (.ci/run), its results
#: tests/test_native.py's.
_NATIVE_BUILD = Path("build") / "native"


def _ignored(_directory: str, names: list[str]) -> list[str]:
    """What a fresh clone does not have: builds, results, caches, the stamp, git."""
    return [n for n in names if n in _IGNORED or n.endswith(".egg-info")]


def _shrunk(command: str) -> str:
    if command == "kvsim calibrate":
        return f"{command} {_CALIBRATE}"
    extra = next((more for start, more in _SHRINK if command.startswith(start)), "")
    return f"{command} {extra}".strip()


@pytest.mark.timeout(2400)
def test_the_readme_walked_in_order_in_a_fresh_venv(tmp_path: Path) -> None:
    """Every command of the README's bash blocks, in order, in a virtual environment made
    after a first install, as the README suggests. The first install is the interpreter
    running this suite: its stamp is in the copied checkout, as after `make test`. The venv
    has its own interpreter (seeing this one's packages, tests/e2e/nested_venv.py, only
    spares it the downloads, the copied ``build/native`` a second compile of the same
    sources), so
    `make quickstart` must install again — into the venv, whose `kvsim` script then runs
    the rest — rather than skip the install and die on an import (issue 29 item 1); the
    model-mode line must run after `make quickstart` without --out or --force (item 2)."""
    commands = readme_commands()
    assert commands[:2] == ["make quickstart", "make test"], commands[:2]
    assert "kvsim run configs/quickstart.yaml --mode model" in commands
    checkout = tmp_path / "kvsim"
    shutil.copytree(ROOT, checkout, ignore=_ignored)
    if (ROOT / _NATIVE_BUILD).is_dir():
        shutil.copytree(ROOT / _NATIVE_BUILD, checkout / _NATIVE_BUILD)
    subprocess.run(
        [sys.executable, "scripts/install_stamp.py", "write"], cwd=checkout, check=True, timeout=60
    )
    venv = tmp_path / "venv"
    make_venv(venv)
    drop = ("PYTHONPATH", "KVSIM_NATIVE", "MAKEFLAGS", "MAKELEVEL", "PYTEST_ADDOPTS", "COLUMNS")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST_")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    said = []
    for command in commands:
        line = _shrunk(command)
        done = subprocess.run(
            ["bash", "-c", line], cwd=checkout, env=env, capture_output=True, text=True,
            timeout=900,
        )  # fmt: skip
        said.append((line, done.stdout + done.stderr))
        assert done.returncode == 0, f"README command failed: {line}\n{said[-1][1][-3000:]}"
    first = said[0][1]
    assert "was made for" in first and f"installing into {venv}" in first, first[-2000:]
    assert "installing into" not in said[1][1]  # `make test`: installed, for this venv
    assert shutil.which("kvsim", path=env["PATH"]) == str(venv / "bin" / "kvsim")
    real = checkout / "results" / "quickstart" / "summary.csv"
    model = checkout / "results" / "quickstart-model" / "summary.csv"
    assert real.exists() and model.exists()
    assert "sustains" in next(out for line, out in said if line.startswith("kvsim search"))
