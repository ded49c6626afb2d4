"""``hold_stages.png``: the mean GIL hold per request as a stacked bar per point.

One bar per point of the run (variant and every other axis), stacked keys,
addresses, free and gc from requests.csv's ``hold_<stage>_ms`` columns, so the
bar's height is the mean ``gil_hold_ms``; the number on top is that total and
the gc share. Drawn by ``kvsim plot`` when the run recorded stages.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim import columns
from sim.analysis.layout import Layout, label, rows_by_point
from sim.rundir.reader import RunResults, column

__all__ = ["STAGE_COLOURS", "has_stage_columns", "hold_stages"]

#: requests.csv column -> (legend label, colour).
STAGE_COLOURS = {
    columns.HOLD_KEYS_MS.name: ("keys (chunk list, store keys)", "#8c8c8c"),
    columns.HOLD_ADDRESSES_MS.name: ("addresses (the variant)", "#1f77b4"),
    columns.HOLD_FREE_MS.name: ("free (results dropped)", "#2ca02c"),
    columns.HOLD_GC_MS.name: ("garbage collection", "#d62728"),
}


def has_stage_columns(res: RunResults) -> bool:
    rows = res.table("requests")
    return bool(rows) and columns.HOLD_KEYS_MS.name in rows[0]


def hold_stages(plt: Any, res: RunResults, layout: Layout) -> Any:
    """Stacked bars of the mean hold by stage, one per point."""
    points = rows_by_point(res.table("requests"), res)
    keys = layout.keys(res, res.axes)
    fig, ax = plt.subplots(figsize=(min(max(8.0, 0.8 * len(keys) + 5), 18), 5.0))
    bottoms = np.zeros(len(keys))
    means = {
        col: np.array([_mean(column(points.get(k, []), col)) for k in keys])
        for col in STAGE_COLOURS
    }
    xs = np.arange(len(keys))
    for col, (name, colour) in STAGE_COLOURS.items():
        ax.bar(xs, means[col], 0.7, bottom=bottoms, label=name, color=colour)
        bottoms = bottoms + means[col]
    for x, total, gc_ms in zip(xs, bottoms, means[columns.HOLD_GC_MS.name], strict=True):
        if total > 0:
            ax.annotate(
                f"{total:.1f} ms\ngc {gc_ms / total:.0%}",
                (x, total),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 2),
                textcoords="offset points",
            )
    varying = [a for a in res.axes if len({r.get(a, "") for r in res.summary}) > 1]
    shown = varying or list(res.axes[:1])
    at = [res.axes.index(a) for a in shown]
    names = [label(shown, [k[i] for i in at]).replace(", ", "\n") for k in keys]
    tilt = len(keys) > 6
    ax.set_xticks(xs, names, rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.set_ylabel("GIL hold per request, mean (ms)")
    ax.set_title("Where the GIL hold goes: mean hold per request by stage")
    ax.set_ylim(0, max(1e-9, float(bottoms.max(initial=0.0))) * 1.25)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    return fig


def _mean(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else 0.0
