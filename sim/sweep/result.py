"""What a finished (or interrupted) sweep hands back to its caller."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["ExperimentResult"]


class ExperimentResult:
    def __init__(
        self,
        out_dir: Path,
        rows: list[dict[str, Any]],
        repeat_rows: list[dict[str, Any]],
        axes: list[str],
        skipped: int = 0,
        incomplete: int = 0,
    ) -> None:
        self.out_dir = out_dir
        #: One row per point, aggregated over repeats (the rows of summary.csv).
        self.summary_rows = rows
        #: One row per point × repeat (the rows of summary_repeats.csv).
        self.repeat_rows = repeat_rows
        self.axes = axes
        #: Point runs found finished and not run again (resume).
        self.skipped = skipped
        #: Point runs that neither finished nor failed (interrupted, never started or
        #: damaged): they have no row in ``summary_rows``, yet the sweep is not whole.
        self.incomplete = incomplete

    @property
    def crashed_points(self) -> list[dict[str, Any]]:
        """Points with at least one repeat that did not finish (status failed or partial)."""
        return [r for r in self.summary_rows if r.get("status") != "ok"]

    @property
    def empty_points(self) -> list[dict[str, Any]]:
        """Points that finished but completed no request."""
        return [r for r in self.summary_rows if r.get("status") == "ok" and not r.get("ok")]

    @property
    def failed_points(self) -> list[dict[str, Any]]:
        return [*self.crashed_points, *self.empty_points]
