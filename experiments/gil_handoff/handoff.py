"""How long the GIL takes to change hands here, beside the queue wake-up that stood for it.

Until 7 Dec 2026 the model drew every GIL hand-off from ``wake_samples_ms`` (a queue
ping-pong) and charged the probe the process's CPU per wake-up. ``kvsim calibrate`` now
times the hand-offs themselves (sim/calibration/measure_handoff.py says how) and the
probe's own thread. This prints both, measured side by side in one process, so that
their ratio does not depend on the minute: a hand-off's percentiles in µs, and the
probe's hold the old way (the process's CPU per wake-up) and the new.

    PYTHONPATH=. python experiments/gil_handoff/handoff.py
"""

from __future__ import annotations

import statistics
import time

from sim.calibration.measure_harness import measure_conditions
from sim.instruments.probe import SentinelProbe

_ROWS = {
    "wake": "a queue wake-up (the model's hand-off before)",
    "gil_handoff": "GIL: a release to the waiter's first bytecode",
    "gil_forced": "GIL: forced, the holder's drop to the waiter's first",
    "gil_back": "GIL: FORCE_SWITCHING's return to the thread forced off",
}


def process_cpu_per_wake_us(seconds: float = 0.3) -> float:
    """The probe's hold as calibrate measured it before: the process's CPU per wake-up."""
    probe = SentinelProbe(0.002, seed=1)
    c0 = time.process_time()
    probe.start()
    time.sleep(seconds)
    probe.stop()
    return (time.process_time() - c0) * 1e6 / max(1, len(probe.wake_late_ns))


def main() -> None:
    cond = measure_conditions()
    old_probe = process_cpu_per_wake_us()  # after the imports, as calibrate measured it
    print(f"{'µs':56} {'p10':>6} {'p50':>6} {'p90':>6} {'mean':>6} {'n':>4}")
    for key, what in _ROWS.items():
        xs = [x * 1e3 for x in cond[f"{key}_samples_ms"]]
        d = statistics.quantiles(xs, n=10)
        mid, mean = statistics.median(xs), statistics.fmean(xs)
        print(f"{what:56} {d[0]:6.1f} {mid:6.1f} {d[8]:6.1f} {mean:6.1f} {len(xs):4}")
    print(
        f"probe's GIL hold per wake-up: {cond['probe_hold_ms'] * 1e3:.1f} µs (its thread's CPU "
        f"less a bare sleeper's); the process's CPU per wake-up, as before: {old_probe:.1f} µs"
    )


if __name__ == "__main__":
    main()
