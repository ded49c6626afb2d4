"""``kvsim check NAME --audit``: one short point under the py-spy GIL audit.

The GIL meter subtracts the CPU time of the sections a variant declares GIL-free
(``connectors.base.gil_free``); py-spy, from outside, sees which thread holds the
GIL (docs/gil-method.md). On one load thread the two should agree: a meter well
above the audit means the variant runs without the GIL somewhere it does not
declare, a meter well below means a declared section holds the GIL after all. On a
loaded machine py-spy's wall-clock reading overstates the hold (a holder kept off
its core still holds the GIL) and the on-core reading understates it; the truth lies
between (sim.instruments.audit), so each verdict is drawn from the bound that makes
it safe.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from sim import columns
from sim.api.experiments import build
from sim.config.plugins import command_plugins
from sim.rundir.numbers import as_float

__all__ = ["AUDIT_POINT", "audit_variant"]

#: The audited point: the seed's geometry, one load thread, 40 requests of 128K tokens.
AUDIT_POINT: dict[str, Any] = {
    "name": "check-audit",
    "model": {"regions": 61, "block_len": [147456], "block_size": 128},
    "workload": {"requests": 40, "arrival": {"kind": "poisson", "rate_rps": 20}, "tokens": 131072},
    "connector": {"workers": 1},
    "gil": {"audit": "pyspy"},
}

#: How far the audit may lie from the meter before it disagrees: the wall-clock figure (an
#: upper bound) below 1 - this, or the on-core one (a lower bound) above 1 + this.
AGREE_WITHIN = 0.2


def audit_variant(
    name: str, options: Mapping[str, Any], plugins: Sequence[str] = ()
) -> tuple[bool, str]:
    """Run the audited point for ``name`` (its variant from the ``plugins`` files when
    not built in); whether the audit agrees, and the line that says what it saw."""
    with command_plugins(plugins) as read:
        data = {**AUDIT_POINT, "plugins": read}
        data["connector"] = {**AUDIT_POINT["connector"], "variant": name, "options": dict(options)}
        exp = build(data)
        with tempfile.TemporaryDirectory(prefix="kvsim-check-audit-") as out:
            rows = exp.run(out).points
    row = rows[0] if rows else {}
    status = str(row.get(columns.AUDIT_STATUS.name) or "no result")
    wall = as_float(row.get(columns.AUDIT_VS_METER.name))
    oncore = as_float(row.get(columns.AUDIT_VS_METER_ONCORE.name))
    hold = as_float(row.get(columns.GIL_HOLD_MEAN_MS.name))
    if status != "ok" or wall != wall:
        return False, f"audit: did not run ({status})"
    if oncore != oncore:
        oncore = wall
    load = os.getloadavg()[0]
    said = (
        f"audit: py-spy saw the load thread hold {oncore:.2f}–{wall:.2f}× the GIL time the "
        f"meter counts (on-core lower bound – wall-clock upper bound; meter {hold:.2f} ms "
        f"per request, 40 requests, 1 load thread, load average {load:.1f})"
    )
    if wall < 1 - AGREE_WITHIN:
        return False, (
            f"{said}: the variant holds less of the GIL than metered; it runs a GIL-free "
            "section it does not declare (wrap it in connectors.base.gil_free)"
        )
    if oncore > 1 + AGREE_WITHIN:
        return False, (
            f"{said}: the variant holds more of the GIL than metered; a section it "
            "declares gil_free holds the GIL"
        )
    # The run does not record whether anything was declared: a variant with no gil_free
    # section passes here too, so the line says what was shown, not that sections exist.
    return True, f"{said}: the meter and py-spy agree; any section declared gil_free holds up"
