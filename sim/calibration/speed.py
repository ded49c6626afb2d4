"""The machine's speed at the minute of each real point: a short calibration probe beside it.

A calibrated model runs at the speed of the minute it was calibrated in, and this machine's
speed drifts ±10 % within minutes (issue 40: a saturated p50 moves by up to 2× with it).
validate-model therefore measures, just before and just after every real repeat, what the
calibration measured: :data:`PROBE_REPS` requests of the point's variant at the calibration
row nearest the point's geometry, through the same meter (``sim.calibration.measure.measure_hold``).
Their mean hold over the calibration's at that row is the machine's speed at that minute
against the calibration's (1.07: 7 % slower); the model twin of each point is given the
median of its real repeats' readings as ``machine.cpu_scale`` (one probe can meet a burst
of other processes that a point's seconds average out). Nothing of the real point's own
measurements enters it (``model-matched/`` is that diagnostic).

A point under ``interpreter.python`` is probed in that python (a child, with the GIL as its
calibration was measured: ``kvsim calibrate gil --python`` measures with it on), since
kvsim's own python runs pure Python at another speed (3.13t about half 3.11's); before,
those points ran at the calibration's speed. A probe there starts a fresh child each time,
and its readings are noisy: on 5 Dec 2026 the 72 of configs/gil_on_off.yaml moved −25 % …
+101 % about their median, and the GIL-on scalar points missed p50 by about −30 % with them
as by about −20 % without (docs/model-mode.md).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from sim.columns import GIL_ENABLED
from sim.model.calibration import PARAMETRIC, Calibration
from sim.model.coverage import chunk_range

__all__ = ["MAX_PROBE_CHUNKS", "PROBE_REPS", "probe_row", "speed_line", "speed_ratio"]

#: Requests one probe measures: as many as a calibration row's mean is of (calibrate's
#: default ``--reps``), so the two means carry the same noise.
PROBE_REPS = 5
#: What a probe under another interpreter runs there: measure_hold's arguments as JSON;
#: it prints the mean hold (ms) last.
_UNDER_SCRIPT = """
import json, sys
from sim.calibration.measure import measure_hold
print(measure_hold(*json.loads(sys.argv[1])))
"""
#: How long a probe under another interpreter may take (its start-up and imports included).
_UNDER_TIMEOUT_S = 120
#: The largest chunks per group a probe measures at: a probe must stay short beside a real
#: point (scalar at 1,024 chunks × 61 regions holds ~25 ms: five requests ≈ 0.25 s).
MAX_PROBE_CHUNKS = 1024


def probe_row(cfg: Any, cal: Calibration) -> dict[str, Any] | None:
    """The calibration row a probe of ``cfg``'s point measures at: its variant's row of the
    point's KV-cache groups (else the nearest), regions nearest the point's, chunks per group
    nearest (in ratio) its largest request's, at most :data:`MAX_PROBE_CHUNKS`. None for a
    variant that holds a set time (``synthetic``) or has no rows."""
    variant, handler = cfg.connector.variant, cfg.connector.handler
    entry = cal.variant(variant, handler)
    if variant in PARAMETRIC or not entry or not entry.get("points"):
        return None
    rows = entry["points"]
    rng = chunk_range(cfg)
    want = min((rng.stop - 1) if rng else MAX_PROBE_CHUNKS, MAX_PROBE_CHUNKS)
    m = cfg.model

    def distance(r: dict[str, Any]) -> tuple[float, ...]:
        per_group = r["chunks"] / r["groups"]
        return (
            abs(r["groups"] - m.kv_groups),
            abs(r["regions"] - m.regions),
            per_group > MAX_PROBE_CHUNKS,
            abs(math.log(max(per_group, 1) / max(want, 1))),
        )

    return min(rows, key=distance)


def speed_ratio(cfg: Any, cal: Calibration, reps: int = PROBE_REPS) -> float | None:
    """The machine's speed now against the calibration's, for ``cfg``'s point: the probe's
    mean hold over the calibration row's (None: no row to probe, see :func:`probe_row`)."""
    from sim.calibration.measure import measure_hold  # the variants load only when a probe runs

    row = probe_row(cfg, cal)
    if row is None or not row["hold"] > 0:
        return None
    groups = int(row["groups"])
    args = (
        cfg.connector.variant,
        cfg.connector.handler,
        int(row["chunks"]) // groups,
        int(row["regions"]),
        groups,
        reps,
        dict(cfg.connector.options),
    )
    if cfg.interpreter.python:
        interp = cal.interpreter or {}
        hold = _hold_under(cfg.interpreter.python, interp.get(GIL_ENABLED.name, True), args)
    else:
        hold = measure_hold(*args)
    return hold / float(row["hold"])


def _hold_under(python: str, gil_on: bool, args: tuple[Any, ...]) -> float:
    """measure_hold(*args) in a child of ``python`` (as sim.process.interpreter resolves
    it), its GIL on or off as ``gil_on`` says: the calibration's state."""
    import subprocess  # a probe under another interpreter only

    from sim.process.interpreter import child_env, resolve_python  # as the point children

    path = resolve_python(python)
    done = subprocess.run(
        [path, "-c", _UNDER_SCRIPT, json.dumps(args)],
        env=child_env("on" if gil_on else "off"),
        capture_output=True,
        text=True,
        timeout=_UNDER_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise RuntimeError(f"under {path}: {why[:200]}")
    return float(lines[-1])


def speed_line(readings: Mapping[Any, Sequence[float]], scaled: bool = True) -> str:
    """'machine speed against the calibration: −4 % … +7 % over the validation (…)' from
    every probe reading (per point), or a line saying none was taken; ``scaled``: the
    model points ran at these speeds (else: a replay, which takes the measured holds)."""
    values = [x for xs in readings.values() for x in xs if x > 0]
    if not values:
        return (
            "- machine speed: not probed (no point's variant has a calibration row to "
            "measure; a synthetic hold is a set time); the model ran at the calibration's\n"
        )
    lo, hi, mid = min(values), max(values), statistics.median(values)
    mids = [statistics.median(xs) for xs in readings.values() if xs]
    used = (
        f"each model point ran at its real repeats' median, machine.cpu_scale "
        f"{min(mids):.2f}–{max(mids):.2f}"
        if scaled
        else "the replay takes each request's own measured hold: not scaled"
    )
    return (
        f"- machine speed (a {PROBE_REPS}-request calibration probe before and after each "
        f"real repeat, its hold over the calibration's; >0: slower): {_pct(lo - 1)} … "
        f"{_pct(hi - 1)} against the calibration over the validation (median {_pct(mid - 1)}, "
        f"{len(values)} probes; moved {_pct(lo / mid - 1)} … {_pct(hi / mid - 1)} about its "
        f"median); {used}\n"
    )


def _pct(x: float) -> str:
    return f"{x:+.0%}".replace("-", "−")
