"""What a running sweep tells whoever watches it: the one way its callbacks travel.

A sweep reports four things — a point run started (and on which host), a point
run's requests advanced, a point run ended, and a note that is not a result (a
retry, a lost host, the worker pool it chose). They travel together as one
:class:`SweepEvents` (``sim.SweepEvents``) from the caller (``kvsim run``'s
progress bar, the Ray host display, ``kvsim search``, ``kvsim validate-model``,
a Python script) through ``sim.sweep.session`` and the sweep to the executor, so
a new event is one field here, not a parameter on every signature in between
(docs/design.md §5). It sits below the sweep (it names a point run's directory,
sim.rundir.layout.RepRun, for types only), so ``import sim`` can offer it without
loading the sweep; how a point run ended (:class:`RepOutcome`) is defined here, with
the event that carries it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: the run directory's layout loads with the sweep
    from sim.rundir.layout import RepRun

__all__ = ["RepOutcome", "SweepEvents"]


@dataclass(frozen=True)
class RepOutcome:
    """How one point run ended: ``ok`` or ``failed`` (with its one-line error), and its
    wall time."""

    status: str
    error: str
    elapsed_s: float


def _ignore(*_args: object) -> None:
    """An event nobody listens to."""


@dataclass(frozen=True)
class SweepEvents:
    """The observer of a sweep; every event is optional (unset: ignored).

    All are called in the driver's main thread, whatever the executor.
    ``SweepEvents(finished=lambda rep, outcome: print(rep.label, outcome.status))``
    """

    #: A point run started on a host (its label; ``local`` for a run on this machine).
    started: Callable[[RepRun, str], None] = _ignore
    #: Requests done / planned of a running point run (runs may overlap on Ray).
    progress: Callable[[RepRun, int, int], None] = _ignore
    #: A point run ended. An executor passes ``None`` for a run it interrupted (its
    #: directory then says ``interrupted``); the sweep tells its own watcher only of
    #: runs that ended with an outcome.
    finished: Callable[[RepRun, RepOutcome | None], None] = _ignore
    #: Something the user should know that is not a run's result (a retry, a lost host).
    note: Callable[[str], None] = _ignore
