"""Percentiles over measured values that may hold NaN: the one definition every summary uses.

The runtime's point summary, the instruments (engine steps, the stall probe, the
noise floor) and the model compute their figures with these. It sits on the
ground floor (numpy only), so an instrument need not import the runtime that
uses it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["finite", "percentiles"]


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
