"""The event loop of model mode: a heap of (time, sequence, callback, argument), nothing more.

Model mode used SimPy: a point cost about 25 SimPy events per request (processes,
timeouts, generator resumes, each ~10 µs of SimPy's generic machinery), which
capped it at a few thousand simulated requests per second. Here a simulated
thread is a small state machine whose steps are plain callbacks: "wake me at
``t``" is one heap entry and one call, and a step that needs no waiting (a free
GIL, a free store slot) costs no entry at all.

Ordering: entries run in time order; entries due at the same time run in the
order they were scheduled (FIFO), so a run is reproducible. There is no
cancellation: an owner that changes its mind bumps a version number and its
stale entry does nothing when it comes up (cheaper than removing it from the heap).
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from itertools import count
from typing import Any

__all__ = ["Loop"]


class Loop:
    """Simulated time and the callbacks due in it."""

    __slots__ = ("_heap", "_seq", "_stop", "now")

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[[Any], None], Any]] = []
        self._seq = count().__next__  # FIFO among entries due at the same time
        self._stop = False

    def at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` at time ``t`` (not before now)."""
        heappush(self._heap, (t if t > self.now else self.now, self._seq(), fn, arg))

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        """Call ``fn(arg)`` ``delay`` seconds from now (a negative delay counts as 0)."""
        heappush(self._heap, (self.now + delay if delay > 0 else self.now, self._seq(), fn, arg))

    def peek(self) -> float:
        """Time of the next entry (infinity when none)."""
        return self._heap[0][0] if self._heap else float("inf")

    @property
    def pending(self) -> int:
        return len(self._heap)

    def stop(self) -> None:
        """Make :meth:`run` return once the current callback is done."""
        self._stop = True

    def run(self, until: float | None = None) -> bool:
        """Run entries until :meth:`stop` is called, none are left, or (when given) the
        next one is due after ``until``. Returns True when stopped by :meth:`stop`."""
        heap = self._heap
        self._stop = False
        if until is None:
            while heap:
                t, _seq, fn, arg = heappop(heap)
                self.now = t
                fn(arg)
                if self._stop:
                    break
        else:
            while heap and not self._stop:
                if heap[0][0] > until:
                    self.now = until
                    break
                t, _seq, fn, arg = heappop(heap)
                self.now = t
                fn(arg)
        stopped = self._stop
        self._stop = False
        return stopped
