"""The comparison table printed at the end of a run."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["baseline_ratios", "comparison_table", "pick_baseline"]


def pick_baseline(rows: Sequence[dict[str, Any]], wanted: str | None) -> str | None:
    variants = [str(r["variant"]) for r in rows]
    if wanted:
        return wanted if wanted in variants else None
    return "scalar" if "scalar" in variants else (variants[0] if variants else None)


def baseline_ratios(
    rows: Sequence[dict[str, Any]], axes: Sequence[str], baseline: str | None, metric: str
) -> list[float]:
    """metric / the baseline variant's metric at the same values of every other axis."""
    others = [a for a in axes if a != "variant"]
    key = lambda r: tuple(str(r.get(a)) for a in [*others, "repeat"])  # noqa: E731
    base = {key(r): r for r in rows if str(r["variant"]) == baseline}
    out = []
    for r in rows:
        b = base.get(key(r))
        num, den = float(r.get(metric, math.nan)), float(b[metric]) if b else math.nan
        out.append(num / den if den and not math.isnan(den) else math.nan)
    return out


def _fmt(v: float, digits: int = 2) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return f"{v:.{digits}f}"


def comparison_table(
    rows: Sequence[dict[str, Any]], axes: Sequence[str], baseline: str | None, title: str
) -> Any:
    from rich.table import Table

    hold_ratio = baseline_ratios(rows, axes, baseline, "gil_hold_mean_ms")
    p99_ratio = baseline_ratios(rows, axes, baseline, "latency_p99_ms")
    table = Table(title=title, title_justify="left")
    for a in axes:
        table.add_column(a)
    if any(int(r["repeat"]) for r in rows):
        table.add_column("repeat", justify="right")
    for col in (
        "ok/req",
        "p50 ms",
        "p99 ms",
        "GIL hold ms/req",
        "GIL wait ms/req",
        f"hold vs {baseline}",
        f"p99 vs {baseline}",
    ):
        table.add_column(col, justify="right")
    show_rep = any(int(r["repeat"]) for r in rows)
    for r, hr, pr in zip(rows, hold_ratio, p99_ratio, strict=False):
        cells = [str(r.get(a, "")) for a in axes]
        if show_rep:
            cells.append(str(r["repeat"]))
        cells += [
            f"{r['ok']}/{r['requests']}",
            _fmt(r["latency_p50_ms"], 1),
            _fmt(r["latency_p99_ms"], 1),
            _fmt(r["gil_hold_mean_ms"], 3),
            _fmt(r["gil_wait_mean_ms"], 3),
            f"{_fmt(hr)}×" if not math.isnan(hr) else "—",
            f"{_fmt(pr)}×" if not math.isnan(pr) else "—",
        ]
        table.add_row(*cells)
    return table
