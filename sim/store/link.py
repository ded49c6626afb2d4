"""One link shared by the transfers in flight: processor sharing, optionally capped.

Every transfer on the link moves ``min(bandwidth / n, cap)`` bytes per second
while ``n`` transfers are in flight, so two equal transfers started together
each take twice as long as one alone, and a transfer that starts or ends
changes the pace of every other. The link keeps each transfer's remaining
bytes, brings them up to date whenever the set changes, and keeps one timer for
the next transfer to finish (a timer made stale by a later change is ignored).
"""

from __future__ import annotations

import simpy

__all__ = ["SharedLink"]

#: A transfer with fewer bytes than this left is done (float residue of the updates).
_DONE_BYTES = 0.5


class SharedLink:
    def __init__(
        self, env: simpy.Environment, bytes_per_s: float, cap_bytes_per_s: float | None = None
    ) -> None:
        self._env = env
        self._bw = bytes_per_s
        self._cap = cap_bytes_per_s
        self._left: dict[simpy.Event, float] = {}
        self._since = 0.0
        self._timer_gen = 0

    @property
    def in_flight(self) -> int:
        return len(self._left)

    def rate(self, n: int) -> float:
        """Bytes per second each of ``n`` transfers in flight moves."""
        share = self._bw / n
        return share if self._cap is None else min(share, self._cap)

    def send(self, nbytes: float) -> simpy.Event:
        """Start moving ``nbytes``; the event succeeds when the last byte has moved."""
        done = self._env.event()
        if nbytes <= 0:
            done.succeed()
            return done
        self._catch_up()
        self._left[done] = float(nbytes)
        self._arm()
        return done

    def _catch_up(self) -> None:
        """Take off every transfer the bytes moved since the last change."""
        now = self._env.now
        if self._left:
            moved = (now - self._since) * self.rate(len(self._left))
            for ev in self._left:
                self._left[ev] -= moved
        self._since = now

    def _arm(self) -> None:
        self._timer_gen += 1
        if not self._left:
            return
        gen = self._timer_gen
        wait = max(0.0, min(self._left.values())) / self.rate(len(self._left))
        timer = self._env.timeout(wait)
        timer.callbacks.append(lambda _ev: self._on_timer(gen))

    def _on_timer(self, gen: int) -> None:
        if gen != self._timer_gen:
            return  # the set changed since this timer was set
        self._catch_up()
        finished = [ev for ev, left in self._left.items() if left < _DONE_BYTES]
        for ev in finished:
            del self._left[ev]
            ev.succeed()
        self._arm()
