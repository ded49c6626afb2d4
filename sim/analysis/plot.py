"""Figures of a run: PNGs with units, legends and readable axes.

matplotlib is imported (with the non-interactive Agg backend) only inside
:func:`plot_results`, so nothing else in kvsim pays for it. Every figure is
drawn from the run directory's CSVs (see ``sim.analysis.figures``):

* ``latency_cdf.png`` — load latency CDF per variant and workers, one panel per
  value of the other axes;
* ``p99_latency.png`` — p99 latency against workers (or another axis, ``--x``)
  per variant, with 95% bootstrap intervals as error bars;
* ``gil_hold.png`` — GIL hold per request by variant (box plots, mean marked);
* ``hold_stages.png`` — the mean hold split by stage, a stacked bar per point
  (``sim.analysis.stage_figure``); only when requests.csv has the stage columns;
* ``engine_steps.png`` — engine step p99 under load against the engine alone,
  and the inflation; only when the run has ``steps.csv``.

This module decides how a sweep's axes map onto a figure: the *x* axis (workers
unless told otherwise), the *series* (every other axis: one line each), and the
*panels* (every axis but variant and x: one sub-plot each).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim.rundir.reader import RunResults, as_float

__all__ = ["Layout", "choose_x_axis", "label", "plot_results"]

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


def _name_the_run(fig: Any, res: RunResults, note: str) -> None:
    """Every figure says which run it shows (a PNG travels without its directory)."""
    run = f"run {res.name} · {res.dir.name}" + (f" · {note}" if note else "")
    existing = fig.get_suptitle()
    fig.suptitle(f"{existing}\n{run}" if existing else run, fontsize=10)
    fig.tight_layout()


def plot_results(
    res: RunResults,
    out_dir: Path,
    x: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    note: str = "",
) -> list[Path]:
    """Draw every figure the run has data for into ``out_dir``; return their paths.

    ``note`` is added to every figure's title (e.g. "partial run: 4 of 6 points").
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sim.analysis import figures, figures_load

    layout = Layout(list(res.axes), choose_x_axis(res, x))
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn: list[tuple[str, Any]] = []
    with plt.rc_context(STYLE):
        if res.table("requests"):
            drawn.append(("latency_cdf.png", figures.latency_cdf(plt, res, layout)))
            drawn.append(("latency_ccdf.png", figures_load.latency_ccdf(plt, res, layout)))
            drawn.append(("p99_latency.png", figures.p99_vs_x(plt, res, layout, n_boot, seed)))
            drawn.append(("gil_hold.png", figures.gil_hold(plt, res, layout)))
        from sim.analysis import stage_figure

        if stage_figure.has_stage_columns(res):
            drawn.append(("hold_stages.png", stage_figure.hold_stages(plt, res, layout)))
        rate = figures_load.rate_axis(res)
        if rate is not None:
            drawn.append(("latency_vs_rate.png", figures_load.latency_vs_rate(plt, res, rate)))
        steps = figures.engine_steps(plt, res, layout)
        if steps is not None:
            drawn.append(("engine_steps.png", steps))
        paths = []
        for name, fig in drawn:
            _name_the_run(fig, res, note)
            fig.savefig(out_dir / name)
            plt.close(fig)
            paths.append(out_dir / name)
    return paths
