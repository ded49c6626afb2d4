"""The words of a model validation: the table pairing every real point with its model twin.

``sim.validate_model`` (and ``kvsim validate-model``, which prints what it returns)
runs the grids; this turns the pairs (``sim.validation.paired``) into ``validation.md``
and the rows of ``validation.csv``.
"""

from __future__ import annotations

import math
from typing import Any

from sim import columns
from sim.validation.paired import METRICS, TAIL_SAMPLES, TARGETS, ValidationRow, summary_counts

__all__ = [
    "again_line",
    "idle_line",
    "matched_line",
    "metric_lines",
    "noise_line",
    "render",
    "shown_metrics",
]


def _fmt(x: float, digits: int = 2) -> str:
    return "–" if math.isnan(x) else f"{x:.{digits}f}"


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{x:+.0%}"


def render(rows: list[ValidationRow], title: str) -> tuple[str, list[dict[str, Any]]]:
    """Markdown table and CSV rows of a validation."""
    if not rows:
        return f"# {title}\n\nNo point has both a real and a model run.\n", []
    axes = list(rows[0].key)
    heads = [*axes]
    # a metric no point has on either side (the engine's, with the engine off) is left out
    shown = shown_metrics(rows)
    for name in shown:
        short = name.removesuffix("_ms")
        heads += [f"{short} real [95% CI]", f"{short} model", "err"]
    lines = [f"# {title}", "", "| " + " | ".join(heads) + " |", "|" + "--|" * len(heads)]
    csv_rows = []
    for r in rows:
        cells = [r.key[a] for a in axes]
        row: dict[str, Any] = dict(r.key)
        for name in shown:
            iv, m, err = r.real[name], r.model[name], r.error(name)
            ci = "" if math.isnan(iv.low) else f" [{_fmt(iv.low)}, {_fmt(iv.high)}]"
            mark = ""
            if r.within(name) is False:
                mark = " ✗"
            elif r.within(name):
                mark = " ✓"
            cells += [f"{_fmt(iv.value)}{ci}", _fmt(m), f"{_pct(err)}{mark}"]
            row.update(
                {
                    f"{name}_real": iv.value,
                    f"{name}_real_low": iv.low,
                    f"{name}_real_high": iv.high,
                    f"{name}_model": m,
                    f"{name}_error": err,
                }
            )
        lines.append("| " + " | ".join(cells) + " |")
        csv_rows.append(row)
    lines += [""]
    lines += metric_lines(rows, shown)
    lines += _axis_lines(rows)
    lines.append(noise_line(summary_counts(rows), [n for n in TARGETS if n in shown]))
    lines.append(
        "- ✓/✗: within/outside the target; [..]: 95% bootstrap interval of the real value "
        f"(requests resampled; none for a percentile with fewer than {TAIL_SAMPLES} values "
        "beyond it, where resamples cannot reach past the largest); the model's own "
        "run-to-run spread is not shown."
    )
    return "\n".join(lines) + "\n", csv_rows


def shown_metrics(rows: list[ValidationRow]) -> list[str]:
    """The metrics some point has on either side (the engine's are left out with it off)."""
    return [
        name
        for name, *_ in METRICS
        if any(not (math.isnan(r.real[name].value) and math.isnan(r.model[name])) for r in rows)
    ]


def metric_lines(rows: list[ValidationRow], shown: list[str] | None = None) -> list[str]:
    """One line per metric: the points within its target (median and worst error), or
    its errors alone where it has no target."""
    shown = shown_metrics(rows) if shown is None else shown
    s = summary_counts(rows)
    lines = []
    for name, target in TARGETS.items():
        if name in shown:
            lines.append(
                f"- {name}: {s[f'{name}_met']}/{s[f'{name}_points']} points within {target} "
                f"(median |error| {_pct(s[f'{name}_median'])}, worst "
                f"{_pct(s[f'{name}_worst'])})"
            )
    for name in shown:
        if name not in TARGETS:
            lines.append(
                f"- {name}: median |error| {_pct(s[f'{name}_median'])}, "
                f"worst {_pct(s[f'{name}_worst'])} (no target)"
            )
    return lines


_LATENCY = (columns.LATENCY_P50_MS.name, columns.LATENCY_P99_MS.name)


