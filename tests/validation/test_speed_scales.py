"""The speed-matched model's scale per point: what the real twin spent a request over
what the model spent, by the GIL hold where one was held, by thread CPU where the GIL
was off."""

from __future__ import annotations

from pathlib import Path

import pytest

from sim.rundir.reader import RunResults
from sim.validation.paired import axis_key, speed_scales


def _run(rows: list[dict[str, str]]) -> RunResults:
    return RunResults(Path("r"), {}, ["variant", "workers", "gil", "mode"], rows)


def _row(gil: str, mode: str, hold: str, cpu: str) -> dict[str, str]:
    return {
        "variant": "scalar",
        "workers": "2",
        "gil": gil,
        "mode": mode,
        "gil_hold_mean_ms": hold,
        "thread_cpu_mean_ms": cpu,
    }


def test_a_point_with_the_gil_on_is_scaled_by_its_hold() -> None:
    real = _run([_row("on", "real", "60", "66")])
    model = _run([_row("on", "model", "50", "40")])
    assert speed_scales(real, model) == {axis_key(["scalar", "2", "on"]): pytest.approx(1.2)}


def test_a_point_with_the_gil_off_is_scaled_by_its_thread_cpu() -> None:
    # nothing holds a GIL that is off: the hold is empty on both sides
    real = _run([_row("off", "real", "", "55")])
    model = _run([_row("off", "model", "", "44")])
    assert speed_scales(real, model) == {axis_key(["scalar", "2", "off"]): pytest.approx(1.25)}


def test_a_point_the_model_has_no_figure_for_gets_no_scale() -> None:
    real = _run([_row("off", "real", "", "55"), _row("on", "real", "60", "60")])
    model = _run([_row("off", "model", "", ""), _row("on", "model", "50", "50")])
    assert speed_scales(real, model) == {axis_key(["scalar", "2", "on"]): pytest.approx(1.2)}
