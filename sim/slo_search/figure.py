"""``figures/search.png``: every value a search tried, per series, against the limit.

A row of panels per objective, a panel per variant (small multiples): the metric
against the searched value, a line per series of that variant, a filled marker where
the point met every objective and a hollow one where it did not, the limit as a dashed
line and each series' answer as a star.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from sim.analysis.figures_load import panel_axis, plain_log_x
from sim.analysis.layout import STYLE
from sim.errors import RunDirError
from sim.files.read import read_bounded
from sim.rundir.guard import record_owned
from sim.rundir.layout import FIG_SEARCH, FIGURES_DIR, figure_file, search_file
from sim.rundir.numbers import as_float
from sim.slo_search.driver import MAX_SEARCH_BYTES
from sim.slo_search.slo import parse_slo

__all__ = ["draw_search"]


_num = as_float  # the one string -> float reader (sim.rundir.numbers)


def draw_search(run_dir: Path) -> Path:
    """Draw the search of ``run_dir`` (its search.json) into figures/search.png."""
    import matplotlib  # heavy: matplotlib loads only when the search is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: pyplot, after the Agg backend is chosen

    raw = read_bounded(
        search_file(run_dir),
        what="search record",
        limit=MAX_SEARCH_BYTES,
        error=RunDirError,
        within=run_dir,
    )
    data = json.loads(raw)
    slos = [parse_slo(s) for s in data["slo"]]
    axis = data["axis"]
    series = data["series"]
    values = [_num(t["value"]) for s in series for t in s["tried"]]
    values = [v for v in values if math.isfinite(v) and v > 0]
    log = bool(values) and max(values) / min(values) >= 8

    out = figure_file(run_dir, FIG_SEARCH)
    out.parent.mkdir(parents=True, exist_ok=True)

    varying = [
        a for a in (series[0]["axes"] if series else {})
        if len({str(s["axes"].get(a)) for s in series}) > 1
    ]  # fmt: skip
    split = panel_axis(varying)
    panels = list(dict.fromkeys(str(s["axes"].get(split)) for s in series)) if split else [""]
    with plt.rc_context(STYLE):
        # Small multiples: a row per objective, a column per variant (or the first axis that
        # varies), the other series as lines in their panel; each row shares its y axis.
        fig, axs = plt.subplots(
            len(slos),
            len(panels),
            figsize=(max(7.2, 4.6 * len(panels)), 4.8 * len(slos)),
            sharey="row",
            squeeze=False,
        )
        colours = matplotlib.colormaps["tab10"]
        for row, slo in enumerate(slos):
            for col, panel in enumerate(panels):
                ax = axs[row][col]
                mine = [s for s in series if not split or str(s["axes"].get(split)) == panel]
                for i, s in enumerate(mine):
                    _draw_series(ax, s, slo, colours(i % 10))
                ax.axhline(slo.limit, color="grey", ls="--", lw=1.2, label=f"limit: {slo.text}")
                if log:
                    plain_log_x(ax)
                ax.set_xlabel(axis + (" (req/s offered)" if axis == "rate_rps" else ""))
                ax.set_ylabel(slo.metric if col == 0 else "")
                ax.set_ylim(bottom=0)
                ax.margins(x=0.08)
                ax.set_title(f"{panel} · " if split else "", fontsize=10, loc="left")
                ax.set_title(f"{slo.text}: ● meets all, ○ misses, ★ answer", fontsize=9)
                ax.legend(loc="best", fontsize=8)
        fig.suptitle(f"kvsim search over {data['over']} · {run_dir.name}")
        fig.tight_layout()
        record_owned(run_dir, f"{FIGURES_DIR}/{out.name}")
        fig.savefig(out)
        plt.close(fig)
    return out


def _draw_series(ax: Any, s: dict[str, Any], slo: Any, colour: Any) -> None:
    """One series' tried values: a line, ● where it met every objective, ○ where it did
    not, and ★ at its answer."""
    pts = sorted(
        (_num(t["value"]), _num(t["values"].get(slo.metric)), bool(t["meets"])) for t in s["tried"]
    )
    if not pts:
        return
    xs, ys, _ok = zip(*pts, strict=True)
    ax.plot(xs, ys, "-", color=colour, alpha=0.6, label=s["label"])
    for x, y, good in pts:
        y = y if math.isfinite(y) else slo.limit
        ax.plot(x, y, "o", ms=7, color=colour, mfc=colour if good else "white", mew=1.5)
    best = s["result"].get("value")
    if best is not None:
        y = next((y for x, y, _ in pts if x == float(best)), math.nan)
        if math.isfinite(y):
            ax.plot(best, y, "*", ms=16, color=colour, mec="black", zorder=5)
