"""Study: interleaved rounds against point-major order while a CPU hog comes and goes.

Runs ``config.yaml`` four times — quiet and beside a hog, each in ``interleaved`` and
in ``grid`` order — and prints, for each, the numpy/scalar ratio of GIL hold per request
and of p99 latency (paired by round, ``sim.ratio_verdict``) and how far it is from the
quiet runs' ratio. The hog is ``--hogs`` busy Python processes, all stopped and resumed
together (SIGSTOP/SIGCONT) every ``--period`` seconds from the start of the sweep, so
the machine is slow for one stretch and fast for the next.

    python experiments/drift_order/drift.py [--period 12] [--hogs 2]
"""

from __future__ import annotations

import argparse
import math
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
METRICS = (("GIL hold", "gil_hold_ms", "mean"), ("p99 latency", "latency_ms", "p99"))


class Hog:
    """``n`` busy processes, switched on and off together every ``period`` seconds."""

    def __init__(self, n: int, period: float) -> None:
        # Busy until its parent is gone: a study killed mid-way leaves no hog behind.
        code = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"
        self._procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
        self._signal(signal.SIGSTOP)
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._toggle, daemon=True)
        self.on_s = 0.0

    def _signal(self, sig: int) -> None:
        for p in self._procs:
            p.send_signal(sig)

    def _toggle(self) -> None:
        on = True
        while not self._stop.is_set():
            self._signal(signal.SIGCONT if on else signal.SIGSTOP)
            began = time.monotonic()
            self._stop.wait(self._period)
            if on:
                self.on_s += time.monotonic() - began
            on = not on

    def __enter__(self) -> Hog:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        for p in self._procs:
            p.kill()  # our own processes, by handle
            p.wait()


def sweep(order: str, out: Path) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """Run the config in ``order``; per variant: {round: {column: values}}."""
    from sim.preflight import parse_checked
    from sim.rundir.outputs import read_csv
    from sim.sweep.session import open_session, plan_run

    cfg, points = parse_checked(HERE / "config.yaml", [f"sweep.order={order}"])
    plan = plan_run(cfg, points, out)
    with open_session(plan) as session:
        outcome = session.run(plan)
    if not outcome.ok:
        raise SystemExit(f"the sweep did not finish: {outcome.unfinished[:1]}")
    cells: dict[str, dict[str, dict[str, list[float]]]] = {}
    for row in read_csv(out / "requests.csv"):
        if row.get("status", "ok") == "ok":
            per = cells.setdefault(row["variant"], {}).setdefault(row["repeat"], {})
            for _, col, _ in METRICS:
                per.setdefault(col, []).append(float(row[col]))
    return {
        v: {k: {c: np.asarray(x) for c, x in cols.items()} for k, cols in reps.items()}
        for v, reps in cells.items()
    }


def ratios(cells: dict[str, dict[str, dict[str, np.ndarray]]]) -> dict[str, Any]:
    from sim.analysis.verdict import ratio_verdict

    out = {}
    for label, col, stat in METRICS:
        b = {k: v[col] for k, v in cells["numpy"].items()}
        a = {k: v[col] for k, v in cells["scalar"].items()}
        out[label] = ratio_verdict(b, a, stat, seed=0)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--period", type=float, default=12.0, help="seconds on, then off (12)")
    p.add_argument("--hogs", type=int, default=2, help="busy processes (2: this VM's cores)")
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="kvsim-drift-") as tmp:
        for hog in (False, True):
            for order in ("interleaved", "grid"):
                began = time.monotonic()
                out = Path(tmp) / f"{order}-{'hog' if hog else 'quiet'}"
                if hog:
                    with Hog(args.hogs, args.period):
                        cells = sweep(order, out)
                else:
                    cells = sweep(order, out)
                rows.append((hog, order, ratios(cells), time.monotonic() - began))
                print(f"  {order}, {'hog' if hog else 'quiet'}: {rows[-1][3]:.0f} s", flush=True)
    quiet = {
        label: math.exp(np.mean([math.log(r[label].ratio) for h, _, r, _ in rows if not h]))
        for label, _, _ in METRICS
    }
    print("\n| machine | order | numpy/scalar hold | vs quiet | numpy/scalar p99 | vs quiet | s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for hog, order, r, secs in rows:
        cells_ = []
        for label, _, _ in METRICS:
            v = r[label]
            mark = "*" if v.differs else ""
            cells_.append(f"{v.ratio:.3f} [{v.low:.3f}, {v.high:.3f}]{mark}")
            cells_.append(f"{100 * (v.ratio / quiet[label] - 1):+.1f} %")
        machine = f"hog {args.hogs}×, {args.period:g} s on/off" if hog else "no hog"
        print(f"| {machine} | {order} | " + " | ".join(cells_) + f" | {secs:.0f} |")
    print(
        "\nvs quiet: the ratio against the mean (geometric) of the two quiet runs' ratios; "
        "* : the 95 % interval (paired by round) excludes 1"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
