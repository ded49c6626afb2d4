"""Summary metrics of one experiment point; their names, units and meanings are
``sim.columns``'s."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import attrgetter

import numpy as np

from sim import columns
from sim.config.sections import BASE_PERCENTILES, percentile_label
from sim.point.records import HOLD_STAGE_COLUMNS, RequestRecord
from sim.stats import finite, percentiles

__all__ = [
    "CELL_COLUMNS",
    "OK_ONLY_INPUTS",
    "PLANNED_METRICS",
    "SUMMARY_INPUTS",
    "SUMMARY_METRICS",
    "cell_table",
    "extra_latency_columns",
    "record_cells",
    "request_columns",
    "summarize_columns",
    "summarize_requests",
    "summary_columns",
    "table_columns",
]

#: Columns known from the workload plan alone (sim.workload.replay); NaN unless a replay.
PLANNED_METRICS = columns.names(columns.PLANNED)

#: Summary columns after the axis columns, in order (their units and meanings: sim.columns).
SUMMARY_METRICS = list(columns.names(columns.SUMMARY))


def _mean(values: Iterable[float]) -> float:
    arr = finite(values)
    return float(arr.mean()) if arr.size else float("nan")


def errors_by_kind(records: Iterable[RequestRecord]) -> str:
    """Failed requests counted by error type, e.g. ``StoreError=3;RuntimeError=1``."""
    counts = Counter(r.error.split(":", 1)[0] for r in records if r.status == "failed")
    return ";".join(f"{k}={v}" for k, v in counts.most_common())


def summary_columns(summary: dict[str, object]) -> list[str]:
    """Column order of a summary row: SUMMARY_METRICS with configured latency percentiles
    next to the others (after ``latency_p99_ms``), then any add-on's extra columns."""
    latency = sorted(
        (k for k in summary if k.startswith("latency_p") and k not in SUMMARY_METRICS),
        key=lambda k: float(k[len("latency_p") : -len("_ms")]),
    )
    cols = list(SUMMARY_METRICS)
    at = cols.index(columns.LATENCY_P99_MS.name)
    cols[at:at] = [c for c in latency if float(c[len("latency_p") : -len("_ms")]) < 99]
    at = cols.index(columns.LATENCY_P99_MS.name) + 1
    cols[at:at] = [c for c in latency if float(c[len("latency_p") : -len("_ms")]) > 99]
    return cols + [k for k in summary if k not in cols]


def extra_latency_columns(qs: Sequence[float]) -> list[str]:
    """Summary columns of configured latency percentiles beyond p50/p90/p99
    (``output.percentiles``), e.g. ``latency_p95_ms``, ``latency_p99.9_ms``."""
    return [f"latency_{percentile_label(q)}_ms" for q in _extra_qs(qs)]


def _extra_qs(qs: Sequence[float]) -> list[float]:
    return sorted(set(map(float, qs)) - set(BASE_PERCENTILES))


def _rate(times_s: Sequence[float]) -> float:
    """Requests per second over a span of arrival times: (n - 1) / (last - first)."""
    arr = np.sort(finite(times_s))
    if arr.size < 2 or arr[-1] <= arr[0]:
        return float("nan")
    return float((arr.size - 1) / (arr[-1] - arr[0]))


#: Per-request columns the summary reads (requests.csv names; ``gc`` is gc_gen0+1+2), and
#: of them the ones read for finished (ok) requests only.
SUMMARY_INPUTS = (
    columns.LATENCY_MS.name,
    columns.TRANSFER_MS.name,
    columns.GIL_HOLD_MS.name,
    columns.GIL_WAIT_MS.name,
    columns.QUEUE_MS.name,
    columns.INJECT_LAG_MS.name,
    columns.STAGE_WALL_MS.name,
    *HOLD_STAGE_COLUMNS,
    "gc",
)
OK_ONLY_INPUTS = frozenset({columns.LATENCY_MS.name, columns.TRANSFER_MS.name})


#: The numeric record fields :func:`request_columns` reads, in one row per record.
_FLOAT_INPUTS = tuple(n for n in SUMMARY_INPUTS if n != "gc")
#: A request's *cells*: the numeric fields the summary and windows read, in this order.
#: The record sink keeps these instead of the record (sim.point.record_sink); model mode
#: makes them without a record for a request whose row is not kept (sim.model.driver).
CELL_COLUMNS = (
    *_FLOAT_INPUTS,
    columns.GC_GEN0.name,
    columns.GC_GEN1.name,
    columns.GC_GEN2.name,
    columns.ARRIVAL_S.name,
    columns.INJECTED_S.name,
)
#: A record's cells, one C-level attribute fetch for all of them.
record_cells = attrgetter(*CELL_COLUMNS)


def cell_table(cells: Sequence[tuple[float, ...]]) -> np.ndarray:
    """The cells of ``len(cells)`` requests as one contiguous row per field (CELL_COLUMNS).

    Streamed into the array (``np.fromiter``: a third quicker than ``np.array`` of the
    rows, which first inspects every row for its shape); the values are the same floats
    in the same order."""
    n = len(cells)
    width = len(CELL_COLUMNS)
    flat = chain.from_iterable(cells)
    table = np.fromiter(flat, dtype=float, count=n * width).reshape(n, width)
    return np.ascontiguousarray(table.T)


