"""N simulated CPU cores shared by processor sharing (the OS scheduler, approximated).

Every piece of CPU work — Python run while holding the GIL, a GIL-free kernel, the
simulation thread's own work — is a :class:`CpuTask` of a given length in CPU
seconds. While at most ``n`` tasks run, each runs at full speed; with ``k > n``
runnable tasks each gets ``n / k`` of a core, as a fair time-sharing scheduler
gives them on average. Threads that sleep or wait for the GIL need no core and
are not tasks.

The bookkeeping uses virtual time: ``V`` advances at the current per-task rate,
a task finishes when ``V`` reaches its finish tag, so a change of rate costs one
reschedule per running task and nothing at all while the cores are not full
(the common case, which keeps model mode fast).
"""

from __future__ import annotations

import simpy

__all__ = ["Cores", "CpuTask"]

#: Work left below this (1 ns) counts as done: sums of float times are not exact.
_EPS_S = 1e-9


class CpuTask:
    """CPU work in progress; ``event`` succeeds with the work left (0.0 when done)."""

    __slots__ = ("event", "finish", "version")

    def __init__(self, event: simpy.Event, finish: float) -> None:
        self.event = event
        #: Virtual time at which the task is done.
        self.finish = finish
        #: Bumped when the task's completion is rescheduled; stale timers are ignored.
        self.version = 0


class Cores:
    """Processor sharing over ``n`` cores in the given SimPy environment."""

    def __init__(self, env: simpy.Environment, n: int) -> None:
        if n < 1:
            raise ValueError("cores must be >= 1")
        self._env = env
        self._n = n
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
        now = self._env.now
        dt = now - self._t
        if dt > 0:
            self._v += dt * self._rate
            self._busy_s += dt * self._rate * len(self._tasks)
            self._t = now

    def _set_rate(self) -> None:
        """Recompute the per-task rate; reschedule every task when it changed."""
        k = len(self._tasks)
        rate = 1.0 if k <= self._n else self._n / k
        if rate != self._rate:
            self._rate = rate
            for task in self._tasks:
                task.version += 1
                self._schedule(task)

    def _schedule(self, task: CpuTask) -> None:
        delay = max(0.0, (task.finish - self._v) / self._rate)
        version = task.version
        timer = self._env.timeout(delay)
        timer.callbacks.append(lambda _e, t=task, v=version: self._done(t, v))

    def _done(self, task: CpuTask, version: int) -> None:
        if version != task.version or task.event.triggered:
            return
        self._advance()
        self._tasks.remove(task)
        self._set_rate()
        task.event.succeed(0.0)

    def run(self, work_s: float) -> CpuTask:
        """Start ``work_s`` CPU seconds of work now; its event fires when they are done."""
        self._advance()
        task = CpuTask(self._env.event(), self._v + max(0.0, work_s))
        self._tasks.append(task)
        rate = self._rate
        self._set_rate()
        if rate == self._rate:  # otherwise _set_rate scheduled it with the others
            self._schedule(task)
        return task

    def stop(self, task: CpuTask) -> float:
        """Take ``task`` off the cores now; its event fires with the work it has left."""
        if task.event.triggered:
            return 0.0
        self._advance()
        left = task.finish - self._v
        if left < _EPS_S:  # done up to float rounding: finishing now is the same thing
            left = 0.0
        self._tasks.remove(task)
        task.version += 1
        self._set_rate()
        task.event.succeed(left)
        return left

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Cores(n={self._n}, running={len(self._tasks)})"
