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
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from sim.analysis.compare import Comparison

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
    if rule.relative:
        return ratio - 1 if math.isfinite(ratio) else math.nan
    return new - base


def judge(
    comp: Comparison, rules: list[Rule], base_label: str, new_label: str, planned: int = 1
) -> GateResult:
    """Apply ``rules`` to every point of ``comp`` (a two-run comparison by run, BASE first);
    ``planned``: the fewest repeats either run's config asked for."""
    lines: list[str] = []
    failed = False
    no_interval = 0
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
            iv = new.ratio
            change = _change(rule, base.value, new.value, iv.value)
            if math.isnan(change):
                continue
            shown = _pct(change) if rule.relative else f"{change:+.4g}"
            has_iv = not (math.isnan(iv.low) or math.isnan(iv.high))
            real = has_iv and (iv.low > 1.0 if rule.op == ">" else iv.high < 1.0)
            if not has_iv:
                no_interval += 1
            if rule.beyond(change) and (real or not has_iv):
                failed = True
                basis = (
                    f"interval of the ratio {_pct(iv.low - 1)} to {_pct(iv.high - 1)}"
                    if has_iv
                    else "no interval: judged by the threshold alone"
                )
                lines.append(
                    f"FAIL {rule.text} at {where}: {shown} "
                    f"({base.value:.4g} → {new.value:.4g}; {basis})"
                )
            elif rule.beyond(change):
                lines.append(
                    f"pass {rule.text} at {where}: {shown} is beyond the threshold but "
                    f"within the run-to-run spread (interval {_pct(iv.low - 1)} to "
                    f"{_pct(iv.high - 1)})"
                )
            if worst is None or (change > worst[0] if rule.op == ">" else change < worst[0]):
                worst = (change, f"{shown} at {where}")
        if len(lines) == said and worst is not None:
            lines.append(f"pass {rule.text}: the largest change is {worst[1]}")
    if no_interval:
        # Planned 2 or more and still short: a run is unfinished (interrupted, or failed
        # points), not configured too small.
        why = (
            f"the runs planned {planned} but some points lack repeats: let both runs finish "
            "(kvsim run … --resume)"
            if planned >= 2
            else "run with repeats: 2 or more"
        )
        lines.append(
            f"note: {no_interval} comparison(s) had fewer than 2 repeats per run, so no "
            f"interval: the threshold alone decided there ({why})"
        )
    if not checked:
        raise ValueError("--fail-if: no point of BASE has a twin in NEW to judge")
    return GateResult(failed, lines)
