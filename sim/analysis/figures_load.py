"""Figures of latency against load: the hockey stick and the tail (CCDF).

* :func:`latency_vs_rate` — p50 and p99 load latency and the achieved rate against
  the offered rate, a column of panels per variant (small multiples; a line per value
  of any other axis that varies),
  with the harness noise floor (its own p99 latency) as a grey band: a latency
  inside the band is the harness, not the connector. The offered rate is the
  measured rate of the planned arrivals (``offered_rps``) when the run has it,
  else the swept ``rate_rps``; the achieved rate is ``achieved_rps`` (or
  ``throughput_rps`` for older runs).
* :func:`latency_ccdf` — 1 − CDF of load latency on log-log axes, so that the
  last percent of requests, invisible on a CDF, has room.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim import columns
from sim.analysis.figures import _MARKERS, _MAX_PANELS, _colour, _grid, _short
from sim.analysis.layout import Layout, label, rows_by_point
from sim.rundir.reader import RunResults, as_float, column

__all__ = [
    "RATE_AXES",
    "latency_ccdf",
    "latency_vs_rate",
    "panel_axis",
    "plain_log_x",
    "rate_axis",
]

#: Axes that are an offered rate, in the order they are looked for.
RATE_AXES = ("rate_rps",)


def rate_axis(res: RunResults) -> str | None:
    """The swept rate axis of this run (two values or more), else None."""
    for a in RATE_AXES:
        if a in res.axes and len({r.get(a) for r in res.summary}) > 1:
            return a
    return None


def _varying(res: RunResults, axes: list[str]) -> list[str]:
    return [a for a in axes if len({r.get(a, "") for r in res.summary}) > 1]


def plain_log_x(ax: Any) -> None:
    """Log x with ticks written as plain numbers (50, 100, 200), no minor labels.

    Ticks only at powers of ten left a tail that spans less than a decade (40-300 ms)
    with one label ("100"): the ticks are as dense as the data's span needs (1-2-5 within
    three decades, every digit within one). Call it after the data is drawn.
    """
    from matplotlib.ticker import (  # heavy: matplotlib loads only when a figure is drawn
        FuncFormatter,
        LogLocator,
        NullFormatter,
    )

    ax.set_xscale("log")
    lo, hi = ax.dataLim.intervalx
    span = hi / lo if lo > 0 and np.isfinite(hi / lo) else math.inf
    subs = (1.0,) if span > 1000 else (1.0, 2.0, 5.0) if span > 10 else tuple(range(1, 10))
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def panel_axis(varying: list[str]) -> str | None:
    """The axis that splits a figure into small multiples: the variant when it varies,
    else the first axis that does (None: one panel). A dozen series on one pair of axes,
    under a legend as large, could not be read apart."""
    if "variant" in varying:
        return "variant"
    return varying[0] if varying else None


def latency_vs_rate(plt: Any, res: RunResults, rate: str) -> Any:
    """Small multiples, one column per variant (or the first other axis that varies): top,
    p50 (dashed) and p99 (solid) latency vs offered rate, with the harness noise floor as a
    band; bottom, achieved vs offered rate. A line per value of the remaining axes; the
    rows share their y axis, so the columns compare at a glance."""
    varying = _varying(res, [a for a in res.axes if a != rate])
    split = panel_axis(varying)
    line_axes = [a for a in varying if a != split]
    panels = list(dict.fromkeys(r.get(split, "") for r in res.summary)) if split else [""]
    panels = panels[:_MAX_PANELS]
    has_offered = any(np.isfinite(as_float(r.get(columns.OFFERED_RPS.name))) for r in res.summary)
    achieved_col = (
        columns.ACHIEVED_RPS.name
        if any(np.isfinite(as_float(r.get(columns.ACHIEVED_RPS.name))) for r in res.summary)
        else columns.THROUGHPUT_RPS.name
    )
    cols = len(panels)
    fig, grid = plt.subplots(
        2, cols, figsize=(max(6.5, 4.3 * cols), 7.6), sharex=True, sharey="row", squeeze=False
    )
    all_x: list[float] = []
    for col, panel in enumerate(panels):
        top, bottom = grid[0][col], grid[1][col]
        rows = [r for r in res.summary if not split or r.get(split, "") == panel]
        keys = list(dict.fromkeys(res.key(r, line_axes) for r in rows)) if line_axes else [()]
        band: dict[float, float] = {}
        for li, key in enumerate(keys):
            mine = [r for r in rows if not line_axes or res.key(r, line_axes) == key]
            pts = sorted(
                p for p in (_rate_point(r, rate, has_offered, achieved_col) for r in mine)
                if np.isfinite(p[0])
            )  # fmt: skip
            if not pts:
                continue
            x, p50, p99, got, floor = (np.array(v) for v in zip(*pts, strict=True))
            all_x += list(x)
            for fx, fy in zip(x, floor, strict=True):
                if np.isfinite(fy):
                    band[fx] = max(band.get(fx, 0.0), fy)  # the worst point at that rate
            name = label(line_axes, key) if line_axes else ""
            style = {"color": _colour(li), "marker": _MARKERS[li % len(_MARKERS)], "ms": 5}
            top.plot(x, p99, "-", label=f"{name} p99".strip(), **style)
            top.plot(x, p50, "--", alpha=0.7, label=f"{name} p50".strip(),
                     **{**style, "mfc": "white"})  # fmt: skip
            bottom.plot(x, got, "-", label=name or "achieved", **style)
        if band:
            bx = np.array(sorted(band))
            top.fill_between(
                bx, 0, [band[v] for v in bx], color="grey", alpha=0.2, lw=0,
                label="harness noise floor (p99 of a no-op request)",
            )  # fmt: skip
        top.set_title(label([split], [panel]) if split else "")
        top.legend(loc="upper left", fontsize=8)
    if all_x:
        lo, hi = min(all_x), max(all_x)
        # Many points, so that the diagonal stays y = x on a log x axis as well.
        diag = np.geomspace(lo, hi, 64) if lo > 0 else np.linspace(lo, hi, 64)
        for bottom in grid[1]:
            bottom.plot(diag, diag, ":", color="grey", label="achieved = offered")
        grid[1][0].legend(loc="upper left", fontsize=8)
    log = bool(all_x) and min(all_x) > 0 and max(all_x) / min(all_x) >= 8
    xlabel = "offered rate (req/s" + (", measured)" if has_offered else ", configured)")
    for ax in (*grid[0], *grid[1]):
        if log:
            plain_log_x(ax)
        ax.margins(x=0.05, y=0.08)
        ax.set_ylim(bottom=0)
    for bottom in grid[1]:
        bottom.set_xlabel(xlabel)
    grid[0][0].set_ylabel("load latency (ms; p99 solid, p50 dashed)")
    grid[1][0].set_ylabel(f"achieved rate (req/s, {achieved_col})")
    fig.suptitle("Latency and achieved rate against offered load")
    fig.tight_layout()
    return fig


def _rate_point(
    r: dict[str, str], rate: str, has_offered: bool, achieved_col: str
) -> tuple[float, float, float, float, float]:
    """(offered, p50, p99, achieved, noise floor p99) of one summary row."""
    x = as_float(r.get(columns.OFFERED_RPS.name)) if has_offered else np.nan
    x = x if np.isfinite(x) else as_float(r.get(rate))
    return (
        x,
        as_float(r.get(columns.LATENCY_P50_MS.name)),
        as_float(r.get(columns.LATENCY_P99_MS.name)),
        as_float(r.get(achieved_col)),
        as_float(r.get(columns.NOISE_FLOOR_P99_MS.name)),
    )


def latency_ccdf(plt: Any, res: RunResults, layout: Layout) -> Any:
    """1 − CDF of latency per point, log-log, one panel per value of the panel axes."""
    panels = layout.keys(res, layout.panel_axes)[:12]
    line_axes = ["variant"] + ([layout.x] if layout.x != "variant" else [])
    lines = layout.keys(res, line_axes)
    points = rows_by_point(res.table("requests"), res)
    fig, axs = _grid(plt, len(panels), "Load latency tail: fraction of requests slower than x")
    for ax, panel in zip(axs, panels, strict=False):
        at = dict(zip(layout.panel_axes, panel, strict=True))
        for li, line in enumerate(lines):
            at.update(zip(line_axes, line, strict=True))
            lat = column(points.get(layout.point(**at), []), columns.LATENCY_MS.name)
            lat = np.sort(lat[np.isfinite(lat) & (lat > 0)])
            if lat.size == 0:
                continue
            surv = 1.0 - np.arange(lat.size) / lat.size  # P(latency >= x), never 0
            ax.step(
                lat, surv, where="post", color=_colour(li),
                label=f"{_short(res, line_axes, line)} (n={lat.size})",
            )  # fmt: skip
        plain_log_x(ax)
        ax.set_yscale("log")
        ax.set_xlabel("load latency (ms)")
        ax.set_ylabel("fraction of requests ≥ x")
        for q in (0.1, 0.01, 0.001):
            ax.axhline(q, color="grey", lw=0.6, ls=":")
        ax.set_title(label(layout.panel_axes, panel) if layout.panel_axes else "")
        ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig
