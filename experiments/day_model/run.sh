#!/bin/sh
# A day in model mode: 10 million requests per variant on a diurnal load curve
# (configs/day_model.yaml), scalar against numpy hour by hour. Prints the run's wall
# time and peak memory, then the hourly p50/p99 table, and draws
# figures/latency_over_day.png. Needs a calibration of scalar and numpy at 61 regions
# (default results/calibration.json; CAL=path to use another).
# Results: results/experiments/day_model/
set -e
cd "$(dirname "$0")/../.."
R=results/experiments/day_model
CAL="${CAL:-results/calibration.json}"
python - "$R" "$CAL" <<'PY'
import resource, sys, time
from sim.cli import main
out, cal = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
rc = main(["run", "configs/day_model.yaml", "--out", out, "--force", "-q",
           "--set", f"machine.calibration={cal}"])
wall = time.perf_counter() - t0
peak = max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(f"day_model: exit {rc}, {wall:.0f} s wall, peak RSS {peak / 1024:.0f} MB (largest process)")
PY
kvsim compare "$R" --metric latency_p50_ms --metric latency_p99_ms --metric requests
python experiments/day_model/plot_day.py "$R"
