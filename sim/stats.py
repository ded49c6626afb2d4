"""Percentiles over measured values that may hold NaN: the one definition every summary uses.

The runtime's point summary, the instruments (engine steps, the stall probe, the
noise floor) and the model compute their figures with these. It sits on the
ground floor (numpy only), so an instrument need not import the runtime that
uses it.

Where the values are too many to hold (a model point of millions of requests, or the
simulated probe's millions of wake-ups), :class:`LogHistogram` counts them in buckets
``RELATIVE_ERROR`` wide in relative terms, and :class:`StreamPercentiles` keeps them
exactly up to a limit and in such a histogram past it: a percentile is then within
half a bucket, 0.05 %, of the exact one (values below ``FLOOR`` count as ``FLOOR``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "FLOOR",
    "RELATIVE_ERROR",
    "LogHistogram",
    "StreamPercentiles",
    "finite",
    "percentiles",
]

#: Relative width of a histogram bucket (a percentile is within half of it).
RELATIVE_ERROR = 1e-3
#: Smallest positive value a bucket tells apart: below, values count as this.
FLOOR = 1e-9


def finite(values: Iterable[float]) -> np.ndarray:
    """The values that are not NaN, as an array (filtered in one vectorised step: a
    point's summary reads some thirty columns of every request)."""
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        arr = values
    else:
        arr = np.fromiter(values, dtype=float)
    return arr[~np.isnan(arr)]


def percentiles(values: Iterable[float], qs: Sequence[float]) -> list[float]:
    """The ``qs`` percentiles of the values that are not NaN (NaN each when none is)."""
    arr = finite(values)
    if arr.size == 0:
        return [float("nan")] * len(qs)
    return [float(x) for x in np.percentile(arr, qs)]


class LogHistogram:
    """Counts of values in buckets of equal relative width; non-positive values apart."""

    def __init__(self) -> None:
        self._log_step = math.log1p(RELATIVE_ERROR)
        self._counts = np.zeros(0, dtype=np.int64)
        self._low = 0  # bucket index of _counts[0]
        self._zeros = 0
        self.count = 0
        self.total = 0.0
        self.max = -math.inf

    def add(self, values: np.ndarray) -> None:
        """Add the values that are not NaN."""
        values = values[~np.isnan(values)]
        if values.size == 0:
            return
        self.count += int(values.size)
        self.total += float(values.sum())
        self.max = max(self.max, float(values.max()))
        positive = values[values > 0]
        self._zeros += int(values.size - positive.size)
        if positive.size == 0:
            return
        idx = np.floor(np.log(np.maximum(positive, FLOOR)) / self._log_step).astype(np.int64)
        lo, hi = int(idx.min()), int(idx.max())
        if self._counts.size == 0:
            self._low = lo
        new_low = min(self._low, lo)
        new_high = max(self._low + self._counts.size - 1, hi)
        if new_low != self._low or new_high - new_low + 1 != self._counts.size:
            grown = np.zeros(new_high - new_low + 1, dtype=np.int64)
            grown[self._low - new_low : self._low - new_low + self._counts.size] = self._counts
            self._counts, self._low = grown, new_low
        self._counts += np.bincount(idx - self._low, minlength=self._counts.size)

    def percentiles(self, qs: Sequence[float]) -> list[float]:
        """The ``qs`` percentiles (0-100) by numpy's linear rule, each value replaced by
        the geometric middle of its bucket (0 for the non-positive ones)."""
        if self.count == 0:
            return [math.nan] * len(qs)
        cum = np.cumsum(self._counts)
        out = []
        for q in qs:
            rank = q / 100 * (self.count - 1)  # numpy's "linear": between two order stats
            below = math.floor(rank)
            frac = rank - below
            a = self._value_at(below, cum)
            b = self._value_at(min(below + 1, self.count - 1), cum)
            out.append(a + (b - a) * frac)
        return out

    def _value_at(self, k: int, cum: np.ndarray) -> float:
        """The ``k``-th smallest value (0-based), as its bucket's middle."""
        if k < self._zeros:
            return 0.0
        i = int(np.searchsorted(cum, k - self._zeros, side="right"))
        return math.exp((self._low + i + 0.5) * self._log_step)


class StreamPercentiles:
    """Percentiles of finite values added batch by batch, in memory bounded by ``exact_limit``.

    Up to ``exact_limit`` values they are kept, and :meth:`percentiles` is exactly
    :func:`percentiles` of them; past it they go into a :class:`LogHistogram` (within
    ``RELATIVE_ERROR / 2`` of the exact figure). ``count`` and ``max`` are exact either way.
    """

    def __init__(self, exact_limit: int) -> None:
        self._limit = exact_limit
        self._parts: list[np.ndarray] = []
        self._hist: LogHistogram | None = None
        self.count = 0
        self.max = -math.inf

    @property
    def exact(self) -> bool:
        """Whether :meth:`percentiles` is the exact figure (no histogram in use)."""
        return self._hist is None

    def add(self, values: np.ndarray) -> None:
        if values.size == 0:
            return
        self.count += int(values.size)
        self.max = max(self.max, float(values.max()))
        if self._hist is not None:
            self._hist.add(values)
            return
        self._parts.append(np.array(values, dtype=np.float64))
        if self.count > self._limit:
            self._hist = LogHistogram()
            for part in self._parts:
                self._hist.add(part)
            self._parts = []

    def percentiles(self, qs: Sequence[float]) -> list[float]:
        if self._hist is not None:
            return self._hist.percentiles(qs)
        return percentiles(np.concatenate(self._parts) if self._parts else np.zeros(0), qs)
