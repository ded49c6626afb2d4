"""Where the point runs of a sweep execute: the contract every executor keeps.

The sweep (``sim.sweep.experiment``) decides WHAT runs — the point × repeat runs
not yet done — and records results as they come; an executor decides WHERE and
WHEN each runs. Whatever the executor, each run is the same child process
(``python -m sim.sweep.child SPEC``), and when the executor reports a run as
finished its directory under ``RUN/points/`` holds exactly what a local child
would have left there, ``status.json`` last. So resume, combine and analysis
never need to know which executor ran a point.

On Ctrl-C (KeyboardInterrupt) or SIGTERM an executor stops what it started,
marks every run it had not finished ``interrupted``, reports each, and re-raises.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from sim.errors import KvsimError
from sim.events import RepOutcome, SweepEvents
from sim.process.signals import deferred_signals
from sim.rundir.layout import RepRun

__all__ = [
    "LOCAL_HOST",
    "Executor",
    "ExecutorError",
    "LocalExecutor",
    "RunOne",
]

#: Host label of runs done by the local executor (the driver's own machine).
LOCAL_HOST = "local"

ProgressFn = Callable[[int, int], None]
#: Runs one point × repeat here, from a clean directory, and says how it ended.
RunOne = Callable[[RepRun, "ProgressFn | None"], RepOutcome]


class ExecutorError(KvsimError):
    """The executor cannot run the sweep at all (no cluster, no worker host): one line.

    Exit code 2: like a config, it is fixed before anything is measured."""

    exit_code: ClassVar[int] = 2


class Executor(Protocol):
    """Runs a list of point × repeat runs, reporting each through ``events``."""

    #: Short name recorded in the manifest (``local``, ``ray``).
    name: str

    def run(self, reps: Sequence[RepRun], events: SweepEvents) -> None: ...


class LocalExecutor:
    """One run after the other on this machine: the default, and the reference."""

    name = "local"

    def __init__(self, run_one: RunOne) -> None:
        self._run_one = run_one

    def run(self, reps: Sequence[RepRun], events: SweepEvents) -> None:
        for rep in reps:
            events.started(rep, LOCAL_HOST)

            def progress(done: int, total: int, rep: RepRun = rep) -> None:
                events.progress(rep, done, total)

            try:
                outcome = self._run_one(rep, progress)
            except BaseException:
                with deferred_signals():  # record the run's end even on a second Ctrl-C
                    events.finished(rep, None)
                raise
            events.finished(rep, outcome)
