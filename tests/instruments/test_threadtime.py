"""sim.instruments.threadtime: each request's thread CPU time and core wait, summed up;
with the GIL off the GIL's columns are empty and say why, never numbers."""

from __future__ import annotations

import math
from types import SimpleNamespace

from sim import columns
from sim.instruments.threadtime import GIL_OFF_NOTE, GIL_ONLY_SUMMARY, ThreadTimes


def rec(cpu: float, wait: float) -> SimpleNamespace:
    return SimpleNamespace(thread_cpu_ms=cpu, core_wait_ms=wait)


def test_means_and_p99_of_the_requests_that_ran() -> None:
    t = ThreadTimes(gil_on=True)
    for i in range(1, 101):
        t.add(rec(float(i), 2.0 * i))
    t.add(rec(math.nan, math.nan))  # its CPU stages never ran: not a zero
    s = t.summary()
    assert s["gil_enabled"] == 1 and s["gil_note"] == ""
    assert s["thread_cpu_mean_ms"] == 50.5 and s["core_wait_mean_ms"] == 101.0
    assert 99.0 <= s["thread_cpu_p99_ms"] <= 100.0
    assert not set(GIL_ONLY_SUMMARY) & set(s)  # GIL on: the GIL columns are the meter's


def test_with_the_gil_off_the_gil_columns_are_empty_and_say_why() -> None:
    t = ThreadTimes(gil_on=False)
    t.add(rec(40.0, 3.0))
    s = t.summary()
    assert s["gil_enabled"] == 0 and s["gil_note"] == GIL_OFF_NOTE
    assert s["thread_cpu_mean_ms"] == 40.0 and s["core_wait_p99_ms"] == 3.0
    for name in ("gil_hold_mean_ms", "gil_wait_p99_ms", "hold_keys_mean_ms", "gil_busy_probe"):
        assert name in GIL_ONLY_SUMMARY and math.isnan(s[name])
    assert "stall_p99_ms" not in s  # the probe's stalls mean something without a GIL


def test_every_column_it_writes_is_catalogued() -> None:
    catalogue = set(columns.names(columns.SUMMARY))
    assert set(ThreadTimes(gil_on=False).summary()) <= catalogue
    assert set(columns.names(columns.THREADS)) == set(ThreadTimes(gil_on=True).summary())


def test_its_state_stays_bounded_over_a_million_requests() -> None:
    """A model point of 10^6 requests kept two floats a request to its end (+50 MB, its peak
    1.6x the 10^4 point's); the percentiles now go to sim.stats' bounded histogram past
    EXACT_VALUES, exact below it, within its relative error above."""
    import numpy as np

    from sim.instruments.threadtime import EXACT_VALUES
    from sim.stats import RELATIVE_ERROR, percentiles

    values = np.random.default_rng(5).lognormal(0.0, 1.0, 1_000_000)
    small, large = ThreadTimes(gil_on=True), ThreadTimes(gil_on=True)
    for v in values[: EXACT_VALUES - 1]:
        small.add(rec(float(v), 0.0))
    for v in values:
        large.add(rec(float(v), 0.0))
    exact = percentiles(values[: EXACT_VALUES - 1], [99])[0]
    assert small.summary()["thread_cpu_p99_ms"] == exact  # exact below the limit
    want = percentiles(values, [99])[0]
    got = large.summary()
    assert abs(got["thread_cpu_p99_ms"] / want - 1) <= RELATIVE_ERROR
    assert got["thread_cpu_mean_ms"] == sum(values.tolist()) / values.size
    assert got["core_wait_p99_ms"] == 0.0
    # what it holds: the histogram's buckets and one unflushed batch, not the values
    cpu = large._cpu
    assert not cpu._pct.exact and len(cpu._batch) < 4096 and cpu._pct._parts == []