def table_columns(table: np.ndarray, ok: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`request_columns` from a :func:`cell_table` and the requests' ok mask."""
    cols: dict[str, np.ndarray] = {}
    for i, name in enumerate(_FLOAT_INPUTS):
        cols[name] = table[i][ok] if name in OK_ONLY_INPUTS else table[i]
    k = len(_FLOAT_INPUTS)
    cols["gc"] = table[k] + table[k + 1] + table[k + 2]  # small integers: exact
    cols[columns.ARRIVAL_S.name], cols[columns.INJECTED_S.name] = table[k + 3], table[k + 4]
    return {
        name: cols[name]
        for name in (*SUMMARY_INPUTS, columns.ARRIVAL_S.name, columns.INJECTED_S.name)
    }


def request_columns(records: Sequence[RequestRecord]) -> dict[str, np.ndarray]:
    """The columns SUMMARY_INPUTS of ``records`` (ok-only ones over the ok records), and
    ``arrival_s`` and ``injected_s``, as float arrays (one C-level attribute fetch per
    record for all the fields at once: a generator per column cost a fifth of a model
    point's time)."""
    ok = np.array([r.status == "ok" for r in records], dtype=bool)
    return table_columns(cell_table(list(map(record_cells, records))), ok)


def summarize_requests(
    records: Sequence[RequestRecord], elapsed_s: float, extra_percentiles: Sequence[float] = ()
) -> dict[str, float]:
    """Metrics over all requests of a point; latency figures count finished (ok) requests.

    ``extra_percentiles`` adds ``latency_p<q>_ms`` columns (``output.percentiles``).
    ``offered_rps`` is the rate of the planned arrivals, ``achieved_rps`` the rate at
    which the harness handed requests to the pipeline, both over their own span. The
    reference for sim.point.summary_stream, which gives the same numbers from the same
    columns without holding the records.
    """
    failed = sum(r.status == "failed" for r in records)
    return summarize_columns(
        request_columns(records),
        len(records),
        failed,
        errors_by_kind(records),
        elapsed_s,
        extra_percentiles,
    )


def summarize_columns(
    cols: dict[str, np.ndarray],
    requests: int,
    failed: int,
    errors: str,
    elapsed_s: float,
    extra_percentiles: Sequence[float] = (),
) -> dict[str, float]:
    """:func:`summarize_requests` from the columns of :func:`request_columns`."""
    lat = finite(cols[columns.LATENCY_MS.name])
    ok = len(cols[columns.LATENCY_MS.name])
    hold = cols[columns.GIL_HOLD_MS.name]
    wait = cols[columns.GIL_WAIT_MS.name]
    p50, p90, p99 = percentiles(lat, [50, 90, 99])
    h50, h99 = percentiles(hold, [50, 99])
    q50, q99 = percentiles(cols[columns.QUEUE_MS.name], [50, 99])
    (t50,) = percentiles(cols[columns.TRANSFER_MS.name], [50])
    lag50, lag99 = percentiles(cols[columns.INJECT_LAG_MS.name], [50, 99])
    return {
        "requests": requests,
        "ok": ok,
        "failed": failed,
        "errors": errors,
        columns.ELAPSED_S.name: elapsed_s,
        columns.THROUGHPUT_RPS.name: ok / elapsed_s if elapsed_s > 0 else float("nan"),
        columns.LATENCY_MEAN_MS.name: _mean(lat),
        columns.LATENCY_P50_MS.name: p50,
        columns.LATENCY_P90_MS.name: p90,
        columns.LATENCY_P99_MS.name: p99,
        columns.LATENCY_MAX_MS.name: float(lat.max()) if lat.size else float("nan"),
        columns.OFFERED_RPS.name: _rate(cols[columns.ARRIVAL_S.name]),
        columns.ACHIEVED_RPS.name: _rate(cols[columns.INJECTED_S.name]),
        columns.INJECT_LAG_P50_MS.name: lag50,
        columns.INJECT_LAG_P99_MS.name: lag99,
        columns.GIL_HOLD_MEAN_MS.name: _mean(hold),
        columns.GIL_HOLD_P50_MS.name: h50,
        columns.GIL_HOLD_P99_MS.name: h99,
        columns.GIL_WAIT_MEAN_MS.name: _mean(wait),
        columns.GIL_WAIT_P99_MS.name: percentiles(wait, [99])[0],
        columns.STAGE_WALL_MEAN_MS.name: _mean(cols[columns.STAGE_WALL_MS.name]),
        columns.QUEUE_P50_MS.name: q50,
        columns.QUEUE_P99_MS.name: q99,
        columns.TRANSFER_P50_MS.name: t50,
        **_extra_latency(lat, extra_percentiles),
        **_stage_summary(cols, requests),
    }


def _extra_latency(lat: Sequence[float], qs: Sequence[float]) -> dict[str, float]:
    wanted = _extra_qs(qs)  # the numbers themselves, not read back from a column name
    cols = extra_latency_columns(wanted)
    return dict(zip(cols, percentiles(lat, wanted), strict=True)) if cols else {}


def _stage_summary(cols: dict[str, np.ndarray], requests: int) -> dict[str, float]:
    """Mean and p99 of each stage's hold, and mean collections per request."""
    out: dict[str, float] = {}
    for col in HOLD_STAGE_COLUMNS:
        stem = col.removesuffix("_ms")
        out[f"{stem}_mean_ms"] = _mean(cols[col])
        out[f"{stem}_p99_ms"] = percentiles(cols[col], [99])[0]
    out[columns.GC_PER_REQUEST.name] = _mean(cols["gc"]) if requests else float("nan")
    return out
