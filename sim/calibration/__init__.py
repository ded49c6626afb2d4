"""Calibration: real points run to measure this machine for model mode.

It sits above both modes (docs/design.md §2): it runs real mode's CPU stages and
points (sim.runtime) and writes what model mode reads (sim.model.calibration), so
that the two modes stay siblings that never import each other.
"""

from __future__ import annotations

__all__: list[str] = []
