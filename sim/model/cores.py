"""N simulated CPU cores shared by processor sharing (the OS scheduler, approximated).

Every piece of CPU work — Python run while holding the GIL, a GIL-free kernel, the
simulation thread's own work — is a :class:`CpuTask` of a given length in CPU
seconds. While at most ``n`` tasks run, each runs at full speed; with ``k > n``
runnable tasks each gets ``n / k`` of a core, as a fair time-sharing scheduler
gives them on average. A *background load* of ``b`` runnable threads of other
processes (a shared machine) counts in ``k`` all the time. Threads that sleep
or wait for the GIL need no core and are not tasks.

The bookkeeping uses virtual time: ``V`` advances at the current per-task rate,
a task finishes when ``V`` reaches its finish tag, so a change of rate costs one
reschedule per running task and nothing at all while the cores are not full
(the common case, which keeps model mode fast). Runs on :class:`sim.model.loop.Loop`
(no SimPy): a task's completion is one heap entry; a rescheduled task bumps its
version and its old entry is ignored.
"""

from __future__ import annotations

from collections.abc import Callable

from sim.model.loop import Loop

__all__ = ["Cores", "CpuTask"]

#: Work left below this (1 ns) counts as done: sums of float times are not exact.
_EPS_S = 1e-9


class CpuTask:
    """CPU work in progress; ``done`` is called (with no argument) once it is finished."""

    __slots__ = ("done", "finish", "version")

    def __init__(self, finish: float, done: Callable[[], None]) -> None:
        #: Virtual time at which the task is done.
        self.finish = finish
        self.done = done
        #: Bumped on every (re)schedule and on stop: only the entry of the latest counts.
        self.version = 0


class Cores:
    """Processor sharing over ``n`` cores on the given loop."""

    def __init__(self, loop: Loop, n: int, background: float = 0.0) -> None:
        if n < 1:
            raise ValueError("cores must be >= 1")
        if background < 0:
            raise ValueError("background load must be >= 0")
        self._loop = loop
        self._n = n
        #: Runnable threads of other processes, always there, sharing the cores with ours.
        self._bg = background
        self._tasks: list[CpuTask] = []
        self._v = 0.0  # virtual time at self._t
        self._t = 0.0
        self._rate = 1.0
        self._busy_s = 0.0  # core-seconds used, for utilisation

    @property
    def n(self) -> int:
        return self._n

    @property
    def running(self) -> int:
        return len(self._tasks)

    @property
    def busy_core_s(self) -> float:
        """Core-seconds of CPU work done so far."""
        self._advance()
        return self._busy_s

    def _advance(self) -> None:
        now = self._loop.now
        dt = now - self._t
        if dt > 0:
            self._v += dt * self._rate
            self._busy_s += dt * self._rate * len(self._tasks)
            self._t = now

    def _set_rate(self) -> bool:
        """Recompute the per-task rate; reschedule every task when it changed (True)."""
        k = len(self._tasks) + self._bg
        rate = 1.0 if k <= self._n else self._n / k
        if rate == self._rate:
            return False
        self._rate = rate
        for task in self._tasks:
            self._schedule(task)
        return True

    def _schedule(self, task: CpuTask) -> None:
        task.version += 1
        delay = (task.finish - self._v) / self._rate
        self._loop.after(delay, self._fire, (task, task.version))

    def _fire(self, entry: tuple[CpuTask, int]) -> None:
        task, version = entry
        if task.version != version:
            return  # rescheduled or stopped since
        self._advance()
        self._tasks.remove(task)
        self._set_rate()
        task.done()

    def run(self, work_s: float, done: Callable[[], None]) -> CpuTask:
        """Start ``work_s`` CPU seconds of work now; ``done()`` is called when they are done."""
        self._advance()
        task = CpuTask(self._v + (work_s if work_s > 0 else 0.0), done)
        self._tasks.append(task)
        if not self._set_rate():  # otherwise _set_rate scheduled it with the others
            self._schedule(task)
        return task

    def left(self, task: CpuTask) -> float:
        """CPU seconds ``task`` still needs (0 when done up to float rounding)."""
        self._advance()
        left = task.finish - self._v
        return left if left >= _EPS_S else 0.0

    def stop(self, task: CpuTask) -> float:
        """Take ``task`` off the cores now, without calling ``done``; returns the work left."""
        if task not in self._tasks:
            return 0.0
        left = self.left(task)
        self._tasks.remove(task)
        task.version += 1
        self._set_rate()
        return left

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Cores(n={self._n}, running={len(self._tasks)})"
