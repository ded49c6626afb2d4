"""``sim.calibrate``: measure on this machine the costs model mode simulates.

The same calibration as ``kvsim calibrate`` (which parses its arguments, calls
:func:`calibrate` and prints the fits): the holds of each variant over a grid of
geometries, the harness's own costs, and the engine step (``sim.calibration.measure``),
written to one file that model runs name as ``machine.calibration`` and record in
their manifest.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.cli_args import FromCliArgs, namespace_fields

if TYPE_CHECKING:
    import argparse

    from sim.analysis.store_fit import StoreFit

#: What measures the load threads' slowdown beside each other in a free-threaded python
#: with its GIL off (sim.calibration.measure_parallel): [keys, threads, out] as JSON.
_PARALLEL_SCRIPT = """
import json, sys
from sim.calibration.measure_parallel import measure_parallel
from sim.process.interpreter import this_interpreter
keys, threads, out = json.loads(sys.argv[1])
found = measure_parallel(keys, threads, say=lambda m: print(m, flush=True))
with open(out, "w", encoding="utf-8") as f:
    json.dump({"variants": found, "interpreter": this_interpreter()}, f)
"""

#: Load threads at once the slowdown is measured up to (the shipped configs' most workers).
PARALLEL_THREADS = 4

__all__ = ["HANDLERS", "CalibrateArgs", "GilArgs", "StoreFitArgs", "calibrate", "fit_store"]

#: What a calibration under another python runs there: this module's calibrate, with the
#: same arguments (JSON), its progress on stdout a line each.
_UNDER_SCRIPT = """
import json, sys
from sim.api.calibrate import calibrate
from sim.errors import ConfigError
try:
    calibrate(**json.loads(sys.argv[1]), say=lambda m: print(m, flush=True))
except ConfigError as exc:
    sys.exit(str(exc))
"""

#: How a variant may handle a request's groups: one call per group, or per chunk.
HANDLERS = ("per_group", "per_chunk")


@dataclass(frozen=True)
class GilArgs:
    """What ``kvsim calibrate [gil]`` was asked: :func:`calibrate`'s arguments, with the
    ``--plugin`` files whose variants are calibrated as built-in ones are."""

    out: str | None
    python: str
    variants: tuple[str, ...] | None
    handlers: tuple[str, ...]
    chunks: tuple[int, ...]
    regions: tuple[int, ...]
    groups: tuple[int, ...]
    reps: int
    engine: bool
    force: bool
    plugins: tuple[str, ...]

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> GilArgs:
        variants = tuple(v.strip() for v in args.variants.split(",")) if args.variants else None
        handlers = tuple(h.strip() for h in args.handlers.split(",") if h.strip())
        return cls(
            **namespace_fields(
                cls,
                args,
                variants=variants,
                handlers=handlers,
                engine=not args.no_engine,
                plugins=tuple(args.plugin),
            )
        )


@dataclass(frozen=True)
class StoreFitArgs(FromCliArgs):
    """What ``kvsim calibrate store`` was asked: :func:`fit_store`'s run and worker count,
    and whether to print the fit as JSON."""

    run_dir: str
    workers: int | None
    json: bool


@dataclass(frozen=True)
class CalibrateArgs:
    """What ``kvsim calibrate`` was asked: one target's arguments (``gil`` by default)."""

    gil: GilArgs | None = None
    store: StoreFitArgs | None = None

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> CalibrateArgs:
        if getattr(args, "target", None) == "store":
            return cls(store=StoreFitArgs.from_cli_args(args))
        return cls(gil=GilArgs.from_cli_args(args))


def fit_store(run_dir: str | Path, workers: int | None = None) -> StoreFit:
    """The modelled store's latency and bandwidth fitted to the gets of a real-store
    (``store.kind: mooncake``) run's points with ``workers`` load threads (default: the
    fewest in the run); RunDirError, one line, when it cannot."""
    from sim.analysis.store_fit import fit_store as fit  # numpy: not at import sim

    return fit(run_dir, workers)


