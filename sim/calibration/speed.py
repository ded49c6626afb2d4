"""The machine's speed at the minute of each real point: a short calibration probe beside it.

A calibrated model runs at the speed of the minute it was calibrated in, and this machine's
speed drifts ±10 % within minutes (issue 40: a saturated p50 moves by up to 2× with it).
validate-model therefore measures, just before and just after every real repeat, what the
calibration measured: :data:`PROBE_REPS` requests of the point's variant at the calibration
row nearest the point's geometry, through the same meter
(``sim.calibration.measure.measure_holds``).
Their median hold over the model's median request at that row (the row's mean times its
variant's spread's median, as the model draws a request) is the machine's speed at that
minute against the calibration's (1.07: 7 % slower); the model twin of each point is given
the median of its real repeats' readings as ``machine.cpu_scale``. Nothing of the real
point's own measurements enters it (``model-matched/`` is that diagnostic).

Medians, not means: one request of five meets a collection or a burst of other processes
now and then (one read 3.18 at quickstart under load 11-16), and the row's mean is of five
requests too. Forty probes on a quiet machine (6 Dec 2026, 05:08, the free-threaded build),
six drawn at a time as a point's are: the median of six means over the row's mean read
numpy 1.16-1.42 (p5-p95) and scalar 1.05-1.21; the median of six medians over the model's
median request read 1.09-1.33 and 1.06-1.15, narrower, and numpy's 7 % lower (its
requests' median is 1.05 of their mean: a mean of five falls below it and reads high
against a row's mean of five).

A point under ``interpreter.python`` is probed in that python (a child, with the GIL as its
calibration was measured: ``kvsim calibrate gil --python`` measures with it on), since
kvsim's own python runs pure Python at another speed (3.13t about half 3.11's); before,
those points ran at the calibration's speed. The child lives as long as the validation
(:class:`ProbeChildren`) and measures each probe when asked, as kvsim's own python does
in-process. Neither narrowed the spread: a fresh child a probe (up to 5 Dec 2026) read the
72 probes of configs/gil_on_off.yaml −25 % … +101 % about their median, its first requests
in a cold process; the warm child (5 Dec 2026, 14:02) read them 0.74–2.09 of the
calibration, because the machine itself moved — a single thread's CPU a request was 45 ms
mostly and 72–91 ms in spells (docs/model-mode.md).
"""

from __future__ import annotations

import contextlib
import json
import math
import select
import statistics
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from typing import IO, Any

from sim.columns import GIL_ENABLED
from sim.model.calibration import PARAMETRIC, Calibration
from sim.model.coverage import chunk_range

__all__ = [
    "MAX_PROBE_CHUNKS",
    "PROBE_REPS",
    "ProbeChildren",
    "probe_row",
    "speed_line",
    "speed_ratio",
]

#: Requests one probe measures (calibrate's default ``--reps``): scalar at quickstart's
#: geometry holds ~25 ms, so a probe costs ~0.15 s beside a real point.
PROBE_REPS = 5
#: The probe child under another interpreter: one line of measure_holds's arguments (JSON)
#: in, one line out: each request's hold (ms), or the error that stopped it.
_UNDER_SCRIPT = """
import json, sys
from sim.calibration.measure import measure_holds
for line in sys.stdin:
    try:
        out = {"holds_ms": measure_holds(*json.loads(line))}
    except Exception as exc:
        out = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out), flush=True)
"""
#: How long one probe under another interpreter may take (the child's start-up and imports
#: included, for its first).
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


