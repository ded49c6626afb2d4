"""The run's top-level tables, combined from its finished point runs.

* ``requests.csv`` (and every add-on table, e.g. ``steps.csv``): the rows of every
  finished point run, concatenated in point order;
* ``summary_repeats.csv``: one row per point × repeat, as the child measured it,
  with ``status`` and ``error`` (a failed run has only its axes and its error), and
  when it ran: its ``round`` (round k makes repeat k of every point; ``sweep.order``
  says in what order, docs/statistics.md) and ``started_s`` (seconds from the
  earliest start of any run in the directory);
* ``summary.csv``: one row per point. Every numeric metric is the **mean** over the
  point's finished repeats (counts — ``requests``, ``ok``, ``failed`` — are
  **summed**); ``repeats`` says how many repeats it aggregates, and when the
  experiment has ``repeats > 1`` each averaged metric ``m`` gets a sample standard
  deviation ``m_std`` (ddof 1; empty below two repeats). ``status`` is ``ok``,
  ``partial`` (some repeats failed) or ``failed``.

The same column names mean the same thing whether ``repeats`` is 1 or 10, so
tools that read ``latency_p99_ms`` need not care.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sim.rundir.layout import (
    REQUESTS_FILE,
    SUMMARY_FILE,
    SUMMARY_REPEATS_FILE,
    RepRun,
    read_status,
    table_file,
)
from sim.rundir.numbers import parse_number
from sim.rundir.outputs import write_csv
from sim.rundir.parts import IN_MEMORY_BYTES, Part, write_joined
from sim.rundir.verify import read_verified, record_files, verify_files

__all__ = ["ORDER_COLUMNS", "SUM_COLUMNS", "Combiner", "aggregate_repeats", "aggregate_with_numpy"]

#: Columns that add up over repeats instead of being averaged.
SUM_COLUMNS = frozenset({"requests", "ok", "failed"})
#: When a point run was made: recorded per run, never averaged into summary.csv.
ORDER_COLUMNS = ("round", "started_s")
_NOT_METRICS = frozenset({"repeat", "status", "error", *ORDER_COLUMNS})


_number = parse_number


def _union(rows: Iterable[dict[str, Any]], first: Sequence[str] = ()) -> list[str]:
    cols: dict[str, None] = dict.fromkeys(first)
    for row in rows:
        cols.update(dict.fromkeys(row))
    return list(cols)


def _aggregate_column(values: list[Any], col: str) -> tuple[Any, float]:
    """(aggregate, spread) of one column over repeats; spread is NaN when not defined."""
    if len(values) == 1:  # one repeat: what the arithmetic below gives, without numpy
        v = values[0]
        if v in ("", None):
            return "", math.nan
        n = _number(v)
        if n is None:
            return str(v), math.nan
        return (math.nan if math.isnan(n) else n + 0.0), math.nan  # numpy: -0.0 -> 0.0
    return aggregate_with_numpy(values, col)


def aggregate_with_numpy(values: list[Any], col: str) -> tuple[Any, float]:
    """:func:`_aggregate_column` for any number of repeats (the reference its one-repeat
    shortcut must agree with)."""
    present = [v for v in values if v not in ("", None)]
    nums = [_number(v) for v in present]
    if present and all(n is not None for n in nums):
        arr = np.asarray(nums, dtype=float)
        arr = arr[~np.isnan(arr)]
        if arr.size == 0:
            return math.nan, math.nan
        if col in SUM_COLUMNS:
            return float(arr.sum()), math.nan
        spread = float(arr.std(ddof=1)) if arr.size >= 2 else math.nan
        return float(arr.mean()), spread
    unique = list(dict.fromkeys(str(v) for v in present))
    return "; ".join(unique), math.nan


def aggregate_repeats(
    rows: Sequence[dict[str, Any]], axes: Sequence[str], with_spread: bool
) -> list[dict[str, Any]]:
    """One row per point (rows grouped by their axis values, in first-seen order)."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row.get(a, "")) for a in axes), []).append(row)
    out = []
    for grp in groups.values():
        ok = [r for r in grp if r.get("status", "ok") == "ok"]
        agg: dict[str, Any] = {a: grp[0].get(a, "") for a in axes}
        agg["repeats"] = len(ok)
        metrics = [c for c in _union(ok) if c not in _NOT_METRICS and c not in axes]
        spreads: dict[str, float] = {}
        for col in metrics:
            value, spread = _aggregate_column([r.get(col, "") for r in ok], col)
            agg[col] = value
            if with_spread and col not in SUM_COLUMNS and isinstance(value, float):
                spreads[f"{col}_std"] = spread
        agg.update(spreads)
        agg["status"] = "ok" if len(ok) == len(grp) else ("failed" if not ok else "partial")
        agg["error"] = next((str(r.get("error", "")) for r in grp if r.get("error")), "")
        out.append(agg)
    return out


def _big_files(files: Any) -> set[str]:
    """The tables of a run's ``files`` record too large to hold (left on disk)."""
    if not isinstance(files, dict):
        return set()
    return {
        name
        for name, rec in files.items()
        if name.endswith(".csv")
        and name != SUMMARY_FILE
        and isinstance(rec, dict)
        and isinstance(rec.get("size"), int)
        and rec["size"] > IN_MEMORY_BYTES
    }


