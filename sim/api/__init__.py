"""kvsim's Python API: the same experiments, runs and comparisons as the CLI, without files.

``sim.load`` / ``sim.build`` make an :class:`Experiment`; ``Experiment.plan`` and
``Experiment.run`` plan and run it; ``sim.open_run`` reads a run directory;
``sim.compare`` and ``sim.plot`` analyse one; ``sim.check`` checks a variant
against the reference. The ``kvsim`` commands are thin
layers over these functions. Everything is imported when first used, so
``import sim`` stays fast.
"""

from __future__ import annotations

from sim.api.check import check
from sim.api.experiments import Experiment, Overrides, build, load
from sim.api.reports import Report, compare, plot
from sim.api.runs import Run, open_run
from sim.api.search import SearchResult, search

__all__ = [
    "Experiment",
    "Overrides",
    "Report",
    "Run",
    "SearchResult",
    "build",
    "check",
    "compare",
    "load",
    "open_run",
    "plot",
    "search",
]
