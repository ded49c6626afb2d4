"""Tables for people: the one printed at the end of a run (one row per point) and the
Markdown and CSV of ``kvsim compare``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sim import columns
from sim.analysis.behind import fell_behind, lagged
from sim.analysis.condense import condense, elided_cells, shown_count, table_axes
from sim.analysis.verdict import MIN_REPEATS, marks
from sim.rundir.numbers import as_float

__all__ = [
    "baseline_ratios",
    "comparison_markdown",
    "comparison_rows",
    "comparison_table",
    "no_verdict_line",
    "pick_baseline",
]


def pick_baseline(rows: Sequence[dict[str, Any]], wanted: str | None) -> str | None:
    variants = [str(r["variant"]) for r in rows]
    if wanted:
        return wanted if wanted in variants else None
    return "scalar" if "scalar" in variants else (variants[0] if variants else None)


_num = as_float


def baseline_ratios(
    rows: Sequence[dict[str, Any]], axes: Sequence[str], baseline: str | None, metric: str
) -> list[float]:
    """metric / the baseline variant's metric at the same values of every other axis."""
    others = [a for a in axes if a != "variant"]
    key = lambda r: tuple(str(r.get(a)) for a in others)  # noqa: E731
    base = {key(r): r for r in rows if str(r["variant"]) == baseline}
    out = []
    for r in rows:
        b = base.get(key(r))
        num, den = _num(r.get(metric)), _num(b.get(metric)) if b else math.nan
        out.append(num / den if den and not math.isnan(den) else math.nan)
    return out


def _fmt(v: Any, digits: int = 2) -> str:
    x = _num(v)
    return "—" if math.isnan(x) else f"{x:.{digits}f}"


def _with_spread(r: dict[str, Any], metric: str, digits: int) -> str:
    text = _fmt(r.get(metric), digits)
    spread = _num(r.get(f"{metric}_std"))
    if math.isnan(spread) or text == "—":
        return text
    return f"{text}\n[dim]±{spread:.{digits}f}[/dim]"  # second line keeps the column narrow


def _present(rows: Sequence[dict[str, Any]], metric: str) -> bool:
    """Whether any row has a value for ``metric`` (an add-on that did not run leaves NaN)."""
    return any(not math.isnan(_num(r.get(metric))) for r in rows)


def _times(v: float) -> str:
    return f"{_fmt(v)}×" if not math.isnan(v) else "—"


