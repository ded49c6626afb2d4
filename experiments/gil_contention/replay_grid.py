"""Replay finished real runs offline through the model and print the mechanism targets.

``validate-model --level mechanism`` runs the real grid first; iterating on the model only
needs the replay (deterministic, no real run): ``sim.api.replay.replay_run`` on each
``<name>-validate/real`` directory, with the background load measured around each real
point (``background_load.json`` beside it) and a calibration. Prints per point the four
targets (latency mean, p50, p99, GIL wait mean) and per run and in all the points meeting
each.

    PYTHONPATH=. python experiments/gil_contention/replay_grid.py \
        --calibration results/calibration.json results/gil_contention_5ms-validate ...
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from sim import columns
from sim.api.replay import replay_run
from sim.model.calibration import load_calibration
from sim.model.replay import MECHANISM_TARGETS, ReplayPoint

_SHORT = {
    columns.LATENCY_MEAN_MS.name: "mean",
    columns.LATENCY_P50_MS.name: "p50",
    columns.LATENCY_P99_MS.name: "p99",
    columns.GIL_WAIT_MEAN_MS.name: "GILw",
}


def _background(base: Path, slugs: list[str]) -> dict[str, float]:
    """Each point's mean background load measured around its real twin (by point index)."""
    path = base / "background_load.json"
    if not path.is_file():
        return {}
    loads = json.loads(path.read_text())
    out = {}
    for slug in slugs:
        values = loads.get(str(int(slug.split("_", 1)[0])))
        if values:
            out[slug] = statistics.fmean(values)
    return out


def replay(base: Path, calibration: Path | None) -> list[ReplayPoint]:
    real = base / "real"
    slugs = sorted(p.name for p in (real / "points").iterdir() if p.is_dir())
    cal = load_calibration(calibration) if calibration is not None else None
    cond = base / "calibration-conditions.json"
    if cal is None and cond.is_file():
        cal = load_calibration(cond)
    return replay_run(real, calibration=cal, background=_background(base, slugs))


def report(name: str, points: list[ReplayPoint]) -> list[int]:
    """Print one line per point; return the counts met per target, then all four."""
    print(f"== {name}")
    for p in points:
        cells = []
        for m, short in _SHORT.items():
            mark = " " if p.within.get(m) else "x"
            cells.append(f"{short} {p.real[m]:7.2f}>{p.model[m]:7.2f} {p.error[m]:+5.0%}{mark}")
        axes = ",".join(str(v) for k, v in p.axes.items() if k != "mode")
        print(f"  {axes:<28} " + " ".join(cells))
    counts = [sum(bool(p.within.get(m)) for p in points) for m in MECHANISM_TARGETS]
    counts.append(sum(p.meets for p in points))
    n = len(points)
    print(
        "  met: "
        + ", ".join(f"{s} {c}/{n}" for s, c in zip([*_SHORT.values(), "all"], counts, strict=True))
    )
    return counts


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="<name>-validate directories")
    ap.add_argument("--calibration", type=Path, default=None)
    args = ap.parse_args(argv)
    total = [0] * (len(MECHANISM_TARGETS) + 1)
    n = 0
    for base in args.runs:
        points = replay(base, args.calibration)
        counts = report(base.name, points)
        total = [a + b for a, b in zip(total, counts, strict=True)]
        n += len(points)
    labels = [*_SHORT.values(), "all"]
    print("ALL: " + ", ".join(f"{s} {c}/{n}" for s, c in zip(labels, total, strict=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
