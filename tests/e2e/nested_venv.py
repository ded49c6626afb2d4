"""A virtual environment made inside a test that sees what the suite's interpreter sees.

The install tests need a *new* interpreter (a new prefix: the install stamp must call it
another one) that already has the dependencies (so that nothing is downloaded). The old
way, ``python -m venv --system-site-packages``, gives the new venv the site-packages of
the *base* interpreter: where the suite itself runs in a venv (as the README suggests),
that is the bare interpreter, without simpy, numba or torch, and the stamp rightly found
them missing every time (issue 42 item 1). Instead the new venv gets a ``.pth`` file that
adds the suite interpreter's own site directories (``site.addsitedir``, so that their
``.pth`` files, the editable installs' among them, run too) after its own: the same
packages whether the suite runs on a bare interpreter, a venv or a venv of a venv.
"""

from __future__ import annotations

import site
import subprocess
import sys
from pathlib import Path

__all__ = ["PTH_NAME", "make_venv", "suite_site_dirs"]

#: The file the new venv's site-packages gets.
PTH_NAME = "_kvsim_suite_site.pth"


def suite_site_dirs() -> list[str]:
    """The site directories this interpreter imports packages from (its user site too, if on)."""
    dirs = list(site.getsitepackages())
    user = site.getusersitepackages()
    if site.ENABLE_USER_SITE and user in sys.path:
        dirs.append(user)
    return dirs


def make_venv(path: Path) -> Path:
    """Make a venv at ``path`` over the suite's packages; return its ``python3``.

    Without a pip of its own (ensurepip took ~10 s a venv on a busy machine): ``python -m
    pip`` there runs the suite's pip, which installs into the venv it runs in."""
    made = [sys.executable, "-m", "venv", "--without-pip", str(path)]
    subprocess.run(made, check=True, timeout=300)
    python = path / "bin" / "python3"
    own = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    # One `import` line: site executes a .pth line that starts with "import" (with exec's
    # own locals, so no comprehension: its scope would not see `site`).
    line = f"import site; list(map(site.addsitedir, {suite_site_dirs()!r}))\n"
    (Path(own) / PTH_NAME).write_text(line)
    return python
