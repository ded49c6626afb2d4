"""Where the hold goes: one row per point, the mean GIL hold per request by stage.

Printed by ``kvsim run`` under the comparison table whenever the run recorded
stages (``summary.csv`` ``hold_<stage>_mean_ms``): keys (chunk list and store
keys), addresses (the variant), free (the results dropped after hand-off), gc
(every collection inside the request), their sum (= ``gil_hold_mean_ms``), the
p99 of the gc stage, collections per request, and the longest collection on
any thread (a stall for every thread).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sim import columns
from sim.analysis.condense import condense, elided_cells, table_axes
from sim.rundir.numbers import as_float

__all__ = ["STAGE_HEADS", "has_stages", "stage_cells", "stage_table"]

#: Summary columns of the table, in order, with their headers.
_mean = {c: columns.stage_summary(c, "mean").name for c in columns.HOLD_STAGES}
STAGE_HEADS = (
    (_mean[columns.HOLD_KEYS_MS], "keys"),
    (_mean[columns.HOLD_ADDRESSES_MS], "addresses"),
    (_mean[columns.HOLD_FREE_MS], "free"),
    (_mean[columns.HOLD_GC_MS], "gc"),
    (columns.GIL_HOLD_MEAN_MS.name, "= hold"),
    (columns.stage_summary(columns.HOLD_GC_MS, "p99").name, "gc p99"),
    (columns.GC_PER_REQUEST.name, "GCs/req"),
    (columns.GC_MAX_MS.name, "longest GC"),
)


_num = as_float  # the one string -> float reader (sim.rundir.numbers)


def has_stages(rows: Sequence[dict[str, Any]]) -> bool:
    """Whether any row carries the stage columns (runs before they existed do not)."""
    return any(not math.isnan(_num(r.get(_mean[columns.HOLD_KEYS_MS]))) for r in rows)


def stage_cells(row: dict[str, Any]) -> list[str]:
    """The formatted cells of one summary row, in STAGE_HEADS order."""
    cells = []
    for col, _head in STAGE_HEADS:
        v = _num(row.get(col))
        digits = 1 if col == columns.GC_PER_REQUEST.name else 2
        cells.append("—" if math.isnan(v) else f"{v:.{digits}f}")
    return cells


def stage_table(
    rows: Sequence[dict[str, Any]],
    axes: Sequence[str],
    title: str,
    max_rows: int | None = None,
) -> Any:
    """Rich table: the mean hold per request split by stage, one row per point; over
    ``max_rows`` rows, condensed as the comparison table is (sim.analysis.condense)."""
    from rich import box  # rich loads only when a table is printed
    from rich.table import Table  # rich loads only when a table is printed

    shown, fixed = table_axes(rows, axes)  # as the end table: mode=real in the title
    table = Table(
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
        collapse_padding=True,
        title=" · ".join([title, fixed]) if fixed else title,
        title_justify="left",
        caption="GIL hold per request by stage, ms (mean): keys = chunk list and store keys, "
        "addresses = the variant, free = results dropped, gc = collections inside the "
        "request · GCs/req: collections on its thread · longest GC: on any thread, by its "
        "CPU time (stalls all)",
        caption_justify="left",
    )
    for a in shown:
        table.add_column(a, no_wrap=True)
    for _col, head in STAGE_HEADS:
        table.add_column(head, justify="right", no_wrap=True)
    for p in condense(rows, axes, max_rows):
        if isinstance(p, int):
            table.add_row(*[str(rows[p].get(a, "")) for a in shown], *stage_cells(rows[p]))
        else:
            table.add_row(*elided_cells(p, len(shown) + len(STAGE_HEADS), None))
    return table
