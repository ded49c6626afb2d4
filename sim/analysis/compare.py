"""Variants side by side at each concurrency level, with intervals across repeats.

A *level* is one combination of every sweep axis except the compared one
(``variant`` by default; ``--by index_variant`` compares another axis): workers,
and whatever else was swept. At each level every variant's metrics are set
beside the baseline variant's, with the ratio variant / baseline and its 95%
interval drawn from the spread between repeats, paired by round, with each run's
own request bootstrap only as a floor (``sim.analysis.verdict``, docs/statistics.md).
With one repeat a ratio has no interval.

A metric is a named statistic of a column. The known ones read per-row tables
per run; any other ``summary.csv`` column can be named too (one value per repeat),
and
``TABLE.COLUMN:STAT[@COL=VALUE,...]`` (e.g. ``steps.build_us:p50@phase=alone``)
names any column of any table, optionally only the rows that match.
Metrics whose data a run does not have (no engine, no probe) are left out of
the defaults rather than shown empty.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim import columns
from sim.analysis.bootstrap import Interval, stat_interval
from sim.analysis.verdict import ratio_verdict
from sim.rundir.reader import RunResults, as_float

__all__ = [
    "DEFAULT_METRICS",
    "KNOWN_METRICS",
    "Cell",
    "Comparison",
    "Metric",
    "compare",
    "find_value",
    "metric_available",
    "resolve_metric",
]


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    stat: str
    #: Row table the samples come from, or None for a summary column.
    table: str | None
    column: str
    #: Row filters: only rows whose column equals the value count.
    where: tuple[tuple[str, str], ...] = ()

    @property
    def source(self) -> str:
        if self.table is None:
            return f"summary_repeats.csv {self.column}, one value per repeat"
        cond = "".join(f" where {c}={v}" for c, v in self.where)
        return (
            f"{self.table}.csv {self.column}{cond}: value = {self.stat} over the rows of all "
            f"repeats pooled; ratio from each repeat's own {self.stat}"
        )


_LOAD = (("phase", "load"),)
#: Latency counts finished requests only, as summary.csv does (sim.point.metrics,
#: docs/results.md): a failed request's time to its error is not a load latency.
_OK = (("status", "ok"),)


def _of(
    metric: columns.Column,
    label: str,
    stat: str,
    table: str | None,
    source: columns.Column | str,
    where: tuple[tuple[str, str], ...] = (),
) -> Metric:
    """A metric named by its catalogue column, read from ``source`` (a column or the name
    of one in another table: steps.csv's)."""
    return Metric(metric.name, label, stat, table, getattr(source, "name", source), where)


KNOWN_METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        _of(columns.LATENCY_P50_MS, "p50 latency (ms)", "p50", "requests", columns.LATENCY_MS, _OK),
        _of(columns.LATENCY_P90_MS, "p90 latency (ms)", "p90", "requests", columns.LATENCY_MS, _OK),
        _of(columns.LATENCY_P99_MS, "p99 latency (ms)", "p99", "requests", columns.LATENCY_MS, _OK),
        _of(
            columns.LATENCY_MEAN_MS,
            "mean latency (ms)",
            "mean",
            "requests",
            columns.LATENCY_MS,
            _OK,
        ),
        _of(columns.GIL_HOLD_MEAN_MS, "GIL hold/req (ms)", "mean", "requests", columns.GIL_HOLD_MS),
        _of(
            columns.GIL_HOLD_P99_MS, "p99 GIL hold/req (ms)", "p99", "requests", columns.GIL_HOLD_MS
        ),
        _of(columns.GIL_WAIT_MEAN_MS, "GIL wait/req (ms)", "mean", "requests", columns.GIL_WAIT_MS),
        _of(columns.QUEUE_P99_MS, "p99 queue (ms)", "p99", "requests", columns.QUEUE_MS),
        _of(
            columns.THREAD_CPU_MEAN_MS,
            "thread CPU/req (ms)",
            "mean",
            "requests",
            columns.THREAD_CPU_MS,
        ),
        # the hold by stage (sim.instruments.stages): mean and p99 of each requests.csv column
        *(
            Metric(
                f"hold_{s}_{stat}_ms", f"{stat} {s} hold/req (ms)", stat, "requests", f"hold_{s}_ms"
            )
            for s in ("keys", "addresses", "free", "gc")
            for stat in ("mean", "p99")
        ),
        _of(columns.THROUGHPUT_RPS, "throughput (req/s)", "mean", None, columns.THROUGHPUT_RPS),
        _of(columns.ELAPSED_S, "point wall time (s)", "mean", None, columns.ELAPSED_S),
        _of(columns.STALL_P99_MS, "probe stall p99 (ms)", "mean", None, columns.STALL_P99_MS),
        _of(columns.ENGINE_STEP_P50_MS, "step p50 (ms)", "p50", "steps", "step_ms", _LOAD),
        _of(columns.ENGINE_STEP_P99_MS, "step p99 (ms)", "p99", "steps", "step_ms", _LOAD),
        _of(columns.ENGINE_STALL_P99_MS, "step stall p99 (ms)", "p99", "steps", "stall_ms", _LOAD),
        _of(columns.ENGINE_BUILD_P50_US, "index build p50 (µs)", "p50", "steps", "build_us", _LOAD),
    )
}

