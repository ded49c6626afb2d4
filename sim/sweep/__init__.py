"""Sweeps: every grid point × repeat in its own child process and directory, resumable.

``layout`` says where a point run lives and when it counts as finished,
``identity`` what makes a resume safe, ``child`` what runs in the child process,
``runner`` how the parent starts, watches and records one, and ``combine`` how
finished runs become the run's top-level tables.

The names below are imported on first use (module ``__getattr__``): a point child
imports ``sim.sweep.child``, which imports this package first, and needs neither the
parent's runner nor the combined tables (kvsim bench startup).
"""

from __future__ import annotations

from importlib import import_module

#: name -> the module it lives in
_NAMES = {
    "RepOutcome": "sim.events",
    "Combiner": "sim.rundir.combine",
    "aggregate_repeats": "sim.rundir.combine",
    "POINTS_DIR": "sim.rundir.layout",
    "RepRun": "sim.rundir.layout",
    "read_status": "sim.rundir.layout",
    "rep_runs": "sim.rundir.layout",
    "config_hash": "sim.sweep.identity",
    "config_identity": "sim.sweep.identity",
    "first_difference": "sim.sweep.identity",
    "CHILD_COMMAND": "sim.sweep.runner",
    "run_rep": "sim.sweep.runner",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> object:
    if name in _NAMES:
        return getattr(import_module(_NAMES[name]), name)
    raise AttributeError(f"module 'sim.sweep' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
