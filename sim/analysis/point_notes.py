"""The warnings under the end table: one sentence per point, or one line per kind.

A few points that did not apply their load (``sim.analysis.behind``) or
whose meter exceeds the py-spy audit (``sim.analysis.audit``) each get their own
sentence, as they always have. A model sweep of a thousand points can have
hundreds of them: a sentence each would bury the table, so above
:data:`MANY_NOTES` points of one kind that kind gets a single line instead — how
many of how many points, the worst few by name with their figures, and the
``summary.csv`` columns that hold every point's figures (the table marks each
such point too).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sim import columns
from sim.analysis.audit import AUDIT_FLAG_RATIO, audit_flagged, audit_note
from sim.analysis.behind import ACHIEVED_MIN, behind_note, fell_behind
from sim.rundir.numbers import as_float

__all__ = ["MANY_NOTES", "WORST_NAMED", "audit_line", "point_label", "point_warnings"]

#: Above this many points of one kind, that kind is one summary line, not a line each.
MANY_NOTES = 10
#: Points a summary line names (the worst first).
WORST_NAMED = 3

_num = as_float


def point_label(row: Mapping[str, Any], axes: Sequence[str]) -> str:
    """``variant=numpy · workers=4``: the point's axis values (or "the point")."""
    return " · ".join(f"{a}={row.get(a, '')}" for a in axes) or "the point"


def _lag_key(row: Mapping[str, Any]) -> tuple[float, float]:
    """Sorts the worst-behind first: the smallest share applied, then the largest lag p99."""
    lag = _num(row.get(columns.INJECT_LAG_P99_MS.name))
    offered, achieved = (
        _num(row.get(columns.OFFERED_RPS.name)),
        _num(row.get(columns.ACHIEVED_RPS.name)),
    )
    share = achieved / offered if offered > 0 and not math.isnan(achieved) else math.inf
    return (share, -lag if not math.isnan(lag) else math.inf)


def _behind_figures(row: Mapping[str, Any]) -> str:
    parts = [f"lag p99 {_num(row.get(columns.INJECT_LAG_P99_MS.name)):.1f} ms"]
    offered, achieved = (
        _num(row.get(columns.OFFERED_RPS.name)),
        _num(row.get(columns.ACHIEVED_RPS.name)),
    )
    if offered > 0 and not math.isnan(achieved):
        parts.append(f"{achieved:.1f} of {offered:.1f} req/s")
    return ", ".join(parts)


def _behind_summary(late: Sequence[Mapping[str, Any]], total: int, axes: Sequence[str]) -> str:
    worst = sorted(late, key=_lag_key)[:WORST_NAMED]
    named = "; ".join(f"{point_label(r, axes)} ({_behind_figures(r)})" for r in worst)
    return (
        f"{len(late):,} of {total:,} points: the load was not applied (under "
        f"{100 * ACHIEVED_MIN:.0f} % of the offered rate achieved: the harness fell behind "
        f"the planned arrivals); worst: {named}. These points measured a lighter load than "
        'configured. The table marks them "behind"; summary.csv has every point\'s '
        "inject_lag_p99_ms, offered_rps and achieved_rps"
    )


def _audit_summary(flagged: Sequence[Mapping[str, Any]], total: int, axes: Sequence[str]) -> str:
    worst = sorted(flagged, key=lambda r: _num(r.get(columns.AUDIT_VS_METER.name)))[:WORST_NAMED]
    named = "; ".join(
        f"{point_label(r, axes)} ({_num(r.get(columns.AUDIT_VS_METER.name)):.2f})" for r in worst
    )
    variants = list(dict.fromkeys(str(r.get("variant", "?")) for r in flagged))
    return (
        f"{len(flagged):,} of {total:,} points: the meter counts more than "
        f"{AUDIT_FLAG_RATIO:g}× the GIL time py-spy saw the load threads hold "
        f"(audit_vs_meter below {1 / AUDIT_FLAG_RATIO:.2f}); lowest: {named}. "
        f"{', '.join(variants)} hold less of the GIL than metered — a GIL-free section "
        "not declared (connectors.base.gil_free), so gil_hold_ms overstates the hold; "
        "summary.csv has every point's audit_vs_meter"
    )


def point_warnings(
    rows: Sequence[Mapping[str, Any]], axes: Sequence[str], many: int = MANY_NOTES
) -> list[str]:
    """The warnings to print under the end table (without their ``warning:``).

    Each kind with at most ``many`` points: one sentence per point, in table order
    (a point's behind sentence before its audit one, as before). A kind with more:
    one summary line, first.
    """
    late = [r for r in rows if fell_behind(r)]
    flagged = [r for r in rows if audit_flagged(r)]
    out: list[str] = []
    if len(late) > many:
        out.append(_behind_summary(late, len(rows), axes))
    if len(flagged) > many:
        out.append(_audit_summary(flagged, len(rows), axes))
    for r in rows:
        label = point_label(r, axes)
        notes = (
            behind_note(label, r) if len(late) <= many else None,
            audit_note(label, r) if len(flagged) <= many else None,
        )
        out += [n for n in notes if n]
    return out


def audit_line(rows: Sequence[Mapping[str, Any]], many: int = MANY_NOTES) -> str | None:
    """What the py-spy audit found where it ran: each point's audit_vs_meter by variant,
    or over ``many`` audited points their range; None when no point was audited."""
    audited = [r for r in rows if str(r.get(columns.AUDIT_STATUS.name, "")) == "ok"]
    if not audited:
        return None
    ratios = [_num(r.get(columns.AUDIT_VS_METER.name)) for r in audited]
    if len(audited) > many:
        known = [x for x in ratios if not math.isnan(x)] or [math.nan]
        figures = (
            f"{min(known):.2f} to {max(known):.2f} over {len(audited):,} audited points "
            "(summary.csv: audit_vs_meter)"
        )
    else:
        figures = ", ".join(
            f"{r.get('variant')} {x:.2f}" for r, x in zip(audited, ratios, strict=True)
        )
    cpu = max(_num(r.get(columns.AUDIT_PYSPY_CPU_FRAC.name)) for r in audited)
    return (
        f"GIL audit (py-spy): audit_vs_meter {figures}; py-spy used up to "
        f"{100 * cpu:.0f} % of a core"
    )