def comparison_table(
    rows: Sequence[dict[str, Any]],
    axes: Sequence[str],
    baseline: str | None,
    title: str,
    max_rows: int | None = None,
) -> Any:
    """Rich table: one row per point; ``±`` (under a value) is the standard deviation
    over repeats.

    More rows than ``max_rows`` (None: no limit): condensed by
    :func:`sim.analysis.condense.condense` — each variant's first and last points and
    an ``… N more`` row for the rest (it counts those behind or failed). Ratios are
    still taken over every row.

    Headers are short and no cell ever shrinks, so the table still reads in an
    80-column terminal (100 with the probe and engine columns); the caption spells
    the abbreviations out. ``stall p99`` appears when the sentinel probe ran, and
    ``step p99`` / ``step ×alone`` when the engine loop did: the interference the
    tool exists to show is otherwise only in summary.csv.
    """
    from rich import box  # rich loads only when a table is printed
    from rich.table import Table  # rich loads only when a table is printed

    hold_ratio = baseline_ratios(rows, axes, baseline, columns.GIL_HOLD_MEAN_MS.name)
    p99_ratio = baseline_ratios(rows, axes, baseline, columns.LATENCY_P99_MS.name)
    reps = {str(r.get("repeats", "")) for r in rows}
    spread = any(f"{m}_std" in r for r in rows for m in (columns.LATENCY_P99_MS.name,))
    show_rep = len(reps) > 1  # a column only when points differ (some repeats failed)
    ratios = len({str(r.get("variant")) for r in rows}) >= 2  # else nothing to divide by
    stall = _present(rows, columns.STALL_P99_MS.name)
    engine = _present(rows, columns.ENGINE_STEP_P99_MS.name)
    lag = any(lagged(r) for r in rows)  # a figure only when some point was handed over late
    shown_axes, fixed_axes = table_axes(rows, axes)  # mode=real: in the title, not a column
    title = " · ".join([title, fixed_axes]) if fixed_axes else title
    body = []
    for r, hr, pr in zip(rows, hold_ratio, p99_ratio, strict=False):
        cells = [str(r.get(a, "")) for a in shown_axes]
        if show_rep:
            cells.append(str(r.get("repeats", "")))
        status = r.get("status", "ok")
        done = f"{_fmt(r.get('ok'), 0)}/{_fmt(r.get('requests'), 0)}"
        if status == "failed":
            done = "[red]FAILED[/red]"
        elif status == "partial":
            done += " [yellow]partial[/yellow]"
        if status != "failed" and fell_behind(r):
            done += " [yellow]behind[/yellow]"
        cells += [
            done,
            _with_spread(r, columns.LATENCY_P50_MS.name, 1),
            _with_spread(r, columns.LATENCY_P99_MS.name, 1),
            _with_spread(r, columns.GIL_HOLD_MEAN_MS.name, 2),
            _fmt(r.get(columns.GIL_WAIT_MEAN_MS.name), 2),
        ]
        if ratios:
            cells += [_times(hr), _times(pr)]
        if lag:
            cells.append(_fmt(r.get(columns.INJECT_LAG_P99_MS.name), 1))
        if stall:
            cells.append(_with_spread(r, columns.STALL_P99_MS.name, 1))
        if engine:
            cells += [
                _with_spread(r, columns.ENGINE_STEP_P99_MS.name, 1),
                _times(_num(r.get(columns.ENGINE_P99_INFLATION.name))),
            ]
        body.append(cells)
    plan = condense(rows, axes, max_rows)
    heads = [*shown_axes, *(["repeats"] if show_rep else [])]
    fixed = len(heads) + 1  # identifying columns and ok/req keep their width
    heads += ["ok/req", "p50 ms", "p99 ms", "hold ms", "wait ms"]
    heads += ["hold ×", "p99 ×"] if ratios else []
    heads += ["lag p99 ms"] if lag else []
    heads += ["stall p99 ms"] if stall else []
    heads += ["step p99 ms", "step ×alone"] if engine else []
    notes = ["hold/wait: GIL hold/wait per request"]
    if any(fell_behind(r) for r in rows):
        notes.append("behind: the load was not applied in full (see below)")
    if lag:
        notes.append("lag: how late the harness handed a request over (p99, inject_lag_p99_ms)")
    if ratios:
        notes.append(f"×: ratio to {baseline} at the same other axes")
    if stall:
        notes.append("stall: how late a Python thread gets to run (probe)")
    if engine:
        notes.append("step: engine step time; ×alone: step p99 / engine-alone p99")
    if shown_count(plan) < len(rows):
        hidden = len(rows) - shown_count(plan)
        notes.append(f"… N more: points not shown ({hidden:,} of {len(rows):,})")
    if spread and not show_rep:
        notes.append(
            f"each value is the mean of {reps.pop()} repeats' own figures (p99: mean of "
            "per-repeat p99s; kvsim compare pools all repeats' requests), ± their sd"
        )
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,  # the box's blank outer edges: two columns of nothing
        collapse_padding=True,
        title=title,
        title_justify="left",
        caption=" · ".join(notes),
        caption_justify="left",
    )
    shown = [
        body[p] if isinstance(p, int) else elided_cells(p, len(heads), fixed - 1) for p in plan
    ]
    for i, head in enumerate(heads):
        # Numbers never shrink (a cut number misleads); headers may wrap instead.
        width = max([0, *(len(line) for c in shown for line in _plain(c[i]).splitlines())])
        # A header wraps between words but never inside one ("×alo…" would say nothing).
        width = max(width, len(head) if i < fixed else max(len(w) for w in head.split()))
        table.add_column(
            head, justify="left" if i < fixed - 1 else "right", min_width=width, no_wrap=i < fixed
        )
    for cells in shown:
        table.add_row(*cells)
    return table


def _plain(markup: str) -> str:
    from rich.text import Text  # rich loads only when a table is printed

    return Text.from_markup(markup).plain


def _fmt_value(v: float) -> str:
    if v is None or math.isnan(v):
        return "—"
    a = abs(v)
    digits = 0 if a >= 100 else 1 if a >= 10 else 2 if a >= 1 else 3
    return f"{v:.{digits}f}"


def _ratio_text(ratio: Any) -> str:
    if ratio is None or math.isnan(ratio.value):
        return ""
    text = f"{ratio.value:.2f}×"
    if not math.isnan(ratio.low):
        text += f" [{ratio.low:.2f}, {ratio.high:.2f}]"
        if marks(ratio.low, ratio.high):
            text += "*"
    return text


