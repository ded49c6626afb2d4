"""What the store model needs of a clock: the time now, and "call me back in so long".

The modelled store (sim.store.model) and its shared link (sim.store.link) are written
against this and nothing else, so that real mode (a SimPy environment beside real
threads) and model mode (sim.model.loop.Loop) run the very same store rules instead of
two copies that must be kept in step. Real mode's HybridEnvironment and model mode's
Loop provide ``after`` themselves; :class:`SimpyClock` adapts any other SimPy
environment (tests drive the store on SimPy's virtual clock).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import simpy

__all__ = ["QUIET_SLACK_S", "Clock", "SimpyClock", "Timer"]

#: How late a quiet timer may run at most (sim.runtime.env.HybridEnvironment.after_quietly):
#: a harness asleep longer than this wakes for it. Above the gap between arrivals at
#: 100 requests/s, so that from there up a modelled transfer's end costs no wake-up of
#: its own; the end of a run is noticed this much late at most (its ``elapsed`` is the
#: last request's end on the run's clock, not when the loop noticed it).
QUIET_SLACK_S = 0.012


class Timer(Protocol):
    def cancel(self) -> None:
        """The call will not be made."""
        ...


@runtime_checkable
class Clock(Protocol):
    @property
    def now(self) -> float: ...

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> Timer | None:
        """Call ``fn(arg)`` ``delay`` seconds from now (a negative delay counts as 0);
        calls due at the same time run in the order they were asked for. A clock that
        can drop a call returns a handle to cancel it; one that cannot returns None
        (its owner then ignores the call when it comes: a stale timer)."""
        ...


class SimpyClock:
    """A SimPy environment as a :class:`Clock`: each call is one timeout with a callback."""

    __slots__ = ("_env",)

    def __init__(self, env: simpy.Environment) -> None:
        self._env = env

    @property
    def now(self) -> float:
        return float(self._env.now)

    def after(self, delay: float, fn: Callable[[Any], None], arg: Any = None) -> None:
        timer = self._env.timeout(delay if delay > 0 else 0.0)
        timer.callbacks.append(lambda _ev: fn(arg))
