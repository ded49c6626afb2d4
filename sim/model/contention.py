"""Load threads that slow each other down when they run Python at once, with no GIL.

With the GIL off, a point's load threads run its variant on several cores at once and
share its objects; every reference to a shared object updates a count another core
writes too, so each thread's CPU per request grows with the threads running beside it
(measured by calibration: sim.calibration.measure_parallel; scalar x 2 threads 1.78x on
this machine). :class:`sim.model.cores.Cores` gives each task its full speed while a core
is free; this module is what is added on top, for the load threads' CPU only (the
simulation thread, the engine and the probe touch other objects).

A load thread's CPU run of ``w`` seconds, while ``m`` load-thread runs are in progress
(this one included), needs ``w * slowdown(m)`` seconds of a core (``slowdown`` is thread
CPU measured at ``m`` threads at once, so the cores' sharing still comes on top). Whenever
``m`` changes, every run in progress is taken off its core with the work it has left,
and put back with that work at the new slowdown (processor sharing, whose pace the
cores keep, is not disturbed: a run is stopped and started at the same instant). What a
run spent beyond ``w`` is its job's ``extra_cpu_s``: thread CPU, as the real meter sees
it, and no part of the wait for a core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sim.model.cores import Cores, CpuTask

__all__ = ["Contention"]


class _Run:
    """One load thread's CPU run in progress."""

    __slots__ = ("cont", "factor", "hold", "job", "task", "work")

    def __init__(self, job: Any, cont: Callable[[Any], None], hold: bool) -> None:
        self.job = job
        self.cont = cont
        self.hold = hold
        #: The core's work of the current segment (seconds) and the slowdown it was set at.
        self.work = 0.0
        self.factor = 1.0
        self.task: CpuTask | None = None


class Contention:
    """The load threads' CPU runs, each slowed by how many run at once."""

    def __init__(self, cores: Cores, slowdown: Sequence[float]) -> None:
        if not slowdown or slowdown[0] != 1.0 or min(slowdown) < 1.0:
            raise ValueError("slowdown: one factor per thread count from 1 (1.0), each >= 1")
        self._cores = cores
        #: slowdown[m - 1]: the factor with m runs at once (beyond the last: the last).
        self._slowdown = tuple(slowdown)
        self._runs: list[_Run] = []

    def factor(self, running: int) -> float:
        """The slowdown with ``running`` load-thread runs in progress: measured at that
        many threads, more than the cores included (their turns on a core cost too);
        beyond the largest count measured, the last factor."""
        m = min(running, len(self._slowdown))
        return self._slowdown[m - 1] if m >= 1 else 1.0

    def run_instant(self, work_s: float) -> bool:
        """Do ``work_s`` at once (:meth:`Cores.instant`) when no other load thread runs:
        alone, a run is not slowed, and nothing can start beside it meanwhile."""
        return not self._runs and self._cores.instant(work_s)

    def run(self, job: Any, work_s: float, cont: Callable[[Any], None], hold: bool) -> None:
        """Run ``work_s`` CPU seconds of ``job``'s load thread (``hold``: its GIL-held part,
        else a GIL-free kernel), then ``cont(None)``."""
        run = _Run(job, cont, hold)
        self._resume(self._pause(), extra=(run, work_s))

    def _pause(self) -> list[tuple[_Run, float]]:
        """Every run in progress off its core, with the work it has left at factor 1."""
        left = []
        for run in self._runs:
            assert run.task is not None
            on_core = self._cores.stop(run.task)
            done = run.work - on_core
            self._charge(run, done)
            left.append((run, on_core / run.factor))
        self._runs.clear()
        return left

    def _resume(
        self, runs: list[tuple[_Run, float]], extra: tuple[_Run, float] | None = None
    ) -> None:
        if extra is not None:
            runs.append(extra)
        factor = self.factor(len(runs))
        for run, base in runs:
            run.factor = factor
            run.work = base * factor
            self._runs.append(run)
            run.task = self._cores.run(run.work, self._ender(run))

    def _ender(self, run: _Run) -> Callable[[Any], None]:
        def ended(_arg: Any = None) -> None:
            self._runs.remove(run)
            self._charge(run, run.work)
            if self._runs:  # one fewer at once: the others speed up
                self._resume(self._pause())
            run.cont(None)

        return ended

    @staticmethod
    def _charge(run: _Run, done: float) -> None:
        """Book on the job what ``done`` core seconds at the run's factor cost beyond the
        work they did (``done / factor``)."""
        extra = done - done / run.factor
        if extra > 0:
            run.job.extra_cpu_s += extra
            if run.hold:
                run.job.extra_hold_s += extra
