"""A finished point's own tables: ``requests.csv``, ``summary.csv`` and its add-on tables.

The request table is built column by column straight from the records, without a
dict per row: a model-mode point simulates a request in tens of microseconds,
and turning each record into a dict (``RequestRecord.as_row``) and then into a
row cost as much again. The cells are the ones ``as_row`` and ``write_csv``
make — run-time columns to the nanosecond, an empty ``trace_line`` when there is
none, floats to six significant digits — and ``tests/rundir/test_csv_cells.py``
checks the file byte for byte against that reference path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from sim import columns
from sim.point.records import (
    DERIVED_COLUMNS,
    RECORD_FIELDS,
    REQUEST_COLUMNS,
    TIME_COLUMNS,
    RequestRecord,
)
from sim.rundir.csv_cells import csv_text, format_cell, format_column, rows_to_cells
from sim.rundir.layout import REQUESTS_FILE, SUMMARY_FILE, table_file
from sim.rundir.outputs import AtomicTextStream, atomic_write_text, csv_table_text, write_csv

__all__ = ["RequestsFile", "request_cells", "requests_text", "write_point_tables"]

_TIME = frozenset(TIME_COLUMNS)
_VALUES = attrgetter(*RECORD_FIELDS)


def _time_column(values: list[Any]) -> list[Any]:
    """``as_row``'s run-time cells: nanoseconds, empty for NaN."""
    return ["" if v != v else f"{v:.9f}" for v in values]


def request_cells(records: Sequence[Any]) -> list[list[Any]]:
    """The formatted cells of ``REQUEST_COLUMNS``, one list per column, one entry per record.

    Records of another type than ``RequestRecord`` (a subclass may change ``as_row``)
    go through ``as_row`` row by row.
    """
    if any(type(r) is not RequestRecord for r in records):
        return rows_to_cells(REQUEST_COLUMNS, [r.as_row() for r in records])
    if not records:
        return [[] for _ in REQUEST_COLUMNS]
    held = dict(zip(RECORD_FIELDS, zip(*map(_VALUES, records), strict=True), strict=True))
    cells = []
    for name in REQUEST_COLUMNS:  # the catalogue's order (sim.columns.REQUESTS)
        derive = DERIVED_COLUMNS.get(name)
        values = [derive(r) for r in records] if derive else list(held[name])
        if name == columns.TRACE_LINE.name:
            values = ["" if v is None else v for v in values]
        if name in _TIME:
            values = _time_column(values)
        cells.append(format_column(values))
    return cells


def requests_text(lead: Mapping[str, Any], records: Sequence[Any]) -> str:
    """``requests.csv`` of a point: the ``lead`` columns (the axes and ``repeat``, with the
    point's values: the same on every row), then ``REQUEST_COLUMNS``.

    An axis named like a request column (a sweep of ``workload.tokens``) makes the
    table repeat that column with the request's value, as a row dict would.
    """
    head = list(lead)
    if set(head) & set(REQUEST_COLUMNS):
        return csv_table_text([*head, *REQUEST_COLUMNS], ({**lead, **r.as_row()} for r in records))
    n = len(records)
    lead_cells = [[format_cell(lead[c])] * n for c in head]
    return csv_text([*head, *REQUEST_COLUMNS], [*lead_cells, *request_cells(records)])


class RequestsFile:
    """A point's ``requests.csv`` written as its requests finish, batch by batch (a
    ``sim.point.record_sink.RowWriter``): the same bytes :func:`requests_text` makes for
    all the rows at once, without holding them. In place only after :meth:`commit`."""

    def __init__(self, rep_dir: Path, lead: Mapping[str, Any], durable: bool = True) -> None:
        self._lead = dict(lead)
        self._out = AtomicTextStream(rep_dir / REQUESTS_FILE, durable)
        self._out.write(requests_text(self._lead, []))  # the header

    def __call__(self, records: Sequence[Any]) -> None:
        text = requests_text(self._lead, records)
        self._out.write(text[text.index("\n") + 1 :])

    def commit(self) -> None:
        self._out.commit()

    def abort(self) -> None:
        self._out.abort()


def write_point_tables(
    rep_dir: Path,
    lead: Mapping[str, Any],
    records: Sequence[Any] | None,
    summary: Mapping[str, Any],
    summary_cols: Sequence[str],
    tables: Mapping[str, list[dict[str, Any]]],
    durable: bool = True,
) -> list[str]:
    """Write a point run's tables into ``rep_dir`` (each atomically) and return their names.

    ``lead`` holds the axis columns and ``repeat`` (in order) with the point's values:
    every table starts with them. ``summary_cols`` are the summary's own columns.
    ``durable=False`` writes without fsync (``sim.rundir.outputs.atomic_write_text``).
    ``records`` None: requests.csv is already written (a :class:`RequestsFile`).
    """
    head = list(lead)
    if records is not None:
        atomic_write_text(rep_dir / REQUESTS_FILE, requests_text(lead, records), durable)
    write_csv(rep_dir / SUMMARY_FILE, [*head, *summary_cols], [{**lead, **summary}], durable)
    for stem, rows in tables.items():
        cols: dict[str, None] = {}
        for row in rows:
            cols.update(dict.fromkeys(row))
        write_csv(
            rep_dir / table_file(stem),
            [*head, *cols],
            ({**lead, **row} for row in rows),
            durable,
        )
    return [REQUESTS_FILE, SUMMARY_FILE, *(table_file(s) for s in tables)]
