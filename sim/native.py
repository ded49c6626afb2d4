"""Model mode's core compiled with mypyc: the same source, used only when built from it.

Model mode is pure Python callbacks (sim.model.loop); interpreted, a request costs
~240k instructions and a point runs at ~10–15k simulated requests per second here.
mypyc compiles the typed modules below to C extensions: the same semantics (the
same IEEE arithmetic in the same order, so bit-identical results — tested), about
twice as fast. ``python -m sim.native build`` (run by scripts/install.sh) compiles
them into ``build/native/<ABI>/`` beside the package, with a stamp holding the
digest of the sources it compiled.

The source stays the truth: a package in :data:`MODULES` puts the compiled
directory first on its ``__path__`` only when the stamp's digest matches the
source on disk now, so an edited module is never shadowed by a stale build (it
runs interpreted until rebuilt). ``KVSIM_NATIVE=0`` forces the interpreted core
(the test suite does, so that its spies and patches reach the code they test;
one test compares the two cores' outputs).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import sysconfig
from functools import cache
from pathlib import Path

from sim.errors import KvsimError

__all__ = [
    "ENV",
    "MODULES",
    "NativeBuildError",
    "build",
    "current_build",
    "enable",
    "native_state",
    "overview",
]

#: The modules compiled: the model's event loop, resources and threads, and the
#: store model, the arrivals, the record sink and the thread-time sums both modes share.
#: Order matters to nobody; each must be mypy-clean.
MODULES = (
    "sim.model.loop",
    "sim.model.cores",
    "sim.model.nogil",
    "sim.model.gil",
    "sim.model.threads",
    "sim.model.probe",
    "sim.model.engine",
    "sim.model.driver",
    "sim.model.costs",
    "sim.model.draws",
    "sim.store.quiet_clock",
    "sim.runtime.pipeline",
    "sim.runtime.workers",
    "sim.runtime.run_clock",
    "sim.store.modelled",
    "sim.store.link",
    "sim.store.model",
    "sim.point.arrivals",
    "sim.point.record_sink",
    "sim.instruments.threadtime",
)
#: The environment variable that turns the compiled core off ("0").
ENV = "KVSIM_NATIVE"
#: mypyc's name for the group; its runtime library is the top-level module GROUP__mypyc.
_GROUP = "kvsim_native"
_STAMP = "native.json"
_ROOT = Path(__file__).resolve().parent.parent  # the directory holding sim/


class NativeBuildError(KvsimError):
    """The compiled core could not be built (model mode still runs, interpreted)."""


def _abi() -> str:
    return str(sysconfig.get_config_var("SOABI") or sys.implementation.cache_tag)


def _native_dir() -> Path:
    return _ROOT / "build" / "native" / _abi()


def _sources() -> list[Path]:
    return [_ROOT / (name.replace(".", "/") + ".py") for name in MODULES]


def _digest() -> str:
    h = hashlib.sha256(_abi().encode())
    for path in _sources():
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


@cache
def native_state() -> str:
    """``native``, or why the interpreted core runs (one line, for bench and manifest)."""
    if os.environ.get(ENV, "1") == "0":
        return f"python ({ENV}=0)"
    stamp = _native_dir() / _STAMP
    try:
        built = json.loads(stamp.read_text(encoding="utf-8")).get("digest")
    except (OSError, ValueError, AttributeError):
        return "python (not built: python -m sim.native build)"
    if built != _digest():
        return "python (the build is older than the source: python -m sim.native build)"
    if _load_runtime() is None:
        return "python (the build does not load: python -m sim.native build)"
    return "native"


def _load_runtime() -> object | None:
    """Import mypyc's runtime library for the group from the build directory (it is a
    top-level module; loaded by path, so sys.path stays as it is)."""
    name = f"{_GROUP}__mypyc"
    if name in sys.modules:
        return sys.modules[name]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    path = _native_dir() / f"{name}{suffix}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.exists():
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        return None
    sys.modules[name] = module
    return module


def enable(package: str, path: list[str]) -> None:
    """Called by each package holding compiled modules, from its ``__init__``: look in
    the build first, when it is current (see the module's docstring)."""
    if native_state() != "native":
        return
    where = str(_native_dir().joinpath(*package.split(".")))
    if where not in path:
        path.insert(0, where)


def _compiler() -> str:
    """The mypy (mypyc) version that would compile now; "" where none is installed."""
    # start-up: every compiled package's __init__ imports this module, and only an
    # install asks for the compiler (importlib.metadata: ~15 ms a point child)
    from importlib import metadata

    try:
        return metadata.version("mypy")
    except metadata.PackageNotFoundError:
        return ""


def current_build() -> Path | None:
    """The build directory when its build is of these very sources, by this mypyc, and
    loads; else None. A second install (a new venv, a changed pyproject.toml) then keeps
    it instead of compiling the same C again (~30 s)."""
    if native_state() != "native":
        return None
    dest = _native_dir()
    try:
        built_by = json.loads((dest / _STAMP).read_text(encoding="utf-8")).get("mypy")
    except (OSError, ValueError, AttributeError):
        return None
    return dest if built_by and built_by == _compiler() else None


def build() -> Path:
    """Compile :data:`MODULES` into the build directory and return it.

    The compiler runs in a child process whose chatter goes to ``build.log`` beside
    the build (a failure names it). The new build replaces the old one only once
    complete, and its stamp names the sources it compiled, read before compiling, and
    the mypyc that compiled them: an edit during the build leaves it stale, never wrong."""
    import subprocess  # start-up: only a build runs the compiler
    import tempfile  # start-up: only a build needs a scratch directory

    digest = _digest()
    compiler = _compiler()
    dest = _native_dir()
    dest.parent.mkdir(parents=True, exist_ok=True)
    log = dest.parent / "build.log"
    with tempfile.TemporaryDirectory(prefix="native-", dir=dest.parent) as tmp:
        work = Path(tmp)
        with open(log, "w", encoding="utf-8") as fh:
            done = subprocess.run(
                [sys.executable, "-m", "sim.native", "compile", str(work)],
                cwd=_ROOT,
                stdout=fh,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0:
            raise NativeBuildError(f"mypyc could not compile the model core (log: {log})")
        lib = work / "lib"
        (lib / _STAMP).write_text(
            json.dumps({"digest": digest, "modules": list(MODULES), "mypy": compiler}) + "\n",
            encoding="utf-8",
        )
        old = work / "old"
        if dest.exists():
            dest.rename(old)
        lib.rename(dest)
    native_state.cache_clear()
    return dest


def _compile(work: Path) -> None:
    """The child's part of :func:`build`: mypyc, then the C compiler, into ``work``."""
    from mypyc.build import mypycify  # heavy: mypyc loads only when the native modules are built
    from setuptools import Distribution  # heavy: only when the native modules are built

    ext = mypycify(
        [
            *(str(p.relative_to(_ROOT)) for p in _sources()),
            "--ignore-missing-imports",
            "--follow-imports=skip",
        ],
        opt_level="3",
        group_name=_GROUP,  # one C file: the C compiler inlines across the modules
        target_dir=str(work / "c"),
    )
    dist = Distribution({"name": "kvsim-native", "ext_modules": ext})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib = str(work / "lib")  # type: ignore[attr-defined]
    cmd.build_temp = str(work / "tmp")  # type: ignore[attr-defined]
    dist.run_command("build_ext")


def overview() -> list[str]:
    """What ``python -m sim.native`` alone prints: the state, where the build lives (or
    would), and the commands; usage alone told a user nothing of either."""
    state = native_state()
    dest = _native_dir()
    where = _display(dest)
    if state == "native":
        built = f"compiled core in {where}, of the sources on disk now: model mode runs it"
    elif (dest / _STAMP).exists():
        why = state.removeprefix("python (").removesuffix(")")
        built = f"a build in {where} that is not used: {why}"
    else:
        built = f"no build in {where}: model mode runs interpreted (the same results)"
    return [
        f"native: the model core is {state}",
        f"native: {built}",
        "native: `python -m sim.native build` compiles it with mypyc and the C compiler "
        "(scripts/install.sh does), `python -m sim.native state` prints the first line; "
        f"{ENV}=0 turns the compiled core off",
    ]


def _display(path: Path) -> str:
    """``path`` relative to the working directory where it lies under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "compile":
        _compile(Path(args[1]))
        return 0
    if not args:
        print("\n".join(overview()))
        return 0
    if args not in (["build"], ["state"]):
        print("usage: python -m sim.native [build|state]", file=sys.stderr)
        return 2
    kept = current_build() if args == ["build"] else None
    if kept is not None:
        print(f"native: the build in {kept} is of these sources and this mypyc; kept")
    elif args == ["build"]:
        try:
            print(f"native: compiled the model core into {build()}")
        except NativeBuildError as exc:
            print(f"native: {exc}; model mode runs interpreted", file=sys.stderr)
            return 1
    print(f"native: the model core is {native_state()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