def calibrate(
    out: str | Path,
    *,
    variants: Sequence[str] | None = None,
    handlers: Sequence[str] = HANDLERS,
    chunks: Sequence[int] | None = None,
    regions: Sequence[int] | None = None,
    groups: Sequence[int] | None = None,
    reps: int = 5,
    engine: bool = True,
    force: bool = False,
    python: str = "",
    say: Callable[[str], None] | None = None,
    plugins: Sequence[str] = (),
) -> dict[str, Any]:
    """Measure and write the calibration file ``out``; return its document.

    ``variants`` default to every registered address variant; ``chunks``,
    ``regions`` and ``groups`` to ``sim.calibration.measure``'s grid; ``reps`` requests
    are measured per geometry (median); ``engine=False`` skips the engine step.
    ``out`` is replaced only with ``force``. ``say`` hears what is being measured
    (a calibration takes minutes). ``python`` (a path, a name on PATH or 'freethreaded',
    as ``interpreter.python``): measure in that interpreter instead, with its GIL on
    (PYTHON_GIL=1: the holds are read through the GIL meter); the file records which
    interpreter it was, and model mode refuses it for a point that stands for another
    build (sim.model.coverage). By default the variants whose packages the interpreter
    lacks are skipped (said); named ones are refused. ``plugins``: files whose variants
    are calibrated as built-in ones are (``--plugin``; in kvsim's own python only). Bad
    names are one-line ConfigErrors.
    """
    if python and plugins:  # the child would not load them: refused, never dropped
        from sim.errors import ConfigError  # as the module's others: start-up stays light

        raise ConfigError(
            "--plugin with --python: a plug-in's variants are calibrated in kvsim's own "
            "python only; calibrate them without --python"
        )
    if python:
        return _calibrate_under(
            python,
            out,
            dict(
                variants=list(variants) if variants else None,
                handlers=list(handlers),
                chunks=list(chunks) if chunks else None,
                regions=list(regions) if regions else None,
                groups=list(groups) if groups else None,
                reps=reps,
                engine=engine,
                force=force,
            ),
            say or (lambda _msg: None),
        )
    from connectors import registry  # the variants' registry: not at import sim

    # the measurements: only when they run
    from sim.calibration.measure import DEFAULT_CHUNKS, DEFAULT_GROUPS, DEFAULT_REGIONS, check_grid

    # the measurements: only when they run
    from sim.calibration.measure import calibrate as measure_all
    from sim.config import ConfigError  # pydantic: not at import sim
    from sim.config.plugins import command_plugins  # pydantic: not at import sim
    from sim.rundir.claim import claim_outputs  # the run directory's code: not at import sim
    from sim.rundir.outputs import write_json  # the run directory's code: not at import sim

    with command_plugins(plugins) as read:  # a plug-in's variants: as built-in ones
        path = Path(out)
        claim_outputs([path], force)  # before minutes of measuring
        names = registry.address_variant_names()
        wanted = list(variants) if variants else names
        unknown = [v for v in wanted if v not in names]
        if unknown:
            raise ConfigError(
                f"--variants: unknown variant {unknown[0]!r}; allowed: {', '.join(names)}"
            )
        lacking = {v: _missing(registry.get_address_variant(v)) for v in wanted}
        lacking = {v: pkgs for v, pkgs in lacking.items() if pkgs}
        if lacking and variants:
            v, pkgs = next(iter(lacking.items()))
            raise ConfigError(f"--variants: {v} needs package {pkgs[0]}, which this python lacks")
        for v, pkgs in lacking.items():
            (say or (lambda _msg: None))(f"variant {v} skipped: this python lacks {pkgs[0]}")
        wanted = [v for v in wanted if v not in lacking]
        bad = [h for h in handlers if h not in HANDLERS]
        if bad or not handlers:
            raise ConfigError(
                f"--handlers: {bad[0] if bad else '(none)'}; allowed: {', '.join(HANDLERS)}"
            )
        if not 1 <= reps <= 1000:
            raise ConfigError(f"--reps {reps}: allowed 1 to 1000 requests per geometry")
        grid = (list(chunks or DEFAULT_CHUNKS), list(regions or DEFAULT_REGIONS))
        grid_groups = list(groups or DEFAULT_GROUPS)
        check_grid(*grid, grid_groups)
        doc = measure_all(
            wanted,
            list(handlers),
            *grid,
            grid_groups,
            reps,
            engine=engine,
            say=say or (lambda _msg: None),
            plugins=read,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, doc)
        return doc


