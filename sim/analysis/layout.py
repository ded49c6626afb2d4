"""How a run's sweep axes map onto a figure: the x axis, the series, the panels.

The *x* axis is workers unless told otherwise (or the first numeric axis that
varies), the *series* every other axis (one line each), the *panels* every axis
but variant and x (one sub-plot each). Shared by every figure module
(``sim.analysis.figures``, ``figures_load``, ``stage_figure``) and by
``sim.analysis.plot``, which draws them; it imports no plotting library.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.rundir.reader import RunResults, as_float

__all__ = ["STYLE", "Layout", "axis_title", "choose_x_axis", "label", "rows_by_point"]

#: matplotlib rc settings every kvsim figure is drawn with.
STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 130,
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "legend.fontsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
}

_AXIS_TITLES = {
    "workers": "load threads (workers)",
    "clients": "concurrent clients",
    "hold_ms": "GIL hold per request, configured (ms)",
    "switch_interval_ms": "switch interval (ms)",
    "batch_size": "engine batch size (requests)",
}


def _is_number(v: str) -> bool:
    return not np.isnan(as_float(v))


def choose_x_axis(res: RunResults, wanted: str | None = None) -> str:
    """``wanted``, else workers when it varies, else the first numeric axis that varies."""
    if wanted:
        if wanted not in res.axes:
            raise ValueError(f"--x {wanted!r} is not an axis of this run: {', '.join(res.axes)}")
        return wanted
    values = {a: {r.get(a, "") for r in res.summary} for a in res.axes}
    if len(values.get("workers", ())) > 1:
        return "workers"
    for a in res.axes:
        if a != "variant" and len(values[a]) > 1 and all(_is_number(v) for v in values[a]):
            return a
    return "workers"


def axis_title(axis: str) -> str:
    return _AXIS_TITLES.get(axis, axis)


def label(axes: Sequence[str], key: Sequence[str]) -> str:
    """``numpy, workers=4``: the variant by its name, other axes as name=value."""
    parts = [v if a == "variant" else f"{a}={v}" for a, v in zip(axes, key, strict=True)]
    return ", ".join(parts) or "all"


def _sort_key(v: str) -> tuple[int, float, str]:
    x = as_float(v)
    return (0, x, "") if np.isfinite(x) else (1, 0.0, v)


@dataclass(frozen=True)
class Layout:
    """How the sweep axes of a run map onto figures."""

    axes: list[str]
    x: str

    @property
    def series_axes(self) -> list[str]:
        return [a for a in self.axes if a != self.x]

    @property
    def panel_axes(self) -> list[str]:
        return [a for a in self.axes if a not in ("variant", self.x)]

    def point(self, **values: str) -> tuple[str, ...]:
        return tuple(values[a] for a in self.axes)

    def x_values(self, res: RunResults) -> list[str]:
        return sorted({r.get(self.x, "") for r in res.summary}, key=_sort_key)

    def keys(self, res: RunResults, axes: Sequence[str]) -> list[tuple[str, ...]]:
        """Distinct value combinations of ``axes`` in point order."""
        return list(dict.fromkeys(res.key(r, list(axes)) for r in res.summary))


def rows_by_point(rows: list[dict[str, str]], res: RunResults) -> dict[tuple[str, ...], list]:
    out: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for r in rows:
        out.setdefault(res.key(r), []).append(r)
    return out
