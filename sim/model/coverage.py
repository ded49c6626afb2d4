"""Which calibration a model point uses, and whether it covers the point (else one line).

Checked for every point before a run starts (``kvsim run``, ``kvsim validate-model``),
so an uncovered point fails the command up front instead of failing mid-sweep.
"""

from __future__ import annotations

import platform
import shlex
from collections.abc import Sequence
from pathlib import Path

from sim.config import ExperimentConfig, Point
from sim.config.workload import EmpiricalTokens, FixedTokens, TraceArrival, UniformTokens
from sim.errors import ConfigError
from sim.model.calibration import (
    CALIBRATE_FIRST,
    Calibration,
    CalibrationError,
    load_calibration,
)
from sim.process.interpreter import InterpreterError, free_threaded_build, probe, resolve_python
from sim.workload.plan import preview_workload
from sim.workload.trace import read_trace

__all__ = [
    "check_interpreter",
    "check_point",
    "check_points",
    "chunk_range",
    "point_calibration",
    "stands_for",
]


def point_calibration(
    cfg: ExperimentConfig, memo: dict[str, Calibration] | None = None
) -> Calibration:
    key = str(Path(cfg.machine.calibration))
    if memo is not None and key in memo:
        return memo[key]
    cal = load_calibration(key, missing=_calibrate_advice(cfg, key))
    if memo is not None:
        memo[key] = cal
    return cal


def chunk_range(cfg: ExperimentConfig, tokens: Sequence[int] | None = None) -> range | None:
    """Chunks per group the point's requests have: from the planned ``tokens`` when given,
    else from the config: a trace's replay plan (its smallest and largest load), a fixed
    or uniform spec, an empirical one's lengths; a lognormal one from one chunk to its
    ``max`` (the draws can reach both). None only when the replay cannot be planned."""
    bs = cfg.model.block_size
    gran = cfg.model.chunk_granularity
    spec = cfg.workload.tokens
    if tokens is not None:
        if not tokens:
            return None
        lo, hi = min(tokens), max(tokens)
    elif isinstance(cfg.workload.arrival, TraceArrival):
        try:
            preview = preview_workload(cfg)
        except ConfigError:  # a replay that cannot be planned: the run reports it
            return None
        assert preview.min_tokens is not None and preview.max_tokens is not None
        lo, hi = preview.min_tokens, preview.max_tokens
    elif isinstance(spec, FixedTokens):
        lo = hi = spec.value
    elif isinstance(spec, UniformTokens):
        lo, hi = spec.low, spec.high
    elif isinstance(spec, EmpiricalTokens):
        lengths = read_trace(spec.path).input_length
        lo, hi = min(int(lengths.min()), spec.max), min(int(lengths.max()), spec.max)
    else:  # lognormal: anything from one chunk to its max
        lo, hi = gran, spec.max
    lo = max(gran, lo // gran * gran)
    hi = max(gran, hi // gran * gran)
    return range(-(-lo // bs), -(-hi // bs) + 1)


def stands_for(cfg: ExperimentConfig) -> tuple[str, str, str]:
    """(version, build, name) of the interpreter a model point stands for: the one its
    ``interpreter.python`` names (asked once, sim.process.interpreter.probe), else the one
    kvsim runs in. CalibrationError when the named one cannot be asked."""
    name = cfg.interpreter.python
    if not name:
        build = "free-threaded" if free_threaded_build() else "default"
        return platform.python_version(), build, "kvsim's own python"
    try:
        found = probe(resolve_python(name))
    except InterpreterError as exc:
        raise CalibrationError(str(exc)) from None
    return found.version, "free-threaded" if found.free_threaded else "default", name


def _minor(version: str) -> str:
    return ".".join(str(version).split(".")[:2])


def _calibrate_advice(cfg: ExperimentConfig, path: str) -> str:
    """How to write the missing calibration file ``path`` for the interpreter the point
    stands for: the command names the python and the file unless both are the defaults
    (a bare `kvsim calibrate` writes machine.calibration's default in kvsim's python)."""
    python = cfg.interpreter.python
    default = str(Path(type(cfg.machine).model_fields["calibration"].default))
    if not python and path == default:
        return CALIBRATE_FIRST
    under = f" gil --python {shlex.quote(python)}" if python else ""
    return f"write it first: `kvsim calibrate{under} --out {shlex.quote(path)}`"


def check_interpreter(cfg: ExperimentConfig, cal: Calibration) -> None:
    """CalibrationError unless ``cal`` was measured in the build and minor version of the
    interpreter the point stands for: 3.13's free-threaded build runs pure Python ~2x
    slower than 3.11, so a hold measured in one is not a hold of the other. A calibration
    written before the interpreter was recorded serves kvsim's own only."""
    version, build, name = stands_for(cfg)
    if cfg.interpreter.gil == "off" and build != "free-threaded":
        raise CalibrationError(
            f"interpreter.gil: off needs a free-threaded python; {name} (Python {version}) "
            "has a GIL (for the what-if on this build: gil.kind: none)"
        )
    how = (
        f"calibrate under it: `kvsim calibrate gil --python {name} --out FILE`, then "
        "machine.calibration: FILE"
        if cfg.interpreter.python
        else "recalibrate in it: `kvsim calibrate gil --force`"
    )
    got = cal.interpreter
    if got is None:
        if cfg.interpreter.python:
            raise CalibrationError(
                f"{cal.path}: records no interpreter (written before kvsim recorded one), and "
                f"the point stands for {name} (Python {version}, {build} build); {how}"
            )
        return
    if _minor(got.get("version", "")) != _minor(version) or got.get("build") != build:
        raise CalibrationError(
            f"{cal.path}: measured in Python {got.get('version')} ({got.get('build')} build); "
            f"the point stands for {name} (Python {version}, {build} build); {how}"
        )


def check_point(
    cfg: ExperimentConfig, cal: Calibration, tokens: Sequence[int] | None = None
) -> None:
    """CalibrationError unless ``cal`` covers the interpreter, variant, geometry and engine
    of ``cfg`` (and the planned ``tokens``, when given)."""
    check_interpreter(cfg, cal)
    cal.check_covers(
        cfg.connector.variant,
        cfg.connector.handler,
        chunk_range(cfg, tokens),
        cfg.model.regions,
        cfg.model.kv_groups,
        [s.path for s in cfg.plugins],
    )
    if not cfg.engine.enabled:
        return
    eng = cfg.engine
    if cal.engine_build_ms(eng.index_variant) is None:
        raise CalibrationError(
            f"{cal.path}: engine.index_variant {eng.index_variant!r} is not calibrated; "
            "run `kvsim calibrate` with the engine"
        )
    measured = cal.engine_tokens(eng.index_variant)
    if measured is not None and not measured[0] <= eng.max_tokens() <= measured[1]:
        raise CalibrationError(
            f"{cal.path}: an engine step of {eng.max_tokens()} padded tokens (engine.batch_size "
            f"{eng.batch_size}) is outside the calibrated range {measured[0]}–{measured[1]} "
            f"of index variant {eng.index_variant!r}"
        )


def check_points(points: Sequence[Point]) -> dict[str, Calibration]:
    """Check every model-mode point; returns the calibrations used, by path. The error
    names the first point the calibration does not cover (one line)."""
    memo: dict[str, Calibration] = {}
    for p in points:
        if p.config.mode == "model":
            try:
                check_point(p.config, point_calibration(p.config, memo))
            except CalibrationError as exc:
                raise CalibrationError(f"point {p.index} ({p.label}): {exc}") from None
    return memo
