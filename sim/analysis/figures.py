"""The figures of ``kvsim plot``, one function each; they return a matplotlib Figure.

Each takes pyplot (imported by ``sim.analysis.plot.plot_results`` with the Agg backend),
the run's results and its :class:`~sim.analysis.layout.Layout`. Labels name only the axes
that vary, so a figure of a two-axis sweep does not repeat a constant on every line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sim import columns
from sim.analysis.bootstrap import seeded_rng, stat_interval
from sim.analysis.layout import Layout, axis_title, label, rows_by_point
from sim.rundir.reader import RunResults, as_float, column

__all__ = ["engine_steps", "gil_hold", "latency_cdf", "p99_vs_x"]

_MAX_PANELS = 12
_MARKERS = "osD^vP*Xh"
_LINESTYLES = ("-", "--", ":", "-.")


def _colour(i: int) -> Any:
    import matplotlib  # heavy: matplotlib loads only when a figure is drawn

    return matplotlib.colormaps["tab10"](i % 10)


def _varying(res: RunResults, axes: Sequence[str]) -> list[str]:
    return [a for a in axes if len({r.get(a, "") for r in res.summary}) > 1]


def _short(res: RunResults, axes: Sequence[str], key: Sequence[str]) -> str:
    """Label of ``key`` naming only the axes that vary in this run."""
    keep = _varying(res, axes) or list(axes[:1])
    values = dict(zip(axes, key, strict=True))
    return label(keep, [values[a] for a in keep])


def _grid(plt: Any, n: int, title: str) -> tuple[Any, list[Any]]:
    cols = min(n, 3)
    rows = -(-n // cols)
    # Never smaller than the single-panel figures (7.8 x 5.0 in) beside it.
    size = (max(7.8, 4.8 * cols), max(5.0, 3.7 * rows))
    fig, axs = plt.subplots(rows, cols, figsize=size, squeeze=False)
    fig.suptitle(title)
    flat = list(axs.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _log_x(res: RunResults, layout: Layout) -> bool:
    """A log x axis when the swept values are positive and span a decade or more."""
    values = [as_float(v) for v in layout.x_values(res)]
    return (
        bool(values)
        and all(np.isfinite(values))
        and min(values) > 0
        and (max(values) / min(values) >= 10)
    )


def _x_ticks(ax: Any, res: RunResults, layout: Layout) -> None:
    """Ticks at the swept values themselves (1, 2, 4, 8 workers), when there are few."""
    values = [as_float(v) for v in layout.x_values(res)]
    if _log_x(res, layout):
        ax.set_xscale("log")
        ax.minorticks_off()
    if values and all(np.isfinite(values)) and len(values) <= 12:
        ax.set_xticks(values, [f"{v:g}" for v in values])


def _groups(rows: list[dict[str, str]], col: str) -> list[np.ndarray]:
    reps: dict[str, list[float]] = {}
    for r in rows:
        reps.setdefault(r.get("repeat", "0"), []).append(as_float(r.get(col)))
    return [np.asarray(v, dtype=float) for _, v in sorted(reps.items())]


def latency_cdf(plt: Any, res: RunResults, layout: Layout) -> Any:
    """One panel per value of the other axes; a line per variant and x value."""
    panels = layout.keys(res, layout.panel_axes)
    line_axes = ["variant"] + ([layout.x] if layout.x != "variant" else [])
    lines = layout.keys(res, line_axes)
    variants = list(dict.fromkeys(k[0] for k in lines))
    xs = layout.x_values(res)
    points = rows_by_point(res.table("requests"), res)
    title = "Load latency CDF"
    if len(panels) > _MAX_PANELS:
        title += f" (first {_MAX_PANELS} of {len(panels)} panels)"
    fig, axs = _grid(plt, min(len(panels), _MAX_PANELS), title)
    for ax, panel in zip(axs, panels, strict=False):
        at = dict(zip(layout.panel_axes, panel, strict=True))
        lats = []
        for line in lines:
            at.update(zip(line_axes, line, strict=True))
            lat = column(points.get(layout.point(**at), []), columns.LATENCY_MS.name)
            lat = np.sort(lat[np.isfinite(lat)])
            if lat.size == 0:
                continue
            lats.append(lat)
            xi = xs.index(line[1]) if len(line) > 1 else 0
            many = len(variants) > 1
            ax.step(
                lat,
                np.arange(1, lat.size + 1) / lat.size,
                where="post",
                color=_colour(variants.index(line[0]) if many else xi),
                ls=_LINESTYLES[xi % len(_LINESTYLES)] if many else "-",
                label=f"{_short(res, line_axes, line)} (n={lat.size})",
            )
        if lats and max(a.max() for a in lats) > 30 * max(min(a.min() for a in lats), 1e-3):
            ax.set_xscale("log")
        ax.set_title(label(layout.panel_axes, panel) if layout.panel_axes else "")
        ax.set_xlabel("load latency (ms)")
        ax.set_ylabel("fraction of requests")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def p99_vs_x(plt: Any, res: RunResults, layout: Layout, n_boot: int, seed: int) -> Any:
    """p99 latency against x, one line per series, 95% bootstrap intervals as error bars."""
    points = rows_by_point(res.table("requests"), res)
    series = layout.keys(res, layout.series_axes)
    xs = [as_float(v) for v in layout.x_values(res)]
    finite = [v for v in xs if np.isfinite(v)]
    # Dodge the series sideways a little so that their error bars do not hide each other.
    log = _log_x(res, layout)
    single = len(finite) <= 1
    # With one x value the series are set side by side around it (and the axis widened to
    # match), not dodged by a hair that autoscaling then stretches to the figure's edges.
    step = 0.015 if log else 0.12 if single else (max(finite) - min(finite)) * 0.012
    fig, ax = plt.subplots(figsize=(7.8, 5.0))
    for si, skey in enumerate(series):
        at = dict(zip(layout.series_axes, skey, strict=True))
        dodge = (si - (len(series) - 1) / 2) * step
        px, py, lo, hi = [], [], [], []
        for xv in layout.x_values(res):
            rows = points.get(layout.point(**at, **{layout.x: xv}))
            if not rows:
                continue
            ci = stat_interval(
                _groups(rows, columns.LATENCY_MS.name), "p99", n_boot, [seed, si, len(px)]
            )
            px.append(as_float(xv) * (1 + dodge) if log else as_float(xv) + dodge)
            py.append(ci.value)
            lo.append(max(ci.value - ci.low, 0.0) if np.isfinite(ci.low) else 0.0)
            hi.append(max(ci.high - ci.value, 0.0) if np.isfinite(ci.high) else 0.0)
        ax.errorbar(
            px,
            py,
            yerr=[lo, hi],
            marker=_MARKERS[si % len(_MARKERS)],
            capsize=3,
            color=_colour(si),
            label=_short(res, layout.series_axes, skey),
        )
    ax.set_xlabel(axis_title(layout.x))
    ax.set_ylabel("p99 load latency (ms)")
    ax.set_title(f"p99 load latency vs {layout.x} (bars: 95% bootstrap interval)")
    _x_ticks(ax, res, layout)
    if single and finite and not log:
        ax.set_xlim(finite[0] - 0.5, finite[0] + 0.5)
    else:
        ax.margins(x=0.08)
    ax.margins(y=0.1)  # room above the highest error bar
    ax.set_ylim(bottom=0)
    ax.legend(title=", ".join(_varying(res, layout.series_axes)) or None, loc="best")
    fig.tight_layout()
    return fig


def gil_hold(plt: Any, res: RunResults, layout: Layout) -> Any:
    """Box per point, grouped by everything but workers; colour = workers."""
    points = rows_by_point(res.table("requests"), res)
    inner_axis = "workers" if "workers" in _varying(res, res.axes) else None
    group_axes = [a for a in res.axes if a != inner_axis]
    groups = layout.keys(res, group_axes)
    inner = (
        sorted({r.get("workers", "") for r in res.summary}, key=as_float) if inner_axis else [""]
    )
    fig, ax = plt.subplots(figsize=(min(max(6.5, 0.45 * len(groups) * len(inner) + 3), 16), 5.0))
    centers = []
    for gi, gkey in enumerate(groups):
        at = dict(zip(group_axes, gkey, strict=True))
        base = gi * (len(inner) + 1)
        centers.append(base + (len(inner) + 1) / 2)
        for ii, w in enumerate(inner):
            if inner_axis:
                at[inner_axis] = w
            hold = column(points.get(layout.point(**at), []), columns.GIL_HOLD_MS.name)
            hold = hold[np.isfinite(hold)]
            if hold.size == 0:
                continue
            box = ax.boxplot(
                [hold],
                positions=[base + ii + 1],
                widths=0.75,
                patch_artist=True,
                showmeans=True,
                medianprops={"color": "black"},
                meanprops={"markerfacecolor": "black", "markeredgecolor": "black"},
            )
            box["boxes"][0].set_facecolor(_colour(ii if inner_axis else gi))
            box["boxes"][0].set_alpha(0.6)
    names = [_short(res, group_axes, g) for g in groups]
    ax.set_xticks(
        centers,
        names,
        rotation=30 if len(groups) > 6 else 0,
        ha="right" if len(groups) > 6 else "center",
    )
    ax.set_xlim(0, len(groups) * (len(inner) + 1))
    ax.set_ylabel("GIL hold per request (ms)")
    ax.set_title("GIL hold per request (box: quartiles, whiskers 1.5 IQR, ▲ mean)")
    ax.set_ylim(bottom=0)
    if inner_axis:
        handles = [
            plt.Rectangle((0, 0), 1, 1, color=_colour(i), alpha=0.6) for i in range(len(inner))
        ]
        ax.legend(handles, inner, title="workers", loc="best")
    fig.tight_layout()
    return fig


def _ratio_interval(
    load: np.ndarray, alone: np.ndarray, n_boot: int, rng: np.random.Generator
) -> tuple[float, float]:
    """95% bootstrap interval of p99(load) / p99(alone), both resampled: the baseline is a
    short phase (50 steps by default), whose p99 is nearly its maximum, so the same step
    p99 read 0.94x beside one point's baseline and 2.12x beside another's."""
    if alone.size < 2 or load.size < 2 or n_boot < 2:
        return math.nan, math.nan
    lo_idx = rng.integers(0, load.size, (n_boot, load.size))
    al_idx = rng.integers(0, alone.size, (n_boot, alone.size))
    ratios = np.percentile(load[lo_idx], 99, axis=1) / np.percentile(alone[al_idx], 99, axis=1)
    low, high = np.percentile(ratios[np.isfinite(ratios)], [2.5, 97.5])
    return float(low), float(high)


def engine_steps(
    plt: Any, res: RunResults, layout: Layout, n_boot: int = 1000, seed: int = 0
) -> Any | None:
    """Step p99 under load against the engine alone, and the inflation with its 95%
    bootstrap interval (the baseline's own spread included); None without steps."""
    steps = res.table("steps")
    if not steps or "step_ms" not in steps[0]:
        return None
    has_phase = "phase" in steps[0]
    by_point = rows_by_point(steps, res)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.5, 5.0))
    alone_all = []
    alone_n: list[int] = []
    rng = seeded_rng(seed)
    for si, skey in enumerate(layout.keys(res, layout.series_axes)):
        at = dict(zip(layout.series_axes, skey, strict=True))
        xs, p99, infl, below, above = [], [], [], [], []
        for xv in layout.x_values(res):
            rows = by_point.get(layout.point(**at, **{layout.x: xv}), [])
            load = column([r for r in rows if not has_phase or r.get("phase") == "load"], "step_ms")
            alone = column([r for r in rows if has_phase and r.get("phase") == "alone"], "step_ms")
            load, alone = load[np.isfinite(load)], alone[np.isfinite(alone)]
            if load.size == 0:
                continue
            xs.append(as_float(xv))
            p99.append(float(np.percentile(load, 99)))
            a99 = float(np.percentile(alone, 99)) if alone.size else np.nan
            alone_all.append(a99)
            alone_n.append(alone.size)
            infl.append(p99[-1] / a99)
            low, high = _ratio_interval(load, alone, n_boot, rng)
            below.append(max(infl[-1] - low, 0.0) if np.isfinite(low) else 0.0)
            above.append(max(high - infl[-1], 0.0) if np.isfinite(high) else 0.0)
        style = {"marker": _MARKERS[si % len(_MARKERS)], "color": _colour(si)}
        name = _short(res, layout.series_axes, skey)
        left.plot(xs, p99, label=name, **style)
        right.errorbar(xs, infl, yerr=[below, above], capsize=3, label=name, **style)
    finite = [a for a in alone_all if np.isfinite(a)]
    if finite:
        left.axhline(float(np.median(finite)), color="grey", ls="--", label="engine alone (median)")
    right.axhline(1.0, color="grey", ls="--", lw=1)
    left.set_title("Engine step p99 under load")
    left.set_ylabel("step time p99 (ms)")
    alone_steps = f"{min(alone_n)}–{max(alone_n)}" if alone_n else "no"
    if alone_n and min(alone_n) == max(alone_n):
        alone_steps = str(alone_n[0])
    right.set_title(
        f"Step inflation: p99 under load ÷ p99 alone\n(bars: 95% bootstrap interval; "
        f"alone: {alone_steps} steps per point)",
        fontsize=10,
    )
    right.set_ylabel("inflation (×)")
    for ax in (left, right):
        _x_ticks(ax, res, layout)
        ax.set_xlabel(axis_title(layout.x))
        ax.margins(x=0.1, y=0.1)  # markers at the ends and the top stay whole
        ax.set_ylim(bottom=0)
        ax.legend(loc="best")
    fig.tight_layout()
    return fig
