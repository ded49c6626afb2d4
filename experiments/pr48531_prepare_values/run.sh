#!/bin/sh
# Study (a), vLLM PR #48531: rerun it and print every number the README quotes.
# About 40 s on a 2-core machine. Results: results/experiments/pr48531/
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-120}"  # wide enough that no table is cut
R=results/experiments/pr48531
kvsim run experiments/pr48531_prepare_values/config.yaml --force
kvsim compare "$R" --metric gil_hold_mean_ms --metric latency_p50_ms --metric elapsed_s \
    --out "$R/compare_variants"
kvsim compare "$R" --by workers --baseline 1 --metric elapsed_s --out "$R/compare_workers"
# prepare_values alone, without the chunk list around it (the upstream measurement)
kvsim bench connectors --config experiments/pr48531_prepare_values/config.yaml \
    --variants scalar,numpy --repeats 20 --csv "$R/bench_connectors.csv"
kvsim plot "$R"
# where the hold goes: the stage breakdown and the bench beside it (the README's numbers)
python experiments/pr48531_prepare_values/stage_numbers.py "$R"
