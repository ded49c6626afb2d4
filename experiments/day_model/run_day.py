"""Run the day (configs/day_model.yaml) and print its wall time, peak memory and load.

    python experiments/day_model/run_day.py OUT_DIR CALIBRATION

A file, not a script on standard input: the day's two long points run in worker
processes (sim/sweep/executors/parallel.py), which ``spawn`` starts by importing the
main module again from its path (a ``python -`` script has none, and every worker
would die at start). The peak is the largest process's (``ru_maxrss``: the sweep's or
a worker's); the CPU time is the point processes' (they have ended; one point each, so
half of it is a point's); the load average the machine's at the end (1, 5 and 15
minutes).
"""

from __future__ import annotations

import os
import resource
import sys
import time

from sim.cli import main


def run(out: str, cal: str) -> int:
    t0 = time.perf_counter()
    rc = main(
        [
            *("run", "configs/day_model.yaml", "--out", out, "--force", "-q"),
            *("--set", f"machine.calibration={cal}"),
        ]
    )
    wall = time.perf_counter() - t0
    peak = max(
        resource.getrusage(who).ru_maxrss
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = kids.ru_utime + kids.ru_stime  # the point processes (one point each), ended
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"day_model: exit {rc}, {wall:.0f} s wall, peak RSS {peak / 1024:.0f} MB "
        f"(largest process), {cpu:.0f} s of CPU in the point processes ({cpu / 2:.0f} s "
        f"a point, start-up included), load average {load}"
    )
    return rc


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2]))
