"""Seeded bootstrap confidence intervals for a statistic and for a ratio of two.

The samples of one experiment point come as groups, one per repeat. With one
group the bootstrap resamples its values; with several it resamples the groups
first and then the values within each chosen group (a two-level bootstrap), so
the interval also carries the run-to-run spread that repeats exist to show.
Everything draws from one ``numpy.random.Generator`` made from the given seed:
the same data and seed give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Interval",
    "bootstrap_distribution",
    "ratio_interval",
    "seeded_rng",
    "stat_interval",
    "statistic",
]

#: Values held in memory at once while resampling (bounds memory for big runs).
_BATCH_VALUES = 2_000_000


def seeded_rng(seed: int | Sequence[int]) -> np.random.Generator:
    """The Generator of one interval or figure, from the user's ``--seed``.

    numpy's own refusal ("expected non-negative integer") names no option, and reached
    the user as the whole error line."""
    try:
        return np.random.default_rng(seed)
    except (ValueError, TypeError):
        # a sequence is (the user's seed, where in the table): the first is the user's
        given = seed[0] if isinstance(seed, Sequence) and len(seed) else seed
        raise ValueError(f"--seed {given}: allowed a whole number, 0 or more") from None


def statistic(values: np.ndarray, stat: str, axis: int = -1) -> np.ndarray | float:
    """``mean``, ``median``, ``max``, ``min`` or ``pNN`` (a percentile, linear, as numpy)."""
    if stat == "mean":
        return np.mean(values, axis=axis)
    if stat == "median":
        return np.percentile(values, 50, axis=axis)
    if stat == "max":
        return np.max(values, axis=axis)
    if stat == "min":
        return np.min(values, axis=axis)
    if stat.startswith("p"):
        return np.percentile(values, float(stat[1:]), axis=axis)
    raise ValueError(f"unknown statistic {stat!r}; allowed: mean, median, max, min, pNN")


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float

    @property
    def excludes_one(self) -> bool:
        return not (math.isnan(self.low) or self.low <= 1.0 <= self.high)


def _clean(groups: Sequence[np.ndarray]) -> list[np.ndarray]:
    out = []
    for g in groups:
        arr = np.asarray(g, dtype=float)
        arr = arr[~np.isnan(arr)]
        if arr.size:
            out.append(arr)
    return out


def bootstrap_distribution(
    groups: Sequence[np.ndarray], stat: str, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """``n_boot`` bootstrap replicates of ``stat`` over the pooled groups (NaN if no data)."""
    groups = _clean(groups)
    if not groups:
        return np.full(n_boot, math.nan)
    sizes = np.array([g.size for g in groups])
    flat = np.concatenate(groups)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    total = int(sizes.sum())
    batch = max(1, _BATCH_VALUES // total)
    out = np.empty(n_boot)
    for lo in range(0, n_boot, batch):
        b = min(batch, n_boot - lo)
        if len(groups) == 1:
            sample = flat[rng.integers(0, total, size=(b, total))]
        else:
            # Slot j is filled by a repeat drawn at random, with as many values as repeat j has.
            picks = rng.integers(0, len(groups), size=(b, len(groups)))
            parts = []
            for j, n_j in enumerate(sizes):
                chosen = picks[:, j]
                u = rng.random((b, int(n_j)))
                idx = offsets[chosen][:, None] + (u * sizes[chosen][:, None]).astype(np.int64)
                parts.append(flat[idx])
            sample = np.concatenate(parts, axis=1)
        out[lo : lo + b] = statistic(sample, stat, axis=1)
    return out


def _bounds(dist: np.ndarray, level: float) -> tuple[float, float]:
    dist = dist[np.isfinite(dist)]
    if dist.size == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(dist, [tail, 100 - tail])
    return float(lo), float(hi)


def stat_interval(
    groups: Sequence[np.ndarray],
    stat: str,
    n_boot: int = 2000,
    seed: int | Sequence[int] = 0,
    level: float = 0.95,
) -> Interval:
    """The statistic over all values, with a percentile-bootstrap interval."""
    clean = _clean(groups)
    if not clean:
        return Interval(math.nan, math.nan, math.nan)
    value = float(statistic(np.concatenate(clean), stat))
    rng = seeded_rng(seed)
    return Interval(value, *_bounds(bootstrap_distribution(clean, stat, n_boot, rng), level))


def ratio_interval(
    groups: Sequence[np.ndarray],
    base_groups: Sequence[np.ndarray],
    stat: str,
    n_boot: int = 2000,
    seed: int | Sequence[int] = 0,
    level: float = 0.95,
) -> Interval:
    """stat(groups) / stat(base_groups), with a percentile-bootstrap interval.

    The two sides are resampled independently (they are separate runs).
    """
    num, den = _clean(groups), _clean(base_groups)
    if not num or not den:
        return Interval(math.nan, math.nan, math.nan)
    d = float(statistic(np.concatenate(den), stat))
    n = float(statistic(np.concatenate(num), stat))
    value = n / d if d else math.nan
    rng = seeded_rng(seed)
    a = bootstrap_distribution(num, stat, n_boot, rng)
    b = bootstrap_distribution(den, stat, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = a / b
    return Interval(value, *_bounds(ratios, level))
