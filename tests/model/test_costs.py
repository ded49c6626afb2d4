"""A point's model costs (sim.model.costs) from a calibration: the probe's hold, and the
simulation thread's CPU over its items."""

from __future__ import annotations

import json

import pytest

from sim.config import parse_config
from sim.model.calibration import load_calibration
from sim.model.costs import HARNESS_SHARES, harness_split, point_costs
from tests.model.test_driver import write_calibration


def _probe_hold_s(write_config, tmp_path, **harness: float) -> float:
    path = write_calibration(tmp_path / "cal.json")
    data = json.loads(path.read_text())
    data["harness"].update(harness)
    path.write_text(json.dumps(data))
    config = write_config({"mode": "model", "machine": {"calibration": str(path)}})
    cfg = parse_config(config)[1][0].config
    return point_costs(cfg, load_calibration(path)).probe_hold_s


def test_the_probe_holds_what_it_holds_after_a_busy_wake_up(write_config, tmp_path) -> None:
    """The model's probe takes the GIL only at wake-ups that find it held, where the
    probe holds it two to three times as long as on a free GIL: the calibration's busy
    figure where it has one, the free GIL's (all a calibration before 8 Dec 2026 has)
    where not."""
    busy = _probe_hold_s(write_config, tmp_path, probe_hold_ms=0.03, probe_hold_busy_ms=0.08)
    assert busy == pytest.approx(80e-6)
    assert _probe_hold_s(write_config, tmp_path, probe_hold_ms=0.03) == pytest.approx(30e-6)


@pytest.mark.parametrize("steps", [0.0, 0.5, 3.0, 17.25])
def test_the_simulation_threads_items_add_up_to_its_cpu_per_request(steps: float) -> None:
    """A real run's figure is all the thread's CPU over the load by requests, engine
    steps included: a request's three items plus one completion per step add up to it
    again, in the calibration's shares among themselves."""
    arrival, complete, done = harness_split(900e-6, steps)
    assert arrival + complete + done + steps * complete == pytest.approx(900e-6, rel=1e-12)
    total = sum(HARNESS_SHARES)
    assert (arrival, complete, done) == pytest.approx(
        tuple(share / total * (arrival + complete + done) for share in HARNESS_SHARES)
    )
