"""A SimPy environment whose clock follows the wall clock and that threads can wake.

SimPy's ``RealtimeEnvironment`` sleeps until the next timer and cannot be woken
by another thread, so a worker finishing early would wait for an unrelated
timer. :class:`HybridEnvironment` keeps its own step loop: it blocks on a
thread-safe inbox until the next timer is due, and worker threads post
completions to the inbox with :meth:`HybridEnvironment.complete`. Only the
simulation thread ever touches SimPy objects (DESIGN.md, the threading rule).
"""

from __future__ import annotations

import queue
import time
from heapq import heappop
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
    behind (a busy GIL), ``now`` jumps forward; it never goes backwards.
    """

    def __init__(self, stall_timeout_s: float | None = None) -> None:
        super().__init__(initial_time=0.0)
        self._inbox: queue.SimpleQueue[tuple[simpy.Event, bool, Any]] = queue.SimpleQueue()
        self._pending = 0
        self._t0_ns = time.perf_counter_ns()
        self._stall_timeout_s = stall_timeout_s

    @property
    def t0_ns(self) -> int:
        """``perf_counter_ns`` at time zero: converts timestamps of record to run time."""
        return self._t0_ns

    @property
    def pending(self) -> int:
        """Events handed to threads and not yet completed."""
        return self._pending

    def wall(self) -> float:
        return (time.perf_counter_ns() - self._t0_ns) / 1e9

    def to_run_time(self, t_ns: int) -> float:
        return (t_ns - self._t0_ns) / 1e9

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
        self._now = max(self._now, self.wall())
        if ok:
            event.succeed(value)
        else:
            event.fail(value)

    def _drain(self) -> bool:
        got = False
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return got
            self._deliver(item)
            got = True

    def step(self) -> None:
        """Process the next event once its time has come, serving the inbox meanwhile."""
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
        t, _, _, event = heappop(self._queue)
        self._now = max(self._now, t)
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc
