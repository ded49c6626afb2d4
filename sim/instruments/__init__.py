"""Instruments that run beside a point: the GIL meter, probes, the noise floor, the engine loop."""

from __future__ import annotations

__all__: list[str] = []

from sim.native import enable as _enable_native

# The compiled thread-time sums (both modes': a model point adds to them per request),
# when built from this source (sim.native).
_enable_native(__name__, __path__)
