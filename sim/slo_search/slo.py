"""Service-level objectives: ``latency_p99_ms<=100``, ``stall_p99_ms<5``, checked on a point.

An objective names a column of summary.csv (any latency percentile, the probe's
``stall_p99_ms``, the engine's ``engine_stall_p99_ms`` or ``engine_step_p99_ms``,
…), a comparison (``<=`` or ``<``) and a limit in the column's unit. A point meets
it when the value is known and within the limit and every request finished: a
point with failed requests never counts as meeting an objective.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim import columns
from sim.analysis.behind import ACHIEVED_MIN
from sim.rundir.numbers import as_float

__all__ = ["SLO", "Verdict", "judge", "parse_slo"]

_PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(<=|<)\s*([0-9.eE+-]+)\s*$")

#: Metrics whose names say what they are, for the one-line result.
_WORDS = {
    "latency_p": "p{q} load latency",
    "stall_p": "p{q} probe stall",
    "engine_stall_p": "p{q} engine stall",
    "engine_step_p": "p{q} engine step",
    "queue_p": "p{q} queue wait",
}


@dataclass(frozen=True)
class SLO:
    metric: str
    op: str
    limit: float

    def holds(self, value: float) -> bool:
        if math.isnan(value):
            return False
        return value <= self.limit if self.op == "<=" else value < self.limit

    @property
    def unit(self) -> str:
        for suffix, unit in (("_ms", "ms"), ("_us", "µs"), ("_s", "s"), ("_rps", "req/s")):
            if self.metric.endswith(suffix):
                return unit
        return ""

    @property
    def text(self) -> str:
        """``p99 ≤ 100 ms`` (as said in the result line)."""
        name = self.metric
        for prefix, words in _WORDS.items():
            m = re.fullmatch(re.escape(prefix) + r"([0-9.]+)_(ms|us)", name)
            if m:
                name = words.format(q=m.group(1))
                break
        op = "≤" if self.op == "<=" else "<"
        return f"{name} {op} {self.limit:g}{(' ' + self.unit) if self.unit else ''}"

    @property
    def spec(self) -> str:
        return f"{self.metric}{self.op}{self.limit:g}"


def parse_slo(text: str, known: Sequence[str] = ()) -> SLO:
    """``'latency_p99_ms<=100'`` -> SLO; ValueError (one line, saying the form) otherwise.

    ``known`` (summary columns), when given, must contain the metric.
    """
    m = _PATTERN.match(text)
    if not m:
        raise ValueError(
            f"--slo {text!r}: expected METRIC<=LIMIT or METRIC<LIMIT, e.g. "
            "'latency_p99_ms<=100' or 'stall_p99_ms<=5' (quote it in the shell)"
        )
    metric, op, raw = m.groups()
    try:
        limit = float(raw)
    except ValueError:
        raise ValueError(f"--slo {text!r}: {raw!r} is not a number") from None
    if not math.isfinite(limit) or limit <= 0:
        raise ValueError(f"--slo {text!r}: the limit must be a positive number")
    if known and metric not in known:
        close = difflib.get_close_matches(metric, list(known), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"--slo {text!r}: {metric!r} is not a summary column; {hint}e.g. latency_p99_ms, "
            "latency_p90_ms, stall_p99_ms, engine_stall_p99_ms, queue_p99_ms"
        )
    return SLO(metric, op, limit)


@dataclass(frozen=True)
class Verdict:
    ok: bool
    #: The objectives' values, by metric.
    values: dict[str, float]
    #: Why the point does not meet the objectives ("" when it does).
    why: str


_num = as_float  # the one string -> float reader (sim.rundir.numbers)


def judge(row: Mapping[str, Any], slos: Sequence[SLO]) -> Verdict:
    """Whether one summary row meets every objective, and why not."""
    values = {s.metric: _num(row.get(s.metric)) for s in slos}
    if row.get("status", "ok") != "ok":
        return Verdict(False, values, f"the point {row.get('status')}: {row.get('error', '')}")
    failed = _num(row.get("failed"))
    if failed and failed > 0:
        return Verdict(False, values, f"{failed:.0f} request(s) failed")
    offered, achieved = (
        _num(row.get(columns.OFFERED_RPS.name)),
        _num(row.get(columns.ACHIEVED_RPS.name)),
    )
    if offered > 0 and achieved < ACHIEVED_MIN * offered:
        # A rate the harness could not apply is not a rate the variant sustained.
        return Verdict(
            False,
            values,
            f"the harness applied only {achieved:.3g} of the {offered:.3g} req/s offered",
        )
    for s in slos:
        v = values[s.metric]
        if math.isnan(v):
            return Verdict(False, values, f"{s.metric} has no value (did its add-on run?)")
        if not s.holds(v):
            return Verdict(False, values, f"{s.metric} = {v:.3g} {s.unit}".rstrip())
    return Verdict(True, values, "")