class Combiner:
    """Keeps every finished run's tables in memory and rewrites the top-level files.

    A run's tables are kept as the bytes its files hold (checked against the sizes
    and checksums its ``status.json`` records, read once): a combined table is
    then its header and every run's rows as they are on disk, joined, instead of
    every row parsed and formatted again (``sim.rundir.parts``). Only the summary
    rows are parsed, for ``summary.csv`` and ``summary_repeats.csv``.
    """

    def __init__(self, run_dir: Path, axes: Sequence[str], repeats: int) -> None:
        self._run_dir = run_dir
        self._axes = list(axes)
        self._with_spread = repeats > 1
        #: (point index, repeat) -> (run, status dict, summary rows, {stem: table part})
        self._runs: dict[
            tuple[int, int], tuple[RepRun, dict[str, Any], list[dict[str, str]], dict[str, Part]]
        ] = {}
        #: summary_rows() until the next add (it is asked for twice per rewrite).
        self._summary: list[dict[str, Any]] | None = None

    def add(self, rep: RepRun) -> str:
        """Record a run as its directory says it ended, and return its state.

        Only a verified run (``done``: every file it wrote is there as written)
        contributes rows; a failed one contributes its error; an interrupted,
        pending or damaged one is left out (it is to be run again, not failed).
        """
        key = (rep.point.index, rep.repeat)
        self._summary = None
        status = read_status(rep.dir)
        if status is None:
            self._runs.pop(key, None)
            return "pending"
        if status["status"] == "interrupted":
            self._runs.pop(key, None)
            return "interrupted"
        if status["status"] != "ok":
            self._runs[key] = (rep, status, [], {})
            return str(status["status"])
        files = status.get("files")
        big = _big_files(files)
        small = {k: v for k, v in files.items() if k not in big} if big else files
        why, blobs = read_verified(rep.dir, small)
        why = why or (verify_files(rep.dir, {k: files[k] for k in big}) if big else "")
        if why:
            self._runs.pop(key, None)
            return "damaged"
        parts: dict[str, Part] = {}
        summary: list[dict[str, str]] = []
        try:
            for name in sorted([*blobs, *big]):
                if not name.endswith(".csv"):
                    continue
                part = (
                    Part.from_file(rep.dir / name) if name in big else Part.from_bytes(blobs[name])
                )
                if name == SUMMARY_FILE:
                    summary = part.rows()
                else:
                    parts[name[: -len(".csv")]] = part
        except (UnicodeDecodeError, ValueError, csv.Error) as exc:
            self._runs.pop(key, None)
            return f"damaged: {exc}"
        self._runs[key] = (rep, status, summary, parts)
        return "done"

    def repeat_rows(self) -> list[dict[str, Any]]:
        starts = [
            float(st["started_unix"])
            for _, st, _, _ in self._runs.values()
            if isinstance(st.get("started_unix"), (int, float))
        ]
        first = min(starts, default=0.0)
        rows = []
        for key in sorted(self._runs):
            rep, status, summary, _ = self._runs[key]
            began = status.get("started_unix")
            base = {
                **{a: rep.point.axes.get(a, "") for a in self._axes},
                "repeat": rep.repeat,
                "round": rep.repeat,
                "started_s": round(began - first, 3) if isinstance(began, (int, float)) else "",
            }
            rows.append(
                {
                    **base,
                    **(summary[0] if summary else {}),
                    "status": status["status"],
                    "error": status.get("error", ""),
                }
            )
        return rows

    def summary_rows(self) -> list[dict[str, Any]]:
        """One row per point (``aggregate_repeats``), each a fresh dict."""
        if self._summary is None:
            self._summary = aggregate_repeats(self.repeat_rows(), self._axes, self._with_spread)
        return [dict(row) for row in self._summary]

    def write(self) -> dict[str, dict[str, Any]]:
        """Rewrite every top-level table (atomically, each, after naming it in the run's
        ledger); return the size and checksum of each, by file name."""
        # the guard (lock, manifest): a point child imports this module, never writes here
        from sim.rundir.guard import record_owned

        lead = [*self._axes, "repeat"]
        stems: dict[str, list[Part]] = {}
        for key in sorted(self._runs):
            for stem, part in self._runs[key][3].items():
                stems.setdefault(stem, []).append(part)
        stems.setdefault(REQUESTS_FILE.removesuffix(".csv"), [])
        names = [table_file(stem) for stem in stems]
        record_owned(self._run_dir, *names, SUMMARY_REPEATS_FILE, SUMMARY_FILE)
        records: dict[str, dict[str, Any]] = {}
        for stem, parts in stems.items():
            name = table_file(stem)
            records[name] = write_joined(self._run_dir / name, lead, parts)
        tail = ["status", "error"]
        rep_rows = self.repeat_rows()
        rep_cols = [c for c in _union(rep_rows, lead) if c not in tail]
        write_csv(self._run_dir / SUMMARY_REPEATS_FILE, [*rep_cols, *tail], rep_rows)
        agg = self.summary_rows()
        cols = [c for c in _union(agg, [*self._axes, "repeats"]) if c not in tail]
        write_csv(self._run_dir / SUMMARY_FILE, [*cols, *tail], agg)
        records.update(record_files(self._run_dir, [SUMMARY_REPEATS_FILE, SUMMARY_FILE]))
        return dict(sorted(records.items()))
