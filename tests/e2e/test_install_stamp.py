"""The Makefile's install step runs again for a new interpreter or changed dependencies.

A copy of the Makefile and the stamp script with a stand-in ``scripts/install.sh`` that
only says it ran: nothing is installed anywhere, and each ``make`` shows whether the
install step ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.nested_venv import PTH_NAME, make_venv

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", root / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copy(ROOT / "scripts" / "install_stamp.py", root / "scripts" / "install_stamp.py")
    (root / "scripts" / "install.sh").write_text('echo "INSTALL RAN with $PYTHON"\n')
    return root


def _make_install(root: Path, python: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL")}
    return subprocess.run(
        ["make", "-s", "install", f"PYTHON={python}"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_install_runs_once_per_interpreter_and_again_for_a_new_venv(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    first = _make_install(root, sys.executable)
    assert first.returncode == 0, first.stderr
    assert "INSTALL RAN" in first.stdout
    assert "is missing" in first.stderr

    again = _make_install(root, sys.executable)
    assert again.returncode == 0, again.stderr
    assert "INSTALL RAN" not in again.stdout

    # A new virtual environment, as the README suggests: the stamp names another interpreter.
    # It sees this interpreter's packages (tests/e2e/nested_venv.py), so the install it gets
    # is the only one it needs, whether this suite runs on a bare interpreter or in a venv.
    venv_python = str(make_venv(tmp_path / "venv"))
    fresh = _make_install(root, venv_python)
    assert fresh.returncode == 0, fresh.stderr
    assert f"INSTALL RAN with {venv_python}" in fresh.stdout
    assert f"was made for {sys.executable}" in fresh.stderr
    assert "INSTALL RAN" not in _make_install(root, venv_python).stdout


def test_install_runs_again_when_the_dependencies_change(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    assert "INSTALL RAN" in _make_install(root, sys.executable).stdout
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n# a new dependency\n")
    changed = _make_install(root, sys.executable)
    assert "INSTALL RAN" in changed.stdout
    assert "changed since" in changed.stderr


def test_a_failed_install_leaves_no_stamp(tmp_path: Path) -> None:
    root = _checkout(tmp_path)
    (root / "scripts" / "install.sh").write_text("echo INSTALL RAN; exit 3\n")
    failed = _make_install(root, sys.executable)
    assert failed.returncode != 0
    assert not (root / ".kvsim-installed").exists()
    assert "INSTALL RAN" in _make_install(root, sys.executable).stdout


def test_a_venv_made_again_at_the_same_path_is_installed_again(tmp_path: Path) -> None:
    """``rm -rf .venv && python -m venv .venv``: same interpreter path and prefix as the
    stamp, and no dependencies; the stamp alone skipped the install (then a traceback)."""
    root = _checkout(tmp_path)
    venv = tmp_path / "venv"  # isolated: the fake install.sh installs nothing into it
    made = [sys.executable, "-m", "venv", "--without-pip", str(venv)]
    subprocess.run(made, check=True, timeout=60)
    venv_python = str(venv / "bin" / "python3")
    assert "INSTALL RAN" in _make_install(root, venv_python).stdout
    again = _make_install(root, venv_python)
    assert again.returncode == 0, again.stderr
    assert f"INSTALL RAN with {venv_python}" in again.stdout
    assert "not installed in" in again.stderr


def test_a_venv_made_in_a_venv_sees_the_outer_venv_s_packages(tmp_path: Path) -> None:
    """The suite run in a venv (the README's way): the venv the tests make from it must see
    that venv's packages, not only its base interpreter's (``--system-site-packages`` gave
    the base's, and the stamp found simpy, numba and torch missing: issue 42 item 1). A
    package only the outer venv has stands for them, on any machine."""
    outer = make_venv(tmp_path / "outer")
    outer_site = next((tmp_path / "outer" / "lib").glob("python*/site-packages"))
    assert (outer_site / PTH_NAME).exists()
    (outer_site / "kvsim_only_in_the_outer_venv.py").write_text("WHERE = 'outer'\n")
    inner = tmp_path / "inner"
    make_inner = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
        "from pathlib import Path; from tests.e2e.nested_venv import make_venv; "
        f"print(make_venv(Path({str(inner)!r})))"
    )
    made = subprocess.run(
        [str(outer), "-c", make_inner], capture_output=True, text=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    inner_python = made.stdout.strip()
    assert inner_python == str(inner / "bin" / "python3")
    probe = (
        "import sys, importlib.util as u; print(sys.prefix); "
        "print(u.find_spec('kvsim_only_in_the_outer_venv') is not None); "
        "print(u.find_spec('simpy') is not None)"
    )
    seen = subprocess.run(
        [inner_python, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert seen.stderr == ""  # site reports a .pth line that fails on stderr, and goes on
    assert seen.stdout.split() == [str(inner), "True", "True"], seen.stdout
