"""kvsim's Python API: the same experiments, runs and comparisons as the CLI, without files.

``sim.load`` / ``sim.build`` make an :class:`Experiment`; ``Experiment.plan`` and
``Experiment.run`` plan and run it; ``sim.open_run`` reads a run directory;
``sim.compare`` and ``sim.plot`` analyse one; ``sim.check`` checks a variant
against the reference; ``sim.search`` finds the highest
rate (or best worker count) meeting an SLO, ``sim.validate_model`` measures the
model's error against real runs, and ``sim.calibrate`` measures what model mode
needs. The ``kvsim`` commands are thin layers over these functions: each turns
its arguments into one frozen ``XArgs`` of the module it calls (``RunArgs`` in
run_config, ``CompareArgs`` in compare_runs, …), calls it, and prints. Everything
is imported when first used, so ``import sim`` stays fast.
"""

from __future__ import annotations

from sim.api.calibrate import calibrate
from sim.api.check import check
from sim.api.experiments import Experiment, Overrides, build, load
from sim.api.reports import Report, compare, plot
from sim.api.runs import Run, open_run
from sim.api.search import SearchResult, search
from sim.api.validate_model import Validation, validate_model

__all__ = [
    "Experiment",
    "Overrides",
    "Report",
    "Run",
    "SearchResult",
    "Validation",
    "build",
    "calibrate",
    "check",
    "compare",
    "load",
    "open_run",
    "plot",
    "search",
    "validate_model",
]
