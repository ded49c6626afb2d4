"""The event loop of model mode: a heap of (time, sequence, callback, argument), nothing more.

Model mode used SimPy: a point cost about 25 SimPy events per request (processes,
timeouts, generator resumes, each ~10 µs of SimPy's generic machinery), which
capped it at a few thousand simulated requests per second. Here a simulated
thread is a small state machine whose steps are plain callbacks: "wake me at
``t``" is one heap entry and one call, and a step that needs no waiting (a free
GIL, a free store slot) costs no entry at all.

Ordering: entries run in time order; entries due at the same time run in the
order they were scheduled (FIFO), so a run is reproducible. Entries cannot be
cancelled: an owner that changes its mind leaves a stale entry that does nothing
when it comes up. For the two timers that move or die all the time (the GIL's
drop check, the probe's next wake-up) the loop has :class:`Alarm` s instead: one
time per owner, kept beside the heap, set or cancelled by an assignment; an alarm
due at the same time as heap entries runs before them.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from itertools import count
from typing import Any

__all__ = ["Alarm", "Loop"]

_INF = float("inf")


class Alarm:
    """A timer that can be moved or cancelled for free (see :meth:`Loop.alarm`)."""

    __slots__ = ("at", "fn")

    def __init__(self, fn: Callable[[Any], None]) -> None:
        self.at = _INF
        self.fn = fn


class Loop:
    """Simulated time and the callbacks due in it."""

    __slots__ = ("_alarm", "_alarms", "_heap", "_limit", "_seq", "_stop", "alarm_at", "now")

    @property
    def heap(self) -> list[tuple[float, int, Callable[[Any], None], Any]]:
        """The entries, a heap by (time, sequence): read-only to others (Cores.instant reads
        its top inline); the same list for the loop's whole life."""
        return self._heap

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = count().__next__  # FIFO among entries due at the same time
        self._stop = False
        self._alarms: list[Alarm] = []
        self._alarm: Alarm | None = None  # the earliest set alarm
        #: When the earliest alarm is due (infinity when none): read-only to others.
        self.alarm_at = _INF
        self._limit = -_INF  # run()'s ``until`` while it runs; nothing is clear outside run()

    def alarm(self, fn: Callable[[Any], None]) -> Alarm:
        """A new alarm calling ``fn(None)`` when due; unset until :meth:`set_alarm`."""
        alarm = Alarm(fn)
        self._alarms.append(alarm)
        return alarm

    def set_alarm(self, alarm: Alarm, t: float) -> None:
        """Make ``alarm`` due at ``t`` (not before now), whenever it was due before."""
        at = alarm.at = t if t > self.now else self.now
        if at < self.alarm_at:
            self._alarm, self.alarm_at = alarm, at
        elif alarm is self._alarm:  # the earliest moved later
            self._earliest()

    def cancel(self, alarm: Alarm) -> None:
        if alarm.at == _INF:
            return
        alarm.at = _INF
        if alarm is self._alarm:
            self._earliest()

    def _earliest(self) -> None:
        first: Alarm | None = None
        at = _INF
        for alarm in self._alarms:
            if alarm.at < at:
                first, at = alarm, alarm.at
        self._alarm, self.alarm_at = first, at

    def at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` at time ``t`` (not before now)."""
        heappush(self._heap, (t if t > self.now else self.now, self._seq(), fn, arg))

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` ``delay`` seconds from now (a negative delay counts as 0)."""
        heappush(self._heap, (self.now + delay if delay > 0 else self.now, self._seq(), fn, arg))

    def peek(self) -> float:
        """Time of the next entry or alarm (infinity when none)."""
        top = self._heap[0][0] if self._heap else _INF
        return top if top < self.alarm_at else self.alarm_at

    def clear(self, t: float) -> bool:
        """Whether ``t`` comes before anything else: nothing due at or before it, the run
        not stopping, ``t`` within its ``until``. Then a callback with nothing left to do
        in its entry may set ``now = t`` and go on at once: what the loop would run next
        anyway, without an entry (the same order, the same results)."""
        heap = self._heap
        return (
            t < self.alarm_at
            and (not heap or t < heap[0][0])
            and t <= self._limit
            and not self._stop
        )

    @property
    def pending(self) -> int:
        return len(self._heap)

    def stop(self) -> None:
        """Make :meth:`run` return once the current callback is done."""
        self._stop = True

    def run(self, until: float | None = None) -> bool:
        """Run entries and alarms until :meth:`stop` is called, none are left, or (when
        given) the next one is due after ``until``. Returns True when stopped by :meth:`stop`."""
        heap, alarms = self._heap, self._alarms
        limit = self._limit = _INF if until is None else until
        self._stop = False
        while True:
            top = heap[0][0] if heap else _INF
            due = self.alarm_at
            if due <= top:  # an alarm due with heap entries runs first
                if due > limit or due == _INF:
                    break
                alarm = self._alarm
                assert alarm is not None
                alarm.at = _INF
                first, at = None, _INF  # self._earliest(), inline
                for other in alarms:
                    if other.at < at:
                        first, at = other, other.at
                self._alarm, self.alarm_at = first, at
                self.now = due
                alarm.fn(None)
            else:
                if top > limit:
                    break
                t, _seq, fn, arg = heappop(heap)
                self.now = t
                fn(arg)
            if self._stop:
                break
        if until is not None and not self._stop and self.now < until:
            self.now = until
        stopped = self._stop
        self._stop = False
        self._limit = -_INF
        return stopped
