"""``kvsim calibrate``: measure on this machine the costs model mode is built from.

Everything is measured alone (one thread at a time, no contention), because
contention is what the model adds: a request's GIL hold and GIL-free CPU per
variant and geometry (through the same GIL meter and CPU stages as real mode),
the simulation thread's CPU per request (a real no-op point, with the probe's
ledger), thread wake-up and timer lateness, the probe's own lateness, and the
engine step's build hold per index variant. Medians are taken throughout: a
loaded machine adds outliers, not a shift of the bulk.

Each variant and handler is measured in a child process of this python that measures
nothing else (:func:`measure_variant_alone`), as a point's child runs one variant: what a
process ran before moves what a variant costs there. In one free-threaded process numpy
held 6.0 ms a request (the median of 30) before 30 scalar requests and 9.9-12.6 ms after,
for as long as it was measured, and in 3.11 7.0 before and 9.4 just after (6 Dec 2026,
05:30); a calibration that measured numpy after scalar in one process had it at 11.1 ms
where the real points held 6.9-8.2 ms.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
from pydantic import ValidationError

from sim import columns
from sim.calibration.measure_engine import measure_engine
from sim.calibration.measure_harness import measure_harness
from sim.calibration.measure_yields import REPS as YIELD_REPS
from sim.calibration.measure_yields import Waiter, timed
from sim.config import ConfigError, ExperimentConfig
from sim.errors import MeasureError
from sim.model.calibration import CALIBRATION_KIND, PARAMETRIC, LinearFit
from sim.process.interpreter import this_interpreter
from sim.rundir.manifest import machine_info

__all__ = [
    "DEFAULT_CHUNKS",
    "DEFAULT_GROUPS",
    "DEFAULT_REGIONS",
    "calibrate",
    "fit_linear",
    "measure_holds",
    "measure_variant",
    "measure_variant_alone",
    "request_config",
]

DEFAULT_CHUNKS = (1, 2, 4, 8, 64, 256, 1024, 2048)
DEFAULT_REGIONS = (4, 61)
DEFAULT_GROUPS = (1, 2)
BLOCK_SIZE = 128
#: Requests measured for a variant's spread of holds (at one geometry). The tail is rare
#: events (a collection; here also a request whose thread CPU time reads ~10x, with no
#: collection in it: the virtual CPU held up), and with 40 one event more or less was
#: 2.5 % of every simulated run's requests.
SPREAD_REPS = 120
#: Request sizes (chunks) a variant's mid-hold GIL releases are measured at, with every
#: region count of the grid (sim.calibration.measure_yields): the sizes that release for
#: longer than a waiter's wake-up (NumPy at quickstart's geometry, 6 Dec 2026: 1.2 takes a
#: request at 256 chunks, 8.9 at 1024, 25.8 at 2048); below them the model scales to none.
YIELD_CHUNKS = (256, 1024, 2048)
#: Idle time before each measured request. In a run a load thread sleeps between
#: requests while other threads run, and its next request starts from cold caches:
#: measured back to back, numpy and rows held the GIL 15-100 % less than in a run at
#: 25 requests/s, and the synthetic variant's fixed cost read 16 µs against 85 µs.
IDLE_GAP_S = 0.02

Say = Callable[[str], None]

#: One variant's entry measured in a child (:func:`measure_variant_alone`): [plug-ins,
#: measure_variant's arguments] as JSON in argv; the entry as JSON, one line, out.
_ALONE_SCRIPT = """
import json, sys
from sim.calibration.measure import measure_variant
from sim.config.plugins import plugin_scope
plugins, args = json.loads(sys.argv[1])
with plugin_scope(plugins):
    entry = measure_variant(*args)
print(json.dumps(entry))
"""


def request_config(
    variant: str, handler: str, chunks: int, regions: int, groups: int, options=None
):
    return ExperimentConfig.model_validate(
        {
            "name": "calibrate",
            "model": {
                "regions": regions,
                "block_len": [4096],
                "block_size": BLOCK_SIZE,
                "num_blocks": max(16384, 2 * chunks),
                "kv_groups": groups,
            },
            "workload": {"requests": 1, "tokens": chunks * BLOCK_SIZE},
            "connector": {"variant": variant, "handler": handler, "options": options or {}},
        }
    )


#: The calibrate argument each geometry field comes from (for its error message).
_ARGUMENT = {"tokens": "--chunks", "num_blocks": "--chunks", "regions": "--regions"}


def check_grid(chunks: Sequence[int], regions: Sequence[int], groups: Sequence[int]) -> None:
    """Refuse (ConfigError, one line naming the argument) a grid whose largest or smallest
    geometry is not a valid config, before minutes of measuring (``--chunks 1000000000``
    asked for 1.28e11 tokens a request)."""
    for c, r, g in ((max(chunks), max(regions), max(groups)), (min(chunks), min(regions), 1)):
        try:
            request_config("scalar", "per_group", c, r, g)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = next((str(x) for x in reversed(err["loc"]) if str(x) in _ARGUMENT), "")
            arg = _ARGUMENT.get(field, "--groups" if "kv_groups" in map(str, err["loc"]) else "")
            shown = {"--chunks": c, "--regions": r, "--groups": g}.get(arg, "")
            where = ".".join(str(x) for x in err["loc"])
            raise ConfigError(
                f"{arg or 'calibrate'} {shown}: out of range for a request's geometry "
                f"({where}: {err['msg']})"
            ) from None


def _plain(fn: Callable[..., Any], *args: Any) -> tuple[None, Any]:
    """``fn(*args)``, as :func:`_each_request` runs a request when nothing wraps it."""
    return None, fn(*args)


def _each_request(
    cfg: Any, reps: int, seed: int, run: Callable[..., tuple[Any, Any]] = _plain
) -> list[tuple[Any, Any]]:
    """``reps`` requests of ``cfg``, each run alone on this thread through the GIL meter
    (``run(measure, ...)``: :func:`_plain`, or measure_yields.timed): what ``run`` gave
    beside each, and each one's timing.

    Every request is a different one (its own hashes and block ids, as in a run), so
    that neither the caches nor the allocator see the same job twice; a first, unkept
    request warms up what a run's warm-up would (imports, first-call set-up), and each
    starts after :data:`IDLE_GAP_S` of sleep, as a run's do.
    """
    from sim.instruments.gilmeter import measure  # not with `kvsim calibrate --help`
    from sim.runtime.pipeline import cpu_stages  # heavy: the real-mode runtime (simpy)
    from sim.runtime.point import build_variants  # heavy: the real-mode runtime (simpy)
    from sim.workload.plan import PlannedRequest  # the workload: not with `kvsim calibrate --help`

    variants = build_variants(cfg)
    tokens = cfg.workload.tokens.value
    out = []
    for i in range(reps + 1):
        job = PlannedRequest(i, tokens, 0.0, seed + i, 0.5).job(cfg.model)
        time.sleep(IDLE_GAP_S)
        beside, (_res, err, timing) = run(measure, cpu_stages, variants, cfg.connector.handler, job)
        if err is not None:
            raise RuntimeError(f"{cfg.connector.variant}: {type(err).__name__}: {err}")
        if i:
            out.append((beside, timing))
    return out


def _job_samples(cfg: Any, reps: int) -> tuple[list[float], list[float]]:
    """(hold_ms, free_cpu_ms) of ``reps`` requests of ``cfg`` (:func:`_each_request`)."""
    timings = [timing for _none, timing in _each_request(cfg, reps, 12345)]
    return [t.hold_ns / 1e6 for t in timings], [t.free_cpu_ns / 1e6 for t in timings]


def yields_at(cfg: Any, reps: int = YIELD_REPS) -> dict[str, Any]:
    """``{per_request, span, chunks, regions}``: a waiting thread's takes during ``reps``
    requests of ``cfg`` (one geometry; sim.calibration.measure_yields.Waiter.summary),
    and the geometry they were measured at."""
    with Waiter() as waiter:
        spans = [span for span, _timing in _each_request(cfg, reps, 54321, timed)]
    geo = cfg.model
    return {
        **waiter.summary(spans),
        "chunks": -(-cfg.workload.tokens.value // geo.block_size) * geo.kv_groups,
        "regions": geo.regions,
    }


def _job_costs(cfg: Any, reps: int) -> tuple[float, float]:
    """Mean (hold_ms, free_cpu_ms) of ``reps`` requests of ``cfg`` run alone.

    The mean, not the median: the collections a request triggers now and then are part
    of what it costs on average, and a run's load is what the average decides.
    """
    holds, frees = _job_samples(cfg, reps)
    return float(statistics.fmean(holds)), float(statistics.fmean(frees))


def measure_holds(
    variant: str,
    handler: str,
    chunks: int,
    regions: int,
    groups: int,
    reps: int,
    options: dict[str, Any] | None = None,
) -> list[float]:
    """Each GIL hold (ms) of ``reps`` requests at one geometry, measured exactly as a
    calibration row is (validate-model's speed probe reads them beside each real point)."""
    holds, _free = _job_samples(
        request_config(variant, handler, chunks, regions, groups, options), reps
    )
    return holds


def hold_spread(cfg: Any, reps: int = SPREAD_REPS) -> list[float]:
    """Each of ``reps`` requests' hold over their mean, sorted: how much one request's
    hold varies around the average (a collection, a cache miss), which the model draws
    from for every request (the same shape at every geometry)."""
    holds, _ = _job_samples(cfg, reps)
    mean = statistics.fmean(holds)
    return sorted(h / mean for h in holds) if mean > 0 else [1.0]


def fit_linear(rows: Sequence[dict[str, float]], key: str) -> tuple[LinearFit, float]:
    """Fit of ``key`` over rows of chunks (all groups), regions, groups; returns the fit
    and its worst relative error on the rows (those above 0.05 ms)."""
    x = np.array(
        [[1.0, r["chunks"] * r["regions"], r["chunks"], r["groups"]] for r in rows], dtype=float
    )
    y = np.array([r[key] for r in rows], dtype=float)
    # Relative least squares (rows weighted by 1/y): holds span three orders of magnitude
    # and a plain fit would trade the small geometries' accuracy for the large ones'.
    w = 1.0 / np.maximum(y, 0.01)
    coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
    fit = LinearFit(*(float(c) for c in coef))
    pred = np.array([fit.ms(int(r["chunks"]), int(r["regions"]), int(r["groups"])) for r in rows])
    big = y > 0.05  # relative error means little on a few microseconds
    worst = float(np.max(np.abs(pred[big] - y[big]) / y[big])) if big.any() else 0.0
    return fit, worst


def measure_variant(
    variant: str,
    handler: str,
    chunks: Sequence[int] = DEFAULT_CHUNKS,
    regions: Sequence[int] = DEFAULT_REGIONS,
    groups: Sequence[int] = DEFAULT_GROUPS,
    reps: int = 5,
) -> dict[str, Any]:
    """The calibration entry of one variant and handler."""
    if variant in PARAMETRIC:
        cfg = request_config(variant, handler, 8, 4, 1, {"hold_ms": 0.0, "free_ms": 0.0})
        hold, _free = _job_costs(cfg, reps * 4)
        return {"overhead_ms": hold}
    rows = []
    for g in groups:
        for r in regions:
            for c in chunks:
                hold, free = _job_costs(request_config(variant, handler, c, r, g), reps)
                rows.append(
                    {"chunks": c * g, "regions": r, "groups": g, "hold": hold, "free": free}
                )
    hold_fit, hold_err = fit_linear(rows, "hold")
    free_fit, _ = fit_linear(rows, "free")
    # The spread at a mid-size request of the largest geometry: big enough that its
    # collections show, small enough to measure SPREAD_REPS of them in a few seconds.
    mid = max((c for c in chunks if c <= 1024), default=min(chunks))
    spread = hold_spread(request_config(variant, handler, mid, max(regions), min(groups)))
    yields = [
        yields_at(request_config(variant, handler, c, r, min(groups)))
        for r in regions
        for c in sorted({min(max(chunks), c) for c in YIELD_CHUNKS})
    ]
    return {
        "hold": hold_fit.as_dict(),
        "hold_spread": spread,
        "yields": yields,
        "free": free_fit.as_dict(),
        "fit_worst_rel_error": hold_err,
        "range": {
            "chunks": [min(chunks), max(chunks)],
            "regions": [min(regions), max(regions)],
            "groups": [min(groups), max(groups)],
        },
        "points": rows,
    }


def measure_variant_alone(
    args: Sequence[Any], plugins: Sequence[dict[str, str]] = ()
) -> dict[str, Any]:
    """``measure_variant(*args)`` in a child process of this python (its environment, so
    its PYTHON_GIL) that measures nothing else, ``plugins`` (``{path, source}``, as a
    config's ``plugins:`` holds them) registered there. A failure there is one line here."""
    import subprocess  # start-up: only a calibration starts children

    from sim.process.interpreter import child_env  # the same: only a calibration asks

    variant, handler = args[0], args[1]
    done = subprocess.run(
        [sys.executable, "-c", _ALONE_SCRIPT, json.dumps([list(plugins), list(args)])],
        env=child_env("default"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise MeasureError(f"{variant}/{handler}: {last[:300]} (in its calibration's child)")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def calibrate(
    variants: Sequence[str],
    handlers: Sequence[str] = ("per_group", "per_chunk"),
    chunks: Sequence[int] = DEFAULT_CHUNKS,
    regions: Sequence[int] = DEFAULT_REGIONS,
    groups: Sequence[int] = DEFAULT_GROUPS,
    reps: int = 5,
    engine: bool = True,
    say: Say = lambda _msg: None,
    plugins: Sequence[dict[str, str]] = (),
) -> dict[str, Any]:
    """The whole calibration document (not yet written); each variant measured alone in a
    child, ``plugins`` registered there."""
    t0 = time.perf_counter()
    say("harness: simulation thread, wake-ups, timers, probe")
    harness = measure_harness()
    entries: dict[str, Any] = {}
    for v in variants:
        for h in handlers[:1] if v in PARAMETRIC else handlers:
            key = v if v in PARAMETRIC else f"{v}/{h}"
            say(f"variant {key}")
            grid = (list(chunks), list(regions), list(groups))
            entries[key] = measure_variant_alone((v, h, *grid, reps), plugins)
    eng: dict[str, Any] = {}
    if engine:
        say("engine: step build per index variant")
        try:
            eng = measure_engine()
        except ImportError as exc:  # torch missing: the engine cannot run here either
            say(f"engine skipped: {exc}")
    return {
        "kind": CALIBRATION_KIND,
        "version": 1,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cores": os.cpu_count() or 1,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "info": machine_info(),
        },
        "interpreter": this_interpreter(),
        "switch_interval_ms": sys.getswitchinterval() * 1e3,
        columns.ELAPSED_S.name: time.perf_counter() - t0,
        "harness": harness,
        "variants": entries,
        "engine": eng,
    }
