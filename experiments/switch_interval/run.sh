#!/bin/sh
# Study (d), switch interval against connector latency and engine stall: rerun it and
# print what the README quotes. About 3 minutes on a 2-core machine.
# Results: results/experiments/switch_interval/
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-120}"
R=results/experiments/switch_interval
kvsim run experiments/switch_interval/config.yaml --force
kvsim compare "$R" --by switch_interval_ms --baseline 5 --metric latency_p50_ms \
    --metric latency_p99_ms --metric engine_step_p99_ms --metric engine_stall_p99_ms
kvsim plot "$R" --x switch_interval_ms
