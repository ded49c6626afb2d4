"""Does a variant compute what the reference computes? ``kvsim check`` and its quick form."""

from __future__ import annotations

from sim.conformance.check import CheckResult, check_variant
from sim.conformance.gate import refuse_wrong_plugin_points, refuse_wrong_plugins
from sim.conformance.index_check import check_index_variant

__all__ = [
    "CheckResult",
    "check_index_variant",
    "check_variant",
    "refuse_wrong_plugin_points",
    "refuse_wrong_plugins",
]
