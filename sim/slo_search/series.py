"""A series of a search: one combination of the config's other axes, searched on its own.

Its own module so that the driver (which makes and runs them) and the report (which
words them) both read it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sim.config import ExperimentConfig
    from sim.slo_search.slo import Verdict
    from sim.slo_search.strategy import Strategy

__all__ = ["Series"]


@dataclass
class Series:
    """One combination of the other axes, searched on its own."""

    axes: dict[str, Any]
    config: ExperimentConfig
    strategy: Strategy
    #: value -> point index
    points: dict[float, int] = field(default_factory=dict)
    verdicts: dict[float, Verdict] = field(default_factory=dict)
    #: Axes named in the label: those that differ between series (the variant always).
    shown: tuple[str, ...] = ("variant",)

    @property
    def label(self) -> str:
        parts = [
            f"{v}" if k == "variant" else f"{k}={v}"
            for k, v in self.axes.items()
            if k in self.shown
        ]
        return ", ".join(parts) or "default"
