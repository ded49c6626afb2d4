"""``kvsim validate`` says how long model-mode points will take, and what that is based on.

It said nothing for model-mode configs (issue 42 item 5). The estimate's arithmetic is
checked on a clock the test drives (no figure of this machine asserted); the command's
line on a real sample.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sim.cli import main
from sim.config import Point, parse_config
from sim.preflight import model_time
from tests.model.test_driver import write_calibration


@pytest.fixture
def model_config(write_config, tmp_path: Path):
    cal = write_calibration(tmp_path / "cal.json")

    def _config(requests: int = 600, **over) -> Path:
        return write_config(
            {
                "mode": "model",
                "machine": {"calibration": str(cal)},
                "workload": {"requests": requests},
                **over,
            }
        )

    return _config


def test_validate_prints_the_model_time_and_its_basis(model_config, capsys) -> None:
    config = model_config(sweep={"connector.workers": [1, 2]}, repeats=2)
    assert main(["validate", str(config)]) == 0
    out = capsys.readouterr().out
    line = next((x for x in out.splitlines() if x.startswith("model time:")), None)
    assert line is not None, out
    assert re.match(r"model time: ≈ [\d.]+ (ms|s) per point, ≈ [\d.]+ (ms|s) in all \(CPU", line)
    assert "up to 200 requests of 2 of 2 model point(s) simulated here" in line
    assert re.search(r"on the (compiled|interpreted) core", line)
    busy = r"; more wall time on a busy machine: load average [\d.]+ on \d+ cores now\)$"
    assert re.search(busy, line)


def test_a_real_mode_config_gets_no_model_line(write_config, capsys) -> None:
    assert main(["validate", str(write_config())]) == 0
    assert "model time" not in capsys.readouterr().out


class _Clock:
    """process_time for the estimate: each simulated request costs 1 ms of it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.samples: list[int] = []

    def time(self) -> float:
        return self.now

    def run(self, point: Point, calibration: object = None) -> None:
        requests = point.config.workload.requests
        self.samples.append(requests)
        self.now += requests * 1e-3


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    import sim.model.driver

    fake = _Clock()
    monkeypatch.setattr(model_time.time, "process_time", fake.time)
    monkeypatch.setattr(sim.model.driver, "run_model_point", fake.run)
    return fake


def test_a_sample_of_each_point_is_scaled_to_its_count(model_config, clock: _Clock) -> None:
    _cfg, points = parse_config(model_config(sweep={"workload.requests": [50, 5000]}))
    est = model_time.estimate_model_time(points, [50, 5000])
    assert est is not None
    assert clock.samples == [10, 50, 200]  # the untimed warm-up, then each point's sample
    setup = model_time.POINT_SETUP_CPU_S
    assert est.point_s == pytest.approx((setup + 0.05, setup + 5.0))
    assert est.sampled == 2 and est.sample_cpu_s == pytest.approx(0.25)
    assert est.total_s(3) == pytest.approx(3 * (2 * setup + 5.05) + model_time.RUN_START_CPU_S)


def test_past_the_sampling_budget_points_take_the_slowest_cost(
    model_config, clock: _Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(model_time, "SAMPLE_BUDGET_S", 0.1)
    _cfg, points = parse_config(model_config(sweep={"connector.workers": [1, 2, 4]}))
    est = model_time.estimate_model_time(points, [1000, 1000, 1000])
    assert est is not None and est.sampled == 1 and clock.samples == [10, 200]
    assert est.point_s == pytest.approx((model_time.POINT_SETUP_CPU_S + 1.0,) * 3)


def test_no_model_point_no_estimate(write_config, clock: _Clock) -> None:
    _cfg, points = parse_config(write_config())
    assert model_time.estimate_model_time(points, [8]) is None and not clock.samples
