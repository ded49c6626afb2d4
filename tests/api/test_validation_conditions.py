"""The conditions validate-model measures before and after its real runs, pooled
(sim.api.validation_conditions.merge_conditions): what its model runs are given."""

from __future__ import annotations

import pytest

from sim.api.validation_conditions import merge_conditions


def _measured(load: float, hold: float, **extra: float) -> dict[str, object]:
    return {
        "background_load": load,
        "probe_hold_ms": hold,
        "wake_samples_ms": [0.02, 0.03],
        **extra,
    }


def test_the_probes_busy_hold_is_pooled_where_it_was_measured() -> None:
    both = merge_conditions(
        _measured(0.0, 0.02, probe_hold_busy_ms=0.06), _measured(1.0, 0.04, probe_hold_busy_ms=0.08)
    )
    assert both["probe_hold_busy_ms"] == pytest.approx(0.07)
    assert both["probe_hold_ms"] == pytest.approx(0.03)
    assert both["background_load"] == pytest.approx(0.5)
    assert both["wake_samples_ms"] == [0.02, 0.02, 0.03, 0.03]
    one = merge_conditions(_measured(0.0, 0.02), _measured(0.0, 0.02, probe_hold_busy_ms=0.09))
    assert one["probe_hold_busy_ms"] == pytest.approx(0.09)
    # no wake-up found the GIL busy either time: the model takes the free GIL's hold
    assert "probe_hold_busy_ms" not in merge_conditions(_measured(0, 0.02), _measured(0, 0.02))
