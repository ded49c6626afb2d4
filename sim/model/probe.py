"""Model-mode sentinel probe: a thread that wants to run at jittered targets (±50 %) and
records how late it runs.

It contributes the same summary columns as its real-mode counterpart
(sim.instruments.probe), computed the same way from simulated timestamps.
Columns that only a real machine can give (the probe's off-core share, the
cores' run-queue wait) are left empty (NaN).

Why it is built this way (speed): the probe wakes every ~2 ms of simulated time,
more often than anything else in a point, and most wake-ups find the GIL free,
where all it does is note its own wake-up lateness. So its targets and their
drawn latenesses are drawn ahead, in blocks, from the run's generator; while
the GIL is free the probe is passive (no heap entry) and only when the GIL is
next taken does it count the targets that fell in the free stretch (one bisect)
and set a wake-up for the first target that may find the GIL busy. Only those
wake-ups cost events; there it waits for the GIL, holds it for its measured CPU
and lets it go, like any other thread. Every target's lateness is then the
running maximum of when it was served (a thread that wakes late serves the
targets that fell meanwhile at once) minus the target.

The targets served are folded into the summary's statistics (sim.stats) a block at a
time and dropped, so the probe's memory does not grow with the point's simulated time
(10^6 requests at 200/s are 2.5 M targets): the wake-ups' lateness percentiles are
exact up to ``EXACT_WAKES`` wake-ups and within 0.05 % past it
(sim.stats.StreamPercentiles); the busy share and the maximum are exact at any length.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from sim.config import GilConfig
from sim.model.costs import ModelCosts
from sim.model.gil import SimGil
from sim.model.loop import Alarm, Loop
from sim.model.threads import Harness
from sim.point.probe_summary import probe_summary
from sim.stats import StreamPercentiles

__all__ = ["COMPACT_AT", "EXACT_WAKES", "PROBE_THREAD", "ModelProbe"]

PROBE_THREAD = "kvsim-probe"
#: Served targets held before they are folded into the statistics and dropped.
COMPACT_AT = 1 << 15
#: Wake-ups whose lateness is kept exactly (8 bytes each); past it, a histogram.
EXACT_WAKES = 1 << 16


class BlockDraws(Protocol):
    """Uniform draws, one at a time or a block at a time, from one stream."""

    def __call__(self) -> float: ...

    def block(self, n: int) -> np.ndarray: ...


class ModelProbe:
    """The sentinel probe on the model's loop (see the module docstring for how)."""

    def __init__(
        self,
        cfg: GilConfig,
        costs: ModelCosts,
        gil: SimGil,
        draw: BlockDraws,
        harness: Harness,
        request_hold_ms: Callable[[], float],
    ) -> None:
        """``request_hold_ms()``: the requests' summed GIL hold once the load is over
        (the real probe reads its ledger alike); ``harness``: the simulation thread."""
        self._harness = harness
        self._request_hold_ms = request_hold_ms
        self._interval_s = cfg.probe_interval_ms / 1e3
        self._tau_s = cfg.probe_threshold_ms / 1e3
        self._costs = costs
        self._gil = gil
        self._draw = draw
        #: Per target not folded in yet: its time, when it would be served on a free GIL
        #: (time + drawn lateness), the running maximum of that, and when it was served
        #: (edited when the probe waited for the GIL). Index 0 is target ``_base``.
        self._t: list[float] = []
        self._w: list[float] = []
        self._c: list[float] = []
        self._v: list[float] = []
        self._missed: list[int] = []  # targets served by a wake-up for an earlier one
        self._j = 0  # next target not served yet
        # What the targets folded in so far add up to (see _fold).
        self._base = 0
        self._served_max = -math.inf
        self._busy = 0
        self._wakes = StreamPercentiles(EXACT_WAKES)
        self._block = 256
        self._stopped = False
        self._t0 = self._t1 = 0.0
        self._loop: Loop | None = None
        self._alarm: Alarm | None = None

    # -- targets, drawn ahead -------------------------------------------------------
    def _extend(self) -> int:
        """Draw the next block of targets; fold the served ones in when many are held.
        Returns by how much the indices moved down (a caller holding one subtracts it)."""
        n = self._block
        self._block = min(2 * n, 8192)
        u = self._draw.block(2 * n)
        last = self._t[-1] if self._t else self._t0
        t = last + np.cumsum(self._interval_s * (0.5 + u[:n]))
        w = t + self._costs.probe_late.many(u[n:])
        c = np.maximum.accumulate(w)
        if self._c:
            c = np.maximum(c, self._c[-1])
        self._t.extend(t.tolist())
        wl = w.tolist()
        self._w.extend(wl)
        self._v.extend(wl)
        self._c.extend(c.tolist())
        return self._fold() if self._j >= COMPACT_AT else 0

    def _fold(self) -> int:
        """Fold the served targets (those before ``_j``: final) into the statistics and
        drop them; returns how many."""
        k = self._j
        if k == 0:
            return 0
        late = self._late(k)
        wake: np.ndarray = np.ones(k, dtype=bool)
        m = 0
        missed = self._missed
        while m < len(missed) and missed[m] < k:
            m += 1
        wake[missed[:m]] = False
        self._missed = [i - k for i in missed[m:]]
        self._wakes.add(late[wake] * 1e3)
        late_ns = np.round(late * 1e9).astype(np.int64)
        self._busy += int(np.count_nonzero(late_ns > round(self._tau_s * 1e9)))
        for col in (self._t, self._w, self._c, self._v):
            del col[:k]  # in place: callers may hold the lists
        self._base += k
        self._j = 0
        return k

    def _late(self, n: int) -> np.ndarray:
        """The first ``n`` held targets' lateness in seconds: the running maximum of when
        they were served (carried over from the targets folded in before) minus each."""
        # fromiter with a count: no slice copied, no per-element type discovery
        served = np.maximum.accumulate(np.fromiter(self._v, dtype=np.float64, count=n))
        np.maximum(served, self._served_max, out=served)
        self._served_max = float(served[-1])
        return np.maximum(served - np.fromiter(self._t, dtype=np.float64, count=n), 0.0)

    def _first_due(self, j: int, t: float) -> int:
        """First target from ``j`` on that a thread free since before ``t`` serves at or
        after ``t`` (earlier ones it served on the free GIL)."""
        while True:
            if j >= len(self._w):
                j -= self._extend()
                continue
            if self._v[j] >= t:
                return j
            k = bisect_left(self._c, t, j + 1)
            if k >= len(self._c):
                j = len(self._c)
                continue
            w = self._w
            while k < len(w) and w[k] < t:
                k += 1
            if k < len(w):
                return k
            j = k

    # -- the thread ---------------------------------------------------------------
    # Passive (the GIL is free; gil.watch tells when it is taken), armed (an alarm for
    # the next target; gil.free_watch tells when the GIL goes free first, which makes
    # that wake-up moot), or waiting for / holding the GIL (neither).
    def attach(self, loop: Loop) -> None:
        self._loop = loop
        self._alarm = loop.alarm(self._woken)
        self._t0 = loop.now
        self._extend()
        self._passive_or_armed()

    def detach(self) -> None:
        self._stopped = True
        assert self._loop is not None and self._alarm is not None
        self._t1 = self._loop.now
        self._loop.cancel(self._alarm)
        self._gil.free_watch = None
        if self._gil.watch == self._on_take:  # passive: the GIL was free up to now
            self._gil.watch = None
            self._j = self._first_due(self._j, self._t1)

    def _passive_or_armed(self) -> None:
        """After serving a target: passive while the GIL is free, else armed for the next."""
        gil = self._gil
        if gil.holder is None:  # free (nobody holds it; a woken waiter may be on its way)
            gil.watch = self._on_take
        else:
            self._arm()

    def _arm(self) -> None:
        if self._j >= len(self._w):
            self._extend()
        j = self._j
        assert self._loop is not None and self._alarm is not None
        self._loop.set_alarm(self._alarm, self._v[j])
        self._gil.free_watch = self._on_free

    def _on_take(self, now: float) -> None:
        """The free GIL was just taken: targets due before now were served free."""
        gil = self._gil
        gil.watch = None
        j, v = self._j, self._v
        if j >= len(v) or v[j] < now:  # _first_due's quick answer inline: the next one
            j = self._j = self._first_due(j, now)
        if j >= len(v):  # self._arm(), inline (the GIL is taken some ten times a request)
            j -= self._extend()
        assert self._loop is not None and self._alarm is not None
        self._loop.set_alarm(self._alarm, v[j])
        gil.free_watch = self._on_free

    def _on_free(self, now: float) -> None:
        """The GIL went free before the next target: that wake-up would find it free."""
        assert self._loop is not None and self._alarm is not None
        self._gil.free_watch = None
        self._loop.cancel(self._alarm)
        self._gil.watch = self._on_take

    def _woken(self, _arg: Any = None) -> None:
        gil = self._gil
        gil.free_watch = None
        if gil.holder is None:  # served at once, on a free GIL (nobody waits for one)
            self._j += 1
            gil.watch = self._on_take
            return
        gil.acquire(PROBE_THREAD, self._got)

    def _got(self, _arg: Any = None) -> None:
        assert self._loop is not None
        now = self._loop.now
        j = self._j
        t, v = self._t, self._v
        v[j] = now
        j += 1
        while True:
            if j >= len(t):
                j -= self._extend()
            if t[j] > now:
                break
            v[j] = now  # fell due while the probe waited: served late, by this wake-up
            self._missed.append(j)
            j += 1
        self._j = j
        # Called last in the GIL's hand-off entry: the hold may be done at once.
        if self._gil.run_instant(PROBE_THREAD, self._costs.probe_hold_s):
            self._ran()
        else:
            self._gil.run(PROBE_THREAD, self._costs.probe_hold_s, self._ran)

    def _ran(self, _arg: Any = None) -> None:
        assert self._loop is not None
        now = self._loop.now
        gil, j = self._gil, self._j
        if gil.waiting and j < len(self._v) and not self._stopped:
            # The GIL goes to a waiter: armed for the next target, set before the release
            # (as _passive_or_armed would after it) so that the hand-off, last in this
            # loop entry, may go on at once when nothing else comes first.
            if self._v[j] < now:  # the next target fell due during the probe's own hold
                self._v[j] = now
            self._arm()
            gil.release(PROBE_THREAD, tail=True)
            return
        gil.release(PROBE_THREAD)
        if self._stopped:
            return
        if self._j >= len(self._v):
            self._extend()
        j = self._j
        if self._v[j] < now:  # the next target fell due during the probe's own hold
            self._v[j] = now
        self._passive_or_armed()

    # -- results --------------------------------------------------------------------
    def summary(self) -> dict[str, float]:
        nan = math.nan
        self._fold()  # every target served up to now
        stall = self._wakes  # in ms
        s50, s99 = stall.percentiles([50, 99]) if stall.count else (nan,) * 2
        # busy_fraction (sim.instruments.probe) on the same integer nanoseconds, vectorised.
        targets = self._base
        probe = self._busy / targets if targets else nan
        window = self._t1 - self._t0
        requests = self._request_hold_ms() / 1e3 / window if window > 0 else nan
        sim_busy = self._harness.cpu_s / window if window > 0 else nan
        stall_max = stall.max if stall.count else nan
        return probe_summary((s50, s99, stall_max), probe, nan, requests, sim_busy, nan, nan)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {}
