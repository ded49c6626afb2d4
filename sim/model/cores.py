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
(the common case, which keeps model mode fast).
"""

from __future__ import annotations

from typing import Any

import simpy

__all__ = ["Cores", "CpuTask", "succeed_after"]

#: Work left below this (1 ns) counts as done: sums of float times are not exact.
_EPS_S = 1e-9


def succeed_after(env: simpy.Environment, event: simpy.Event, delay: float, value: Any = None):
    """``event.succeed(value)``, taking effect ``delay`` from now: one heap entry instead of
    a Timeout plus the event (what ``Event.succeed`` does, with a delay; SimPy has no
    public call for it)."""
    if event.triggered:
        raise RuntimeError(f"{event} has already been triggered")
    event._ok = True
    event._value = value
    env.schedule(event, delay=delay)


class CpuTask:
    """CPU work in progress. ``event`` is what a process waits on: it fires with the work
    left (0.0 when done). It is replaced when the task is rescheduled; a process already
    waiting is carried over to the replacement, so it never sees a stale event."""

    __slots__ = ("_keep", "event", "finish")

    def __init__(self, finish: float) -> None:
        self.event: simpy.Event | None = None
        #: Virtual time at which the task is done.
        self.finish = finish
        self._keep: Any = None  # this task's own bookkeeping callback on ``event``


class Cores:
    """Processor sharing over ``n`` cores in the given SimPy environment."""

    def __init__(self, env: simpy.Environment, n: int, background: float = 0.0) -> None:
        if n < 1:
            raise ValueError("cores must be >= 1")
        if background < 0:
            raise ValueError("background load must be >= 0")
        self._env = env
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
        now = self._env.now
        dt = now - self._t
        if dt > 0:
            self._v += dt * self._rate
            self._busy_s += dt * self._rate * len(self._tasks)
            self._t = now

    def _set_rate(self) -> None:
        """Recompute the per-task rate; reschedule every task when it changed."""
        k = len(self._tasks) + self._bg
        rate = 1.0 if k <= self._n else self._n / k
        if rate != self._rate:
            self._rate = rate
            for task in self._tasks:
                self._schedule(task)

    def _detach(self, task: CpuTask) -> list[Any]:
        """Take the waiting processes' callbacks off the task's current event."""
        old = task.event
        if old is None or old.callbacks is None:
            return []
        waiting = [cb for cb in old.callbacks if cb is not task._keep]
        old.callbacks = []  # it still fires, with nobody listening
        return waiting

    def _schedule(self, task: CpuTask) -> None:
        """(Re)arm the task's completion at the current rate: one Timeout, no extra event."""
        waiting = self._detach(task)
        delay = max(0.0, (task.finish - self._v) / self._rate)
        timer = self._env.timeout(delay, 0.0)
        keep = task._keep = lambda _e, t=task, ev=timer: self._done(t, ev)
        timer.callbacks = [keep, *waiting]
        task.event = timer

    def _done(self, task: CpuTask, timer: simpy.Event) -> None:
        if task.event is not timer:
            return
        self._advance()
        self._tasks.remove(task)
        self._set_rate()

    def run(self, work_s: float) -> CpuTask:
        """Start ``work_s`` CPU seconds of work now; its event fires when they are done."""
        self._advance()
        task = CpuTask(self._v + max(0.0, work_s))
        self._tasks.append(task)
        rate = self._rate
        self._set_rate()
        if rate == self._rate:  # otherwise _set_rate scheduled it with the others
            self._schedule(task)
        return task

    def stop(self, task: CpuTask) -> float:
        """Take ``task`` off the cores now; its waiters resume with the work it has left."""
        if task not in self._tasks:
            return 0.0
        self._advance()
        left = task.finish - self._v
        if left < _EPS_S:  # done up to float rounding: finishing now is the same thing
            left = 0.0
        self._tasks.remove(task)
        waiting = self._detach(task)
        event = self._env.event()
        event.callbacks = waiting
        task.event = event
        event.succeed(left)
        self._set_rate()
        return left

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Cores(n={self._n}, running={len(self._tasks)})"
