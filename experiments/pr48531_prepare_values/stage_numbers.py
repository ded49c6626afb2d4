"""Print the pr48531 study's stage breakdown (every figure its README quotes about it).

Usage: python experiments/pr48531_prepare_values/stage_numbers.py results/experiments/pr48531
Reads requests.csv (every request of every repeat) and bench_connectors.csv of the
run directory and prints markdown tables: the hold by stage per variant and
workers, and the bench's figures for the same geometry beside the run's.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path

STAGES = ("hold_keys_ms", "hold_addresses_ms", "hold_free_ms", "hold_gc_ms")


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else float("nan")


def _p(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def main(run: Path) -> None:
    reqs = list(csv.DictReader((run / "requests.csv").open()))
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in reqs:
        groups.setdefault((r["variant"], r["workers"]), []).append(r)
    print(f"## {run}/requests.csv: GIL hold per request by stage, mean (median) ms\n")
    print(
        "| variant | workers | requests | keys | addresses | free | gc | = hold | "
        "GCs/req (gen0/1/2) | gc share |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    run_means: dict[str, dict[str, float]] = {}
    for (variant, workers), rows in groups.items():
        cells = []
        means = {}
        for col in (*STAGES, "gil_hold_ms"):
            xs = [float(r[col]) for r in rows]
            means[col] = _mean(xs)
            cells.append(f"{_mean(xs):.2f} ({statistics.median(xs):.2f})")
        gens = [_mean([float(r[f"gc_gen{g}"]) for r in rows]) for g in range(3)]
        share = means["hold_gc_ms"] / means["gil_hold_ms"]
        print(
            f"| {variant} | {workers} | {len(rows)} | "
            + " | ".join(cells)
            + f" | {sum(gens):.2f} ({gens[0]:.2f}/{gens[1]:.2f}/{gens[2]:.2f}) | {share:.0%} |"
        )
        if workers == "1":
            run_means[variant] = means
    bench_path = run / "bench_connectors.csv"
    if not bench_path.is_file():
        return
    bench = {r["variant"]: r for r in csv.DictReader(bench_path.open())}
    print(
        f"\n## {bench_path}: the address stage alone (median of its requests), beside the run"
        " (workers 1)\n"
    )
    print(
        "| variant | bench hold/call | GC in call | GC debt | sustained hold | sustained GC | "
        "sustained GCs/req | run: addresses + free + gc | run ÷ sustained |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for variant, m in run_means.items():
        b = bench.get(variant)
        if b is None:
            continue
        run_side = m["hold_addresses_ms"] + m["hold_free_ms"] + m["hold_gc_ms"]
        sus = float(b["sustained_hold_ms"])
        print(
            f"| {variant} | {float(b['gil_hold_ms']):.2f} | {float(b['gc_in_call_ms']):.2f} | "
            f"{float(b['gc_debt_ms']):.2f} | {sus:.2f} | {float(b['sustained_gc_ms']):.2f} | "
            f"{float(b['sustained_gc_count']):.2f} | {run_side:.2f} | {run_side / sus:.2f}× |"
        )
    floor = bench.get("floor")
    if floor is not None:
        print(
            f"\nfloor (the same lists built without a variant, GC paused): "
            f"{float(floor['gil_hold_ms']):.2f} ms per call"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results/experiments/pr48531"))
