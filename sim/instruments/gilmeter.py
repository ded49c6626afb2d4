"""Per-job GIL accounting from thread CPU time (docs/design.md §4; method in docs/gil-method.md).

A thread running Python holds the GIL, and a thread waiting for the GIL sleeps
on a condition variable and burns no CPU; so the CPU time a worker thread spends
on a job, minus the CPU time of sections the variant declared GIL-free
(``connectors.base.gil_free``), is the job's GIL hold. Thread CPU time stops
while the thread waits, whoever holds the GIL, so a hold measured this way does
not grow with contention. Wall time that is neither CPU time nor a declared
GIL-free section is time the thread was ready to run Python but did not: the
GIL wait (which also holds any wait for a core, see the method note).

A :class:`HoldLedger` sums the holds of every job measured while it is open, so
that a probe can set the meter's total beside its own independent estimate of
how busy the GIL was over the same window. Each job names its source
(``requests`` for load jobs, ``engine`` for engine steps), so the probe can
compare like with like and report each share.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connectors.base import free_time, stage_hook
from sim.instruments.schedstat import run_delay_ns
from sim.instruments.stages import StageClock, StageTimes

__all__ = [
    "ENGINE",
    "REQUESTS",
    "HoldLedger",
    "JobTiming",
    "close_ledger",
    "measure",
    "open_ledger",
]

#: Ledger sources: load requests' CPU stages, and the engine loop's steps (sim.instruments.engine).
REQUESTS = "requests"
ENGINE = "engine"


@dataclass(frozen=True, slots=True)  # no __dict__: see sim.runtime.pipeline._Request
class JobTiming:
    """Timestamps of record (``perf_counter_ns``) and CPU totals of one job.

    ``cpu_ns`` is the thread's CPU time over the job; ``free_cpu_ns`` and
    ``free_wall_ns`` are the CPU and wall time of its declared GIL-free sections.
    """

    start_ns: int
    end_ns: int
    cpu_ns: int
    free_cpu_ns: int
    free_wall_ns: int
    #: The hold split by stage (sim.instruments.stages); sums to ``hold_ns``.
    stages: StageTimes | None = None
    #: Time the thread was runnable but off-core during the job (sim.instruments.schedstat;
    #: None off Linux): with the GIL off, the wait that takes the GIL wait's place; with it
    #: on, the part of the GIL wait that was a wait for a core.
    run_wait_ns: int | None = None

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def hold_ns(self) -> int:
        """CPU time spent holding the GIL: all CPU time but that of GIL-free sections."""
        return max(0, self.cpu_ns - self.free_cpu_ns)

    @property
    def wait_ns(self) -> int:
        """Wall time outside GIL-free sections that was not CPU time.

        wall = hold + free_wall + wait, so wait = wall - hold - free_wall: the time
        the thread was ready to run Python but was not running (waiting for the
        GIL, or for a core on a busy machine).
        """
        return max(0, self.wall_ns - self.hold_ns - self.free_wall_ns)


class HoldLedger:
    """Holds of every job measured (on any thread) while the ledger is open, by source.

    ``dict.setdefault`` and ``list.append`` are atomic under the GIL, so worker
    threads add without a lock; read the totals after closing the ledger.
    ``jobs`` and ``total_ns`` count load requests (source ``requests``) only.
    """

    def __init__(self) -> None:
        self._holds: dict[str, list[int]] = {}

    def add(self, hold_ns: int, source: str = REQUESTS) -> None:
        self._holds.setdefault(source, []).append(hold_ns)

    def jobs_of(self, source: str) -> int:
        return len(self._holds.get(source, ()))

    def total_of(self, source: str) -> int:
        return sum(self._holds.get(source, ()))

    @property
    def jobs(self) -> int:
        return self.jobs_of(REQUESTS)

    @property
    def total_ns(self) -> int:
        return self.total_of(REQUESTS)


_ledger_lock = threading.Lock()
#: Open ledgers; replaced (never mutated) so a worker can iterate it without a lock.
_open_ledgers: tuple[HoldLedger, ...] = ()


def open_ledger() -> HoldLedger:
    """A new ledger that counts every job measured from now until :func:`close_ledger`."""
    global _open_ledgers
    ledger = HoldLedger()
    with _ledger_lock:
        _open_ledgers = (*_open_ledgers, ledger)
    return ledger


def close_ledger(ledger: HoldLedger) -> None:
    """Stop counting into ``ledger`` (idempotent), so no state outlives the run."""
    global _open_ledgers
    with _ledger_lock:
        _open_ledgers = tuple(x for x in _open_ledgers if x is not ledger)


def measure(
    fn: Callable[..., Any], *args: Any, source: str = REQUESTS
) -> tuple[Any, BaseException | None, JobTiming]:
    """Run ``fn(*args)`` on this thread; return (result, error, timing). Never raises.

    The hold goes to every open ledger under ``source``; the stage marks ``fn``
    makes (``connectors.base.mark_stage``) split it in ``timing.stages``.
    """
    free_time.cpu_ns = 0
    free_time.wall_ns = 0
    outer = stage_hook.mark
    # Read with the GIL kept (sim.instruments.schedstat): with it on, the core wait that
    # gil_wait_ms holds; with it off, the wait there is.
    r0 = run_delay_ns()
    w0 = time.perf_counter_ns()
    c0 = time.thread_time_ns()
    clock = StageClock(c0)
    stage_hook.mark = clock.mark
    result: Any = None
    error: BaseException | None = None
    try:
        result = fn(*args)
    except Exception as exc:  # the request fails, the run goes on
        error = exc
    except BaseException as exc:  # sys.exit, KeyboardInterrupt from the job's own code
        if threading.current_thread() is threading.main_thread():
            raise  # there, it may be a real Ctrl-C (or SIGTERM): never taken for the job's
        error = exc  # on a load or engine thread it can only be the job's: the caller names it
    finally:
        c1 = time.thread_time_ns()
        w1 = time.perf_counter_ns()
        r1 = run_delay_ns() if r0 is not None else None
        stage_hook.mark = outer
    stages = clock.finish(c1)
    run_wait = r1 - r0 if r0 is not None and r1 is not None else None
    timing = JobTiming(w0, w1, c1 - c0, free_time.cpu_ns, free_time.wall_ns, stages, run_wait)
    for ledger in _open_ledgers:
        ledger.add(timing.hold_ns, source)
    return result, error, timing