def _method_lines(comp: Any) -> list[str]:
    """How the ratios' intervals were drawn, and what a ``*`` is worth in this table."""
    pct = f"{comp.level:.0%}"
    how = "paired by round" if comp.paired else "the two runs' repeats, unpaired"
    cells = comp.interval_cells
    at = f"{comp.by}={comp.baseline} at the same {', '.join(comp.level_axes) or 'settings'}"
    if cells == 0:
        return [f"Each cell is the value, then its ratio to {at}.", "", no_verdict_line(comp)]
    lines = [
        f"Each cell is the value, then its ratio to {at}, with its {pct} interval from the "
        f"spread between repeats ({how}; each run's own {comp.n_boot}-resample request "
        f"bootstrap as a floor, seed {comp.seed}; docs/statistics.md); `*` marks an interval "
        "that excludes 1.00×, a difference beyond the run-to-run spread."
    ]
    chance = cells * (1 - comp.level)
    lines += [
        "",
        f"{cells} ratio(s) have an interval; between identical variants each is marked "
        f"`*` by chance {1 - comp.level:.0%} of the time, about {chance:.1f} here — read a "
        "lone `*` in a big table with that in mind.",
    ]
    if not comp.paired:
        lines += [
            "",
            "Two runs made at different times: each interval holds the spread between a run's "
            "own repeats, made close together, not a change of the machine between the runs, "
            "which reads as a difference; for a verdict between variants sweep them in one run "
            "(paired rounds; docs/statistics.md).",
        ]
    return lines


def no_verdict_line(comp: Any) -> str:
    """Why no ratio has an interval: one repeat, nothing beside the baseline, or figures
    without a log — three causes with three different remedies."""
    if comp.repeats < MIN_REPEATS:
        return (
            "No verdicts: one repeat per point cannot show the run-to-run spread, so the "
            "ratios have no interval and none is marked as a difference; a verdict needs at "
            f"least {MIN_REPEATS} repeats per point (`repeats: 3` or more to see a 10 % "
            "difference; docs/statistics.md)."
        )
    if not any(c.ratio is not None for c in comp.cells.values()):
        others = ", ".join(comp.level_axes) or "none"
        return (
            f"Nothing to compare: at every level {comp.by}={comp.baseline} is the only value, "
            "so there is no ratio; `kvsim compare --by AXIS` compares another axis "
            f"(the others: {others})."
        )
    return (
        "No verdicts: no ratio here has an interval (a figure of zero or below has no log; "
        f"a point needs at least {MIN_REPEATS} finished repeats; docs/statistics.md)."
    )


def comparison_markdown(comp: Any, run_dir: str) -> str:
    """``kvsim compare`` as Markdown: one table per level, then where each metric comes from."""
    lines = [
        f"# kvsim compare · {comp.name}",
        "",
        f"Run `{run_dir}` · baseline **{comp.baseline}** · {comp.repeats} repeat(s) per point.",
        *_method_lines(comp),
    ]
    req_metric = next((m for m in comp.metrics if m.table == "requests"), None)
    for lv in comp.levels:
        title = ", ".join(f"{a}={v}" for a, v in zip(comp.level_axes, lv, strict=True))
        lines += ["", f"## {title or 'all points'}", ""]
        # the rows behind that metric: the finished requests, for a latency (docs/results.md)
        counted = (
            "ok requests" if req_metric and ("status", "ok") in req_metric.where else "requests"
        )
        head = [comp.by, *([counted] if req_metric else []), *(m.label for m in comp.metrics)]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|:--" + "|--:" * (len(head) - 1) + "|")
        for variant in comp.variants[lv]:
            name = f"{variant} (baseline)" if variant == comp.baseline else variant
            row = [name]
            if req_metric:
                row.append(str(comp.cells[(lv, variant, req_metric.name)].n))
            for m in comp.metrics:
                cell = comp.cells[(lv, variant, m.name)]
                ratio = _ratio_text(cell.ratio)
                row.append(_fmt_value(cell.value) + (f" · {ratio}" if ratio else ""))
            lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Sources:"]
    lines += [f"- {m.label}: {m.source}" for m in comp.metrics]
    return "\n".join(lines) + "\n"


def comparison_rows(comp: Any) -> tuple[list[str], list[dict[str, Any]]]:
    """compare.csv: long format, one row per level × variant × metric."""
    cols = [
        *comp.level_axes,
        comp.by,
        "baseline",
        "metric",
        "label",
        "n",
        "value",
        "ratio",
        "ratio_ci_low",
        "ratio_ci_high",
        "source",
    ]
    rows = []
    for lv in comp.levels:
        for variant in comp.variants[lv]:
            for m in comp.metrics:
                cell = comp.cells[(lv, variant, m.name)]
                r = cell.ratio
                rows.append(
                    {
                        **dict(zip(comp.level_axes, lv, strict=True)),
                        comp.by: variant,
                        "baseline": comp.baseline,
                        "metric": m.name,
                        "label": m.label,
                        "n": cell.n,
                        "value": cell.value,
                        "ratio": r.value if r else (1.0 if variant == comp.baseline else ""),
                        "ratio_ci_low": r.low if r else "",
                        "ratio_ci_high": r.high if r else "",
                        "source": m.source,
                    }
                )
    return cols, rows
