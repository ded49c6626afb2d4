"""validate-model's speed probe reads the machine by medians: the probe's median request
against the model's median request at the calibration row (the row's mean times its
variant's spread's median), so that one request of five that met a collection does not
move a point's scale, and a variant whose requests' median is not their mean is not read
as slower or faster than it is."""

from __future__ import annotations

from typing import Any

import pytest

from sim.api.experiments import load
from sim.calibration.speed import speed_ratio
from sim.model.calibration import Calibration


def _calibration(spread: list[float] | None) -> Calibration:
    entry: dict[str, Any] = {
        "points": [{"chunks": 1024, "regions": 61, "groups": 1, "hold": 20.0, "free": 0.0}]
    }
    if spread is not None:
        entry["hold_spread"] = spread
    return Calibration("cal.json", "0", {"variants": {"scalar/per_group": entry}})


@pytest.fixture
def point() -> Any:
    cfg = load("configs/quickstart.yaml").config
    return cfg.model_copy(
        update={"connector": cfg.connector.model_copy(update={"variant": "scalar"})}
    )


class _Measured:
    """Probe children that answer set holds, and note what they were asked."""

    def __init__(self, holds: list[float]) -> None:
        self._holds = holds
        self.asked: list[tuple[str, str, tuple[Any, ...]]] = []

    def holds(self, python: str, gil: str, args: tuple[Any, ...], plugins: Any) -> list[float]:
        self.asked.append((python, gil, args))
        return list(self._holds)


def test_one_slow_request_of_five_does_not_move_the_reading(point: Any) -> None:
    children = _Measured([22.0, 21.0, 80.0, 22.0, 23.0])  # one met a collection
    # median 22 over the row's 20 (no spread recorded: its median request is its mean)
    assert speed_ratio(point, _calibration(None), children=children) == pytest.approx(1.1)  # type: ignore[arg-type]
    # this python (a GIL build: PYTHON_GIL left as it is), the row's geometry
    assert children.asked == [("", "default", ("scalar", "per_group", 1024, 61, 1, 5, {}))]


def test_the_reading_is_against_the_model_s_median_request(point: Any) -> None:
    # the model draws a request as the row's mean times a spread whose median is 1.05: its
    # median request holds 21 ms, and a probe whose median is 21 ms reads the same speed
    children = _Measured([20.0, 21.0, 21.0, 22.0, 26.0])
    spread = [0.7, 0.75, 1.05, 1.1, 1.4]
    assert speed_ratio(point, _calibration(spread), children=children) == pytest.approx(1.0)  # type: ignore[arg-type]
