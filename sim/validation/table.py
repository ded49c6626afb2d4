"""What validate-model prints: each level's table and verdict, readable at 100 columns.

The full table (every metric, its interval, the model's value and error: one row of some
400 characters at engine_interference) stays in ``validation.md`` and ``validation.csv``
(sim.validation.report); a terminal gets a table per level with the point's values
in one column and, per latency metric, the real value, the model's, the two errors
and the rule the point passed by (sim.validation.verdict), then the verdict over
the grid and under a heading per swept axis, each line wrapped to :data:`WIDTH`.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from sim import columns
from sim.stats import percentiles
from sim.validation.paired import TARGETS, ValidationRow, axis_key
from sim.validation.verdict import (
    LATENCY,
    MARGIN,
    PointJudgement,
    mechanism_verdict,
    perfect_model_counts,
    unjudgeable,
    verdict,
    verdicts_by_value,
)

__all__ = ["WIDTH", "mechanism_table", "point_cell", "prediction_table", "wrap"]

#: The width every printed line fits.
WIDTH = 100
#: The point column's width (its values, abbreviated past it).
POINT_WIDTH = 26
_RULES = {"target": "target", "repeat": "repeat", "outside": "✗", "–": "–"}


def wrap(text: str, width: int = WIDTH) -> str:
    """Every prose line of ``text`` wrapped to ``width`` (a ``- `` item's continuation
    indented under its text); table rows (``|``…) and lines already short are kept."""
    out = []
    for line in text.splitlines():
        if len(line) <= width or line.startswith("|"):
            out.append(line)
            continue
        lead = len(line) - len(line.lstrip(" "))
        bullet = line.lstrip(" ").startswith("- ")
        out.extend(
            textwrap.wrap(
                line,
                width,
                subsequent_indent=" " * (lead + (2 if bullet else 0)),
                break_on_hyphens=False,
            )
        )
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def point_cell(key: dict[str, str], width: int = POINT_WIDTH) -> str:
    """A point's axis values, space-separated, abbreviated with '~' past ``width``."""
    text = " ".join(key.values())
    return text if len(text) <= width else text[: width - 1] + "~"


def _num(x: float) -> str:
    if math.isnan(x):
        return "–"
    if abs(x) < 10:
        return f"{x:.2f}"
    return f"{x:.1f}" if abs(x) < 1000 else f"{x:.0f}"


def _pct(x: float) -> str:
    """A relative error in at most six characters (beyond ±999 %: '>+999%')."""
    if math.isnan(x):
        return "–"
    if abs(x) > 9.99:
        return ">+999%" if x > 0 else "<-999%"
    return f"{x:+.0%}"


def prediction_table(
    rows: Sequence[ValidationRow], judged: Sequence[PointJudgement], title: str
) -> str:
    """The prediction level: per point the latency p50 and p99 of the real run and the
    model, the model's error, the second real run's (``again``) and the rule; then the
    verdict over the grid and per value of each swept axis."""
    if not rows:
        return f"## {title}\n\nNo point has both a real and a model run.\n"
    by_key = {axis_key(j.key.values()): j for j in judged}
    axes = ", ".join(rows[0].key)
    head1 = f"{'point':<{POINT_WIDTH}}"
    head2 = " " * POINT_WIDTH
    for m in LATENCY:
        head1 += f" │ {m.removesuffix('_ms').replace('_', ' ') + ' (ms)':<34}"
        head2 += f" │ {'real':>6} {'model':>6} {'error':>6} {'again':>6} {'rule':<6}"
    lines = [f"## {title}", "", f"Each point by its {axes}:", "", head1.rstrip(), head2.rstrip()]
    for r in rows:
        j = by_key[axis_key(r.key.values())]
        cells = f"{point_cell(r.key):<{POINT_WIDTH}}"
        for m in LATENCY:
            cells += (
                f" │ {_num(r.real[m].value):>6} {_num(r.model[m]):>6} {_pct(j.errors[m]):>6} "
                f"{_pct(j.again[m]):>6} {_RULES[j.rules[m]]:<6}"
            )
        lines.append(cells.rstrip())
    v = verdict(judged)
    lines += [
        "",
        f"Rules: target (p50 {TARGETS[LATENCY[0]]}, p99 {TARGETS[LATENCY[1]]}), else repeat "
        f"(|error| ≤ the second real run's |again| + {MARGIN * 100:.0f} points; again: "
        "real-again/ against real/, --aa); ✗ neither.",
        "",
        f"Verdict: {v.text()}",
    ]
    for axis, values in verdicts_by_value(judged):
        lines += ["", f"By {axis} (passed: by the target + by repeatability):"]
        lines += [f"- {value}: {got.short()}" for value, got in values]
    return wrap("\n".join(lines) + "\n")


def _err(error: float, within: bool | None) -> str:
    """A relative error with ✗ when it misses its target."""
    return _pct(error) + ("✗" if within is False else "")


