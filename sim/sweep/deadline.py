"""How long the sweep waits on a point run before it calls it hung.

Every wait on a child or a worker has a bound: a child stopped by SIGSTOP, or stuck
where no request timeout can see it (its start-up, its files), must not hang the
sweep forever. A child first has START_ALLOWANCE_S to start (an interpreter and
kvsim's imports on a loaded machine) and say so; from then the bound comes from the
point's budget: ``limits.max_point_s`` (the wall time a point may need, checked
against its plan before anything runs) plus one ``limits.request_timeout_s`` (the
watchdog inside the child, for the request that may be running when the budget
ends). A point run past either is stopped and marked ``failed`` with that reason;
the sweep goes on to the next.
"""

from __future__ import annotations

import time

from sim.config.sections import LimitsConfig

__all__ = ["START_ALLOWANCE_S", "Deadline", "over_budget_error", "wait_bound_s"]

#: Seconds a point's child may take to start (before it says it has), whatever the point.
START_ALLOWANCE_S = 60.0


def wait_bound_s(limits: LimitsConfig) -> float:
    """Seconds a started run of a point with these ``limits`` may take before it is stopped."""
    return float(limits.max_point_s) + float(limits.request_timeout_s)


def over_budget_error(deadline: Deadline) -> str:
    """The ``error`` of a point run stopped at its deadline."""
    if deadline.what == "start":
        return (
            f"the child did not start within {deadline.bound_s:g} s: stopped "
            "(a stopped (SIGSTOP) or hung process, or a machine far too loaded)"
        )
    return (
        f"no result within {deadline.bound_s:g} s (limits.max_point_s + "
        "limits.request_timeout_s): stopped; a stopped (SIGSTOP) or hung process, "
        "or raise those limits"
    )


class Deadline:
    """A point in monotonic time ``bound_s`` from now, for ``what`` (start, run)."""

    def __init__(self, bound_s: float, what: str = "run") -> None:
        self.restart(bound_s, what)

    def restart(self, bound_s: float, what: str = "run") -> None:
        """From now, ``bound_s`` for ``what``."""
        self.bound_s = bound_s
        self.what = what
        self._end = time.monotonic() + bound_s

    def left(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self._end - time.monotonic())

    @property
    def passed(self) -> bool:
        return self.left() <= 0.0