def speed_ratio(
    cfg: Any,
    cal: Calibration,
    reps: int = PROBE_REPS,
    children: ProbeChildren | None = None,
) -> float | None:
    """The machine's speed now against the calibration's, for ``cfg``'s point: the probe's
    median hold over the model's median request at the calibration row (None: no row to
    probe, see :func:`probe_row`). A point under ``interpreter.python`` is probed in
    ``children``'s child of that python (without: a child for this probe alone)."""
    from sim.calibration.measure import measure_holds  # the variants load only when a probe runs

    row = probe_row(cfg, cal)
    if row is None or not row["hold"] > 0:
        return None
    entry = cal.variant(cfg.connector.variant, cfg.connector.handler) or {}
    spread = entry.get("hold_spread") or [1.0]
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
        gil_on = bool((cal.interpreter or {}).get(GIL_ENABLED.name, True))
        if children is None:
            with ProbeChildren() as once:
                holds = once.holds(cfg.interpreter.python, gil_on, args)
        else:
            holds = children.holds(cfg.interpreter.python, gil_on, args)
    else:
        holds = measure_holds(*args)
    return statistics.median(holds) / (float(row["hold"]) * statistics.median(spread))


class ProbeChildren:
    """One probe child per (python, GIL state), started at its first probe and kept until
    :meth:`close` (a ``with`` block: a validation's real runs), so that each probe
    measures a warm process, as kvsim's own python's in-process probe does."""

    def __init__(self) -> None:
        self._children: dict[tuple[str, bool], subprocess.Popen[str]] = {}
        #: Each child's standard error: a file, not a pipe nobody reads until it ends
        #: (a full pipe would stop the child).
        self._errors: dict[tuple[str, bool], IO[bytes]] = {}

    def __enter__(self) -> ProbeChildren:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def holds(self, python: str, gil_on: bool, args: tuple[Any, ...]) -> list[float]:
        """measure_holds(*args) in the child of ``python`` (as sim.process.interpreter
        resolves it) with its GIL on or off as ``gil_on`` says: the calibration's state."""
        child = self._child(python, gil_on)
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps(args) + "\n")
            child.stdin.flush()
        except OSError:
            pass  # it has ended: said below, from what it wrote
        ready, _, _ = select.select([child.stdout], [], [], _UNDER_TIMEOUT_S)
        line = child.stdout.readline() if ready else ""
        if not line:
            why = f"no answer in {_UNDER_TIMEOUT_S} s" if not ready else "it ended"
            raise RuntimeError(f"probe under {child.args[0]}: {why}{self._drop(python, gil_on)}")
        out = json.loads(line)
        if "error" in out:
            raise RuntimeError(f"probe under {child.args[0]}: {out['error'][:200]}")
        return [float(h) for h in out["holds_ms"]]

    def close(self) -> None:
        for key in list(self._children):
            self._drop(*key)

    def _child(self, python: str, gil_on: bool) -> subprocess.Popen[str]:
        key = (python, gil_on)
        child = self._children.get(key)
        if child is None or child.poll() is not None:
            # as the point children: the interpreter, and its GIL set by the environment
            from sim.process.interpreter import child_env, resolve_python

            self._drop(python, gil_on)
            errors = self._errors[key] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in _drop)
            child = self._children[key] = subprocess.Popen(
                [resolve_python(python), "-c", _UNDER_SCRIPT],
                env=child_env("on" if gil_on else "off"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )
        return child

    def _drop(self, python: str, gil_on: bool) -> str:
        """End the child (its input closed, it leaves its loop; killed if it does not) and
        return the last line it wrote to its standard error, after ': ' (or its exit code)."""
        key = (python, gil_on)
        child = self._children.pop(key, None)
        errors = self._errors.pop(key, None)
        if child is None or errors is None:
            return ""
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # an ended child's input cannot flush
                    pipe.close()
        try:
            child.wait(5.0)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        errors.seek(0)
        lines = errors.read().decode(errors="replace").strip().splitlines()
        errors.close()
        return f": {lines[-1][:200]}" if lines else f" (exit code {child.returncode})"


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
        f"real repeat, its median hold over the calibration's; >0: slower): {_pct(lo - 1)} … "
        f"{_pct(hi - 1)} against the calibration over the validation (median {_pct(mid - 1)}, "
        f"{len(values)} probes; moved {_pct(lo / mid - 1)} … {_pct(hi / mid - 1)} about its "
        f"median); {used}\n"
    )


def _pct(x: float) -> str:
    return f"{x:+.0%}".replace("-", "−")