def _axis_lines(rows: list[ValidationRow]) -> list[str]:
    """The latency targets met per value of each swept axis: an acceptance is often per
    value ('5 of 6 points per index variant'), and a model wrong on one variant only
    hides in a count over the grid."""
    return [
        f"- by {axis} (latency p50 {TARGETS[_LATENCY[0]]}, p99 {TARGETS[_LATENCY[1]]}): {parts}"
        for axis, parts in _by_axis(rows)
    ]


def _by_axis(rows: list[ValidationRow]) -> list[tuple[str, str]]:
    """Per swept axis (two values or more): 'value p50 met/points, p99 met/points; …'."""
    out = []
    for axis in rows[0].key:
        values = list(dict.fromkeys(r.key[axis] for r in rows))
        if len(values) < 2:
            continue
        parts = []
        for value in values:
            c = summary_counts([r for r in rows if r.key[axis] == value])
            counts = ", ".join(f"{c[f'{n}_met']}/{c[f'{n}_points']}" for n in _LATENCY)
            parts.append(f"{value} {counts}")
        out.append((axis, "; ".join(parts)))
    return out


def again_line(rows: list[ValidationRow]) -> str:
    """The real side against itself (``real-again/`` scored as if it were the model, by
    the same targets): the score a model exact on average could expect at this noise,
    per swept value too, since an acceptance is often per value."""
    if not rows:
        return "- the real side against itself: no point ran in both real runs\n"
    by_axis = "".join(f"; by {axis}: {parts}" for axis, parts in _by_axis(rows))
    return (
        "- the real side against itself (real-again/: the real grid run again, same seeds, "
        f"after the model runs, scored as the model is): "
        f"{_latency_counts(summary_counts(rows), 'difference')}{by_axis}. A target the real "
        "side misses against itself is decided by the machine's noise as much as by the "
        "model.\n"
    )


def noise_line(counts: dict[str, Any], names: list[str]) -> str:
    """Each target's metric against the real side's own noise: how often the model lies
    inside the real value's interval, and how wide those intervals are (a ±10 % target
    on a value whose interval is ±30 % is decided by the run's noise as much as by
    the model)."""
    parts = [
        f"{name.removesuffix('_ms').replace('_', ' ')} {counts[f'{name}_inside']}/"
        f"{counts[f'{name}_inside_points']} (intervals ±{counts[f'{name}_half_width']:.0%})"
        for name in names
        if counts.get(f"{name}_inside_points")
    ]
    if not parts:
        return "- the real values have no intervals (a summary statistic only)"
    return (
        "- inside the real value's 95% interval (the model within the measurement's own "
        f"noise; median half-width of the intervals): {', '.join(parts)}"
    )


def idle_line(rows: list[ValidationRow]) -> str:
    """The summary line of the model on an idle machine (its table is in model-idle/)."""
    return (
        "- the same model without the background load (an idle machine): "
        f"{_latency_counts(summary_counts(rows), 'error')}\n"
    )


def matched_line(rows: list[ValidationRow], scales: list[float]) -> str:
    """The summary line of the speed-matched model (its table is in model-matched/)."""
    span = f", {min(scales):.2f}–{max(scales):.2f} here" if scales else ""
    return (
        f"- the same model at the speed each real point met (machine.cpu_scale = its mean "
        f"GIL hold, or with the GIL off its thread CPU, over the model's{span}; "
        f"model-matched/): "
        f"{_latency_counts(summary_counts(rows), 'error')}\n"
    )


def _latency_counts(counts: dict[str, Any], word: str) -> str:
    """'latency p50 a/n within ±10% (median |word| x), p99 b/n within ±15% (…)' and the
    mechanism's targets: the body of every summary line of a second run."""
    p50, p99 = (
        f"{counts[f'{n}_met']}/{counts['points']} within {TARGETS[n]} (median |{word}| "
        f"{_pct(counts[f'{n}_median'])})"
        for n in _LATENCY
    )
    return f"latency p50 {p50}, p99 {p99}{_mechanism(counts)}"


def _mechanism(counts: dict[str, Any]) -> str:
    """The targets beyond latency, in a summary line: '; within target: GIL wait mean 3/6,
    …' over the points that have each ('' when none has any)."""
    parts = [
        f"{name.removesuffix('_ms').replace('_', ' ')} {counts[f'{name}_met']}/"
        f"{counts[f'{name}_points']}"
        for name in TARGETS
        if not name.startswith("latency_") and counts.get(f"{name}_points")
    ]
    return f"; within target: {', '.join(parts)}" if parts else ""
