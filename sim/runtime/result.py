"""What one point run produces, whichever way it ran (real threads or the model).

Its own module so that both drivers (``sim.runtime.point`` and
``sim.model.driver``) can build one without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sim.config.experiment import Point
from sim.runtime.records import RequestRecord

__all__ = ["PointResult"]


@dataclass
class PointResult:
    """A point run's requests, its summary row, and its add-ons' tables."""

    point: Point
    repeat: int
    records: list[RequestRecord]
    summary: dict[str, Any]
    #: Extra long-format tables from add-ons: file stem -> rows.
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
