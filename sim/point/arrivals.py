"""Arrivals: each planned request handed to the pipeline at its time, in both modes.

The plan's times come from sim.workload.arrivals (drawn before the load); this
hands the requests over at them, on the point's clock.

One implementation of the open loop (planned times: poisson, constant, on/off, curve,
trace replay) and the closed loop (clients, each ready again at its request's end
plus think time), written against a clock — the store model's
(sim.store.clock.Clock) with :meth:`ArrivalClock.at` added — so that real mode
(sim.runtime.point, on HybridEnvironment) and model mode (sim.model.driver, on the
simulated simulation thread) run the same schedule (docs/design.md, the request path).

Every wait is computed from the absolute plan, never as a gap from a late ``now``:
a clock that falls behind hands over the overdue requests as soon as it can and is
back on schedule for the next, and each request's latency still counts from when
it was planned. Times given to the clock are clock times (run time zero is
``origin``); the times given to ``hand_over`` are run times.

An open loop may hand requests over *ahead* of their planned times (the clock's
``lead_s``), in batches, one wake-up of the simulation thread every ``lead_s / 2``
instead of one a request: the load thread keeps each until its planned time (real
mode's WorkerPool.run_at, model mode's ModelWorkers.submit_at). Each wake-up costs
the harness tens of µs of GIL time whatever it then does (the first Python after a
sleep runs from cold caches: sim.benches.harness); the load threads being measured
compete for that GIL. The clock sets it only where nothing else happens at the
arrival (a modelled store admits nothing: sim.store.base.LoadStore.immediate), and a
closed loop never leads, since its next request is due only once one has ended.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from sim.store.clock import QUIET_SLACK_S, Clock
from sim.workload.plan import PlannedRequest, Workload

__all__ = ["HAND_OVER_LEAD_S", "ArrivalClock", "HandOver", "Then", "drive_arrivals"]

#: How far ahead of its planned time an open loop's request is handed over where the
#: clock allows it (``ArrivalClock.lead_s``): the simulation thread wakes every half of it
#: for a batch, which stays under the quiet slack, so that a load thread's answer never
#: needs to wake it (sim.runtime.env.HybridEnvironment.post_at).
HAND_OVER_LEAD_S = 0.02
assert HAND_OVER_LEAD_S / 2 < QUIET_SLACK_S

#: ``then(clock time)``: the request ended then (a closed loop's client is ready again).
Then = Callable[[float], None]
#: ``hand_over(request, arrival run time, then)``: give the request to the pipeline now;
#: ``then`` once it has ended (closed loop), or None (open loop). What it returns is
#: not used (model mode's is the request's constructor).
HandOver = Callable[[PlannedRequest, float, Then | None], object]


class ArrivalClock(Clock, Protocol):
    """The store model's clock, with calls at an absolute time: a planned time is kept
    as planned (``now + (t - now)`` may round away from ``t``)."""

    #: Whether a callback that finds the next request already due hands it over at
    #: once (real mode: callbacks run on the simulation thread itself, which hands a
    #: backlog over in one go), or through :meth:`at` (model mode: each hand-over is
    #: work of the simulated simulation thread).
    inline_due: bool
    #: How far ahead of its planned time an open loop may hand a request over (0: at its
    #: time), where the pipeline behind the clock keeps it until then.
    lead_s: float

    def at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> object:
        """Call ``fn(arg)`` on the simulation thread at clock time ``t`` (at once, or as
        soon as it can, when ``t`` has passed)."""
        ...


def drive_arrivals(
    clock: ArrivalClock, origin: float, workload: Workload, hand_over: HandOver
) -> None:
    """Start the workload's arrivals; run time zero is clock time ``origin``."""
    if workload.closed_clients is None:
        _open_loop(clock, origin, workload, hand_over)
    else:
        _closed_loop(clock, origin, workload, hand_over, workload.closed_clients)


def _open_loop(clock: ArrivalClock, origin: float, workload: Workload, hand_over: HandOver) -> None:
    """Each request at its planned time, or up to ``clock.lead_s`` before it: one call on
    the clock per request not yet due, or per batch of them (every ``lead_s / 2``)."""
    planned = iter(workload)
    inline = clock.inline_due
    lead = clock.lead_s

    def arrive(req: PlannedRequest) -> None:
        while True:
            hand_over(req, req.at_s or 0.0, None)  # at its planned time, ahead, or late
            nxt = next(planned, None)
            if nxt is None:
                return
            req = nxt
            t = origin + (req.at_s or 0.0)
            now = clock.now
            if t - lead > now:  # past this batch: the next one, half a lead on at least
                clock.at(max(t - lead, now + lead / 2), arrive, req)
                return
            if not inline:  # in this batch, each hand-over a call of its own
                clock.at(min(t, now), arrive, req)
                return

    first = next(planned, None)
    if first is not None:
        t = origin + (first.at_s or 0.0)
        clock.at(max(t - lead, clock.now), arrive, first)


def _closed_loop(
    clock: ArrivalClock, origin: float, workload: Workload, hand_over: HandOver, clients: int
) -> None:
    """Every client ready when the load starts, then at its request's end plus think time."""
    queue = iter(workload)
    think = workload.think_s

    def arrive(due: tuple[PlannedRequest, float]) -> None:
        req, ready = due
        hand_over(req, ready - origin, done)

    def ready(t: float) -> None:
        """A client is ready at clock time ``t``: its next request arrives then."""
        req = next(queue, None)
        if req is not None:
            clock.at(t, arrive, (req, t))

    def done(end: float) -> None:
        ready(end + think)

    for _ in range(clients):
        ready(origin)
