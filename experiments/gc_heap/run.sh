#!/bin/sh
# Study: GC in a production-like heap. Reruns it and prints every number the README quotes.
# About 10 minutes on a quiet 2-core machine (20 on a loaded one). Results: results/experiments/gc_heap/
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-140}"  # wide enough that no table is cut
R=results/experiments/gc_heap
kvsim run experiments/gc_heap/config.yaml --force
kvsim plot "$R"
python experiments/gc_heap/heap_numbers.py "$R"
