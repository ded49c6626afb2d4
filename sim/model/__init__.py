"""Model mode: the GIL and the cores as simulated resources, calibrated on this machine.

``run_model_point`` (sim.model.driver) runs one point in simulated time on model
mode's own event loop (sim.model.loop; no SimPy, for speed); the GIL's rules
are in sim.model.gil, the cores in sim.model.cores, the costs in the calibration
file (sim.model.calibration, written by ``kvsim calibrate``). docs/model-mode.md
says what the model covers and how well it agrees with real runs.
"""

from __future__ import annotations

__all__: list[str] = []

from sim.native import enable as _enable_native

# The compiled core, when built from this source (sim.native): first on this path.
_enable_native(__name__, __path__)
