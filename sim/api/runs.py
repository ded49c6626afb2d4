"""Run directories from Python: open one (finished or not) and read its points and requests.

A :class:`Run` is a directory that ``kvsim run`` (or :meth:`Experiment.run`)
wrote. Its tables are read when first asked for and kept; nothing is written
except by :meth:`Run.compare` / :meth:`Run.plot` when told where.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sim.api.reports import Report, compare, plot
from sim.errors import UsageError
from sim.rundir.numbers import typed_row

if TYPE_CHECKING:
    from sim.rundir.reader import RunResults
    from sim.sweep.session import SweepOutcome

__all__ = ["Run", "open_run"]


class Run:
    """A run directory and its results.

    ``outcome`` is set when this process ran it (how many requests failed, the
    harness's noise floor, which point runs did not finish); a run opened with
    :func:`open_run` has ``outcome is None`` and reads everything from its files.
    """

    def __init__(self, path: str | Path, outcome: SweepOutcome | None = None) -> None:
        self.dir = Path(path)
        self.outcome = outcome
        self._results: RunResults | None = None

    def __repr__(self) -> str:
        return f"Run({str(self.dir)!r})"

    @property
    def results(self) -> RunResults:
        """The directory read back (manifest, summary, tables); RunDirError if unusable."""
        if self._results is None:
            # the run directory's code: not at import sim
            from sim.rundir.reader import load_results

            self._results = load_results(self.dir)
        return self._results

    @property
    def manifest(self) -> dict[str, Any]:
        """``manifest.json``: config, hash, machine, status, sessions."""
        return self.results.manifest

    @property
    def axes(self) -> list[str]:
        """Axis columns of the sweep, in order (always variant and workers)."""
        return self.results.axes

    @property
    def complete(self) -> bool:
        """Every planned point run finished."""
        return self.manifest.get("status") == "complete"

    @property
    def points(self) -> list[dict[str, Any]]:
        """``summary.csv``: one row per finished point (aggregated over repeats), its
        figures as numbers (int or float; None for an empty cell), words as text."""
        return self.table("summary")

    def requests(self) -> list[dict[str, Any]]:
        """``requests.csv``: one row per request of every point, typed as :attr:`points`."""
        return self.table("requests")

    def table(self, stem: str) -> list[dict[str, Any]]:
        """Rows of ``<stem>.csv`` (``summary``, ``summary_repeats``, ``steps``, …), typed as
        :attr:`points`; empty when absent."""
        rows = self.results.summary if stem == "summary" else self.results.table(stem)
        return [typed_row(r) for r in rows]

    def frame(self, stem: str = "summary") -> Any:
        """:meth:`table` as a DataFrame: pandas when installed, else polars (kvsim needs
        neither; UsageError when both are missing)."""
        rows = self.table(stem)
        for library in ("pandas", "polars"):
            try:
                module = importlib.import_module(library)
            except ImportError:
                continue
            return module.DataFrame(rows)
        raise UsageError(
            f"Run.frame({stem!r}) needs pandas or polars (pip install pandas); "
            "Run.table gives the same rows as dicts"
        )

    def warnings(self, by: str = "variant") -> list[str]:
        """How the run falls short of what its config planned, and where a comparison by
        ``by`` would set points measured on different hardware side by side (empty: none).

        RunDirError when its points were measured with different code."""
        from sim.analysis.completeness import completeness_warnings  # numpy: not at import sim
        from sim.analysis.hosts import host_warnings  # numpy: not at import sim

        return completeness_warnings(self.results) + host_warnings(self.results, by)

    def compare(
        self,
        by: str = "variant",
        baseline: str | None = None,
        metrics: Sequence[str] | None = None,
        *,
        bootstrap: int = 2000,
        seed: int = 0,
    ) -> Report:
        """Values of axis ``by`` side by side, intervals over repeats; see :func:`sim.compare`."""
        return compare(self, by, baseline, metrics, bootstrap=bootstrap, seed=seed)

    def plot(
        self,
        out: str | Path | None = None,
        x: str | None = None,
        *,
        seed: int = 0,
        force: bool = False,
    ) -> list[Path]:
        """Draw the run's figures (PNG) into ``out`` (default ``<run>/figures``); see
        :func:`sim.plot`."""
        return plot(self, out, x, seed=seed, force=force)


def open_run(path: str | Path) -> Run:
    """Open a run directory; RunDirError (one line) when it holds no usable kvsim run."""
    run = Run(path)
    run.results  # noqa: B018 - read now, so a bad directory fails here and not later
    return run
