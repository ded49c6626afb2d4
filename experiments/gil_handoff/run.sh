#!/bin/sh
# The GIL's own hand-offs against the queue wake-up the model drew them from before 7 Dec
# 2026, and the probe's GIL hold measured the new way and the old, side by side in one
# process (issue 40). About 10 s; run it three times, quiet, to see the minute's spread.
set -e
cd "$(dirname "$0")/../.."
uptime
for i in 1 2 3; do
    PYTHONPATH=. python experiments/gil_handoff/handoff.py
done
uptime
