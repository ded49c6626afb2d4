"""Where a job's GIL hold goes: the hold split at the stage marks the job makes.

A load request's CPU work has stages (``connectors.base.mark_stage``): ``keys``
(the chunk list and its store keys), ``addresses`` (the variant), ``free`` (the
hand-off: the results dropped once handed over), and ``gc``: every collection
that ran on the thread during the job, wherever it fell, taken out of the stage
it interrupted (``sim.instruments.gc_meter``; a collection stops every thread,
so it is worth its own line).

The clock reads the same counters as the GIL meter at each boundary — thread
CPU time, declared GIL-free CPU (``connectors.base.free_time``) and this
thread's collection CPU — and boundaries are shared between adjacent stages,
so the stages partition the measured window: their sum is the job's hold to
the nanosecond (the meter's resolution), not an estimate beside it. The few
microseconds before the first mark go to the first stage, those after the
last mark to the last; a job that marks nothing is all ``other``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from connectors.base import free_time
from sim.instruments.gc_meter import GENERATIONS, thread_totals

__all__ = ["GC", "OTHER", "STAGES", "StageClock", "StageTimes"]

#: The stages of a load request, in order; ``gc`` is every collection inside the job.
STAGES = ("keys", "addresses", "free", "gc")
GC = "gc"
#: A job that marks no stage (an engine step, a bench call): its whole hold.
OTHER = "other"


@dataclass(frozen=True, slots=True)  # no __dict__: see sim.runtime.pipeline._Request
class StageTimes:
    """One job's hold by stage (ns), and the collections that ran inside it.

    ``gc_counts`` is by generation; ``gc_in`` counts the collections by the stage
    they interrupted (what caused them, as allocation triggers collection).
    """

    hold_ns: dict[str, int]
    gc_counts: tuple[int, ...]
    gc_in: dict[str, int]

    def of(self, stage: str) -> int:
        return self.hold_ns.get(stage, 0)

    @property
    def gc_collections(self) -> int:
        return sum(self.gc_counts)


class StageClock:
    """The running split of one job on one thread; ``mark`` from the job, ``finish`` after."""

    def __init__(self, cpu_ns: int) -> None:
        t = thread_totals()
        self._cpu = cpu_ns
        self._free = free_time.cpu_ns
        self._gc = t.cpu_ns
        self._gc_counts0 = t.counts
        self._gc_seen = sum(t.counts)
        self._stage: str | None = None
        self._hold: dict[str, int] = {}
        self._gc_in: dict[str, int] = {}

    def _close(self, now_cpu: int, next_stage: str | None) -> None:
        t = thread_totals()
        free, gc_ns, seen = free_time.cpu_ns, t.cpu_ns, sum(t.counts)
        stage = self._stage or next_stage or OTHER
        held = (now_cpu - self._cpu) - (free - self._free) - (gc_ns - self._gc)
        self._hold[stage] = self._hold.get(stage, 0) + held
        self._hold[GC] = self._hold.get(GC, 0) + gc_ns - self._gc
        if seen != self._gc_seen:
            self._gc_in[stage] = self._gc_in.get(stage, 0) + seen - self._gc_seen
        self._cpu, self._free, self._gc, self._gc_seen = now_cpu, free, gc_ns, seen

    def mark(self, stage: str) -> None:
        self._close(time.thread_time_ns(), stage)
        self._stage = stage

    def finish(self, cpu_ns: int) -> StageTimes:
        """Close the last stage at ``cpu_ns`` (the meter's own end reading)."""
        self._close(cpu_ns, None)
        counts = tuple(b - a for a, b in zip(self._gc_counts0, thread_totals().counts, strict=True))
        assert len(counts) == GENERATIONS
        return StageTimes(dict(self._hold), counts, dict(self._gc_in))
