"""The hybrid clock in run time, as the arrivals use it (sim.point.arrivals.ArrivalClock).

A module of its own so that it is compiled with the load pipeline (sim.native): every
arrival of a point goes through :meth:`RunClock.at`, on real mode's simulation thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.runtime.env import HybridEnvironment
from sim.store.clock import Timer

__all__ = ["RunClock"]


class RunClock:
    """The environment's clock in run time (zero: the origin), as arrivals use it
    (sim.point.arrivals.ArrivalClock): the pipeline reports ends in run time, so a
    closed loop's next arrival is exactly the last end plus think time."""

    __slots__ = ("_at", "_env", "_origin", "lead_s")

    #: Callbacks run on the simulation thread itself: one that finds the next arrival
    #: due hands it over at once (a backlog in one go).
    inline_due = True

    def __init__(self, env: HybridEnvironment, lead_s: float = 0.0) -> None:
        """``lead_s``: how far ahead an open loop may hand a request over, where the
        pipeline keeps it until its time (sim.point.arrivals.HAND_OVER_LEAD_S)."""
        self.lead_s = lead_s
        self._env = env
        self._origin = env.set_origin()
        self._at = env.at

    @property
    def now(self) -> float:
        return self._env._now - self._origin  # env.run_time(), one call less an arrival

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> Timer:
        return self._env.after(delay, fn, arg)

    def at(self, t: float, fn: Callable[[Any], None], arg: Any = None) -> object:
        return self._at(self._origin + t, fn, arg)
