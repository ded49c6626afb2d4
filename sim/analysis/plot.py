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

How a sweep's axes map onto a figure (x axis, series, panels) is decided in
``sim.analysis.layout``; its names are re-exported here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sim.analysis import figures, figures_load, stage_figure
from sim.analysis.layout import (
    STYLE,
    Layout,
    axis_title,
    choose_x_axis,
    label,
    rows_by_point,
)
from sim.rundir.claim import claim_outputs
from sim.rundir.layout import (
    FIG_ENGINE_STEPS,
    FIG_GIL_HOLD,
    FIG_HOLD_STAGES,
    FIG_LATENCY_CCDF,
    FIG_LATENCY_CDF,
    FIG_LATENCY_VS_RATE,
    FIG_P99_LATENCY,
)
from sim.rundir.reader import RunResults

__all__ = [
    "STYLE",
    "Layout",
    "axis_title",
    "choose_x_axis",
    "label",
    "plot_results",
    "rows_by_point",
]


def _name_the_run(fig: Any, res: RunResults, note: str) -> None:
    """Every figure says which run it shows (a PNG travels without its directory)."""
    where = f" · {res.dir.name}" if res.dir.name != res.name else ""  # not "quickstart" twice
    run = f"run {res.name}{where}" + (f" · {note}" if note else "")
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
    force: bool = False,
) -> list[Path]:
    """Draw every figure the run has data for into ``out_dir``; return their paths.

    ``note`` is added to every figure's title (e.g. "partial run: 4 of 6 points").
    Every path is claimed (``sim.rundir.claim``: new, the run's own, or ``force``)
    after drawing and before the first is written, so a refusal writes nothing.
    """
    import matplotlib  # heavy: matplotlib loads only when figures are drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: pyplot, after the Agg backend is chosen

    layout = Layout(list(res.axes), choose_x_axis(res, x))
    out_dir.mkdir(parents=True, exist_ok=True)
    drawn: list[tuple[str, Any]] = []
    with plt.rc_context(STYLE):
        if res.table("requests"):
            drawn.append((FIG_LATENCY_CDF, figures.latency_cdf(plt, res, layout)))
            drawn.append((FIG_LATENCY_CCDF, figures_load.latency_ccdf(plt, res, layout)))
            drawn.append((FIG_P99_LATENCY, figures.p99_vs_x(plt, res, layout, n_boot, seed)))
            drawn.append((FIG_GIL_HOLD, figures.gil_hold(plt, res, layout)))

        if stage_figure.has_stage_columns(res):
            drawn.append((FIG_HOLD_STAGES, stage_figure.hold_stages(plt, res, layout)))
        rate = figures_load.rate_axis(res)
        if rate is not None:
            drawn.append((FIG_LATENCY_VS_RATE, figures_load.latency_vs_rate(plt, res, rate)))
        steps = figures.engine_steps(plt, res, layout, n_boot, seed)
        if steps is not None:
            drawn.append((FIG_ENGINE_STEPS, steps))
        try:
            claim_outputs([out_dir / name for name, _fig in drawn], force)
        except BaseException:
            for _name, fig in drawn:
                plt.close(fig)
            raise
        paths = []
        for name, fig in drawn:
            _name_the_run(fig, res, note)
            fig.savefig(out_dir / name)
            plt.close(fig)
            paths.append(out_dir / name)
    return paths
