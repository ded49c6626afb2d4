#!/bin/sh
# Study: the calibrated modelled store against the real Mooncake store. Rerun it and print what
# the README quotes. About 4 minutes on a 2-core machine; 0.6 GB of RAM per real-store point.
# Needs the Mooncake package and libibverbs1 (scripts/install.sh). Results:
# results/experiments/store_real_vs_model/{real,model}
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-120}"
R=results/experiments/store_real_vs_model
C=experiments/store_real_vs_model/config.yaml
kvsim run "$C" --force -q
kvsim calibrate store "$R/real"
FIT=$(kvsim calibrate store "$R/real" --json)
LAT=$(echo "$FIT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["latency_ms"])')
BW=$(echo "$FIT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bandwidth_gb_per_s"])')
kvsim run "$C" --force -q --out "$R/model" --set store.kind=model \
    --set store.latency_ms="$LAT" --set store.bandwidth_gb_per_s="$BW"
python3 experiments/store_real_vs_model/report.py "$R/real" "$R/model"
