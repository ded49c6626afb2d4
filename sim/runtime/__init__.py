"""The per-point runtime: the hybrid clock, worker threads, the load pipeline, one point's run."""

from __future__ import annotations

__all__: list[str] = []

from sim.native import enable as _enable_native

# The compiled arrivals (both modes' schedule), when built from this source (sim.native).
_enable_native(__name__, __path__)
