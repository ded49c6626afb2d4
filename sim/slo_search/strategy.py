"""Which value to try next, from the results so far: bisection, or a scan.

* ``max`` (the default for rates): the highest value that meets the objectives,
  assuming that a higher value is harder (latency grows with the offered rate).
  From the start value it doubles while the objectives hold (halves while they
  do not) until a pass and a fail bracket the answer, then bisects the bracket
  until it is narrower than ``tol`` (relative) or the run budget is spent.
* ``min``: the lowest value that meets them, a higher value being easier.
* ``best`` (the default for worker counts): every power of two in [lo, hi]; the
  answer is the value with the lowest first objective among those that meet
  them all — more load threads are not always better when they share a GIL,
  so no monotony is assumed.

A strategy is pure: it sees (value, passed, metric) results and proposes values;
``sim.slo_search.driver`` runs them. The same results give the same proposals, which
is what lets an interrupted search resume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = [
    "Outcome",
    "Strategy",
    "nice",
    "round_value",
]


def nice(v: float) -> int | float:
    """25.0 -> 25 (axis values and labels read as they were meant)."""
    return int(v) if float(v).is_integer() else float(v)


def round_value(v: float, integer: bool) -> float:
    """Values tried are kept short (3 significant digits, or whole numbers) so that they
    read well in tables and point names."""
    if integer:
        return float(max(1, round(v)))
    return float(f"{v:.3g}")


@dataclass(frozen=True)
class Outcome:
    """What a search found for one series."""

    #: "found", "at_least" (held up to hi), "none" (failed down to lo) or "budget".
    kind: str
    #: The answer (the best value meeting the objectives), NaN when none did.
    value: float
    #: The nearest value tried that did not meet them, beyond the answer (NaN if none).
    bound: float
    runs: int


@dataclass
class Strategy:
    goal: str
    start: float
    lo: float
    hi: float
    integer: bool
    tol: float = 0.1
    max_runs: int = 6
    #: value -> (passed, first objective's value)
    tried: dict[float, tuple[bool, float]] = field(default_factory=dict)

    def record(self, value: float, passed: bool, metric: float = math.nan) -> None:
        self.tried[value] = (passed, metric)

    # --- the next value ------------------------------------------------------------

    def _grid(self) -> list[float]:
        out, v = [], max(1.0, self.lo)
        while v <= self.hi:
            out.append(round_value(v, self.integer))
            v *= 2
        return list(dict.fromkeys(out))

    def _passes(self) -> list[float]:
        return sorted(v for v, (ok, _) in self.tried.items() if ok)

    def _fails(self) -> list[float]:
        return sorted(v for v, (ok, _) in self.tried.items() if not ok)

    def _bracket(self) -> tuple[float | None, float | None]:
        """(best pass, nearest fail beyond it) for max; mirrored for min."""
        passes, fails = self._passes(), self._fails()
        if self.goal == "max":
            good = passes[-1] if passes else None
            bad = next((f for f in fails if good is None or f > good), None)
        else:
            good = passes[0] if passes else None
            beyond = [f for f in fails if good is None or f < good]
            bad = beyond[-1] if beyond else None
        return good, bad

    def next_value(self) -> float | None:
        """The next value to try, or None when the search is over."""
        if len(self.tried) >= self.max_runs:
            return None
        if self.goal == "best":
            return next((v for v in self._grid() if v not in self.tried), None)
        if not self.tried:
            return round_value(min(max(self.start, self.lo), self.hi), self.integer)
        good, bad = self._bracket()
        harder = 1 if self.goal == "max" else -1  # direction in which values get harder
        if bad is None:  # everything tried held: go harder
            edge = self.hi if harder > 0 else self.lo
            if good == edge:
                return None
            nxt = good * 2 if harder > 0 else good / 2
            nxt = min(nxt, self.hi) if harder > 0 else max(nxt, self.lo)
        elif good is None:  # nothing held: go easier
            edge = self.lo if harder > 0 else self.hi
            if bad == edge:
                return None
            nxt = bad / 2 if harder > 0 else bad * 2
            nxt = max(nxt, self.lo) if harder > 0 else min(nxt, self.hi)
        else:
            low, high = sorted((good, bad))
            if high / low - 1 <= self.tol:
                return None
            nxt = (low + high) / 2
        nxt = round_value(nxt, self.integer)
        return None if nxt in self.tried else nxt

    # --- the answer ------------------------------------------------------------------

    def outcome(self) -> Outcome:
        runs = len(self.tried)
        if self.goal == "best":
            passes = [(m, v) for v, (ok, m) in self.tried.items() if ok]
            if not passes:
                return Outcome("none", math.nan, math.nan, runs)
            _m, v = min(passes, key=lambda mv: (math.inf if math.isnan(mv[0]) else mv[0], mv[1]))
            return Outcome("found", v, math.nan, runs)
        good, bad = self._bracket()
        if good is None:
            return Outcome("none", math.nan, bad if bad is not None else math.nan, runs)
        if bad is None:
            return Outcome("at_least", good, math.nan, runs)
        low, high = sorted((good, bad))
        narrow = high / low - 1 <= self.tol or (self.integer and high - low <= 1)
        return Outcome("found" if narrow else "budget", good, bad, runs)
