"""Executors: where a sweep's point runs execute (``local``, the default, or ``ray``).

``ExecutorChoice`` is what a user picks (CLI ``--executor``, API ``executor=``);
``build_executor`` turns it into an executor bound to the sweep's own ways of
preparing and running one point. Ray is imported only by the Ray executor, when
it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sim.events import SweepEvents
from sim.rundir.layout import RepRun
from sim.sweep.executors.base import (
    LOCAL_HOST,
    Executor,
    ExecutorError,
    LocalExecutor,
    RunOne,
)

__all__ = [
    "EXECUTORS",
    "LOCAL_HOST",
    "Executor",
    "ExecutorChoice",
    "ExecutorError",
    "LocalExecutor",
    "RunOne",
    "SweepEvents",
    "build_executor",
    "preflight",
]

#: Executor names a user may choose.
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class ExecutorChoice:
    """Which executor runs the sweep, and its options."""

    name: str = "local"
    #: Ray only: the cluster's address (HEAD:6379); default ``$RAY_ADDRESS``, else ``auto``.
    address: str | None = None
    #: Ray only: how many times a run whose host is lost is submitted again.
    retries: int = 2

    def __post_init__(self) -> None:
        if self.name not in EXECUTORS:
            raise ExecutorError(
                f"executor {self.name!r} is not known; allowed: {', '.join(EXECUTORS)}"
            )
        if self.retries < 0:
            raise ExecutorError(f"retries {self.retries}: allowed 0 or more")
        if self.name == "local" and self.address:
            raise ExecutorError("an address is only meaningful with the ray executor")


def build_executor(
    choice: ExecutorChoice, run_one: RunOne, prepare: Callable[[RepRun], Path]
) -> Executor:
    """The executor ``choice`` names; ``run_one`` runs a point here, ``prepare`` writes
    a run's clean directory and spec (for executors that run the child elsewhere)."""
    if choice.name == "ray":
        from sim.sweep.executors.ray_driver import RayExecutor

        return RayExecutor(prepare, choice.address, choice.retries)
    return LocalExecutor(run_one)


def preflight(choice: ExecutorChoice) -> None:
    """ExecutorError (one line) now, before a run directory is touched, when the chosen
    executor cannot work: Ray not installed, or no cluster answering at the address."""
    if choice.name != "ray":
        return
    from sim.sweep.executors.ray_driver import RayExecutor

    RayExecutor(lambda rep: rep.dir, choice.address, choice.retries).preflight()
