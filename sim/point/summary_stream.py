"""A point's summary from its requests as they finish, in memory that does not grow with them.

A model-mode point may simulate ten million requests; holding every record until
the point ends (about 5 KB each) would need tens of gigabytes. The summary reads a
dozen numeric columns of each request (``sim.point.metrics.SUMMARY_INPUTS``), so
those are all that is kept, batch by batch:

* up to ``EXACT_LIMIT`` requests, every value, and the summary is exactly what
  ``summarize_requests`` gives for the same records (the same function computes it:
  ``summarize_columns``; tests compare them);
* past it, each column goes into a :class:`LogHistogram` whose buckets are
  ``RELATIVE_ERROR`` wide in relative terms, so a percentile is within 0.05 % of the
  exact one (a bucket's geometric middle stands for its values), and means, counts,
  minima and maxima stay exact up to floating-point summation order.

The rates (``offered_rps``, ``achieved_rps``) need only the count, first and last of
the arrival and injection times, which are kept exactly either way.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from sim import columns
from sim.point.metrics import (
    SUMMARY_INPUTS,
    extra_latency_columns,
    request_columns,
    summarize_columns,
)
from sim.point.records import RequestRecord
from sim.stats import RELATIVE_ERROR, LogHistogram

__all__ = ["EXACT_LIMIT", "RELATIVE_ERROR", "LogHistogram", "SummaryStream", "WindowTable"]

#: Requests whose values are kept as they are (about 100 bytes each): the summary of a
#: point of at most this many is exact.
EXACT_LIMIT = 1 << 14


class _Span:
    """Count, first and last of the non-NaN values of a time column."""

    def __init__(self) -> None:
        self.count = 0
        self.low = math.inf
        self.high = -math.inf

    def add(self, values: np.ndarray) -> None:
        values = values[~np.isnan(values)]
        if values.size:
            self.count += int(values.size)
            self.low = min(self.low, float(values.min()))
            self.high = max(self.high, float(values.max()))

    def rate(self) -> float:
        """(n - 1) / (last - first), as ``sim.point.metrics`` computes it."""
        if self.count < 2 or self.high <= self.low:
            return math.nan
        return (self.count - 1) / (self.high - self.low)


class SummaryStream:
    """The summary of requests added batch by batch (any order), in bounded memory."""

    def __init__(self, extra_percentiles: Sequence[float] = ()) -> None:
        self._extra = tuple(extra_percentiles)
        self._parts: list[dict[str, np.ndarray]] = []
        self._hists: dict[str, LogHistogram] | None = None
        self._spans = {columns.ARRIVAL_S.name: _Span(), columns.INJECTED_S.name: _Span()}
        self.requests = 0
        self.ok = 0
        self.failed = 0
        self.hold_ms = 0.0
        self._errors: Counter[str] = Counter()

    def add(self, records: Sequence[RequestRecord]) -> dict[str, np.ndarray]:
        """Count ``records`` in; returns their columns (sim.point.metrics.request_columns),
        which the caller may read but not change."""
        if not records:
            return {}
        cols = request_columns(records)
        errors = [r.error for r in records if r.status == "failed"]
        self.add_columns(cols, len(records), errors)
        return cols

    def add_columns(self, cols: Mapping[str, np.ndarray], n: int, errors: Sequence[str]) -> None:
        """Count ``n`` requests in by their columns (sim.point.metrics.request_columns of
        them, which the caller made: the record sink, from the requests' cells); ``errors``:
        the ``error`` of each that failed, in order."""
        self.requests += n
        self.ok += len(cols[columns.LATENCY_MS.name])  # the ok records' column
        self.failed += len(errors)
        for error in errors:
            self._errors[error.split(":", 1)[0]] += 1
        hold = cols[columns.GIL_HOLD_MS.name]
        self.hold_ms += float(hold[~np.isnan(hold)].sum())
        for name, span in self._spans.items():
            span.add(cols[name])
        if self._hists is None:
            self._parts.append(dict(cols))
            if self.requests > EXACT_LIMIT:
                self._to_histograms()
        else:
            for name, hist in self._hists.items():
                hist.add(cols[name])

    def _to_histograms(self) -> None:
        self._hists = {name: LogHistogram() for name in SUMMARY_INPUTS}
        for part in self._parts:
            for name, hist in self._hists.items():
                hist.add(part[name])
        self._parts = []

    @property
    def exact(self) -> bool:
        """Whether :meth:`summary` is exactly ``summarize_requests`` of the same records."""
        return self._hists is None

    def _errors_text(self) -> str:
        return ";".join(f"{k}={v}" for k, v in self._errors.most_common())

    def summary(self, elapsed_s: float) -> dict[str, float]:
        if self._hists is None:
            cols = {
                name: np.concatenate([p[name] for p in self._parts]) if self._parts else np.zeros(0)
                for name in (*SUMMARY_INPUTS, *self._spans)
            }
            return summarize_columns(
                cols, self.requests, self.failed, self._errors_text(), elapsed_s, self._extra
            )
        return self._approximate(elapsed_s)

    def _approximate(self, elapsed_s: float) -> dict[str, float]:
        h = self._hists
        assert h is not None

        def mean(name: str) -> float:
            return h[name].total / h[name].count if h[name].count else math.nan

        lat = h[columns.LATENCY_MS.name]
        ok = self.ok
        p50, p90, p99 = lat.percentiles([50, 90, 99])
        out: dict[str, float] = {
            "requests": self.requests,
            "ok": ok,
            "failed": self.failed,
            "errors": self._errors_text(),  # type: ignore[dict-item]
            columns.ELAPSED_S.name: elapsed_s,
            columns.THROUGHPUT_RPS.name: ok / elapsed_s if elapsed_s > 0 else math.nan,
            columns.LATENCY_MEAN_MS.name: mean(columns.LATENCY_MS.name),
            columns.LATENCY_P50_MS.name: p50,
            columns.LATENCY_P90_MS.name: p90,
            columns.LATENCY_P99_MS.name: p99,
            columns.LATENCY_MAX_MS.name: lat.max if lat.count else math.nan,
            columns.OFFERED_RPS.name: self._spans[columns.ARRIVAL_S.name].rate(),
            columns.ACHIEVED_RPS.name: self._spans[columns.INJECTED_S.name].rate(),
        }
        out[columns.INJECT_LAG_P50_MS.name], out[columns.INJECT_LAG_P99_MS.name] = h[
            columns.INJECT_LAG_MS.name
        ].percentiles([50, 99])
        out[columns.GIL_HOLD_MEAN_MS.name] = mean(columns.GIL_HOLD_MS.name)
        out[columns.GIL_HOLD_P50_MS.name], out[columns.GIL_HOLD_P99_MS.name] = h[
            columns.GIL_HOLD_MS.name
        ].percentiles([50, 99])
        out[columns.GIL_WAIT_MEAN_MS.name] = mean(columns.GIL_WAIT_MS.name)
        out[columns.GIL_WAIT_P99_MS.name] = h[columns.GIL_WAIT_MS.name].percentiles([99])[0]
        out[columns.STAGE_WALL_MEAN_MS.name] = mean(columns.STAGE_WALL_MS.name)
        out[columns.QUEUE_P50_MS.name], out[columns.QUEUE_P99_MS.name] = h[
            columns.QUEUE_MS.name
        ].percentiles([50, 99])
        out[columns.TRANSFER_P50_MS.name] = h[columns.TRANSFER_MS.name].percentiles([50])[0]
        cols = extra_latency_columns(self._extra)
        wanted = [float(c[len("latency_p") : -len("_ms")]) for c in cols]
        out.update(zip(cols, lat.percentiles(wanted), strict=True))
        for name in SUMMARY_INPUTS:
            if name.startswith("hold_"):
                stem = name.removesuffix("_ms")
                out[f"{stem}_mean_ms"] = mean(name)
                out[f"{stem}_p99_ms"] = h[name].percentiles([99])[0]
        out[columns.GC_PER_REQUEST.name] = mean("gc")
        return out


class WindowTable:
    """Latency by window of run time (``output.window_s``): the rows of windows.csv.

    A request counts in the window of its planned arrival; its latency (ok requests)
    goes into that window's :class:`LogHistogram`. Memory: one histogram per window.
    """

    def __init__(self, window_s: float) -> None:
        self._width = window_s
        self._hists: dict[int, LogHistogram] = {}
        self._requests: dict[int, int] = {}

    def add(self, cols: Mapping[str, np.ndarray], latency_ms: np.ndarray) -> None:
        """Count requests in by their columns (sim.point.metrics.request_columns, which
        the sink has made already for the summary) and their latencies, NaN where a
        request did not end ok (the columns' own latency column has the ok ones only)."""
        at = cols[columns.ARRIVAL_S.name]
        win = np.floor(at / self._width).astype(np.int64)
        for w in np.unique(win).tolist():
            mask = win == w
            self._requests[w] = self._requests.get(w, 0) + int(mask.sum())
            self._hists.setdefault(w, LogHistogram()).add(latency_ms[mask])

    def rows(self) -> list[dict[str, float]]:
        out = []
        for w in sorted(self._requests):
            h = self._hists[w]
            p50, p99 = h.percentiles([50, 99])
            out.append(
                {
                    "window_start_s": w * self._width,
                    "window_s": self._width,
                    "requests": self._requests[w],
                    "ok": h.count,
                    columns.OFFERED_RPS.name: self._requests[w] / self._width,
                    columns.LATENCY_P50_MS.name: p50,
                    columns.LATENCY_P99_MS.name: p99,
                    columns.LATENCY_MAX_MS.name: h.max if h.count else math.nan,
                }
            )
        return out
