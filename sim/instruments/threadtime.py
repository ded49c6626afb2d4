"""What a request costs its thread, under either build: CPU time and the wait for a core.

With the GIL on, a request's CPU time outside declared GIL-free sections is its GIL
hold, and the rest of its wall time is mostly GIL wait (sim.instruments.gilmeter).
With the GIL off there is no GIL to hold or wait for: what takes their place is the
thread's CPU time over the request (``thread_cpu_ms``) and the time it was runnable but
waiting for a core (``core_wait_ms``, sim.instruments.schedstat). A real point sums both
over its requests here; with the GIL off the GIL columns of its summary are emptied and
``gil_note`` says why, instead of numbers measured against a lock that does not exist
(docs/columns.md §GIL off).
"""

from __future__ import annotations

from typing import Any

from sim import columns
from sim.stats import percentiles

__all__ = ["GIL_OFF_NOTE", "GIL_ONLY_SUMMARY", "ThreadTimes"]

#: What ``gil_note`` says of a point whose process ran with the GIL off.
GIL_OFF_NOTE = "GIL off: no GIL hold or GIL wait exists; thread_cpu and core_wait take their place"

#: Summary columns that measure the GIL itself: empty in a point run with the GIL off (the
#: probe's stalls stay: a thread's lateness to run means something without a GIL).
GIL_ONLY_SUMMARY = (
    *columns.names(columns.GIL),
    *columns.names(columns.STAGES),
    *(c for c in columns.names(columns.PROBE) if c.startswith("gil_busy")),
)


class ThreadTimes:
    """The requests' thread CPU times and core waits (their records' columns), summed up."""

    def __init__(self, gil_on: bool) -> None:
        self._gil_on = gil_on
        self._cpu_ms: list[float] = []
        self._wait_ms: list[float] = []

    def add(self, rec: Any) -> None:
        """One finished request's record (sim.point.records.RequestRecord)."""
        cpu, wait = rec.thread_cpu_ms, rec.core_wait_ms
        if cpu == cpu:  # NaN: its CPU stages never ran
            self._cpu_ms.append(cpu)
        if wait == wait:
            self._wait_ms.append(wait)

    def summary(self) -> dict[str, Any]:
        """The THREADS columns (sim.columns), and the GIL's emptied when it was off."""
        (c99,) = percentiles(self._cpu_ms, [99])
        (w99,) = percentiles(self._wait_ms, [99])
        out: dict[str, Any] = {
            columns.GIL_ENABLED.name: int(self._gil_on),
            columns.GIL_NOTE.name: "" if self._gil_on else GIL_OFF_NOTE,
            columns.THREAD_CPU_MEAN_MS.name: _mean(self._cpu_ms),
            columns.THREAD_CPU_P99_MS.name: c99,
            columns.CORE_WAIT_MEAN_MS.name: _mean(self._wait_ms),
            columns.CORE_WAIT_P99_MS.name: w99,
        }
        if not self._gil_on:
            out.update(dict.fromkeys(GIL_ONLY_SUMMARY, float("nan")))
        return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")
