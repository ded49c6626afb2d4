""".ci/run takes a new user's path: a fresh venv outside the checkout, then the README's commands.

A copy of .ci/run in a checkout whose Makefile's targets only say which interpreter ran
them (the real targets are the README's, walked by tests/e2e/test_readme.py): the venv
is new, outside the checkout, used for every step, and gone afterwards; a failing step
ends CI with a non-zero status and the steps after it do not run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")

_MAKEFILE = """\
quickstart:
\t@python3 -c "import sys; print('STEP quickstart', sys.prefix)"
test:
\t@python3 -c "import sys; print('STEP test', sys.prefix)"; exit $${FAKE_TEST_EXIT:-0}
lint:
\t@python3 -c "import sys; print('STEP lint', sys.prefix)"
"""


def _ci(tmp_path: Path, **env_over: str) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    (checkout / "Makefile").write_text(_MAKEFILE)
    (checkout / ".kvsim-installed").write_text("{}\n")  # a stamp CI must not trust
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    drop = ("MAKEFLAGS", "MAKELEVEL", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    # This interpreter, making its venvs without pip: ensurepip took ~40 s a venv on a
    # busy machine, and the stand-in targets install nothing.
    base = tmp_path / "python-without-pip"
    base.write_text(
        f'#!/bin/sh\n[ "$1 $2" = "-m venv" ] && shift 2 && set -- -m venv --without-pip "$@"\n'
        f'exec {sys.executable} "$@"\n'
    )
    base.chmod(0o755)
    env.update(TMPDIR=str(scratch), KVSIM_CI_PYTHON=str(base), PYTHON="/bin/false")
    env.update(env_over)
    done = subprocess.run(
        ["bash", str(checkout / ".ci" / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return checkout, scratch, done


def test_every_step_runs_in_a_fresh_venv_outside_the_checkout(tmp_path: Path) -> None:
    checkout, scratch, done = _ci(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = [line.split() for line in done.stdout.splitlines() if line.startswith("STEP ")]
    assert [s[1] for s in steps] == ["quickstart", "test", "lint"], done.stdout
    prefixes = {s[2] for s in steps}
    assert len(prefixes) == 1, prefixes
    (prefix,) = prefixes
    assert Path(prefix).parent.parent == scratch  # TMPDIR/kvsim-ci.XXXXXX/venv
    assert Path(prefix) != Path(sys.prefix) and not Path(prefix).is_relative_to(checkout)
    assert not Path(prefix).exists() and not list(scratch.iterdir())  # removed at the end
    assert not (checkout / ".kvsim-installed").exists()
    assert "ci: make test exited with 0" in done.stdout


def test_a_failing_step_fails_ci_and_stops_it(tmp_path: Path) -> None:
    _checkout, scratch, done = _ci(tmp_path, FAKE_TEST_EXIT="5")  # pytest: no tests collected
    assert done.returncode != 0
    assert "ci: make test exited with 2" in done.stdout  # make's status for a failed recipe
    assert "STEP lint" not in done.stdout
    assert not list(scratch.iterdir())
