"""Pre-flight: whether a config can run here, checked before anything runs or is written.

Above config, workload and store (it uses all three), below sweep and the commands
that call it (docs/design.md §2).
"""

from __future__ import annotations

from sim.preflight.checks import check_budget, check_config, parse_checked, parse_checked_mapping

__all__ = ["check_budget", "check_config", "parse_checked", "parse_checked_mapping"]
