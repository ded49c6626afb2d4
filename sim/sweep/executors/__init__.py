"""Executors: where a sweep's point runs execute (``local``, the default, or ``ray``).

``ExecutorChoice`` is what a user picks (CLI ``--executor``, API ``executor=``);
``build_executor`` turns it into an executor bound to the sweep's own ways of
preparing and running one point. Ray is imported only by the Ray executor, when
it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sim.events import RepOutcome, SweepEvents
from sim.rundir.layout import RepRun
from sim.sweep.executors.base import (
    LOCAL_HOST,
    Executor,
    ExecutorError,
    LocalExecutor,
    ProgressFn,
    RunOne,
)

__all__ = [
    "EXECUTORS",
    "LOCAL_HOST",
    "Executor",
    "ExecutorChoice",
    "ExecutorError",
    "LocalExecutor",
    "PointRuns",
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


class PointRuns(Protocol):
    """The sweep's own ways of running one point: what an executor is bound to."""

    def run_one(self, rep: RepRun, progress: ProgressFn | None) -> RepOutcome:
        """Run ``rep`` here, from a clean directory, and say how it ended."""
        ...

    def prepare(self, rep: RepRun) -> Path:
        """Write ``rep``'s clean directory and spec (for executors that run it elsewhere)."""
        ...


def build_executor(choice: ExecutorChoice, runs: PointRuns) -> Executor:
    """The executor ``choice`` names, bound to the sweep's ways of running a point."""
    if choice.name == "ray":
        # the ray executor (its host side, transfers) loads only when ray is chosen
        from sim.sweep.executors.ray_driver import RayExecutor

        return RayExecutor(runs.prepare, choice.address, choice.retries)
    return LocalExecutor(runs.run_one)


def preflight(choice: ExecutorChoice) -> None:
    """ExecutorError (one line) now, before a run directory is touched, when the chosen
    executor cannot work: Ray not installed, or no cluster answering at the address."""
    if choice.name != "ray":
        return
    # the ray executor (its host side, transfers) loads only when ray is chosen
    from sim.sweep.executors.ray_driver import RayExecutor

    RayExecutor(lambda rep: rep.dir, choice.address, choice.retries).preflight()
