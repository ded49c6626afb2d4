"""Whether the harness kept to the planned arrivals of a point, said in words.

A point's latency counts from the planned arrival, so a harness that fell behind
still reports honest latencies — but the load it applied was not the load
configured. The end table marks such a point and says by how much.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from sim.rundir.numbers import as_float

__all__ = ["ACHIEVED_MIN", "LAG_P99_LIMIT_MS", "behind_note", "fell_behind"]

#: Injection lag p99 above this (plus the point's noise floor p99) is falling behind.
LAG_P99_LIMIT_MS = 1.0
#: Achieving less than this share of the offered rate is falling behind.
ACHIEVED_MIN = 0.98


_num = as_float


def fell_behind(row: Mapping[str, Any]) -> bool:
    """Lag p99 above 1 ms plus the noise floor p99, or achieved below 98 % of offered."""
    lag = _num(row.get("inject_lag_p99_ms"))
    floor = _num(row.get("noise_floor_p99_ms"))
    limit = LAG_P99_LIMIT_MS + (0.0 if math.isnan(floor) else floor)
    offered, achieved = _num(row.get("offered_rps")), _num(row.get("achieved_rps"))
    late = not math.isnan(lag) and lag > limit
    slow = offered > 0 and not math.isnan(achieved) and achieved < ACHIEVED_MIN * offered
    return late or slow


def behind_note(label: str, row: Mapping[str, Any]) -> str | None:
    """One sentence for a point that fell behind (None when it kept to the plan)."""
    if not fell_behind(row):
        return None
    lag50, lag99 = _num(row.get("inject_lag_p50_ms")), _num(row.get("inject_lag_p99_ms"))
    offered, achieved = _num(row.get("offered_rps")), _num(row.get("achieved_rps"))
    parts = [
        f"{label}: the harness fell behind the planned arrivals — it handed 1 request in 100 "
        f"to the pipeline {lag99:.1f} ms or more late (half of them {lag50:.1f} ms or more)"
    ]
    if offered > 0 and not math.isnan(achieved):
        parts.append(
            f"and applied {achieved:.1f} of the {offered:.1f} req/s offered "
            f"({100 * achieved / offered:.1f} %)"
        )
    return " ".join(parts) + "; latency counts from the planned arrival, so it includes this delay"
