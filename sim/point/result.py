"""What one point run produces, whichever way it ran (real threads or the model).

Its own module so that both drivers (``sim.runtime.point`` and
``sim.model.driver``) build one the same way (:func:`point_result`) without
importing each other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sim.config.experiment import Point
from sim.point.addons import AddOn
from sim.point.record_sink import RecordSink
from sim.point.records import RequestRecord

__all__ = ["PointResult", "point_result"]


@dataclass
class PointResult:
    """A point run's requests, its summary row, and its add-ons' tables."""

    point: Point
    repeat: int
    records: list[RequestRecord]
    summary: dict[str, Any]
    #: Extra long-format tables from add-ons: file stem -> rows.
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def point_result(
    point: Point,
    repeat: int,
    sink: RecordSink,
    elapsed_s: float,
    figures: Iterable[Mapping[str, Any]],
    addons: Sequence[AddOn[Any]],
) -> PointResult:
    """The point's result, in both modes: the sink's request metrics over ``elapsed_s``
    (the sink closed), the mode's own ``figures`` in order (the harness's cost, the
    noise floor, the plan's, the store's...), then each add-on's columns and tables
    (detached)."""
    summary: dict[str, Any] = sink.summary(elapsed_s)
    for part in figures:
        summary.update(part)
    tables: dict[str, list[dict[str, Any]]] = dict(sink.tables())
    for addon in addons:
        summary.update(addon.summary())
        for stem, rows in addon.tables().items():
            tables.setdefault(stem, []).extend(rows)
    return PointResult(point, repeat, sink.records, summary, tables)
