"""Real mode's point: the hybrid clock, worker threads, the load pipeline, its add-ons."""

from __future__ import annotations

from sim.native import enable as _enable_native

__all__: list[str] = []

# The compiled load pipeline, when built from this source (sim.native): first on this path.
_enable_native(__name__, __path__)
