"""A load thread's GIL-held time from a job's measured end to its answer's post.

Real mode's load thread stamps a job's end inside ``measure()`` (sim.instruments.gilmeter)
and then, still holding the GIL, finishes the meter's bookkeeping, builds the outcome and
posts it (``HybridEnvironment.post_at``, timed at the post): a modelled transfer starts
at the post, not at the stamped end. requests.csv has the stamped end (``cpu_done_s``)
and the transfer's end (``done_s``), so a transfer that ran alone on the link took its
time alone plus that lag. The 13:36 runs of issue 40: 35-45 µs a request at 15 req/s,
15-20 µs at 100-800 req/s (sim.model.threads.ModelWorkers.post_s replays it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from sim.point.records import RequestRecord

__all__ = ["cell_number", "post_lag_s"]

#: Columns sim.columns names without a constant: the record's own field names.
_CPU_DONE = RequestRecord.cpu_done_s.__name__  # type: ignore[attr-defined,misc]
_DONE = RequestRecord.done_s.__name__  # type: ignore[attr-defined,misc]
_BYTES = RequestRecord.bytes.__name__  # type: ignore[attr-defined,misc]
_STORE_WAIT = RequestRecord.store_wait_ms.__name__  # type: ignore[attr-defined,misc]
_ATTEMPTS = RequestRecord.attempts.__name__  # type: ignore[attr-defined,misc]


def cell_number(value: Any) -> float:
    """A requests.csv cell (or a record's field) as a float; NaN when empty or not one."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def post_lag_s(rows: Iterable[Mapping[str, Any]], alone_s: Callable[[int], float]) -> float | None:
    """The median, over ok requests whose transfer ran alone (no store wait, one attempt,
    no other request's transfer between its stamped end and its end), of the transfer's
    time beyond ``alone_s(bytes)``, its time alone on the link. None when none ran alone.
    A transfer sharing the link takes longer for that reason alone: those are left out."""
    spans: list[tuple[float, float, float]] = []
    for row in rows:
        if row.get("status") != "ok":
            continue
        start, end = cell_number(row.get(_CPU_DONE)), cell_number(row.get(_DONE))
        nbytes = cell_number(row.get(_BYTES))
        waited = cell_number(row.get(_STORE_WAIT))
        attempts = cell_number(row.get(_ATTEMPTS))
        if not all(math.isfinite(v) for v in (start, end, nbytes)) or end < start:
            continue
        if waited > 0 or attempts > 1:
            spans.append((start, end, math.nan))  # overlaps others, but is not measured
            continue
        spans.append((start, end, end - start - alone_s(int(nbytes))))
    spans.sort()
    lags = []
    latest_end = -math.inf
    for i, (start, end, lag) in enumerate(spans):
        nxt = spans[i + 1][0] if i + 1 < len(spans) else math.inf
        if latest_end <= start and end <= nxt and math.isfinite(lag):
            lags.append(lag)
        latest_end = max(latest_end, end)
    if not lags:
        return None
    # to the nanosecond, the clock's (perf_counter_ns): a model run's own transfers come
    # back as 0, not as the float error of end - start - alone
    return max(0.0, round(float(np.median(lags)), 9))
