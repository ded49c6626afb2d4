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

Every probe runs in a child of the point's python that measures that variant only
(:class:`ProbeChildren`, kept as long as the validation's real runs): a point under
``interpreter.python`` is probed in that python, with the GIL as its calibration was
measured (``kvsim calibrate gil --python`` measures with it on), since kvsim's own python
runs pure Python at another speed (3.13t about half 3.11's); and a variant is probed apart
from the others, since what a process ran before moves what a variant costs there
(sim.calibration.measure says how much). The machine itself also moves: a single
thread's CPU a request was 45 ms mostly and 72–91 ms in spells (5 Dec 2026,
docs/model-mode.md), which a probe before and after a repeat does not see inside it.
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
#: A probe child: one line in (JSON: measure_holds's arguments and the config's plug-ins),
#: one line out: each request's hold (ms), or the error that stopped it.
_PROBE_SCRIPT = """
import json, sys
from sim.calibration.measure import measure_holds
from sim.config.plugins import plugin_scope
for line in sys.stdin:
    try:
        ask = json.loads(line)
        with plugin_scope(ask["plugins"]):
            out = {"holds_ms": measure_holds(*ask["args"])}
    except Exception as exc:
        out = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(out), flush=True)
"""
#: How long one probe may take (the child's start-up and imports included, for its first).
_PROBE_TIMEOUT_S = 120
#: A probe child's key: python ('' : this one), PYTHON_GIL ('on', 'off', 'default'),
#: variant, handler.
_Key = tuple[str, str, str, str]
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
    probe, see :func:`probe_row`), measured in ``children``'s child for the point's python
    and variant (without: a child for this probe alone)."""
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
    gil = "default"  # a GIL build: PYTHON_GIL means nothing there
    if cfg.interpreter.python:  # the GIL as the calibration measured it
        gil = "on" if (cal.interpreter or {}).get(GIL_ENABLED.name, True) else "off"
    plugins = [p.model_dump() for p in cfg.plugins]
    with contextlib.nullcontext(children) if children else ProbeChildren() as kids:
        holds = kids.holds(cfg.interpreter.python, gil, args, plugins)
    return statistics.median(holds) / (float(row["hold"]) * statistics.median(spread))


class ProbeChildren:
    """One probe child per (python, GIL state, variant, handler), started at its first
    probe and kept until :meth:`close` (a ``with`` block: a validation's real runs).

    A child per variant because a point's child runs one variant, and what ran before in a
    process moves what a variant costs (sim.calibration.measure says how much): a probe
    child that had measured scalar read numpy 1.2-1.3 times slower than the real points
    ran it."""

    def __init__(self) -> None:
        self._children: dict[_Key, subprocess.Popen[str]] = {}
        #: Each child's standard error: a file, not a pipe nobody reads until it ends
        #: (a full pipe would stop the child).
        self._errors: dict[_Key, IO[bytes]] = {}

    def __enter__(self) -> ProbeChildren:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def holds(
        self,
        python: str,
        gil: str,
        args: tuple[Any, ...],
        plugins: Sequence[Mapping[str, str]] = (),
    ) -> list[float]:
        """measure_holds(*args) in the child of ``python`` ('' : this one; resolved as
        sim.process.interpreter does) for ``args``' variant and handler, with PYTHON_GIL as
        ``gil`` says ('on', 'off', or 'default': as this process has it) and ``plugins``
        (a config's ``plugins:`` entries, ``{path, source}``) registered."""
        key = (python, gil, str(args[0]), str(args[1]))
        child = self._child(key)
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write(json.dumps({"args": args, "plugins": list(plugins)}) + "\n")
            child.stdin.flush()
        except OSError:
            pass  # it has ended: said below, from what it wrote
        ready, _, _ = select.select([child.stdout], [], [], _PROBE_TIMEOUT_S)
        line = child.stdout.readline() if ready else ""
        if not line:
            why = f"no answer in {_PROBE_TIMEOUT_S} s" if not ready else "it ended"
            raise RuntimeError(f"probe under {child.args[0]}: {why}{self._drop(key)}")
        out = json.loads(line)
        if "error" in out:
            raise RuntimeError(f"probe under {child.args[0]}: {out['error'][:200]}")
        return [float(h) for h in out["holds_ms"]]

    def close(self) -> None:
        for key in list(self._children):
            self._drop(key)

    def _child(self, key: _Key) -> subprocess.Popen[str]:
        python, gil = key[:2]
        child = self._children.get(key)
        if child is None or child.poll() is not None:
            # as the point children: the interpreter, and its GIL set by the environment
            from sim.process.interpreter import child_env, resolve_python

            self._drop(key)
            errors = self._errors[key] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in _drop)
            child = self._children[key] = subprocess.Popen(
                [resolve_python(python), "-c", _PROBE_SCRIPT],
                env=child_env(gil),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                text=True,
            )
        return child

    def _drop(self, key: _Key) -> str:
        """End the child (its input closed, it leaves its loop; killed if it does not) and
        return the last line it wrote to its standard error, after ': ' (or its exit code)."""
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
