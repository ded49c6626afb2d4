"""Real mode's clock for the store model's timers when nothing waits on them.

A module of its own so that it is compiled with the store model (sim.native): the
store model reads the time four or five times a transfer, and from compiled code an
interpreted property costs about ten times a compiled one (callgrind, 3 Dec 2026:
~2,000 instructions a read, most of a transfer's cost on real mode's simulation
thread; the protocols of sim.store.clock stay interpreted, mypyc cannot compile them).
"""

from __future__ import annotations

from typing import Any

__all__ = ["QuietClock"]


class QuietClock:
    """A clock whose calls do not wake the simulation thread of real mode: the store
    model's timers when nothing on the wall clock waits for a transfer's end (an open
    loop: its end is only noted, at the time the model fixed). Model mode simulates
    the same (sim.model.threads.Harness.defer)."""

    __slots__ = ("_env", "after")

    def __init__(self, env: Any) -> None:
        self._env = env
        self.after = env.after_quietly

    @property
    def now(self) -> float:
        # SimPy's own field, not its ``now`` property: the store model reads the time a
        # few times a request, on the harness's path (one Python call less each)
        return float(self._env._now)
