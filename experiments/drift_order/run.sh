#!/bin/sh
# Study: interleaved rounds against point-major order beside a CPU hog switched on and off.
# About 4 minutes on a 2-core machine. Prints the table the README quotes.
set -e
cd "$(dirname "$0")/../.."
python experiments/drift_order/drift.py "$@"
