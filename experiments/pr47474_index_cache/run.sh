#!/bin/sh
# Study (b), vLLM PR #47474: rerun it and print every number the README quotes.
# About 40 s on a 2-core machine. Results: results/experiments/pr47474/
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-120}"
R=results/experiments/pr47474
# The per-step cost of building the index, side by side in one process
kvsim bench index
# The same variants in a real engine loop, alone and beside a connector
kvsim run experiments/pr47474_index_cache/config.yaml --force
kvsim compare "$R" --by index_variant --baseline per_component \
    --metric 'steps.build_us:p50@phase=alone' --metric engine_build_p50_us \
    --metric engine_step_p99_ms --metric latency_p99_ms
kvsim plot "$R"
