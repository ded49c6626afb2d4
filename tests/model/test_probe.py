"""The simulated probe folds the targets it has served into its statistics as it goes:
the same summary as holding them all (exact up to EXACT_WAKES wake-ups, within half a
histogram bucket past it), in lists that stay bounded however long the point runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sim.model.driver as driver
import sim.model.probe as probe_mod
from sim.benches.model import _stand_in_calibration
from sim.benches.model_sweep import synthetic_config
from sim.config import ExperimentConfig, Point
from sim.stats import RELATIVE_ERROR

KEYS = ("stall_p50_ms", "stall_p99_ms", "stall_max_ms", "gil_busy_probe")


def _summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **limits: int) -> dict[str, Any]:
    """A busy point (4 workers, 3 ms holds, 200/s: the probe often waits for the GIL and
    serves missed targets late); returns its probe columns and the most targets held."""
    for name, value in limits.items():
        monkeypatch.setattr(probe_mod, name, value)
    held = [0]

    class Watched(probe_mod.ModelProbe):
        def _extend(self) -> int:
            moved = super()._extend()
            held[0] = max(held[0], len(self._t))
            return moved

    monkeypatch.setattr(driver, "ModelProbe", Watched)
    cal = str(_stand_in_calibration(tmp_path / "cal.json"))
    cfg = synthetic_config(cal, 3000, 200.0, True)
    cfg["connector"] = {**cfg["connector"], "workers": 4}
    cfg["connector"]["options"] = {**cfg["connector"]["options"], "hold_ms": 3.0}
    res = driver.run_model_point(Point(0, {}, ExperimentConfig.model_validate(cfg)), 0, None)
    return {**{k: res.summary[k] for k in KEYS}, "held": held[0]}


def test_folding_in_blocks_gives_the_summary_of_holding_every_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _summary(tmp_path, monkeypatch, COMPACT_AT=10**9, EXACT_WAKES=10**9)
    folded = _summary(tmp_path, monkeypatch, COMPACT_AT=300, EXACT_WAKES=10**9)
    assert whole["held"] > 7000  # 15 simulated seconds: ~7,500 targets, held whole
    assert folded["held"] < 300 + 2 * 8192  # bounded: the fold threshold plus a block
    assert {k: folded[k] for k in KEYS} == {k: whole[k] for k in KEYS}
    assert 0.05 < whole["gil_busy_probe"] < 0.95 and whole["stall_p99_ms"] > 1.0  # busy


def test_past_the_exact_wakes_the_stall_is_within_half_a_bucket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _summary(tmp_path, monkeypatch, COMPACT_AT=10**9, EXACT_WAKES=10**9)
    hist = _summary(tmp_path, monkeypatch, COMPACT_AT=300, EXACT_WAKES=200)
    assert hist["gil_busy_probe"] == whole["gil_busy_probe"]  # counted exactly
    assert hist["stall_max_ms"] == whole["stall_max_ms"]
    for k in ("stall_p50_ms", "stall_p99_ms"):
        assert hist[k] == pytest.approx(whole[k], rel=RELATIVE_ERROR / 2), k
    assert hist["stall_p99_ms"] != whole["stall_p99_ms"]  # the histogram was used
