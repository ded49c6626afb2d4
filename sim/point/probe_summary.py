"""The GIL probe's summary columns, one builder for both modes: real mode's probe thread
(sim.instruments.probe) and the model's simulated one (sim.model.probe) fill the same
columns from the same shares, so the agreement figure is computed one way."""

from __future__ import annotations

import math

from sim import columns

__all__ = ["probe_summary"]


def probe_summary(
    stall_ms: tuple[float, float, float],
    probe: float,
    probe_core: float,
    requests: float,
    harness: float,
    engine: float,
    core_wait: float,
    hold_busy_us: float = math.nan,
) -> dict[str, float]:
    """The probe's columns from its stalls (p50, p99, max; ms) and the GIL's busy shares:
    as the probe saw it (``probe``, and the part off a core, ``probe_core``) and as the
    holds account for it (requests, the simulation thread, the engine; NaN: not there).
    The agreement is the probe's share over the accounted one. ``hold_busy_us``: the
    probe's own hold after a wake-up that found the GIL busy (NaN: not measured)."""
    accounted = requests + harness + (0.0 if math.isnan(engine) else engine)
    s50, s99, smax = stall_ms
    return {
        columns.STALL_P50_MS.name: s50,
        columns.STALL_P99_MS.name: s99,
        columns.STALL_MAX_MS.name: smax,
        columns.GIL_BUSY_PROBE.name: probe,
        columns.GIL_BUSY_PROBE_CORE.name: probe_core,
        columns.GIL_BUSY_REQUESTS.name: requests,
        columns.GIL_BUSY_HARNESS.name: harness,
        columns.GIL_BUSY_ENGINE.name: engine,
        columns.GIL_BUSY_AGREEMENT.name: probe / accounted if accounted > 0 else math.nan,
        columns.CORE_WAIT_FRAC.name: core_wait,
        columns.PROBE_HOLD_BUSY_US.name: hold_busy_us,
    }
