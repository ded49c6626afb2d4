#!/bin/sh
# A day in model mode: 10 million requests per variant on a diurnal load curve
# (configs/day_model.yaml), scalar against numpy hour by hour. Prints the run's wall
# time, peak memory and load average, then the hourly p50/p99 table, and draws
# figures/latency_over_day.png. Needs a calibration of scalar and numpy at 61 regions
# (default results/calibration.json; CAL=path to use another).
# Results: results/experiments/day_model/
set -e
cd "$(dirname "$0")/../.."
R=results/experiments/day_model
CAL="${CAL:-results/calibration.json}"
python experiments/day_model/run_day.py "$R" "$CAL"
kvsim compare "$R" --metric latency_p50_ms --metric latency_p99_ms --metric requests
python experiments/day_model/plot_day.py "$R"
