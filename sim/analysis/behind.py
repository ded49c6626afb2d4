"""Whether a point applied the load it was given, and how late its requests were handed
over — two different things, said differently.

A point's latency counts from the planned arrival, so a harness that hands requests
over late still reports honest latencies. What matters is whether the load applied
was the load configured:

* **load not applied** (achieved under :data:`ACHIEVED_MIN` of the offered rate): the
  point measured a lighter load than asked — a loud warning, and the end table marks
  the point ``behind``;
* **lag while the load was applied** (injection lag p99 above :data:`LAG_P99_LIMIT_MS`
  plus the noise floor, yet the rate achieved): the simulation thread waited for the
  GIL behind the load threads, which is what a GIL-heavy variant does to any Python
  thread. It is a figure (``inject_lag_p99_ms``, the table's ``lag p99`` column) and
  one quiet line for the whole run, not a warning per point: a warning on almost every
  point of a GIL-bound sweep would teach users to ignore warnings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sim import columns
from sim.rundir.numbers import as_float

__all__ = [
    "ACHIEVED_MIN",
    "LAG_P99_LIMIT_MS",
    "behind_note",
    "fell_behind",
    "lag_line",
    "lagged",
]

#: Injection lag p99 above this (plus the point's noise floor p99) is a lagging point.
LAG_P99_LIMIT_MS = 1.0
#: Achieving less than this share of the offered rate is not applying the load.
ACHIEVED_MIN = 0.98


_num = as_float


def fell_behind(row: Mapping[str, Any]) -> bool:
    """The load was not applied: achieved below 98 % of the offered rate."""
    offered, achieved = (
        _num(row.get(columns.OFFERED_RPS.name)),
        _num(row.get(columns.ACHIEVED_RPS.name)),
    )
    return offered > 0 and not math.isnan(achieved) and achieved < ACHIEVED_MIN * offered


def lagged(row: Mapping[str, Any]) -> bool:
    """Injection lag p99 above 1 ms plus the noise floor p99 (whatever the rate)."""
    lag = _num(row.get(columns.INJECT_LAG_P99_MS.name))
    floor = _num(row.get(columns.NOISE_FLOOR_P99_MS.name))
    limit = LAG_P99_LIMIT_MS + (0.0 if math.isnan(floor) else floor)
    return not math.isnan(lag) and lag > limit


def behind_note(label: str, row: Mapping[str, Any]) -> str | None:
    """One sentence for a point that did not apply its load (None when it did)."""
    if not fell_behind(row):
        return None
    lag50, lag99 = (
        _num(row.get(columns.INJECT_LAG_P50_MS.name)),
        _num(row.get(columns.INJECT_LAG_P99_MS.name)),
    )
    offered, achieved = (
        _num(row.get(columns.OFFERED_RPS.name)),
        _num(row.get(columns.ACHIEVED_RPS.name)),
    )
    return (
        f"{label}: the load was not applied — {achieved:.1f} of the {offered:.1f} req/s "
        f"offered ({100 * achieved / offered:.1f} %): the harness fell behind the planned "
        f"arrivals, handing 1 request in 100 to the pipeline {lag99:.1f} ms or more late "
        f"(half of them {lag50:.1f} ms or more); the point measured a lighter load than "
        "configured"
    )


def lag_line(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """One quiet line for the points that lagged while applying their load (None: none)."""
    late = [r for r in rows if lagged(r) and not fell_behind(r)]
    if not late:
        return None
    worst = max(_num(r.get(columns.INJECT_LAG_P99_MS.name)) for r in late)
    return (
        f"note: on {len(late):,} of {len(rows):,} points the simulation thread handed "
        f"requests over late while the load was applied in full (lag p99 up to {worst:.1f} "
        "ms, the table's lag p99): it waits for the GIL behind the load threads, as any "
        "Python thread does; latency counts from the planned arrival, so it includes this"
    )
