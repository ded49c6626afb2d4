#!/bin/sh
# Study (c), latency against GIL hold per request: rerun it and print what the README quotes.
# About 2 minutes on a 2-core machine. Results: results/experiments/gil_hold_latency/
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-120}"
R=results/experiments/gil_hold_latency
kvsim run experiments/gil_hold_latency/config.yaml --force
kvsim compare "$R" --by workers --baseline 1 --metric gil_hold_mean_ms \
    --metric latency_p50_ms --metric latency_p99_ms --metric stall_p99_ms
kvsim plot "$R" --x hold_ms
