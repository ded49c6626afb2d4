"""Sweeps: every grid point × repeat in its own child process and directory, resumable.

``layout`` says where a point run lives and when it counts as finished,
``identity`` what makes a resume safe, ``child`` what runs in the child process,
``runner`` how the parent starts, watches and records one, and ``combine`` how
finished runs become the run's top-level tables.
"""

from __future__ import annotations

from sim.events import RepOutcome
from sim.rundir.combine import Combiner, aggregate_repeats
from sim.rundir.layout import POINTS_DIR, RepRun, read_status, rep_runs
from sim.sweep.identity import config_hash, config_identity, first_difference
from sim.sweep.runner import CHILD_COMMAND, run_rep

__all__ = [
    "CHILD_COMMAND",
    "POINTS_DIR",
    "Combiner",
    "RepOutcome",
    "RepRun",
    "aggregate_repeats",
    "config_hash",
    "config_identity",
    "first_difference",
    "read_status",
    "rep_runs",
    "run_rep",
]
