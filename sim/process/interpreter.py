"""The python a point child runs under: finding it, asking it what it is, what it observed.

A config's ``interpreter:`` (sim.config.interpreter) names a python and a GIL switch.
Here that name becomes an executable, the executable is asked once, in a tiny
subprocess, for its version, its build (free-threaded or not) and which packages it
has (so validation refuses a variant it cannot run, sim.preflight.interpreter), and
the child's environment gets the GIL switch. Inside the child, :func:`observed` is what
``sys._is_gil_enabled()`` actually said, and :func:`gil_mismatch` the one line a point
fails with when the GIL it asked for is not the GIL it ran with. Standard library only:
the sweep and preflight both use it.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sim import columns

__all__ = [
    "FT_CACHE_ENV",
    "FT_PYTHON_ENV",
    "KVSIM_NEEDS",
    "PROBE_PACKAGES",
    "InterpreterError",
    "Probe",
    "child_env",
    "free_threaded_build",
    "ft_cache_dir",
    "gil_enabled",
    "gil_mismatch",
    "observed",
    "probe",
    "resolve_python",
    "setup_python",
    "this_interpreter",
]

#: The free-threaded python to use for ``python: freethreaded`` (and the ft tests).
FT_PYTHON_ENV = "KVSIM_FT_PYTHON"
#: Where `make freethreaded` (scripts/freethreaded.sh) keeps its build and venvs.
FT_CACHE_ENV = "KVSIM_FT_CACHE"
#: The name a config gives for that interpreter (sim.config.interpreter.FREETHREADED).
_FREETHREADED = "freethreaded"

#: Import names the probe looks for: kvsim's own needs first, then the optional ones a
#: variant, the engine or the store needs (connectors' ``requires``).
PROBE_PACKAGES = ("pydantic", "yaml", "simpy", "numpy", "numba", "torch", "mooncake")
#: The packages every point child imports (sim.config, sim.runtime).
KVSIM_NEEDS = ("pydantic", "yaml", "simpy", "numpy")

#: The directory that holds the ``sim`` package this process runs: a child under another
#: python imports the same kvsim code (not whatever that python has installed).
_KVSIM_ROOT = str(Path(__file__).resolve().parent.parent.parent)

_PROBE_SCRIPT = """
import importlib.util, json, platform, sys, sysconfig
names = sys.argv[1:]
print(json.dumps({
    "path": sys.executable,
    "version": platform.python_version(),
    "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    "gil_enabled": getattr(sys, "_is_gil_enabled", lambda: True)(),
    "packages": {n: importlib.util.find_spec(n) is not None for n in names},
    "kvsim": importlib.util.find_spec("sim") is not None,
}))
"""


class InterpreterError(Exception):
    """An interpreter that cannot be used; ``str()`` is one line naming it and why."""


def ft_cache_dir() -> Path:
    """scripts/freethreaded.sh's cache: $KVSIM_FT_CACHE, else ~/.cache/kvsim/freethreaded."""
    if os.environ.get(FT_CACHE_ENV):
        return Path(os.environ[FT_CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kvsim" / "freethreaded"


def setup_python() -> str | None:
    """The free-threaded python to use: $KVSIM_FT_PYTHON, else a venv `make freethreaded`
    finished (its ``.kvsim-deps`` stamp is written last), else None."""
    named = os.environ.get(FT_PYTHON_ENV)
    if named:
        return named
    done = sorted(ft_cache_dir().glob("venv-*/.kvsim-deps"), key=lambda p: p.stat().st_mtime)
    return str(done[-1].parent / "bin" / "python") if done else None


def resolve_python(name: str) -> str:
    """The executable ``name`` means: '' is this interpreter, 'freethreaded' the set-up
    one, a path (``~`` expanded) itself, anything else a name on PATH."""
    if not name:
        return sys.executable
    if name == _FREETHREADED:
        found = setup_python()
        if found is None:
            raise InterpreterError(
                "interpreter.python: freethreaded: none is set up; run `make freethreaded` "
                f"(or set {FT_PYTHON_ENV}=/path/to/python3.13t)"
            )
        name = found
    path = os.path.expanduser(name) if "/" in name else shutil.which(name)
    if not path or not os.access(path, os.X_OK) or os.path.isdir(path):
        raise InterpreterError(f"interpreter.python: {name}: no such executable")
    return os.path.abspath(path)


@dataclass(frozen=True)
class Probe:
    """What an interpreter says of itself (one subprocess, :func:`probe`)."""

    path: str
    version: str
    free_threaded: bool
    #: sys._is_gil_enabled() at start-up, with no PYTHON_GIL set by kvsim.
    gil_enabled: bool
    packages: dict[str, bool]
    #: Whether ``import sim`` finds this kvsim (child_env puts it on the path).
    kvsim: bool

    @property
    def build(self) -> str:
        return "free-threaded" if self.free_threaded else "default (GIL)"

    def missing(self, names: tuple[str, ...]) -> list[str]:
        return [n for n in names if not self.packages.get(n, False)]

    def describe(self) -> str:
        return f"{self.path} (Python {self.version}, {self.build})"


@lru_cache(maxsize=16)
def probe(path: str) -> Probe:
    """Ask ``path`` (an executable from :func:`resolve_python`) what it is; cached per path."""
    try:
        done = subprocess.run(
            [path, "-c", _PROBE_SCRIPT, *PROBE_PACKAGES],
            env=child_env("default"),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InterpreterError(f"interpreter.python: {path}: could not run it ({exc})") from None
    lines = done.stdout.strip().splitlines()
    try:
        data: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        why = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        raise InterpreterError(
            f"interpreter.python: {path}: not a python kvsim can ask ({why})"
        ) from None
    return Probe(
        path=path,
        version=str(data["version"]),
        free_threaded=bool(data["free_threaded"]),
        gil_enabled=bool(data[columns.GIL_ENABLED.name]),
        packages={str(k): bool(v) for k, v in data["packages"].items()},
        kvsim=bool(data["kvsim"]),
    )


def child_env(gil: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a point child: ``base`` (this process's) with kvsim's own
    directory first on PYTHONPATH, and PYTHON_GIL=1 for ``on``, 0 for ``off``."""
    env = dict(os.environ if base is None else base)
    rest = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = _KVSIM_ROOT + (os.pathsep + rest if rest else "")
    if gil == "on":
        env["PYTHON_GIL"] = "1"
    elif gil == "off":
        env["PYTHON_GIL"] = "0"
    return env


def free_threaded_build() -> bool:
    """Whether this interpreter was built with --disable-gil."""
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def gil_enabled() -> bool:
    """What ``sys._is_gil_enabled()`` says now (True where it does not exist: a GIL build)."""
    fn = getattr(sys, "_is_gil_enabled", None)
    return True if fn is None else bool(fn())


def observed(requested: str, at_start: bool, at_end: bool) -> dict[str, Any]:
    """The point's interpreter record (its status.json ``interpreter``): this process's
    path, version and build, the GIL it asked for and what it saw at both ends."""
    return {
        "path": sys.executable,
        "version": platform.python_version(),
        "build": "free-threaded" if free_threaded_build() else "default",
        "gil_requested": requested,
        "python_gil_env": os.environ.get("PYTHON_GIL", ""),
        "gil_enabled_at_start": at_start,
        columns.GIL_ENABLED.name: at_end,
    }


def this_interpreter() -> dict[str, Any]:
    """What a calibration records of the interpreter it measured in: a model point that
    stands for another build (a free-threaded one runs pure Python ~2x slower) refuses
    it (sim.model.coverage)."""
    return {
        "path": sys.executable,
        "version": platform.python_version(),
        "build": "free-threaded" if free_threaded_build() else "default",
        columns.GIL_ENABLED.name: gil_enabled(),
    }


def gil_mismatch(requested: str, at_start: bool, at_end: bool) -> str | None:
    """Why the point's GIL is not the one it asked for (one line), or None."""
    if requested == "off" and (at_start or at_end):
        return (
            "interpreter.gil: off, but sys._is_gil_enabled() was True in the point's process "
            "(an extension module turned it back on?); its GIL-off figures would be wrong"
        )
    if requested == "on" and not (at_start and at_end):
        return "interpreter.gil: on, but sys._is_gil_enabled() was False in the point's process"
    if at_start != at_end:
        return (
            "the GIL was switched on during the point (an extension module not marked "
            "free-threading-safe?): set interpreter.gil: on or off"
        )
    return None
