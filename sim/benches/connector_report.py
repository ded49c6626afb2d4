"""What ``kvsim bench connectors`` reports: one row per variant and floor, ratios, the table.

Every ratio is computed here from medians measured side by side in one
process: to ``scalar`` and to the floor that builds the same lists the same
way (``floor``, or ``floor:promote`` for a variant that promotes young objects).
The ``inputs`` column says whether a row was handed lists (the upstream
contract) or int64 arrays (a ``buffer_inputs`` what-if such as ``array``,
converted outside the measured region).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sim import columns
from sim.benches.connector_floor import FLOOR, FLOOR_PROMOTE

__all__ = ["CSV_COLUMNS", "RowMeasure", "result_rows", "table"]

BASELINE = "scalar"

# fmt: off
CSV_COLUMNS = [
    "variant", "inputs", "floor", columns.GIL_HOLD_MS.name, "wall_ms", "free_cpu_ms",
    "gc_in_call_ms", "gc_debt_ms", "sustained_hold_ms", "sustained_gc_ms", "sustained_gc_count",
    "hold_vs_scalar", "hold_vs_floor", "wall_vs_scalar", "hold_plus_debt_vs_scalar",
    "sustained_vs_scalar", "sustained_vs_floor",
    "regions", "block_len", "block_size", "hash_block_size", "groups", "chunks", "tokens",
    "handler", "repeats", "python", "numpy", "numba", "cpu_model",
]
# fmt: on


@dataclass
class RowMeasure:
    """Everything measured for one row: per-call samples and the sustained figures."""

    inputs: str  # "lists" or "arrays"
    floor: str  # the floor label its ratios use
    samples: dict[str, list[float]]
    sustained_hold_ms: float = math.nan
    sustained_gc_ms: float = math.nan
    #: Collections per request in the sustained runs (median of the runs).
    sustained_gc_count: float = math.nan


def _ratio(num: float, den: float | None) -> float:
    return num / den if den and not math.isnan(den) else math.nan


def result_rows(
    measures: Mapping[str, RowMeasure], fixed: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """CSV rows in ``measures`` order; ``fixed`` columns (geometry, repeats) go on every row."""
    med = {k: {m: statistics.median(v) for m, v in r.samples.items()} for k, r in measures.items()}
    base = med.get(BASELINE)
    base_sus = measures[BASELINE].sustained_hold_ms if BASELINE in measures else None
    rows = []
    for label, r in measures.items():
        m, fl = med[label], med[r.floor]
        floor_sus = measures[r.floor].sustained_hold_ms
        rows.append(
            {
                "variant": label,
                "inputs": r.inputs,
                "floor": r.floor,
                columns.GIL_HOLD_MS.name: m["hold"],
                "wall_ms": m["wall"],
                "free_cpu_ms": m["free"],
                "gc_in_call_ms": m["gc_in"],
                "gc_debt_ms": m["debt"],
                "sustained_hold_ms": r.sustained_hold_ms,
                "sustained_gc_ms": r.sustained_gc_ms,
                "sustained_gc_count": r.sustained_gc_count,
                "hold_vs_scalar": _ratio(m["hold"], base and base["hold"]),
                "hold_vs_floor": _ratio(m["hold"], fl["hold"]),
                "wall_vs_scalar": _ratio(m["wall"], base and base["wall"]),
                "hold_plus_debt_vs_scalar": _ratio(
                    m["hold"] + m["debt"], base and base["hold"] + base["debt"]
                ),
                "sustained_vs_scalar": _ratio(r.sustained_hold_ms, base_sus),
                "sustained_vs_floor": _ratio(r.sustained_hold_ms, floor_sus),
                **fixed,
            }
        )
    return rows


def _cell(r: float) -> str:
    if math.isnan(r):
        return "—"
    return f"{r:.3f}" if r < 10 else f"{r:.2f}" if r < 100 else f"{r:.1f}"


_COLUMNS = {
    "hold\nms": columns.GIL_HOLD_MS.name,
    "GC debt\nms": "gc_debt_ms",
    "hold\n÷scalar": "hold_vs_scalar",
    "hold\n÷floor": "hold_vs_floor",
    "sust\nms": "sustained_hold_ms",
    "sust\n÷scalar": "sustained_vs_scalar",
    "sust\n÷floor": "sustained_vs_floor",
    "sust\nGCs": "sustained_gc_count",
}

LEGEND = (
    "hold: GIL hold per call (thread CPU - declared GIL-free CPU); GC debt: young "
    "collection it left behind, result alive; sust: hold per request over "
    "back-to-back requests, every collection "
    "included; sust GCs: collections per request in those; ÷floor: against the floor "
    "that builds the same lists the same way "
    "(floor: GC paused; floor:promote: then gc.freeze()+unfreeze()); in: lists = the "
    "upstream contract, arrays = int64 buffers handed over, converted outside the timing "
    "(a what-if); wall, free CPU and GC in the call in the CSV"
)


def table(rows: Sequence[dict[str, Any]], title: str) -> Any:
    """The rich table printed by the command."""
    from rich import box  # rich loads only when the table is printed
    from rich.table import Table  # rich loads only when the table is printed

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("variant", overflow="fold", min_width=14)
    t.add_column("in", no_wrap=True)
    for col in _COLUMNS:
        t.add_column(col, justify="right", no_wrap=True)
    first_floor = True
    for r in rows:
        if r["variant"] in (FLOOR, FLOOR_PROMOTE) and first_floor:
            t.add_section()
            first_floor = False
        t.add_row(r["variant"], r["inputs"], *(_cell(r[k]) for k in _COLUMNS.values()))
    return t
