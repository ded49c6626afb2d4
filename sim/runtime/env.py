"""A SimPy environment whose clock follows the wall clock and that threads can wake.

SimPy's ``RealtimeEnvironment`` sleeps until the next timer and cannot be woken
by another thread, so a worker finishing early would wait for an unrelated
timer. :class:`HybridEnvironment` blocks on a thread-safe inbox until the next
event is due, then lets :meth:`simpy.Environment.step` process it; worker
threads post completions to the inbox with :meth:`HybridEnvironment.complete`.
Only the simulation thread ever touches SimPy objects (the threading rule).

The one invariant that lets SimPy's own ``step`` run unchanged: the clock is
only ever moved forward to a time no later than the earliest queued event, so
popping the queue never moves it backwards.
"""

from __future__ import annotations

import queue
import time
from typing import Any

import simpy
from simpy.core import EmptySchedule

__all__ = ["HybridEnvironment", "StallError"]

_INF = float("inf")


class StallError(RuntimeError):
    """Nothing can happen any more: no timer is due and no thread will post."""


class HybridEnvironment(simpy.Environment):
    """Discrete-event clock tied to ``time.perf_counter`` (seconds since start).

    ``env.now`` never runs ahead of the wall clock: an event scheduled for time
    *t* is processed once the wall clock reaches *t*. When the simulation falls
    behind (a busy GIL), events are processed late but at their own times, and a
    completion posted by a thread is delivered at the wall time it is picked up
    (or at the earliest overdue event, whichever is earlier); the clock never goes
    backwards.

    Timestamps of record are given in *run time*: seconds since the origin, which
    is time zero until :meth:`set_origin` moves it (to where the load starts, so
    that set-up before it — an engine-alone baseline — does not shift the schedule).
    """

    def __init__(self, stall_timeout_s: float | None = None) -> None:
        super().__init__(initial_time=0.0)
        self._inbox: queue.SimpleQueue[tuple[simpy.Event, bool, Any]] = queue.SimpleQueue()
        self._pending = 0
        self._t0_ns = time.perf_counter_ns()
        self._origin_ns = self._t0_ns
        self._stall_timeout_s = stall_timeout_s

    @property
    def t0_ns(self) -> int:
        """``perf_counter_ns`` at ``env.now == 0``."""
        return self._t0_ns

    @property
    def origin_ns(self) -> int:
        """``perf_counter_ns`` at run time zero (see :meth:`set_origin`)."""
        return self._origin_ns

    @property
    def pending(self) -> int:
        """Events handed to threads and not yet completed."""
        return self._pending

    def wall(self) -> float:
        """The wall clock on the scale of ``env.now``."""
        return (time.perf_counter_ns() - self._t0_ns) / 1e9

    def set_origin(self) -> float:
        """Make run time zero *now*; returns that instant as an ``env.now`` time.

        A whole number of nanoseconds, so that a planned arrival at run time *a*
        is exactly ``origin_ns + round(a * 1e9)`` on the ``perf_counter_ns`` scale.
        """
        self._origin_ns = time.perf_counter_ns()
        return (self._origin_ns - self._t0_ns) / 1e9

    def to_run_time(self, t_ns: int) -> float:
        """A ``perf_counter_ns`` timestamp as run time (seconds since the origin)."""
        return (t_ns - self._origin_ns) / 1e9

    # -- the thread side -------------------------------------------------
    def external_event(self) -> simpy.Event:
        """An event that some thread will complete through :meth:`complete` (call on sim thread)."""
        self._pending += 1
        return simpy.Event(self)

    def complete(self, event: simpy.Event, ok: bool, value: Any) -> None:
        """Thread-safe: succeed (``ok``) or fail the event with ``value``, on the sim thread."""
        self._inbox.put((event, ok, value))

    # -- the simulation side ---------------------------------------------
    def _deliver(self, item: tuple[simpy.Event, bool, Any]) -> None:
        event, ok, value = item
        self._pending -= 1
        # Forward to the wall clock, but not past an overdue event (the invariant).
        now = min(self.wall(), self.peek())
        if now > self._now:
            self._now = now
        if ok:
            event.succeed(value)
        else:
            event.fail(value)

    def _drain(self) -> None:
        inbox = self._inbox
        while True:
            try:
                item = inbox.get_nowait()
            except queue.Empty:
                return
            self._deliver(item)

    def step(self) -> None:
        """Wait, serving the inbox, until the next event is due; then process it (SimPy)."""
        while True:
            self._drain()
            due = self.peek()
            if due == _INF and self._pending == 0:
                raise EmptySchedule()
            delay = due - self.wall()
            if delay <= 0:
                break
            timeout = self._stall_timeout_s if due == _INF else delay
            try:
                item = self._inbox.get(timeout=timeout)
            except queue.Empty:
                if due == _INF:
                    raise StallError(
                        f"{self._pending} thread job(s) gave no answer for "
                        f"{self._stall_timeout_s:g} s and no timer is due"
                    ) from None
                continue
            self._deliver(item)
        super().step()
