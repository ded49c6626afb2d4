"""What one point is in either mode: its records, their sink, its summary and result,
its arrivals and the add-on contract. Real threads (sim.runtime) and the event model
(sim.model) are siblings above this package; neither imports the other."""

from __future__ import annotations

__all__: list[str] = []

from sim.native import enable as _enable_native

# The compiled arrivals and record sink (both modes'), when built from this source (sim.native).
_enable_native(__name__, __path__)
