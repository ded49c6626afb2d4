"""Is B different from A for one metric? A ratio with an interval from the spread between
repeats (docs/statistics.md §2).

The figure that decides whether a difference is real is how much a point's result
moves from one run to the next on this machine, and only repeats show it: the
requests of one run carry none of it (two runs of one config, resampled request by
request, are called different). So a ratio's interval is drawn from the repeats:

* each repeat (round) gives its own statistic per side — the p99 of that run's
  requests, its mean hold, or a summary column's value;
* **paired** (two points of one sweep, made in the same rounds): the log ratio
  B/A within each round, then its mean and spread across rounds; **unpaired** (two
  runs made at different times, ``kvsim compare A B``): the difference of the two
  sides' mean logs, with Welch's standard error;
* a Student-t interval on that mean (n − 1 degrees of freedom paired; Welch's,
  rounded down, unpaired), turned back into a ratio;
* the request bootstrap is the second level only: each run's own resampling spread
  (requests drawn again within the run) is a floor under the spread between
  repeats, since every repeat's figure carries at least that much noise — a few
  repeats that agree by chance do not make a narrow interval.

With fewer than :data:`MIN_REPEATS` repeats on a side there is no interval and no
verdict: the ratio alone, and a reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from sim.analysis.bootstrap import bootstrap_distribution, seeded_rng, statistic

__all__ = ["MIN_REPEATS", "Verdict", "marks", "ratio_verdict", "t_quantile"]

#: Repeats each side needs before a ratio gets an interval (and can be called different).
MIN_REPEATS = 2

#: Above this many degrees of freedom Student's t is the normal distribution to 4 digits.
_NORMAL_DF = 1000


@dataclass(frozen=True)
class Verdict:
    """B / A for one metric, its interval, and whether that interval excludes 1."""

    ratio: float
    #: The interval's ends (NaN when there is none: see ``reason``).
    low: float
    high: float
    level: float
    #: Repeats behind the interval: rounds paired, or the fewer of the two sides' runs.
    repeats: int
    #: "paired rounds", "unpaired runs", or "none" (no interval).
    method: str
    #: Why there is no interval ("" when there is one).
    reason: str = ""

    @property
    def has_interval(self) -> bool:
        return not (math.isnan(self.low) or math.isnan(self.high))

    @property
    def differs(self) -> bool:
        """The interval excludes 1: B differs from A beyond the run-to-run spread."""
        return self.has_interval and (self.low > 1.0 or self.high < 1.0)


def marks(low: float, high: float) -> bool:
    """Whether a table marks this interval ``*``: it excludes 1.00× as printed (two
    decimals), so no "[1.00, 1.00]*"; an absent interval (NaN) is never marked."""
    if math.isnan(low) or math.isnan(high):
        return False
    return round(low, 2) > 1.0 or round(high, 2) < 1.0


def _two_sided_t_cdf(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2 == 1:
        total, term = 0.0, math.cos(theta)
        for k in range(1, (df - 1) // 2 + 1):
            if k > 1:
                term *= c2 * (2 * k - 2) / (2 * k - 1)
            total += term
        return (2 / math.pi) * (theta + math.sin(theta) * total) if df > 1 else 2 * theta / math.pi
    total, term = 1.0, 1.0
    for k in range(1, df // 2):
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return math.sin(theta) * total


def t_quantile(level: float, df: int) -> float:
    """The ``t`` with P(|T| < t) = ``level`` for Student's t with ``df`` degrees of freedom."""
    if not 0 < level < 1 or df < 1:
        raise ValueError(f"t_quantile needs 0 < level < 1 and df >= 1, got {level}, {df}")
    if df >= _NORMAL_DF:
        return NormalDist().inv_cdf(0.5 + level / 2)
    lo, hi = 0.0, 1.0
    while _two_sided_t_cdf(hi, df) < level:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if _two_sided_t_cdf(mid, df) < level:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _clean(values: np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    return arr[np.isfinite(arr)]


def _per_repeat(
    side: Mapping[str, np.ndarray], stat: str, n_boot: int, rng: np.random.Generator
) -> dict[str, tuple[float, float, float]]:
    """round -> (log of the run's statistic, its bootstrap variance over the run's rows,
    the statistic itself)."""
    out: dict[str, tuple[float, float, float]] = {}
    for key, values in side.items():
        arr = _clean(values)
        if arr.size == 0:
            continue
        s = float(statistic(arr, stat))
        if not s > 0:
            out[key] = (math.nan, math.nan, s)
            continue
        within = 0.0
        if arr.size > 1 and n_boot > 1:
            dist = bootstrap_distribution([arr], stat, n_boot, rng)
            with np.errstate(divide="ignore", invalid="ignore"):
                logs = np.log(dist[dist > 0])
            within = float(np.var(logs, ddof=1)) if logs.size > 1 else 0.0
        out[key] = (math.log(s), within, s)
    return out


def _keyed(side: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    if isinstance(side, Mapping):
        return {str(k): v for k, v in side.items()}
    return {str(i): v for i, v in enumerate(side)}


def ratio_verdict(
    b: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    a: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    stat: str,
    *,
    paired: bool = True,
    level: float = 0.95,
    n_boot: int = 400,
    seed: int | Sequence[int] = 0,
) -> Verdict:
    """Is B different from A for a metric: B/A, its ``level`` interval, and the verdict.

    ``b`` and ``a`` hold each side's values per repeat: a mapping from the round
    (the repeat index as text: ``summary_repeats.csv``'s ``round``) to that run's
    rows of the metric's column (one value for a summary column), or a sequence in
    round order. ``stat`` is what to take of each run's rows (``mean``, ``p99``, …,
    :func:`sim.analysis.bootstrap.statistic`).

    ``paired``: the two sides ran in the same rounds of one sweep (interleaved), so
    round k of B is set against round k of A; rounds one side lacks are left out.
    Unpaired (two separate runs): every repeat of each side counts, Welch's way.

    The ratio is the geometric mean of the per-round ratios (paired) or of each
    side's per-repeat statistics (unpaired); ``Verdict.differs`` says whether the
    interval excludes 1. ``n_boot`` resamples per run give the within-run floor;
    ``seed`` makes it reproducible. Method and assumptions: docs/statistics.md §2.
    """
    rng = seeded_rng(seed)
    sb = _per_repeat(_keyed(b), stat, n_boot, rng)
    sa = _per_repeat(_keyed(a), stat, n_boot, rng)
    if paired:
        rounds = [k for k in sb if k in sa]
        pairs = [(sb[k], sa[k]) for k in rounds]
        n = len(pairs)
        logs = np.array([pb[0] - pa[0] for pb, pa in pairs])
        within = np.array([pb[1] + pa[1] for pb, pa in pairs])
    else:
        n = min(len(sb), len(sa))
        logs = np.array([v[0] for v in sb.values()])
        base = np.array([v[0] for v in sa.values()])
    if n == 0:
        return Verdict(math.nan, math.nan, math.nan, level, 0, "none", "no data on one side")
    if paired:
        bad = not np.all(np.isfinite(logs))
        centre = float(np.mean(logs)) if not bad else math.nan
    else:
        bad = not (np.all(np.isfinite(logs)) and np.all(np.isfinite(base)))
        centre = float(np.mean(logs) - np.mean(base)) if not bad else math.nan
    if bad:  # no log: the ratio of the mean figures, without an interval
        mb = float(np.mean([v[2] for v in sb.values()]))
        ma = float(np.mean([v[2] for v in sa.values()]))
        ratio = mb / ma if ma > 0 else math.nan
        return Verdict(ratio, math.nan, math.nan, level, n, "none", "a value is zero or below")
    ratio = math.exp(centre)
    if n < MIN_REPEATS:
        why = (
            f"{n} repeat{'s' if n != 1 else ''}: one run per side cannot show the run-to-run "
            f"spread; an interval needs at least {MIN_REPEATS} repeats per point"
        )
        return Verdict(ratio, math.nan, math.nan, level, n, "none", why)
    if paired:
        spread = max(float(np.var(logs, ddof=1)), float(np.mean(within)))
        se = math.sqrt(spread / n)
        df = n - 1
        method = "paired rounds"
    else:
        wb = float(np.mean([v[1] for v in sb.values()]))
        wa = float(np.mean([v[1] for v in sa.values()]))
        vb = max(float(np.var(logs, ddof=1)), wb) / len(logs)
        va = max(float(np.var(base, ddof=1)), wa) / len(base)
        se = math.sqrt(vb + va)
        den = vb**2 / (len(logs) - 1) + va**2 / (len(base) - 1)
        df = max(1, int((vb + va) ** 2 / den)) if den > 0 else len(logs) + len(base) - 2
        method = "unpaired runs"
    half = t_quantile(level, df) * se
    return Verdict(ratio, math.exp(centre - half), math.exp(centre + half), level, n, method)
