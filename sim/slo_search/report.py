"""The words of a search: one line per series at the end, and one per value tried."""

from __future__ import annotations

import math
from collections.abc import Sequence

from sim.slo_search.series import Series
from sim.slo_search.slo import SLO, Verdict
from sim.slo_search.strategy import Outcome, nice

__all__ = ["outcome_line", "unit_of", "verdict_line"]

_UNITS = {"rate_rps": "req/s", "workers": "workers", "clients": "clients"}


def unit_of(axis: str) -> str:
    return _UNITS.get(axis, "")


def _val(v: float, axis: str) -> str:
    unit = unit_of(axis)
    if axis == "workers":
        return f"{nice(v)} worker{'s' if v != 1 else ''}"
    return f"{nice(v)}{(' ' + unit) if unit else ''}" if unit else f"{axis}={nice(v)}"


def verdict_line(s: Series, value: float, verdict: Verdict, slos: Sequence[SLO], axis: str) -> str:
    """``✓ numpy, workers=1 @ 50 req/s: latency_p99_ms 41.2`` (or ✗ and why)."""
    vals = ", ".join(
        f"{m} {v:.3g}" if not math.isnan(v) else f"{m} —" for m, v in verdict.values.items()
    )
    mark = "✓" if verdict.ok else "✗"
    why = "" if verdict.ok else f"  (misses: {verdict.why})"
    return f"{mark} {s.label} @ {_val(value, axis)}: {vals}{why}"


def outcome_line(s: Series, out: Outcome, slos: Sequence[SLO], axis: str) -> str:
    """One sentence per series: what it sustains under the objectives."""
    slo = " and ".join(x.text for x in slos)
    runs = f"{out.runs} run{'s' if out.runs != 1 else ''}"
    goal = s.strategy.goal
    if out.kind == "none":
        tried = s.strategy.lo if goal != "min" else s.strategy.hi
        edge = out.bound if not math.isnan(out.bound) else tried
        return f"{s.label} misses {slo} even at {_val(edge, axis)} ({runs})"
    if goal == "best":
        meets = sorted(v for v, (ok, _) in s.strategy.tried.items() if ok)
        listed = ", ".join(str(nice(v)) for v in meets)
        return (
            f"{s.label}: best {axis} = {nice(out.value)} under {slo} "
            f"(meets it at {axis} {listed}; {runs})"
        )
    verb = "sustains" if goal == "max" else "needs"
    if out.kind == "at_least":
        more = "at least" if goal == "max" else "at most"
        edge = s.strategy.hi if goal == "max" else s.strategy.lo
        why = (
            "the --hi/--lo limit"
            if out.value == edge
            else f"every value tried met it; --max-runs {s.strategy.max_runs} ended the search"
        )
        return f"{s.label} {verb} {more} {_val(out.value, axis)} at {slo} ({why}; {runs})"
    beyond = f"{_val(out.bound, axis)} misses it"
    if out.kind == "budget":
        beyond += (
            f"; --max-runs {s.strategy.max_runs} ended it before the {s.strategy.tol:.0%} bracket"
        )
    return f"{s.label} {verb} {_val(out.value, axis)} at {slo} ({beyond}; {runs})"
