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

import numpy as np

from sim import columns
from sim.stats import StreamPercentiles

__all__ = ["EXACT_VALUES", "GIL_OFF_NOTE", "GIL_ONLY_SUMMARY", "ThreadTimes"]

#: What ``gil_note`` says of a point whose process ran with the GIL off.
GIL_OFF_NOTE = "GIL off: no GIL hold or GIL wait exists; thread_cpu and core_wait take their place"

#: Summary columns that measure the GIL itself: empty in a point run with the GIL off (the
#: probe's stalls stay: a thread's lateness to run means something without a GIL).
GIL_ONLY_SUMMARY = (
    *columns.names(columns.GIL),
    *columns.names(columns.STAGES),
    *(c for c in columns.names(columns.PROBE) if c.startswith("gil_busy")),
)


#: Values kept exactly before the percentiles go to a histogram (sim.stats): a model point
#: of 10^6 requests kept two floats a request to the end (+50 MB; issue 42's flat memory).
EXACT_VALUES = 1 << 16
#: Values gathered before they are handed over as one array (one numpy call per batch).
_BATCH = 4096


class _Column:
    """One column's values: their sum and count for the mean, bounded percentiles."""

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0
        self._batch: list[float] = []
        self._pct = StreamPercentiles(EXACT_VALUES)

    def add(self, value: float) -> None:
        if value == value:  # NaN: not measured (its CPU stages never ran)
            self.total += value
            self.count += 1
            self._batch.append(value)
            if len(self._batch) >= _BATCH:
                self._flush()

    def _flush(self) -> None:
        self._pct.add(np.asarray(self._batch, dtype=np.float64))
        self._batch = []

    def mean(self) -> float:
        return self.total / self.count if self.count else float("nan")

    def p99(self) -> float:
        self._flush()
        return self._pct.percentiles([99])[0]


class ThreadTimes:
    """The requests' thread CPU times and core waits (their records' columns), summed up
    in memory that does not grow with the requests."""

    def __init__(self, gil_on: bool) -> None:
        self._gil_on = gil_on
        self._cpu = _Column()
        self._wait = _Column()

    def add(self, rec: Any) -> None:
        """One finished request's record (sim.point.records.RequestRecord)."""
        self.add_times(rec.thread_cpu_ms, rec.core_wait_ms)

    def add_times(self, cpu_ms: float, wait_ms: float) -> None:
        """One request's ``thread_cpu_ms`` and ``core_wait_ms`` (NaN: not measured), what
        :meth:`add` reads of its record (model mode has no record for most requests)."""
        self._cpu.add(cpu_ms)
        self._wait.add(wait_ms)

    def summary(self) -> dict[str, Any]:
        """The THREADS columns (sim.columns), and the GIL's emptied when it was off."""
        out: dict[str, Any] = {
            columns.GIL_ENABLED.name: int(self._gil_on),
            columns.GIL_NOTE.name: "" if self._gil_on else GIL_OFF_NOTE,
            columns.THREAD_CPU_MEAN_MS.name: self._cpu.mean(),
            columns.THREAD_CPU_P99_MS.name: self._cpu.p99(),
            columns.CORE_WAIT_MEAN_MS.name: self._wait.mean(),
            columns.CORE_WAIT_P99_MS.name: self._wait.p99(),
        }
        if not self._gil_on:
            out.update(dict.fromkeys(GIL_ONLY_SUMMARY, float("nan")))
        return out
