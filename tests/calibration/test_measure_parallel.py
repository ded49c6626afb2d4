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


def test_parametric_variants_and_plain_keys_are_not_measured(monkeypatch) -> None:
    monkeypatch.setattr(mp, "gil_enabled", lambda: False)
    monkeypatch.setattr(
        mp,
        "parallel_slowdown",
        lambda v, h, t: {"2": {"slowdown": 1.5, "ratio": 1.5, "overlap": 0.9}},
    )
    said: list[str] = []
    got = mp.measure_parallel(["synthetic", "numpy/per_group"], 2, said.append)
    assert list(got) == ["numpy/per_group"]
    assert said == [
        "parallel slowdown, GIL off: numpy/per_group x 2 threads 1.50 "
        "(CPU per request x1.50 at overlap 0.90)"
    ]


def test_a_busy_machine_is_said(monkeypatch) -> None:
    monkeypatch.setattr(mp, "gil_enabled", lambda: False)
    monkeypatch.setattr(
        mp,
        "parallel_slowdown",
        lambda v, h, t: {"2": {"slowdown": 1.1, "ratio": 1.1, "overlap": 0.2}},
    )
    said: list[str] = []
    mp.measure_parallel(["scalar/per_group"], 2, said.append)
    assert "ran at once 20% of the time: calibrate on a quieter machine" in said[0]
