"""Validation of model mode against real mode: pairing a real run's points with their
model twins, the targets and verdicts, and the words and tables validate-model prints.

It sits above both modes and the analysis it uses (docs/design.md §2); the runs
themselves are the library's (sim.api.validate_model).
"""

from __future__ import annotations

__all__: list[str] = []
