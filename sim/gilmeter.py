"""Per-job GIL accounting from thread CPU time (DESIGN.md §2).

A thread running Python holds the GIL; so the CPU time a worker thread spends on
a job, minus the CPU time of sections the variant declared GIL-free
(``connectors.base.gil_free``), is the job's GIL hold. Wall time that is neither
CPU time nor a declared GIL-free wait is time the thread was ready to run but
did not have the GIL (or a core): the GIL wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectors.base import free_time

__all__ = ["JobTiming", "measure"]


@dataclass(frozen=True)
class JobTiming:
    """Timestamps of record (``perf_counter_ns``) and CPU totals of one job."""

    start_ns: int
    end_ns: int
    cpu_ns: int
    free_cpu_ns: int
    free_wall_ns: int

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def hold_ns(self) -> int:
        """CPU time spent holding the GIL."""
        return max(0, self.cpu_ns - self.free_cpu_ns)

    @property
    def wait_ns(self) -> int:
        """Wall time ready to run Python but not running: waiting for the GIL or a core."""
        return max(0, self.wall_ns - self.cpu_ns - max(0, self.free_wall_ns - self.free_cpu_ns))


def measure(fn: Callable[..., Any], *args: Any) -> tuple[Any, BaseException | None, JobTiming]:
    """Run ``fn(*args)`` on this thread; return (result, error, timing). Never raises."""
    free_time.cpu_ns = 0
    free_time.wall_ns = 0
    w0 = time.perf_counter_ns()
    c0 = time.thread_time_ns()
    result: Any = None
    error: BaseException | None = None
    try:
        result = fn(*args)
    except Exception as exc:  # the request fails, the run goes on
        error = exc
    c1 = time.thread_time_ns()
    w1 = time.perf_counter_ns()
    return result, error, JobTiming(w0, w1, c1 - c0, free_time.cpu_ns, free_time.wall_ns)