def _missing(cls: type) -> list[str]:
    """The packages a variant ``requires`` that this interpreter cannot import (numba has no
    free-threaded 3.13 wheel)."""
    return [p for p in getattr(cls, "requires", ()) if importlib.util.find_spec(p) is None]


def _calibrate_under(
    python: str, out: str | Path, kwargs: dict[str, Any], say: Callable[[str], None]
) -> dict[str, Any]:
    """:func:`calibrate` run in ``python`` (one subprocess, this kvsim on its path), its
    progress relayed to ``say``; the document read back from ``out``. A failure there is one
    line here: the child's last line of error output."""
    from sim.errors import ConfigError  # deferred as the module's others: start-up stays light
    from sim.process.interpreter import (  # the same: only a calibration elsewhere asks
        InterpreterError,
        child_env,
        probe,
        resolve_python,
    )

    try:
        path = resolve_python(python)
        found = probe(path)
    except InterpreterError as exc:
        raise ConfigError(f"--python: {exc}") from None
    if not found.kvsim or found.missing(("pydantic", "yaml", "simpy", "numpy")):
        raise ConfigError(f"--python: {found.describe()} cannot run kvsim (`make freethreaded`)")
    kwargs = {**kwargs, "out": str(Path(out).absolute())}
    env = child_env("on" if found.free_threaded else "default")
    _relay(python, [path, "-c", _UNDER_SCRIPT, json.dumps(kwargs)], env, say)
    doc = json.loads(Path(kwargs["out"]).read_text(encoding="utf-8"))
    if found.free_threaded:
        doc = _with_parallel_slowdown(python, path, Path(kwargs["out"]), doc, say)
    return doc


def _relay(python: str, argv: list[str], env: dict[str, str], say: Callable[[str], None]) -> None:
    """Run ``argv``, its stdout relayed to ``say`` a line at a time; a failure is one line
    (the child's last line of error output)."""
    from sim.errors import ConfigError  # deferred as the module's others: start-up stays light

    with subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            say(line.rstrip("\n"))
        err = proc.stderr.read()
    if proc.returncode != 0:
        last = (err.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        raise ConfigError(f"--python {python}: calibration failed there: {last[:300]}")


def _with_parallel_slowdown(
    python: str, path: str, out: Path, doc: dict[str, Any], say: Callable[[str], None]
) -> dict[str, Any]:
    """``doc`` with each variant's slowdown beside other load threads, measured in the
    same free-threaded ``python`` with its GIL off (a child a variant: PYTHON_GIL is read at
    start-up, and what a process ran before moves what a variant costs there, as
    sim.calibration.measure says), written back to ``out`` and printed by the command
    (model mode does not use it: sim.calibration.measure_parallel says why)."""
    import tempfile  # random, shutil and more: not at import sim (free-threaded calibrations only)

    from sim.process.interpreter import child_env  # as in _calibrate_under
    from sim.rundir.outputs import write_json  # the run directory's code: not at import sim

    keys = [k for k in doc.get("variants", {}) if "/" in k]
    if not keys:
        return doc
    interpreter = None
    with tempfile.TemporaryDirectory(prefix="kvsim-parallel-") as tmp:
        for key in keys:
            answer = Path(tmp) / "parallel.json"
            ask = json.dumps([[key], PARALLEL_THREADS, str(answer)])
            _relay(python, [path, "-c", _PARALLEL_SCRIPT, ask], child_env("off"), say)
            found = json.loads(answer.read_text(encoding="utf-8"))
            doc["variants"][key]["parallel_slowdown"] = found["variants"][key]
            interpreter = found["interpreter"]
    doc["parallel_slowdown"] = {"interpreter": interpreter, "threads": PARALLEL_THREADS}
    write_json(out, doc)
    return doc
