"""Print the gc_heap study's numbers (every figure its README quotes) from the run's files.

Usage: python experiments/gc_heap/heap_numbers.py results/experiments/gc_heap
Reads summary.csv and gc.csv of the run directory; prints markdown tables.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path


def _f(v: str) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def main(run: Path) -> None:
    summary = list(csv.DictReader((run / "summary.csv").open()))
    gc_rows = list(csv.DictReader((run / "gc.csv").open()))
    print(f"## {run}/summary.csv\n")
    heads = (
        "variant | heap objects | frozen | p99 latency ms | engine stall p99 ms | step p99 ms"
        " | hold ms | gc hold ms (mean / p99) | GCs/req | gen-2 GCs | longest GC ms"
        " | tracked objects"
    )
    print("| " + heads + " |")
    print("|" + "---|" * (heads.count("|") + 1))
    for r in summary:
        print(
            f"| {r['variant']} | {int(_f(r['heap_objects'])):,} | {r['frozen']} "
            f"| {_f(r['latency_p99_ms']):.1f} | {_f(r['engine_stall_p99_ms']):.1f} "
            f"| {_f(r['engine_step_p99_ms']):.1f} | {_f(r['gil_hold_mean_ms']):.1f} "
            f"| {_f(r['hold_gc_mean_ms']):.1f} / {_f(r['hold_gc_p99_ms']):.1f} "
            f"| {_f(r['gc_per_request']):.1f} | {int(_f(r['gc_gen2_collections']))} "
            f"| {_f(r['gc_max_ms']):.1f} | {int(_f(r['heap_tracked_objects'])):,} |"
        )
    print(
        f"\n## {run}/gc.csv: collections by generation, all threads "
        "(count · CPU ms · wall ms · longest wall ms)\n"
    )
    cells: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(dict)
    for g in gc_rows:
        key = (g["variant"], g["objects"], g["frozen"])
        c = cells[key].setdefault(int(g["generation"]), [0.0, 0.0, 0.0, 0.0])
        c[0] += _f(g["collections"])
        c[1] += _f(g["cpu_ms"])
        c[2] += _f(g["wall_ms"])
        c[3] = max(c[3], _f(g["max_wall_ms"]))
    print("| variant | heap objects | frozen | gen 0 | gen 1 | gen 2 |")
    print("|---|---|---|---|---|---|")
    for (v, o, fr), gens in cells.items():
        parts = []
        for gen in range(3):
            n, cpu, wall, mx = gens.get(gen, [0.0, 0.0, 0.0, 0.0])
            parts.append(f"{int(n)} · {cpu:.0f} · {wall:.0f} · {mx:.1f}")
        print(f"| {v} | {int(_f(o)):,} | {fr} | " + " | ".join(parts) + " |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/experiments/gc_heap"))
