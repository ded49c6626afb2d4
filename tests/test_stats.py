"""sim.stats: the streamed percentiles are the exact ones up to their limit and within half
a bucket (RELATIVE_ERROR / 2) past it; count and maximum exact either way."""

from __future__ import annotations

import numpy as np
import pytest

from sim.stats import RELATIVE_ERROR, StreamPercentiles, percentiles

QS = [0, 1, 50, 90, 99, 99.9, 100]


def _values(n: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.lognormal(mean=-1.0, sigma=2.0, size=n)
    v[rng.random(n) < 0.2] = 0.0  # a free GIL's lateness: many exact zeros
    return v


def test_exact_up_to_the_limit_in_batches() -> None:
    v = _values(5000)
    s = StreamPercentiles(exact_limit=5000)
    for part in np.array_split(v, 7):
        s.add(part)
    assert s.exact
    assert s.percentiles(QS) == percentiles(v, QS)
    assert (s.count, s.max) == (5000, float(v.max()))


def test_past_the_limit_within_half_a_bucket() -> None:
    v = _values(200_000)
    s = StreamPercentiles(exact_limit=1000)
    for part in np.array_split(v, 50):
        s.add(part)
    assert not s.exact
    assert (s.count, s.max) == (v.size, float(v.max()))
    exact = percentiles(v, QS)
    for q, got, want in zip(QS, s.percentiles(QS), exact, strict=True):
        if want == 0:
            assert got == 0, q
        else:
            assert got == pytest.approx(want, rel=RELATIVE_ERROR / 2), q
    # and not merely equal: the histogram's answer is its buckets' middles
    assert s.percentiles([50]) != exact[2:3]


def test_empty_is_nan() -> None:
    s = StreamPercentiles(exact_limit=10)
    s.add(np.zeros(0))
    assert s.count == 0
    assert all(np.isnan(x) for x in s.percentiles([50, 99]))
