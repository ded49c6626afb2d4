"""The load threads' slowdown beside each other (sim.calibration.measure_parallel).

It means something only with the GIL off: under a GIL two threads never run Python at
once, and a ratio measured there would say the threads cost each other nothing. The
measurement in a free-threaded python is checked by test_calibrate_under.
"""

from __future__ import annotations

import pytest

from sim.calibration import measure_parallel as mp
from sim.process.interpreter import gil_enabled


@pytest.mark.skipif(not gil_enabled(), reason="this python runs with its GIL off")
def test_under_a_gil_it_is_refused() -> None:
    with pytest.raises(RuntimeError, match="GIL off"):
        mp.measure_parallel(["scalar/per_group"], 2)


def _said(monkeypatch, keys: list[str], overlap: float) -> tuple[dict, list[str]]:
    """measure_parallel over ``keys`` with each measurement made up (1.5x at ``overlap``)."""
    monkeypatch.setattr(mp, "gil_enabled", lambda: False)
    found = {"2": {"slowdown": 1.5, "ratio": 1.5, "overlap": overlap}}
    monkeypatch.setattr(mp, "parallel_slowdown", lambda v, h, t: found)
    said: list[str] = []
    return mp.measure_parallel(keys, 2, said.append), said


def test_parametric_variants_and_plain_keys_are_not_measured(monkeypatch) -> None:
    got, said = _said(monkeypatch, ["synthetic", "numpy/per_group"], 0.9)
    assert list(got) == ["numpy/per_group"]
    assert said == [
        "parallel slowdown, GIL off: numpy/per_group x 2 threads 1.50 "
        "(CPU per request x1.50 at overlap 0.90)"
    ]


def test_a_busy_machine_is_said(monkeypatch) -> None:
    _got, said = _said(monkeypatch, ["scalar/per_group"], 0.2)
    assert "ran at once 20% of the time: calibrate on a quieter machine" in said[0]
