"""Figures of latency against load: the hockey stick and the tail (CCDF).

* :func:`latency_vs_rate` — p50 and p99 load latency and the achieved rate against
  the offered rate, one line per series (variant and any other axis that varies),
  with the harness noise floor (its own p99 latency) as a grey band: a latency
  inside the band is the harness, not the connector. The offered rate is the
  measured rate of the planned arrivals (``offered_rps``) when the run has it,
  else the swept ``rate_rps``; the achieved rate is ``achieved_rps`` (or
  ``throughput_rps`` for older runs).
* :func:`latency_ccdf` — 1 − CDF of load latency on log-log axes, so that the
  last percent of requests, invisible on a CDF, has room.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim.analysis.layout import Layout, label, rows_by_point
from sim.rundir.reader import RunResults, as_float, column

__all__ = ["RATE_AXES", "latency_ccdf", "latency_vs_rate", "plain_log_x", "rate_axis"]

#: Axes that are an offered rate, in the order they are looked for.
RATE_AXES = ("rate_rps",)

_MARKERS = "osD^vP*Xh"


def _colour(i: int) -> Any:
    import matplotlib

    return matplotlib.colormaps["tab10"](i % 10)


def rate_axis(res: RunResults) -> str | None:
    """The swept rate axis of this run (two values or more), else None."""
    for a in RATE_AXES:
        if a in res.axes and len({r.get(a) for r in res.summary}) > 1:
            return a
    return None


def _varying(res: RunResults, axes: list[str]) -> list[str]:
    return [a for a in axes if len({r.get(a, "") for r in res.summary}) > 1]


def plain_log_x(ax: Any) -> None:
    """Log x with ticks written as plain numbers (50, 100, 200), no minor labels."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())


def latency_vs_rate(plt: Any, res: RunResults, rate: str) -> Any:
    """Left: p50 (dashed) and p99 (solid) latency vs offered rate; right: achieved vs offered."""
    series_axes = _varying(res, [a for a in res.axes if a != rate]) or ["variant"]
    series = list(dict.fromkeys(res.key(r, series_axes) for r in res.summary))
    has_offered = any(np.isfinite(as_float(r.get("offered_rps"))) for r in res.summary)
    achieved_col = (
        "achieved_rps"
        if any(np.isfinite(as_float(r.get("achieved_rps"))) for r in res.summary)
        else "throughput_rps"
    )
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.0, 5.0))
    all_x, floor_x, floor_y = [], [], []
    for si, key in enumerate(series):
        rows = [r for r in res.summary if res.key(r, series_axes) == key]
        pts = []
        for r in rows:
            x = as_float(r.get("offered_rps")) if has_offered else np.nan
            x = x if np.isfinite(x) else as_float(r.get(rate))
            pts.append(
                (
                    x,
                    as_float(r.get("latency_p50_ms")),
                    as_float(r.get("latency_p99_ms")),
                    as_float(r.get(achieved_col)),
                    as_float(r.get("noise_floor_p99_ms")),
                )
            )
        pts = sorted(p for p in pts if np.isfinite(p[0]))
        if not pts:
            continue
        x, p50, p99, got, floor = (np.array(v) for v in zip(*pts, strict=True))
        all_x += list(x)
        floor_x += list(x)
        floor_y += list(floor)
        name = label(series_axes, key)
        style = {"color": _colour(si), "marker": _MARKERS[si % len(_MARKERS)], "ms": 5}
        left.plot(x, p99, "-", label=f"{name} p99", **style)
        left.plot(x, p50, "--", alpha=0.7, label=f"{name} p50", **{**style, "mfc": "white"})
        right.plot(x, got, "-", label=name, **style)
    band: dict[float, float] = {}
    for fx, fy in zip(floor_x, floor_y, strict=True):
        if np.isfinite(fy):
            band[fx] = max(band.get(fx, 0.0), fy)  # the worst point measured at that rate
    if band:
        bx = np.array(sorted(band))
        left.fill_between(
            bx, 0, [band[v] for v in bx], color="grey", alpha=0.2, lw=0,
            label="harness noise floor (p99 of a no-op request)",
        )  # fmt: skip
    if all_x:
        lo, hi = min(all_x), max(all_x)
        # Many points, so that the diagonal stays y = x on a log x axis as well.
        diag = np.geomspace(lo, hi, 64) if lo > 0 else np.linspace(lo, hi, 64)
        right.plot(diag, diag, ":", color="grey", label="achieved = offered")
    log = bool(all_x) and min(all_x) > 0 and max(all_x) / min(all_x) >= 8
    xlabel = "offered rate (req/s" + (", measured)" if has_offered else ", configured)")
    for ax in (left, right):
        if log:
            plain_log_x(ax)
        ax.set_xlabel(xlabel)
        ax.margins(x=0.05, y=0.08)
        ax.set_ylim(bottom=0)
    left.set_ylabel("load latency (ms)")
    left.set_title("Latency against offered load (p99 solid, p50 dashed)")
    right.set_ylabel(f"achieved rate (req/s, {achieved_col})")
    right.set_title("Achieved against offered rate")
    left.legend(loc="upper left", fontsize=8)
    right.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def latency_ccdf(plt: Any, res: RunResults, layout: Layout) -> Any:
    """1 − CDF of latency per point, log-log, one panel per value of the panel axes."""
    from sim.analysis.figures import _grid, _short

    panels = layout.keys(res, layout.panel_axes)[:12]
    line_axes = ["variant"] + ([layout.x] if layout.x != "variant" else [])
    lines = layout.keys(res, line_axes)
    points = rows_by_point(res.table("requests"), res)
    fig, axs = _grid(plt, len(panels), "Load latency tail: fraction of requests slower than x")
    for ax, panel in zip(axs, panels, strict=False):
        at = dict(zip(layout.panel_axes, panel, strict=True))
        for li, line in enumerate(lines):
            at.update(zip(line_axes, line, strict=True))
            lat = column(points.get(layout.point(**at), []), "latency_ms")
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
