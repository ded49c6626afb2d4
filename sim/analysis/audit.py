"""What the py-spy GIL audit says about a point, in words for the end table.

``audit_vs_meter`` is the load threads' GIL time as py-spy saw it over the
summed metered holds. When the meter exceeds the audit by more than 20 % the
variant holds less of the GIL than metered: some of what the meter counts ran
without the GIL — a GIL-free section the variant does not declare.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from sim import columns
from sim.rundir.numbers import as_float

__all__ = ["AUDIT_FLAG_RATIO", "audit_flagged", "audit_note", "audit_problems"]

#: The meter exceeding the audit by more than this factor flags the variant.
AUDIT_FLAG_RATIO = 1.2


_num = as_float


def audit_flagged(row: Mapping[str, Any]) -> bool:
    """The meter exceeds the audit by more than 20 % (no audit figure: no claim)."""
    ratio = _num(row.get(columns.AUDIT_VS_METER.name))
    return not (math.isnan(ratio) or ratio <= 0 or 1 / ratio <= AUDIT_FLAG_RATIO)


def audit_note(label: str, row: Mapping[str, Any]) -> str | None:
    """One sentence when the meter exceeds the audit by more than 20 % (else None)."""
    if not audit_flagged(row):
        return None
    ratio = _num(row.get(columns.AUDIT_VS_METER.name))
    variant = row.get("variant", "the variant")
    return (
        f"{label}: the meter counts {1 / ratio:.1f}× the GIL time py-spy saw the load "
        f"threads hold (audit_vs_meter {ratio:.2f}): {variant} holds less of the GIL than "
        "metered — it runs a GIL-free section it does not declare (connectors.base.gil_free), "
        "so its gil_hold_ms overstates its hold"
    )


def audit_problems(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Each distinct reason the audit did not run where it was asked for, once."""
    seen: dict[str, None] = {}
    for r in rows:
        for part in str(r.get(columns.AUDIT_STATUS.name) or "").split("; "):
            if part and part not in ("ok", "not run"):
                seen[part] = None
    return list(seen)
