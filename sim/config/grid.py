"""The size of a sweep's grid, refused past ``limits.max_points`` before it is expanded.

A grid of 8 axes × 12 values is 430 million points: the loader counts them from the
axes' lengths before a point is built. The other estimates of what a config would
cost need its points planned, and live above config (sim.preflight.budget).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sim.errors import ConfigError

__all__ = ["check_grid"]


def check_grid(where: str, sweep: Mapping[str, Sequence[Any]], repeats: int, limits: Any) -> int:
    """Points × repeats of a sweep, from its axes' lengths; ConfigError past max_points."""
    points = math.prod(len(v) for v in sweep.values())
    runs = points * repeats
    if runs > limits.max_points:
        sizes = " × ".join(str(len(v)) for v in sweep.values()) or "1"
        raise ConfigError(
            f"{where}: sweep: {sizes} = {points} point(s) × {repeats} repeat(s) = {runs} point "
            f"runs, past limits.max_points ({limits.max_points}); sweep fewer values or raise "
            "limits.max_points"
        )
    return runs
