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
(no SimPy): a task's completion is one heap entry; a rescheduled task's old entry
is ignored (it is not due when it comes up).

**The wake-up burst.** Processor sharing is the long run only. The OS scheduler gives a
thread that has just woken (from a sleep, or from waiting for the GIL) the core for a
slice before it shares: measured on this 2-core machine beside two CPU hogs, a run of
0.3-1.5 ms CPU right after a sleep took 1.01-1.03x its CPU time in wall time, while a
2 ms run took 2.1x and 3-30 ms runs 2.7-6x, no less than their fair share gives
(docs/model-mode.md, "The wake-up burst"): the slice is an advance on the thread's share,
repaid by waiting, not a gift. So a task of at most ``burst_s`` CPU that starts while the
cores are full runs at full speed on a core of its own (the others share the rest); a
longer one shares from its start. Without it a thread doing short bursts (the engine's
build, the simulation thread's items, the probe) is slowed by a background load as much
as a CPU hog, which the real ones are not. ``burst_s=0`` turns it off. The advance is
repaid: a burst needs the lag a thread builds up at its fair share (:meth:`Cores._may_burst`),
so short tasks back to back beyond their share of a loaded machine share like any other.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sim.model.loop import Loop

__all__ = ["WAKE_BURST_S", "Cores", "CpuTask"]

#: Work left below this (1 ns) counts as done: sums of float times are not exact.
_EPS_S = 1e-9

#: CPU a task started on full cores runs at full speed before it shares (module docstring).
WAKE_BURST_S = 1.5e-3


class CpuTask:
    """CPU work in progress; ``done(None)`` is called once it is finished."""

    __slots__ = ("done", "due", "fast", "finish", "shared")

    def __init__(
        self, finish: float, done: Callable[[Any], None], fast: bool = False, shared: bool = False
    ) -> None:
        #: Virtual time at which the task is done (a burst's: the loop time it ends).
        self.finish = finish
        self.done = done
        #: When its completion entry is due; an entry due at another time is stale
        #: (rescheduled since). Negative once finished or stopped.
        self.due = 0.0
        #: A wake-up burst: on a core of its own, ``finish`` is a loop time.
        self.fast = fast
        #: Python of a load thread with the GIL off: slowed by the others running beside it
        #: (:attr:`Cores.crowd`).
        self.shared = shared


class Cores:
    """Processor sharing over ``n`` cores on the given loop."""

    def __init__(
        self,
        loop: Loop,
        n: int,
        background: float = 0.0,
        burst_s: float = 0.0,
        crowd: tuple[float, ...] = (),
    ) -> None:
        if n < 1:
            raise ValueError("cores must be >= 1")
        if background < 0:
            raise ValueError("background load must be >= 0")
        if burst_s < 0:
            raise ValueError("wake-up burst must be >= 0")
        #: A task started on full cores runs this much CPU at full speed first.
        self._burst_s = burst_s
        #: Tasks in a wake-up burst (each on a core of its own; the others share the rest).
        self._bursting = 0
        #: The advance bursts may still take (CPU seconds; see _may_burst) and when it
        #: was last brought up to date.
        self._lag = burst_s
        self._lag_t = 0.0
        self._loop = loop
        self._heap = loop.heap
        self._n = n
        #: Runnable threads of other processes, always there, sharing the cores with ours.
        self._bg = background
        self._tasks: list[CpuTask] = []
        self._v = 0.0  # virtual time at self._t
        self._t = 0.0
        self._rate = 1.0
        #: The share of a core each task has (``_rate`` is its pace: the share over the
        #: crowd's slowdown).
        self._share = 1.0
        #: ``crowd[m]``: how much slower a shared task runs with ``m`` shared tasks on the
        #: cores at once (index 0 and 1: 1.0); empty: never slower.
        self._crowd = crowd
        #: Shared tasks among ``_tasks``.
        self._shared = 0
        self._busy_s = 0.0  # core-seconds used, for utilisation
        #: The completion entries' callback, bound once (compiled code would make a new
        #: bound method object per entry from ``self._fire``).
        self._fire_cb: Callable[[Any], None] = self._fire

    @property
    def n(self) -> int:
        return self._n

    @property
    def shared_running(self) -> int:
        """Shared tasks on the cores (:attr:`CpuTask.shared`)."""
        return self._shared

    @property
    def running(self) -> int:
        return len(self._tasks) + self._bursting

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
            self._busy_s += dt * (self._share * len(self._tasks) + self._bursting)
            self._t = now

    def _set_rate(self) -> bool:
        """Recompute the per-task rate; reschedule every task when it changed (True).
        A task in its burst has a core to itself: the others share what is left."""
        k = len(self._tasks) + self._bg
        free = self._n - self._bursting
        share = 1.0 if k <= free else (free / k if free > 0 else 0.0)
        rate = share
        crowd = self._crowd
        if crowd and self._shared > 1:
            at_once = min(self._shared, free)  # beyond the cores the others take turns
            if at_once > 1:
                rate = share / crowd[min(at_once, len(crowd) - 1)]
        self._share = share
        if rate == self._rate:
            return False
        self._rate = rate
        for task in self._tasks:
            self._schedule(task)
        return True

    def _schedule(self, task: CpuTask) -> None:
        """Set ``task``'s completion entry at the current pace (none while the bursts
        take every core: _set_rate reschedules it once one frees)."""
        rate = self._rate
        if rate > 0.0:
            task.due = self._loop.now + max(0.0, (task.finish - self._v) / rate)
            self._loop.at(task.due, self._fire_cb, task)
        else:
            task.due = math.inf

    def _fire(self, task: CpuTask) -> None:
        now = self._loop.now
        if task.due != now:
            return  # rescheduled or stopped since
        task.due = -1.0
        tasks = self._tasks
        dt = now - self._t
        if dt > 0:  # self._advance(), inline: this is the hottest path of model mode
            self._v += dt * self._rate
            self._busy_s += dt * (self._share * len(tasks) + self._bursting)
            self._t = now
        if task.fast:
            self._bursting -= 1
        else:
            tasks.remove(task)
            if task.shared:
                self._shared -= 1
        if self._rate != 1.0 or len(tasks) + self._bursting + self._bg > self._n:
            self._set_rate()  # else the pace stays 1
        task.done(None)

    def run(self, work_s: float, done: Callable[[Any], None], shared: bool = False) -> CpuTask:
        """Start ``work_s`` CPU seconds of work now; ``done(None)`` is called when they are
        done. ``shared``: a load thread's Python with the GIL off (:attr:`CpuTask.shared`)."""
        loop = self._loop
        now = loop.now
        tasks = self._tasks
        dt = now - self._t
        if dt > 0:  # self._advance(), inline
            self._v += dt * self._rate
            self._busy_s += dt * (self._share * len(tasks) + self._bursting)
            self._t = now
        if work_s < 0:
            work_s = 0.0
        short = work_s <= self._burst_s and self._bursting < self._n
        k = len(tasks) + self._bursting + 1 + self._bg
        shared = shared and bool(self._crowd)
        if short and not shared and k > self._n and self._may_burst(work_s, self._n / k):
            return self._burst(work_s, done)  # full cores
        task = CpuTask(self._v + work_s, done, False, shared)
        tasks.append(task)
        if shared:
            self._shared += 1
        if (
            self._rate == 1.0
            and self._shared < 2
            and len(tasks) + self._bursting + self._bg <= self._n
        ):
            task.due = now + work_s  # not full: full speed
            loop.at(task.due, self._fire_cb, task)
        elif not self._set_rate():  # otherwise _set_rate scheduled it with the others
            self._schedule(task)
        return task

    def _may_burst(self, work_s: float, share: float) -> bool:
        """Whether the advance a burst is can still be taken: the lag a thread builds up at
        its fair ``share`` of a core (CFS/EEVDF keep the lag a sleeper has, capped: here at
        one burst, ``burst_s``) must cover the burst's ``work_s`` at full speed. A thread
        that wakes now and then (the probe, the engine's build, the simulation thread's
        items) always has it; one that runs more than its share of the time (1 ms holds
        back to back beside a background load) spends it and shares like any other; with
        ``background_load`` 1000 the share refills it 500 times slower than it is spent.
        One lag for all of our threads: the GIL lets one run Python at a time."""
        now = self._loop.now
        lag = self._lag + share * (now - self._lag_t)
        if lag > self._burst_s:
            lag = self._burst_s
        self._lag_t = now
        if lag < work_s:
            self._lag = lag
            return False
        self._lag = lag - work_s
        return True

    def _burst(self, work_s: float, done: Callable[[Any], None]) -> CpuTask:
        """Start a short task as a wake-up burst: at full speed on a core of its own."""
        loop = self._loop
        task = CpuTask(loop.now + work_s, done, True)
        self._bursting += 1
        self._set_rate()  # one core fewer for the others
        task.due = task.finish
        loop.at(task.due, self._fire_cb, task)
        return task

    def instant(self, work_s: float, shared: bool = False) -> bool:
        """Do ``work_s`` CPU seconds now, moving the clock to their end, when nothing else
        can happen meanwhile: a core is free (nobody's pace changes) and the loop's next
        entry is due later. Then no entry is needed. Only for a caller whose next step is
        the last thing the current loop entry does (what follows runs at the new time).
        Returns False (nothing done) otherwise: the caller then uses :meth:`run`.
        ``shared``: as :meth:`run`'s."""
        if shared and self._shared:  # beside another shared task the crowd slows both
            return False
        loop = self._loop
        now = loop.now
        end = now + work_s
        running = len(self._tasks)
        if self._rate != 1.0 or running + self._bursting + 1 + self._bg > self._n:
            return False
        heap = self._heap  # loop.peek() <= end, inline (the hottest check of model mode)
        if (heap and heap[0].t <= end) or loop.alarm_at <= end:
            return False
        # self._advance() to now, then to the end at full speed, this task included.
        # (Two steps, as _advance would take them: float sums must come out the same.)
        dt = now - self._t
        if dt > 0:
            self._v += dt
            self._busy_s += dt * (running + self._bursting)
        self._v += end - now  # not work_s: what a scheduled end would add, to the last bit
        self._busy_s += (end - now) * (running + self._bursting + 1)
        self._t = loop.now = end
        return True

    def left(self, task: CpuTask) -> float:
        """CPU seconds ``task`` still needs (0 when done up to float rounding)."""
        self._advance()
        left = task.finish - (self._loop.now if task.fast else self._v)
        return left if left >= _EPS_S else 0.0

    def _remove(self, task: CpuTask) -> None:
        """Take ``task`` (running, not done) off the cores; the caller resets the pace."""
        if task.fast:
            self._bursting -= 1
        else:
            self._tasks.remove(task)
            if task.shared:
                self._shared -= 1
        task.due = -1.0

    def take_off(self, task: CpuTask) -> float:
        """:meth:`stop` ``task`` unless its work is done up to float rounding (it ends this
        very instant: then it is left to finish, and 0 returned); the work left."""
        tasks = self._tasks
        dt = self._loop.now - self._t
        if dt > 0:  # self._advance(), inline
            self._v += dt * self._rate
            self._busy_s += dt * (self._share * len(tasks) + self._bursting)
            self._t = self._loop.now
        left = task.finish - (self._loop.now if task.fast else self._v)
        if left < _EPS_S:
            return 0.0
        self._remove(task)
        if self._rate != 1.0 or len(tasks) + self._bursting + self._bg > self._n:
            self._set_rate()  # else the pace stays 1
        return left

    def stop(self, task: CpuTask) -> float:
        """Take ``task`` off the cores now, without calling ``done``; returns the work left."""
        if task.due < 0:
            return 0.0
        left = self.left(task)
        self._remove(task)
        self._set_rate()
        return left

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Cores(n={self._n}, running={self.running})"
