"""The install stamp: which interpreter kvsim was installed into, and from which dependencies.

``make`` runs ``python scripts/install_stamp.py check`` before every target; it exits 0
only when ``.kvsim-installed`` names this very interpreter (``sys.executable`` and
``sys.prefix``: a new virtual environment is a new prefix even where its ``python3``
links to the same binary) and the same hash of ``pyproject.toml`` and
``scripts/install.sh``, and the dependencies can be found (a venv made again at the
same path is the same interpreter by name, and empty). Otherwise it says why, and
``make`` runs the install and then ``write``. A file's mere existence (the old stamp)
let a fresh venv skip the install and die on its first import. Standard library only:
it runs before anything is installed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

__all__ = ["STAMP", "check", "current", "main", "write"]

_ROOT = Path(__file__).resolve().parent.parent
#: The stamp file, at the checkout's root (ignored by git).
STAMP = _ROOT / ".kvsim-installed"
#: The files whose change means the installed dependencies may be wrong.
_DEPENDENCY_FILES = ("pyproject.toml", "scripts/install.sh")
#: Modules the install puts in place (pyproject.toml's dependencies and dev extra), looked
#: up, not imported: a venv deleted and made again at the same path has the same
#: interpreter path and prefix as the stamp, and none of them.
_MODULES = ("simpy", "numpy", "numba", "torch", "yaml", "pydantic", "rich", "matplotlib", "pytest")


def current(root: Path = _ROOT) -> dict[str, str]:
    """What a stamp made now by this interpreter would hold."""
    digest = hashlib.sha256()
    for name in _DEPENDENCY_FILES:
        digest.update(name.encode() + b"\0" + (root / name).read_bytes() + b"\0")
    return {
        "python": sys.executable,
        "prefix": sys.prefix,
        "version": sys.version.split()[0],
        "dependencies_sha256": digest.hexdigest(),
    }


def check(stamp: Path = STAMP, root: Path = _ROOT) -> str | None:
    """None when the stamp matches this interpreter and dependencies; else why not."""
    try:
        recorded = json.loads(stamp.read_text())
    except FileNotFoundError:
        return f"{stamp.name} is missing"
    except (OSError, ValueError):
        return f"{stamp.name} is unreadable"
    if not isinstance(recorded, dict):
        return f"{stamp.name} is unreadable"
    now = current(root)
    if recorded.get("prefix") != now["prefix"] or recorded.get("python") != now["python"]:
        return f"{stamp.name} was made for {recorded.get('python')}; this is {now['python']}"
    if recorded != now:
        return f"{', '.join(_DEPENDENCY_FILES)} or the Python version changed since {stamp.name}"
    missing = [m for m in _MODULES if importlib.util.find_spec(m) is None]
    if missing:
        where = now["prefix"]
        return f"{', '.join(missing)} not installed in {where} (a new venv at the old path?)"
    return None


def write(stamp: Path = STAMP, root: Path = _ROOT) -> None:
    """Record this interpreter and dependency hash (after a successful install)."""
    tmp = stamp.with_name(stamp.name + ".tmp")
    tmp.write_text(json.dumps(current(root), indent=1) + "\n")
    tmp.replace(stamp)


def main(argv: list[str]) -> int:
    if argv == ["check"]:
        why = check()
        if why is None:
            return 0
        print(f"install: {why}; installing into {sys.executable}", file=sys.stderr)
        return 1
    if argv == ["write"]:
        write()
        return 0
    print("usage: install_stamp.py check|write", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
