"""A regression gate for CI: ``kvsim compare BASE NEW --fail-if 'gil_hold_mean_ms>+5%'``.

A rule names a metric, a direction and a threshold: ``METRIC>+5%`` fails when NEW is
more than 5 % above BASE, ``METRIC<-5%`` when it is more than 5 % below, and a
number without ``%`` is an absolute difference in the metric's unit
(``latency_p99_ms>+2``). A rule fails at a point when the change is beyond the
threshold *and* the difference is real: the interval of NEW / BASE from the spread
between repeats (``sim.analysis.verdict.ratio_verdict``, through the comparison's
cells; docs/statistics.md) lies wholly on the rule's side of 1. Where a point has
no interval (fewer than two repeats on a side) the threshold alone decides, and
the gate says so. The anchors: pytest-benchmark's ``--benchmark-compare-fail``
and asv's ``continuous``.

The gate passes only what it judged: a change from 0 (0 → 42 failures) is beyond any
relative threshold; a value NEW lacks (no request finished) fails; a value BASE lacks
is refused; and a point of BASE that NEW lacks (failed there, or NEW was interrupted)
fails. What is not a metric (a status, an axis) is refused when the metric is resolved
(``sim.analysis.compare.resolve_metric``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sim.analysis.compare import Cell, Comparison
from sim.analysis.verdict import MIN_REPEATS

__all__ = ["GateResult", "Rule", "judge", "parse_rule"]

_RULE = re.compile(
    r"^\s*(?P<metric>[A-Za-z0-9_.:@=,-]+?)\s*(?P<op>[<>])\s*(?P<num>[+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
    r"\s*(?P<pct>%?)\s*$"
)


@dataclass(frozen=True)
class Rule:
    """``metric op threshold``: fail when NEW − BASE (relative: over BASE) is beyond it."""

    metric: str
    #: ">": NEW higher is worse; "<": NEW lower is worse.
    op: str
    #: The threshold: a fraction (0.05 for 5 %) when ``relative``, else in the metric's unit.
    threshold: float
    relative: bool
    text: str

    def beyond(self, change: float) -> bool:
        return change > self.threshold if self.op == ">" else change < self.threshold


def parse_rule(text: str) -> Rule:
    """A ``--fail-if`` rule; ValueError (one line) saying what is allowed."""
    m = _RULE.match(text)
    if not m:
        raise ValueError(
            f"--fail-if {text!r}: expected METRIC>+N% or METRIC<-N% (percent), or an "
            "absolute difference without %, e.g. 'gil_hold_mean_ms>+5%' or 'latency_p99_ms>+2'"
        )
    num = float(m["num"])
    if not math.isfinite(num):
        raise ValueError(f"--fail-if {text!r}: the threshold must be a finite number")
    relative = m["pct"] == "%"
    return Rule(m["metric"], m["op"], num / 100 if relative else num, relative, text.strip())


@dataclass(frozen=True)
class GateResult:
    """What the gate printed (``lines``) and whether a rule failed."""

    failed: bool
    lines: list[str]


def _pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _change(rule: Rule, base: float, new: float, ratio: float) -> float:
    """NEW against BASE as the rule measures it. Relative from a BASE of 0 there is no
    ratio: no change when NEW is 0 too, else an infinite one (0 → 42 failures is worse
    than any percentage), judged by the threshold alone."""
    if not rule.relative:
        return new - base
    if base == 0:
        return 0.0 if new == 0 else math.copysign(math.inf, new)
    return ratio - 1 if math.isfinite(ratio) else new / base - 1


def _shown(rule: Rule, change: float) -> str:
    if rule.relative and math.isinf(change):
        return f"{'up' if change > 0 else 'down'} from 0"
    return _pct(change) if rule.relative else f"{change:+.4g}"


@dataclass
class _Tally:
    """Why comparisons had no interval: too few repeats, or a value of 0 or below."""

    short: int = 0
    zero: int = 0


def _point(
    rule: Rule, where: str, base: Cell, new: Cell, labels: tuple[str, str], tally: _Tally
) -> tuple[bool, str | None, float]:
    """(failed, the line to print or None, the change) for one rule at one point."""
    la, lb = labels
    if not math.isfinite(base.value):
        raise ValueError(
            f"--fail-if {rule.text!r}: {rule.metric} has no value in {la} at {where} "
            "(not measured there, or no request finished), so the rule cannot be judged; "
            "gate on a metric both runs measured"
        )
    if not math.isfinite(new.value):
        return (
            True,
            f"FAIL {rule.text} at {where}: no value in {lb} ({base.value:.4g} in {la}): not "
            "measured there, or no request finished",
            math.inf if rule.op == ">" else -math.inf,
        )
    iv = new.ratio
    assert iv is not None
    change = _change(rule, base.value, new.value, iv.value)
    shown = _shown(rule, change)
    has_iv = not (math.isnan(iv.low) or math.isnan(iv.high)) and base.value != 0
    if not has_iv:
        short = new.repeats < MIN_REPEATS and not new.reason.startswith("a value is zero")
        tally.short += short
        tally.zero += not short
    real = has_iv and (iv.low > 1.0 if rule.op == ">" else iv.high < 1.0)
    if not rule.beyond(change):
        return False, None, change
    if real or not has_iv:
        basis = (
            f"interval of the ratio {_pct(iv.low - 1)} to {_pct(iv.high - 1)}"
            if has_iv
            else "no interval: judged by the threshold alone"
        )
        line = f"FAIL {rule.text} at {where}: {shown} ({base.value:.4g} → {new.value:.4g}; {basis})"
        return True, line, change
    return (
        False,
        f"pass {rule.text} at {where}: {shown} is beyond the threshold but within the "
        f"run-to-run spread (interval {_pct(iv.low - 1)} to {_pct(iv.high - 1)})",
        change,
    )


def _notes(tally: _Tally, planned: int) -> list[str]:
    lines = []
    if tally.short:
        # Planned 2 or more and still short: a run is unfinished (interrupted, or failed
        # repeats), not configured too small.
        why = (
            f"the runs planned {planned} but some points lack repeats: let both runs finish "
            "(kvsim run … --resume)"
            if planned >= 2
            else "run with repeats: 2 or more"
        )
        lines.append(
            f"note: {tally.short} comparison(s) had fewer than 2 repeats per run, so no "
            f"interval: the threshold alone decided there ({why})"
        )
    if tally.zero:
        lines.append(
            f"note: {tally.zero} comparison(s) had a value of 0 or below in a repeat, which "
            "has no ratio and so no interval: the threshold alone decided there"
        )
    return lines


def judge(
    comp: Comparison,
    rules: list[Rule],
    base_label: str,
    new_label: str,
    planned: int = 1,
    missing: Sequence[str] = (),
) -> GateResult:
    """Apply ``rules`` to every point of ``comp`` (a two-run comparison by run, BASE first);
    ``planned``: the fewest repeats either run's config asked for; ``missing``: the points
    of BASE that NEW lacks (failed or never run there), each a failure: a gate passes only
    what it judged."""
    lines = [f"FAIL at {what}" for what in missing]
    failed = bool(missing)
    tally = _Tally()
    checked = 0
    names = {m.name for m in comp.metrics}
    for rule in rules:
        if rule.metric not in names:
            raise ValueError(f"--fail-if {rule.text!r}: metric {rule.metric!r} is not compared")
        worst: tuple[float, str] | None = None
        said = len(lines)
        for lv in comp.levels:
            base = comp.cells.get((lv, base_label, rule.metric))
            new = comp.cells.get((lv, new_label, rule.metric))
            if base is None or new is None or new.ratio is None:
                continue
            checked += 1
            where = ",".join(f"{a}={v}" for a, v in zip(comp.level_axes, lv, strict=True))
            bad, line, change = _point(rule, where, base, new, (base_label, new_label), tally)
            failed |= bad
            if line:
                lines.append(line)
            if worst is None or (change > worst[0] if rule.op == ">" else change < worst[0]):
                worst = (change, f"{_shown(rule, change)} at {where}")
        if len(lines) == said and worst is not None:
            lines.append(f"pass {rule.text}: the largest change is {worst[1]}")
    lines += _notes(tally, planned)
    if not checked:
        raise ValueError("--fail-if: no point of BASE has a twin in NEW to judge")
    return GateResult(failed, lines)