def mechanism_table(
    points: Sequence[Any],
    targets: Mapping[str, Any],
    title: str,
    again: Sequence[Any] | None = None,
) -> str:
    """The mechanism level (``sim.model.replay.ReplayPoint``: ``axes``, ``real``, ``model``,
    ``error``, ``within``, ``draws``, ``model_range``): per point the latency mean (real,
    other, error), the p50's and p99's error, and the GIL wait mean (real, other, error),
    ✗ on a miss; then the count within each target, the verdict and what the other column
    is: the model, or with ``draws`` 0 a second real run ("again", --aa). ``again``: that
    second run's points against the first, which the verdict reads."""
    if not points:
        return f"## {title}\n\nNo finished real point to replay.\n"
    other = "again" if max(p.draws for p in points) == 0 else "model"
    keys = [{a: str(v) for a, v in p.axes.items() if a != "mode"} for p in points]
    head1 = f"{'point':<{POINT_WIDTH}}"
    head1 += f" │ {'latency mean (ms)':<21} │ {'p50':>7} │ {'p99':>7} │ {'GIL wait mean (ms)':<21}"
    head2 = " " * POINT_WIDTH + f" │ {'real':>6} {other:>6} {'error':>7} │ {'error':>7}"
    head2 += f" │ {'error':>7} │ {'real':>6} {other:>6} {'error':>7}"
    axes = ", ".join(keys[0])
    lines = [f"## {title}", "", f"Each point by its {axes}:", "", head1.rstrip(), head2]
    lat, wait = columns.LATENCY_MEAN_MS.name, columns.GIL_WAIT_MEAN_MS.name
    p50, p99 = columns.LATENCY_P50_MS.name, columns.LATENCY_P99_MS.name
    for key, p in zip(keys, points, strict=True):
        w = p.within
        cells = (
            f"{point_cell(key):<{POINT_WIDTH}} │ {_num(p.real[lat]):>6} {_num(p.model[lat]):>6} "
            f"{_err(p.error[lat], w.get(lat)):>7} │ "
            f"{_err(p.error[p50], w.get(p50)):>7} │ "
            f"{_err(p.error[p99], w.get(p99)):>7} │ "
            f"{_num(p.real[wait]):>6} {_num(p.model[wait]):>6} "
            f"{_err(p.error[wait], w.get(wait)):>7}"
        )
        lines.append(cells)
    n = len(points)
    counts = _counts(points, targets)
    again_within = [p.within for p in again] if again is not None else None
    word = mechanism_verdict([p.within for p in points], list(targets), again_within)
    every = sum(all(p.within.get(m, False) is not False for m in targets) for p in points)
    lines += [
        "",
        f"{'Verdict' if other == 'model' else 'The real side repeats'}: {word} (each "
        "target at 90 % of the points it applies to, or more): "
        f"{counts}; every target at {every}/{n} points (a GIL wait where the GIL was off on "
        "both sides does not apply).",
        _draws_line(points, wait),
    ]
    if again is not None:
        lines.append(_again_line(again, targets))
    return wrap("\n".join(lines) + "\n")


def _counts(points: Sequence[Any], targets: Mapping[str, Any]) -> str:
    """Per target: its name, its tolerance, and the points within of those it applies to."""
    return ", ".join(
        f"{_name(m)} {t.text()} "
        f"{sum(p.within.get(m) is True for p in points)}/{_applies(points, m)}"
        for m, t in targets.items()
    )


def _applies(points: Sequence[Any], metric: str) -> int:
    """The points ``metric``'s target applies to (not a GIL wait neither side has)."""
    return sum(p.within.get(metric, False) is not None for p in points)


def _name(metric: str) -> str:
    return metric.removesuffix("_ms").replace("_", " ")


def _again_line(again: Sequence[Any], targets: Mapping[str, Any]) -> str:
    """What the real side repeats by the same targets, what it therefore cannot judge, and
    what a model right at every point could expect to meet (perfect_model_counts)."""
    line = f"- a second real run against the first (real-again/, below): {_counts(again, targets)}"
    if not again:
        return line + "; no point finished in both runs."
    low = unjudgeable([p.within for p in again], list(targets))
    if low:
        line += (
            f"; below half of the points on {', '.join(_name(m) for m in low)}: this "
            "machine cannot judge the model on it at this level"
        )
    reach = perfect_model_counts(again, targets)
    return (
        f"{line}.\n- a model right at every point (its figure the real one's expected value) "
        "would be expected to meet, by the spread of the two real runs: "
        + ", ".join(f"{_name(m)} {reach[m]:.1f}/{_applies(again, m)}" for m in targets)
        + " (docs/model-mode.md, Validation)."
    )


def _draws_line(points: Sequence[Any], wait: str) -> str:
    """What the model column is, and how far one draw of it strays: the model's own noise
    beside the target (ReplayPoint ``draws``, ``model``, ``model_range``)."""
    draws = max(p.draws for p in points)
    if draws == 0:
        return (
            "- again: the real grid run a second time with the same seeds (--aa), judged "
            "by the same targets: what the real side itself repeats."
        )
    if draws < 2:
        return "- model: one draw of its own random choices (who gets the GIL, the wake-ups)."
    half = [
        (hi - lo) / 2 / p.model[wait]
        for p in points
        for lo, hi in [p.model_range.get(wait, (math.nan, math.nan))]
        if p.model[wait] >= 0.1 and math.isfinite(hi - lo)  # 0.1 ms: the target's floor
    ]
    line = (
        f"- model: the mean of {draws} draws of its own random choices (who gets the GIL, "
        "the wake-ups) over the same plan and holds, each draw's figure over the real "
        "side's requests"
    )
    if not half:
        return line + "."
    return (
        line + f"; one draw's GIL wait mean strays ±{percentiles(half, (50,))[0]:.0%} from it at "
        f"the median point of {len(half)} with a GIL wait of 0.1 ms or more, "
        f"±{max(half):.0%} at most."
    )
