"""Latency over a day's load curve: p50 and p99 per hour of each variant, and the load.

    python experiments/day_model/plot_day.py RUN_DIR

Reads RUN_DIR/windows.csv (``output.window_s``: one row per variant and window) and
writes RUN_DIR/figures/latency_over_day.png, then prints the table it drew.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sim.rundir.outputs import read_csv


def main(run_dir: Path) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_csv(run_dir / "windows.csv")
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    fig, ax = plt.subplots(figsize=(9, 4.8))
    load = ax.twinx()
    heads = "  ".join(f"{v + ' p50/p99 ms':>22}" for v in variants)
    print(f"{'step':>4}  {'offered/s':>9}  {heads}")
    by_hour: dict[float, dict[str, tuple[float, float]]] = {}
    offered: dict[float, float] = {}
    for v in variants:
        mine = [r for r in rows if r["variant"] == v]
        hours = [float(r["window_start_s"]) / float(r["window_s"]) for r in mine]
        p99 = [float(r["latency_p99_ms"]) for r in mine]
        p50 = [float(r["latency_p50_ms"]) for r in mine]
        (line,) = ax.step(hours, p99, where="post", label=f"{v} p99")
        ax.step(hours, p50, where="post", ls="--", color=line.get_color(), label=f"{v} p50")
        for h, a, b, r in zip(hours, p50, p99, mine, strict=True):
            by_hour.setdefault(h, {})[v] = (a, b)
            offered[h] = float(r["offered_rps"])
    hours = sorted(offered)
    load.fill_between(hours, [offered[h] for h in hours], step="post", alpha=0.12, color="grey")
    load.set_ylabel("offered load (requests/s)")
    ax.set_xlabel("window (hour of the day with window_s = the curve's step_s)")
    ax.set_ylabel("load latency (ms)")
    ax.set_yscale("log")
    ax.set_zorder(load.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"{run_dir.name}: latency over the day's load curve (model mode)")
    out = run_dir / "figures" / "latency_over_day.png"
    out.parent.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    for h in hours:
        cells = [by_hour[h].get(v, (float("nan"),) * 2) for v in variants]
        print(
            f"{h:4.0f}  {offered[h]:9.1f}  " + "  ".join(f"{a:10.2f} / {b:9.2f}" for a, b in cells)
        )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