DEFAULT_METRICS = (
    columns.LATENCY_P50_MS.name,
    columns.LATENCY_P99_MS.name,
    columns.GIL_HOLD_MEAN_MS.name,
    columns.THROUGHPUT_RPS.name,
    columns.STALL_P99_MS.name,
    columns.ENGINE_STEP_P99_MS.name,
    columns.ENGINE_STALL_P99_MS.name,
)


def metric_available(m: Metric, res: RunResults) -> bool:
    """Whether the run has the data ``m`` is read from (its table and column)."""
    if m.table is None:
        return res.summary_has(m.column)
    rows = res.table(m.table)
    return bool(rows) and m.column in rows[0]


def _numeric(rows: Sequence[dict[str, str]], col: str) -> bool:
    """Whether the column holds numbers (its filled cells, up to the first 200)."""
    filled = [r.get(col) for r in rows if r.get(col) not in ("", None)][:200]
    return not filled or any(math.isfinite(as_float(v)) or str(v).lower() == "nan" for v in filled)


def _allowed(res: RunResults) -> str:
    have = [n for n, m in KNOWN_METRICS.items() if metric_available(m, res)]
    return (
        f"available: {', '.join(have)}, any numeric summary.csv column, or "
        "TABLE.COLUMN:STAT[@COL=VALUE]"
    )


def _not_a_metric(name: str, res: RunResults, table: str, col: str) -> str | None:
    """Why column ``col`` of ``table`` cannot be a metric; None when it can."""
    if col in res.axes:
        return f"{col!r} is an axis of the run (what its points differ by), not a metric"
    rows = res.summary if table == "summary" else res.table(table)
    if not _numeric(rows, col):
        seen = sorted({str(r.get(col)) for r in rows[:200] if r.get(col) not in ("", None)})
        return f"{table}.csv {col!r} is not a number (it holds {', '.join(seen[:4])})"
    return None


def _custom(name: str, res: RunResults) -> Metric:
    """``TABLE.COLUMN:STAT[@COL=VALUE,...]``, every part checked against the run's tables."""
    ref, _, rest = name.partition(":")
    stat, _, cond = rest.partition("@")
    table, col = ref.split(".", 1)
    where: list[tuple[str, str]] = []
    for c in (c.strip() for c in cond.split(",")) if cond else ():
        fcol, eq, value = c.partition("=")
        if not eq or not fcol:
            raise ValueError(f"metric {name!r}: filter {c!r} is not COL=VALUE")
        where.append((fcol, value))
    q = stat[1:] if stat.startswith("p") else ""
    pct = q.replace(".", "", 1).isdigit() and 0 <= float(q) <= 100
    if stat not in ("mean", "median", "max", "min") and not pct:
        raise ValueError(
            f"metric {name!r}: unknown statistic {stat!r}; allowed: mean, median, max, min, "
            "pNN (a percentile, 0 to 100)"
        )
    rows = res.table(table)
    if not rows:
        raise ValueError(f"metric {name!r}: {res.dir} has no {table}.csv")
    named = [col, *(c for c, _ in where)]
    for c in named:
        if c not in rows[0]:
            raise ValueError(
                f"metric {name!r}: {table}.csv of {res.dir} has no column {c!r}; allowed: "
                f"its columns {', '.join(rows[0])}"
            )
    why = _not_a_metric(name, res, table, col)
    if why:
        raise ValueError(f"metric {name!r}: {why}; {_allowed(res)}")
    label = f"{col} {stat}" + "".join(f" ({c}={v})" for c, v in where)
    return Metric(name, label, stat, table, col, tuple(where))


