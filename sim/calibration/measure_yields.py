"""How often a variant's request lets a thread that waits for the GIL in, mid-hold.

The GIL meter counts a request's CPU outside its declared GIL-free sections as hold, and
the model ran that hold as one block. But library code releases the GIL undeclared: NumPy
does inside a ufunc over more than a few hundred elements. Each release signals one
waiting thread; when the release outlasts that thread's wake-up, it takes the GIL, and the
request waits for whatever it does (an engine step's index build, another request). Behind
back-to-back NumPy requests at quickstart's geometry a thread woke 2.1 ms late (median)
where behind scalar ones it waited out the switch interval, 5.2 ms (6 Dec 2026, 19:40).

Measured here, in the variant's calibration child: a second thread that waits for the GIL
nearly all the time (it sleeps ~60 µs after each take, long enough for the request to take
the GIL back) counts its takes during each request, with the switch interval at 1 s so that
none is a forced one. Takes inside the variant's declared GIL-free sections are not counted
(the model already runs those without the GIL). The positions are fractions of the
request's held time; the model lets a waiting thread in at that many evenly spaced points
over their 10th to 90th percentile (sim.model.costs.ModelCosts.yield_points).
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from connectors.base import free_time
from sim.process.interpreter import gil_enabled

__all__ = ["REPS", "Span", "Waiter", "timed"]

T = TypeVar("T")

#: One measured call: its wall start and end (perf_counter_ns) and its declared GIL-free
#: sections (start, end).
Span = tuple[int, int, list[tuple[int, int]]]

#: Requests measured at a geometry (sim.calibration.measure.yields_at: each after
#: IDLE_GAP_S of sleep, as in a run).
REPS = 20
#: The waiting thread's sleep between takes: the OS's timer slack makes it ~60 µs.
_NAP_S = 1e-5


class Waiter:
    """A thread that waits for the GIL nearly all the time and notes each take; as a
    context manager, with the switch interval at 1 s meanwhile (no take is a forced one)."""

    def __init__(self) -> None:
        self.takes: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._wait, name="kvsim-yield-waiter", daemon=True)
        self._interval = 0.0

    def _wait(self) -> None:
        takes, stop = self.takes, self._stop
        while not stop.is_set():
            time.sleep(_NAP_S)
            takes.append(time.perf_counter_ns())

    def __enter__(self) -> Waiter:
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(1.0)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        sys.setswitchinterval(self._interval)

    def summary(self, spans: list[Span]) -> dict[str, Any]:
        """``{per_request, span}`` over the measured ``spans``: the mean count of takes,
        the 10th and 90th percentile of their positions in the held time. With the GIL
        off (a free-threaded python) the waiter runs beside the call and its takes say
        nothing: none counted."""
        if not gil_enabled():
            return {"per_request": 0.0, "span": [0.0, 0.0]}
        counts, positions = _count(spans, self.takes)
        deciles = (
            statistics.quantiles(positions, n=10, method="inclusive") if len(positions) >= 2 else []
        )
        return {
            "per_request": statistics.fmean(counts) if counts else 0.0,
            "span": [deciles[0], deciles[-1]] if deciles else [0.0, 0.0],
        }


def timed(fn: Callable[..., T], *args: Any) -> tuple[Span, T]:
    """``fn(*args)``: its span (wall start and end, declared GIL-free sections), and what
    it returned."""
    free_time.spans = free = []
    w0 = time.perf_counter_ns()
    try:
        out = fn(*args)
    finally:
        w1 = time.perf_counter_ns()
        free_time.spans = None
    return (w0, w1, free), out


def _count(spans: list[Span], takes: list[int]) -> tuple[list[int], list[float]]:
    """Takes per request outside its declared GIL-free sections, and their positions as
    fractions of the request's time outside them."""
    counts: list[int] = []
    positions: list[float] = []
    for w0, w1, free in spans:
        held = (w1 - w0) - sum(b - a for a, b in free)
        n = 0
        for t in takes:
            if not w0 < t < w1 or any(a <= t <= b for a, b in free):
                continue
            n += 1
            before = sum(min(b, t) - a for a, b in free if a < t)
            if held > 0:
                positions.append(min(1.0, max(0.0, (t - w0 - before) / held)))
        counts.append(n)
    return counts, positions
