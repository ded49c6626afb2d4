#!/bin/sh
# Study (g), the py-spy GIL audit against the meter: rerun it and print what the README
# quotes. About 3 minutes on a 2-core machine; run it on a quiet one (see README).
# Results: results/experiments/gil_audit{,_synthetic,_hashplug}/
set -e
cd "$(dirname "$0")/../.."
export COLUMNS="${COLUMNS:-140}"
R=results/experiments/gil_audit
M="--metric gil_hold_mean_ms --metric audit_vs_meter --metric audit_vs_meter_oncore \
   --metric audit_offcore_frac --metric audit_busy_harness --metric audit_pyspy_cpu_frac"
# honest variants: scalar and numpy, 1 and 4 load threads
kvsim run experiments/gil_audit/config.yaml --force -q
# the synthetic spin (pure Python, 5 ms a request): the meter's reference case
kvsim run experiments/gil_audit/config.yaml --force -q --out "${R}_synthetic" \
    --set connector.variant=synthetic --set 'connector.options={hold_ms: 5.0, free_ms: 0.0}'
# a plug-in, installed through the kvsim.connectors entry point, that hashes 16 MiB a
# request (hashlib releases the GIL) without declaring it: the audit must flag it
PYTHONPATH="tests/fixtures/hashplug${PYTHONPATH:+:$PYTHONPATH}" \
    kvsim run experiments/gil_audit/config.yaml --force --out "${R}_hashplug" \
    --set connector.variant=hashplug --set 'connector.options={hold_ms: 2.0, hash_mib: 16.0}' \
    | grep -E "audit|holds less" || true
for r in "$R" "${R}_synthetic" "${R}_hashplug"; do
    # shellcheck disable=SC2086
    kvsim compare "$r" $M
done