def resolve_metric(name: str, res: RunResults) -> Metric:
    """The metric called ``name`` for this run; ValueError (one line) when it has no data
    or is not a number (a status, an axis)."""
    if name in KNOWN_METRICS and metric_available(KNOWN_METRICS[name], res):
        return KNOWN_METRICS[name]
    if ":" in name and "." in name.split(":", 1)[0]:
        return _custom(name, res)
    if res.summary_has(name):
        why = _not_a_metric(name, res, "summary", name)
        if why:
            raise ValueError(f"metric {name!r}: {why}; {_allowed(res)}")
        return Metric(name, name, "mean", None, name)
    raise ValueError(f"metric {name!r} has no data in {res.dir}; {_allowed(res)}")


@dataclass(frozen=True)
class Cell:
    value: float
    #: Samples behind the value: rows, or repeats for a summary metric.
    n: int
    #: variant / baseline with its interval (NaN ends when there is none); None for the
    #: baseline itself.
    ratio: Interval | None
    #: Repeats behind the ratio's interval (the fewer of the two sides'), and why it has
    #: none ("" when it has one): what the gate says of a point it judged without one.
    repeats: int = 0
    reason: str = ""


@dataclass
class Comparison:
    name: str
    #: The axis compared side by side (its values are the "variants").
    by: str
    baseline: str
    level_axes: list[str]
    levels: list[tuple[str, ...]]
    variants: dict[tuple[str, ...], list[str]]
    metrics: list[Metric]
    cells: dict[tuple[tuple[str, ...], str, str], Cell]
    n_boot: int
    seed: int
    repeats: int
    #: Ratios paired by round (points of one sweep) or not (points of two runs).
    paired: bool = True
    level: float = 0.95

    @property
    def interval_cells(self) -> int:
        """Ratio cells that have an interval (each can be marked ``*`` by chance)."""
        return sum(
            1 for c in self.cells.values() if c.ratio is not None and not math.isnan(c.ratio.low)
        )


class _Samples:
    """Per-point, per-repeat sample arrays of each metric, indexed once per table."""

    def __init__(self, res: RunResults) -> None:
        self._res = res
        self._index: dict[tuple, dict[tuple[str, ...], dict[str, list[dict[str, str]]]]] = {}

    def _rows(self, m: Metric) -> dict[tuple[str, ...], dict[str, list[dict[str, str]]]]:
        key = (m.table, m.where, m.column if m.table is None else "")
        if key not in self._index:
            if m.table is None:
                reps = self._res.table("summary_repeats")
                if not reps or m.column not in reps[0]:
                    reps = self._res.summary  # older runs: one row per point only
                rows = [r for r in reps if r.get("status", "ok") == "ok"]
            else:
                rows = self._res.table(m.table)
            rows = [r for r in rows if all(str(r.get(c)) == v for c, v in m.where)]
            idx: dict[tuple[str, ...], dict[str, list[dict[str, str]]]] = {}
            for r in rows:
                idx.setdefault(self._res.key(r), {}).setdefault(r.get("repeat", "0"), []).append(r)
            self._index[key] = idx
        return self._index[key]

    def by_round(self, m: Metric, point: tuple[str, ...]) -> dict[str, np.ndarray]:
        """round (the repeat index, as text) -> that run's values of the metric's column."""
        reps = self._rows(m).get(point, {})
        return {
            k: np.array([as_float(r.get(m.column)) for r in rows], dtype=float)
            for k, rows in sorted(reps.items(), key=lambda kv: _as_round(kv[0]))
        }

    def groups(self, m: Metric, point: tuple[str, ...]) -> list[np.ndarray]:
        return list(self.by_round(m, point).values())


