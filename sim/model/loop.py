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

The heap is heapq's algorithm on :class:`Entry` objects, written out here: compiled
(sim.native), an entry's time and sequence are native fields, compared without a
Python call, where a tuple entry cost a float and an int object each and a generic
tuple comparison (two float comparisons through the object protocol) per step. The
order is heapq's on the tuples (time, sequence), and so the same run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Alarm", "Entry", "Loop"]

_INF = float("inf")


class Entry:
    """One heap entry: ``fn(arg)`` is due at ``t``; ``seq`` orders entries due at once."""

    __slots__ = ("arg", "fn", "seq", "t")

    def __init__(self, t: float, seq: int, fn: Callable[[Any], None], arg: Any) -> None:
        self.t = t
        self.seq = seq
        self.fn = fn
        self.arg = arg


def _before(a: Entry, b: Entry) -> bool:
    """``(a.t, a.seq) < (b.t, b.seq)``, as the tuples compare (a NaN time is never before)."""
    if a.t != b.t:
        return a.t < b.t
    return a.seq < b.seq


def _push(heap: list[Entry], entry: Entry) -> None:
    """heapq.heappush: ``entry`` added, moved up past every parent it comes before."""
    heap.append(entry)
    _sift_up(heap, len(heap) - 1, entry)


def _sift_up(heap: list[Entry], pos: int, entry: Entry) -> None:
    """``entry`` put at ``pos`` or above: moved up past every parent it comes before."""
    while pos > 0:
        up = (pos - 1) >> 1
        parent = heap[up]
        if not _before(entry, parent):
            break
        heap[pos] = parent
        pos = up
    heap[pos] = entry


def _pop(heap: list[Entry]) -> Entry:
    """heapq.heappop (the heap is not empty): the first entry out; the last one takes its
    place by heapq's bottom-up sift (the smaller child up to a leaf, then back up)."""
    last = heap.pop()
    n = len(heap)
    if n == 0:
        return last
    top = heap[0]
    pos = 0
    child = 1
    while child < n:
        right = child + 1
        if right < n and not _before(heap[child], heap[right]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    _sift_up(heap, pos, last)
    return top


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
    def heap(self) -> list[Entry]:
        """The entries, a heap by (time, sequence): read-only to others (Cores.instant reads
        its top inline); the same list for the loop's whole life."""
        return self._heap

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[Entry] = []
        #: The next entry's sequence number (FIFO among entries due at the same time): a
        #: plain int, which compiled code counts natively (``count().__next__`` was a call
        #: through a method wrapper per entry).
        self._seq = 0
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
        seq = self._seq
        self._seq = seq + 1
        _push(self._heap, Entry(t if t > self.now else self.now, seq, fn, arg))

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` ``delay`` seconds from now (a negative delay counts as 0)."""
        seq = self._seq
        self._seq = seq + 1
        _push(self._heap, Entry(self.now + delay if delay > 0 else self.now, seq, fn, arg))

    def peek(self) -> float:
        """Time of the next entry or alarm (infinity when none)."""
        top = self._heap[0].t if self._heap else _INF
        return top if top < self.alarm_at else self.alarm_at

    def clear(self, t: float) -> bool:
        """Whether ``t`` comes before anything else: nothing due at or before it, the run
        not stopping, ``t`` within its ``until``. Then a callback with nothing left to do
        in its entry may set ``now = t`` and go on at once: what the loop would run next
        anyway, without an entry (the same order, the same results)."""
        heap = self._heap
        return (
            t < self.alarm_at
            and (not heap or t < heap[0].t)
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
            top = heap[0].t if heap else _INF
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
                entry = _pop(heap)
                self.now = entry.t
                entry.fn(entry.arg)
            if self._stop:
                break
        if until is not None and not self._stop and self.now < until:
            self.now = until
        stopped = self._stop
        self._stop = False
        self._limit = -_INF
        return stopped
