#!/bin/sh
# GIL contention, the mechanism's test (issue 40): each hold's grid run for real, then every
# real request's measured hold replayed through the model (`--level mechanism`: no model
# runs from the calibration, the machine's speed taken out). Prints the replay's table per
# hold. About 1-2 minutes per hold on a 2-core machine; `--repeats 1` keeps it small.
# Results: results/gil_contention_<hold>-validate/
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-120}"
uptime
for grid in hold_1ms hold_1ms_one hold_5ms hold_20ms; do
    kvsim validate-model "experiments/gil_contention/${grid}.yaml" --level mechanism \
        --repeats "${REPEATS:-1}" --force
done
uptime
