"""Which rows of a big sweep's end table to print, and what stands for the rest.

A model-mode sweep can have a thousand points; a thousand-row table at the end of
``kvsim run`` scrolls the answer away, and every row is in ``summary.csv`` anyway.
Above :data:`MAX_TABLE_ROWS` rows the table keeps, for each variant (with one
variant: for each value of the grid's outermost swept axis), its first and last
few points in grid order — the two ends of what was swept — and one elision row
in between that counts the points left out and how many of those fell behind or
failed, so nothing alarming hides in the gap. Sweeps at or under the limit print
every row, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim.analysis.behind import fell_behind

__all__ = [
    "EDGE_ROWS",
    "MAX_LEVELS",
    "MAX_TABLE_ROWS",
    "Elided",
    "condense",
    "condense_markdown",
    "elided_cells",
    "shown_count",
    "table_axes",
]

#: Above this many rows the end table is condensed (``kvsim run --all-rows``: never).
MAX_TABLE_ROWS = 40
#: Rows kept at each end of a variant's points (fewer when there are many variants).
EDGE_ROWS = 3


@dataclass(frozen=True)
class Elided:
    """Consecutive points of one variant the condensed table leaves out."""

    count: int
    behind: int
    failed: int


def _groups(rows: Sequence[Mapping[str, Any]], axes: Sequence[str], limit: int) -> list[list[int]]:
    """Row indices by the axis the table is read by, rows in grid order within each.

    That axis is the variant when several were run (the ratios compare them), else
    the first swept axis (the grid's outermost). When its values are too many for
    the table to give each three rows (first, gap, last): one group, the table's ends.
    """
    for axis in dict.fromkeys(["variant", *axes]):
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault(str(r.get(axis, "")), []).append(i)
        if len(groups) >= 2:
            fits = 3 * len(groups) <= limit
            return list(groups.values()) if fits else [list(range(len(rows)))]
    return [list(range(len(rows)))]


def _elided(rows: Sequence[Mapping[str, Any]], idx: Sequence[int]) -> Elided:
    failed = sum(1 for i in idx if rows[i].get("status") == "failed")
    behind = sum(1 for i in idx if rows[i].get("status") != "failed" and fell_behind(rows[i]))
    return Elided(len(idx), behind, failed)


def condense(
    rows: Sequence[Mapping[str, Any]],
    axes: Sequence[str] = (),
    limit: int | None = MAX_TABLE_ROWS,
) -> list[int | Elided]:
    """Row indices to print, in order, with an :class:`Elided` where points are left out.

    ``limit`` None, or no more rows than it: every index, unchanged. Otherwise the
    rows are grouped by variant (or, with one variant, by the first swept axis of
    ``axes``) and each group keeps its first and last ``EDGE_ROWS`` points — fewer,
    down to one, when the groups are many; with too many groups, the whole table
    keeps its own first and last rows.
    """
    if limit is None or len(rows) <= limit:
        return list(range(len(rows)))
    groups = _groups(rows, axes, limit)
    edge = min(EDGE_ROWS, max(1, (limit // len(groups) - 1) // 2))
    plan: list[int | Elided] = []
    for idx in groups:
        if len(idx) <= 2 * edge + 1:  # an elision row would hide at most one row
            plan += idx
            continue
        plan += idx[:edge]
        plan.append(_elided(rows, idx[edge:-edge]))
        plan += idx[-edge:]
    return plan


def shown_count(plan: Sequence[int | Elided]) -> int:
    """How many real rows a plan from :func:`condense` prints."""
    return sum(1 for p in plan if isinstance(p, int))


def elided_cells(gap: Elided, n_cells: int, status_col: int | None) -> list[str]:
    """Rich cells of an elision row: ``… N more`` first, the gap's failed/behind counts in
    the status column (where the table marks those; None: a table without one), the rest
    blank."""
    cells = [""] * n_cells
    cells[0] = f"[dim]… {gap.count:,} more[/dim]"
    marks = []
    if gap.failed:
        marks.append(f"[red]{gap.failed:,} failed[/red]")
    if gap.behind:
        marks.append(f"[yellow]{gap.behind:,} behind[/yellow]")
    if status_col is None or not marks:
        return cells
    if status_col > 0:
        cells[status_col] = ", ".join(marks)
    else:  # the status column is the first: say it after the count
        cells[0] += " " + ", ".join(marks)
    return cells


#: Above this many levels (one table each), ``kvsim compare`` prints the first and last
#: ``EDGE_ROWS`` of them; the Markdown file it writes always has them all.
MAX_LEVELS = 12


def condense_markdown(text: str, limit: int | None = MAX_LEVELS, where: str = "") -> str:
    """``kvsim compare``'s Markdown with only its first and last ``EDGE_ROWS`` level
    sections (``## …``) when it has more than ``limit``, an elision line between that
    says how many were left out and ``where`` they all are; otherwise ``text`` as is."""
    head, *sections = text.split("\n\n## ")
    if limit is None or len(sections) <= max(limit, 2 * EDGE_ROWS + 1):
        return text
    last, sep, sources = sections[-1].partition("\n\nSources:")
    sections[-1] = last
    hidden = len(sections) - 2 * EDGE_ROWS
    gap = f"_… {hidden:,} more levels of {len(sections):,} not shown{where}._"
    kept = [f"## {s}" for s in sections[:EDGE_ROWS]]
    kept += [gap, *(f"## {s}" for s in sections[-EDGE_ROWS:])]
    return "\n\n".join([head, *kept]) + sep + sources


#: Axes the end tables always show, even with a single value.
_ALWAYS_SHOWN = ("variant", "workers")


def table_axes(rows: Sequence[dict[str, Any]], axes: Sequence[str]) -> tuple[list[str], str]:
    """The axis columns a run's tables show, and the rest said once for the title.

    An axis with one value in every row (``mode=real``) would be a column repeating it
    on every row and push the table past 100 columns; it is said in the title instead
    (``mode=real``). Variant and workers always show.
    """
    shown = [a for a in axes if a in _ALWAYS_SHOWN or len({str(r.get(a, "")) for r in rows}) > 1]
    fixed = [f"{a}={rows[0].get(a, '')}" for a in axes if a not in shown and rows]
    return shown, " · ".join(fixed)