def _same_number(a: str, b: str) -> bool:
    """Two texts of one finite number ("2" and "2.0")."""
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isfinite(x) and x == y


def find_value(values: Sequence[str], wanted: str) -> str | None:
    """The value of ``values`` a user means by ``wanted``: itself, or the one number it
    writes otherwise (a run's tables write 2.0 as 2; the config said 2.0); None if none."""
    if wanted in values:
        return wanted
    same = [v for v in values if _same_number(v, wanted)]
    return same[0] if len(same) == 1 else None


def _as_round(key: str) -> tuple[int, str]:
    return (int(key), "") if key.isdigit() else (1 << 30, key)


def compare(
    res: RunResults,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    by: str = "variant",
    *,
    paired: bool = True,
    level: float = 0.95,
) -> Comparison:
    """Every value of axis ``by`` against ``baseline`` (default: scalar, else the first).

    Each ratio is :func:`sim.analysis.verdict.ratio_verdict` of the two points' repeats:
    ``paired`` by round for points of one sweep, unpaired for points of two runs.
    ``n_boot`` resamples each run's rows for the within-run floor of its interval.
    """
    if by not in res.axes:
        raise ValueError(f"--by {by!r} is not an axis of {res.dir}: {', '.join(res.axes)}")
    if metrics:
        chosen = [resolve_metric(n, res) for n in metrics]
    else:
        chosen = [
            KNOWN_METRICS[n] for n in DEFAULT_METRICS if metric_available(KNOWN_METRICS[n], res)
        ]
    level_axes = [a for a in res.axes if a != by]
    all_variants = list(dict.fromkeys(r[by] for r in res.summary))
    if baseline is None:
        baseline = "scalar" if "scalar" in all_variants else all_variants[0]
    else:
        baseline = find_value(all_variants, baseline) or baseline
    if baseline not in all_variants:
        raise ValueError(
            f"baseline {baseline!r} is not among the values of {by} in {res.dir}: "
            f"{', '.join(all_variants)}"
        )
    levels: list[tuple[str, ...]] = []
    variants: dict[tuple[str, ...], list[str]] = {}
    for r in res.summary:
        lv = res.key(r, level_axes)
        if lv not in variants:
            levels.append(lv)
            variants[lv] = []
        if r[by] not in variants[lv]:
            variants[lv].append(r[by])
    samples = _Samples(res)
    cells: dict[tuple[tuple[str, ...], str, str], Cell] = {}
    for li, lv in enumerate(levels):
        ordered = sorted(variants[lv], key=lambda v: (v != baseline, all_variants.index(v)))
        variants[lv] = ordered
        for vi, variant in enumerate(ordered):
            point = _point_key(res, by, level_axes, lv, variant)
            base_point = _point_key(res, by, level_axes, lv, baseline)
            for mi, m in enumerate(chosen):
                groups = samples.groups(m, point)
                cell_seed = [seed, li, vi, mi]
                value = stat_interval(groups, m.stat, n_boot=1, seed=cell_seed).value
                n = sum(int(np.isfinite(g).sum()) for g in groups)
                ratio, repeats, reason = None, 0, ""
                if variant != baseline and baseline in variants[lv]:
                    v = ratio_verdict(
                        samples.by_round(m, point),
                        samples.by_round(m, base_point),
                        m.stat,
                        paired=paired,
                        level=level,
                        n_boot=n_boot,
                        seed=cell_seed,
                    )
                    ratio, repeats, reason = Interval(v.ratio, v.low, v.high), v.repeats, v.reason
                cells[(lv, variant, m.name)] = Cell(value, n, ratio, repeats, reason)
    repeats = int(res.manifest.get("repeats", 1) or 1)
    return Comparison(
        res.name,
        by,
        baseline,
        level_axes,
        levels,
        variants,
        chosen,
        cells,
        n_boot,
        seed,
        repeats,
        paired,
        level,
    )


def _point_key(
    res: RunResults, by: str, level_axes: list[str], level: tuple[str, ...], variant: str
) -> tuple[str, ...]:
    values = dict(zip(level_axes, level, strict=True))
    values[by] = variant
    return tuple(values.get(a, "") for a in res.axes)
