"""One link shared by the transfers in flight: processor sharing, optionally capped.

Every transfer on the link moves ``min(bandwidth / n, cap)`` bytes per second
while ``n`` transfers are in flight, so two equal transfers started together
each take twice as long as one alone, and a transfer that starts or ends
changes the pace of every other. The link keeps each transfer's remaining
bytes, brings them up to date whenever the set changes, and keeps one timer for
the next transfer to finish (a timer made stale by a later change is ignored).

A transfer may be sent with a delay (the store's latency): it joins the link
then, without a timer of its own. The link knows when it will join, so the one
timer is set for the next *finish* counting the joins due before it, and a
transfer costs one timer instead of two. Each timer is a wake-up of the
simulation thread in real mode (tens of µs on a virtual machine: the harness's
cost). It runs on any :class:`~sim.store.clock.Clock`: real mode's and model mode's.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

from sim.store.clock import Clock, Timer

__all__ = ["SharedLink"]

#: A transfer with fewer bytes than this left is done (float residue of the updates).
_DONE_BYTES = 0.5
_INF = float("inf")


class SharedLink:
    __slots__ = (
        "_bw",
        "_cap",
        "_clock",
        "_done",
        "_ids",
        "_joining",
        "_left",
        "_on_timer_cb",
        "_since",
        "_timer",
        "_timer_gen",
    )

    def __init__(
        self, clock: Clock, bytes_per_s: float, cap_bytes_per_s: float | None = None
    ) -> None:
        self._clock = clock
        self._bw = bytes_per_s
        self._cap = cap_bytes_per_s
        #: Bytes left of each transfer moving on the link, as of ``_since``.
        self._left: dict[int, float] = {}
        #: Transfers sent with a delay and not yet moving: (time they join, id, bytes).
        self._joining: list[tuple[float, int, float]] = []
        self._done: dict[int, Callable[[Any], None]] = {}
        self._ids = 0
        self._since = 0.0
        self._timer_gen = 0
        self._timer: Timer | None = None
        # One bound method for every timer rather than a new one per arming (an
        # allocation on real mode's simulation thread per transfer).
        self._on_timer_cb: Callable[[int], None] = self._on_timer

    def rate(self, n: int) -> float:
        """Bytes per second each of ``n`` transfers in flight moves."""
        share = self._bw / n
        return share if self._cap is None else min(share, self._cap)

    def send(self, nbytes: float, done: Callable[[Any], None], delay: float = 0.0) -> None:
        """Start moving ``nbytes`` after ``delay`` seconds; ``done(None)`` is called once the
        last byte has moved."""
        clock = self._clock
        if nbytes <= 0:
            clock.after(delay, done)
            return
        now = self._catch_up()
        self._ids += 1
        self._done[self._ids] = done
        if delay > 0:
            heappush(self._joining, (now + delay, self._ids, float(nbytes)))
        else:
            self._left[self._ids] = float(nbytes)
        self._arm(now)

    def _move(self, until: float) -> None:
        """Take off every moving transfer the bytes moved from ``_since`` to ``until``."""
        left = self._left
        if left and until > self._since:
            moved = (until - self._since) * self.rate(len(left))
            for key in left:
                left[key] -= moved
        self._since = until

    def _catch_up(self) -> float:
        """Bring the link up to now, letting in, at their times, the transfers due to join;
        returns now (the clock's time is read once a call: four reads a transfer were a
        tenth of its cost on real mode's simulation thread)."""
        now = self._clock.now
        joining = self._joining
        while joining and joining[0][0] <= now:
            at, key, nbytes = heappop(joining)
            self._move(at)
            self._left[key] = nbytes
        self._move(now)
        return now

    def _next_finish(self) -> float:
        """When the next moving transfer will be done, if nothing else is sent before."""
        t = self._since
        n = len(self._left)
        least = min(self._left.values()) if n else _INF
        joining = self._joining
        # a heap of one or none is sorted already (no copy: the usual case, one transfer)
        for at, _key, nbytes in joining if len(joining) < 2 else sorted(joining):
            finish = t + max(0.0, least) / self.rate(n) if n else _INF
            if finish <= at:
                return finish
            if n:
                least -= (at - t) * self.rate(n)
            t, n = at, n + 1
            least = min(least, nbytes)
        return t + max(0.0, least) / self.rate(n) if n else _INF

    def _arm(self, now: float) -> None:
        self._timer_gen += 1
        if self._timer is not None:
            self._timer.cancel()  # real mode: no wake-up for a stale timer
            self._timer = None
        finish = self._next_finish()
        if finish < _INF:
            self._timer = self._clock.after(finish - now, self._on_timer_cb, self._timer_gen)

    def _on_timer(self, gen: int) -> None:
        if gen != self._timer_gen:
            return  # the set changed since this timer was set (a clock that cannot cancel)
        self._timer = None
        now = self._catch_up()
        finished = [key for key, left in self._left.items() if left < _DONE_BYTES]
        if not finished and self._left and self._next_finish() <= now:
            # This timer was set for the next finish, and what that transfer has left
            # takes less time than the clock can tell from now (float time: past
            # 16,384 s its step is 3.6 ps, 1.46 bytes at 400 GB/s; a lone transfer was
            # seen there with 0.64 bytes left). It ends now; else no byte would move
            # and the timer would come back at this very time for ever (a day's model
            # point hung 4.5 simulated hours in).
            left = self._left
            finished = [min(left, key=left.__getitem__)]
        calls = []
        for key in finished:
            del self._left[key]
            calls.append(self._done.pop(key))
        self._arm(now)
        for done in calls:
            done(None)
