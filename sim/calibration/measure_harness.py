"""The harness's part of ``kvsim calibrate``: what the simulation thread and the machine add.

The simulation thread's CPU per request (a real no-op point, with the probe's
ledger) and the machine's conditions: thread wake-ups, timed waits, sleeps, the
probe's lateness and the background load. ``kvsim validate-model`` measures the
conditions again around each real point (a shared machine is part of them), which
is why they are a module of their own, apart from the load's requests
(sim.calibration.measure).
"""

from __future__ import annotations

import os
import queue
import statistics
import threading
import time
from collections.abc import Sequence
from typing import Any

from sim import columns
from sim.calibration.measure_handoff import gil_handoffs
from sim.config import ExperimentConfig, GilConfig, Point

__all__ = [
    "WAKE_GAP_S",
    "measure_background_load",
    "measure_conditions",
    "measure_harness",
]

#: How long the woken thread has been asleep in the wake-up measurement: a load thread
#: idles between requests and a GIL waiter for up to a switch interval, not for 0.2 ms.
WAKE_GAP_S = 0.005
#: The block size of the harness's no-op point (any: it moves no data).
BLOCK_SIZE = 128
#: A probe wake-up this late found the GIL busy: the default ``gil.probe_threshold_ms``.
BUSY_LATE_NS = round(GilConfig.model_fields["probe_threshold_ms"].default * 1e6)


def _median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def _wake_ms(n: int = 200) -> list[float]:
    """One thread waking another through a queue (half a ping-pong round trip), after the
    woken one slept :data:`WAKE_GAP_S`."""
    ping: queue.SimpleQueue[int] = queue.SimpleQueue()
    pong: queue.SimpleQueue[int] = queue.SimpleQueue()

    def echo() -> None:
        while (x := ping.get()) >= 0:
            pong.put(x)

    t = threading.Thread(target=echo, daemon=True)
    t.start()
    trips = []
    for i in range(n):
        time.sleep(WAKE_GAP_S)  # the echo thread blocks again, as an idle worker does
        t0 = time.perf_counter_ns()
        ping.put(i)
        pong.get()
        trips.append((time.perf_counter_ns() - t0) / 2e6)
    ping.put(-1)
    t.join(5)
    return trips


def _timer_late_ms(n: int = 100, wait_s: float = 0.0005) -> list[float]:
    """How late a timed wait on an empty inbox returns (the simulation thread's timers)."""
    from sim.runtime.inbox import Inbox  # the runtime: not with `kvsim calibrate --help`

    inbox: Inbox[int] = Inbox()
    late = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        inbox.wait(wait_s)
        late.append((time.perf_counter_ns() - t0) / 1e6 - wait_s * 1e3)
    return [max(0.0, x) for x in late]


def _sleep_late_ms(n: int = 100, wait_s: float = 0.001) -> list[float]:
    late = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        time.sleep(wait_s)
        late.append((time.perf_counter_ns() - t0) / 1e6 - wait_s * 1e3)
    return [max(0.0, x) for x in late]


def _probe_costs(seconds: float = 0.3) -> tuple[list[float], float]:
    """(latenesses, GIL hold per wake-up) of the sentinel probe on an idle GIL, in ms.

    The hold is the probe thread's CPU per wake-up less that of a bare thread sleeping
    the same interval beside it, over the same window (the OS's part of a sleep and a
    wake, spent without the GIL; side by side, the two move together: 16-27 µs over
    eight windows where one after the other gave 8-35). The process's CPU per wake-up,
    used before 7 Dec 2026, counted every other thread and the imports too: 31-74 µs,
    and 310-480 µs in a fresh process (experiments/gil_handoff)."""
    from sim.instruments.probe import SentinelProbe  # the probe: not with `kvsim calibrate --help`

    interval_s = 0.002
    stop = threading.Event()
    bare_wakes = [0]

    def bare() -> None:
        while not stop.is_set():
            time.sleep(interval_s)
            bare_wakes[0] += 1

    probe = SentinelProbe(interval_s, seed=1)
    probe.start()
    sleeper = threading.Thread(target=bare, name="kvsim-bare-sleeper", daemon=True)
    sleeper.start()
    probe_clock = time.pthread_getcpuclockid(probe.ident)
    bare_clock = time.pthread_getcpuclockid(sleeper.ident or 0)
    probe_cpu, probe_wakes = time.clock_gettime_ns(probe_clock), len(probe.wake_late_ns)
    bare_cpu, bare_count = time.clock_gettime_ns(bare_clock), bare_wakes[0]
    time.sleep(seconds)
    probe_ns = (time.clock_gettime_ns(probe_clock) - probe_cpu) / max(
        1, len(probe.wake_late_ns) - probe_wakes
    )
    bare_ns = (time.clock_gettime_ns(bare_clock) - bare_cpu) / max(1, bare_wakes[0] - bare_count)
    stop.set()
    probe.stop()
    sleeper.join(1.0)
    return [w / 1e6 for w in probe.wake_late_ns], max(0.0, (probe_ns - bare_ns) / 1e6)


def _probe_hold_busy_ms(seconds: float = 0.4, hold_s: float = 0.02) -> float | None:
    """The sentinel probe's GIL hold per wake-up that found the GIL busy, in ms: the time
    from its wake-up to its next sleep, beside a thread running pure Python in holds of
    ``hold_s`` with short sleeps between. The model's probe takes the GIL only at such
    wake-ups (sim.model.probe), and there the probe holds it two to three times as long
    as on a free GIL (64-78 µs against 22-40 in real points of 7 Dec 2026; None: no
    wake-up found the GIL busy)."""
    from connectors.address_synthetic import spin_cpu  # a variant: not with `--help`
    from sim.instruments.probe import SentinelProbe  # the probe: not with `--help`

    probe = SentinelProbe(0.002, seed=2)
    probe.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        spin_cpu(int(hold_s * 1e9))
        time.sleep(0.002)
    probe.stop()
    busy_ns = probe.mean_hold_after_late_ns(BUSY_LATE_NS)
    return busy_ns / 1e6 if busy_ns is not None else None


def _sim_cpu_per_request_ms(requests: int = 200) -> dict[str, float]:
    """The simulation thread's CPU per request, from a real no-op point with the probe."""
    # heavy: the real-mode runtime (simpy), only when a point is measured
    from sim.runtime.point import run_point

    cfg = ExperimentConfig.model_validate(
        {
            "name": "calibrate-harness",
            "model": {"regions": 4, "block_len": [4096], "block_size": BLOCK_SIZE},
            "workload": {
                "requests": requests,
                "arrival": {"kind": "poisson", "rate_rps": 200.0},
                "tokens": 8 * BLOCK_SIZE,
            },
            "connector": {"variant": "noop", "workers": 1},
            "store": {columns.LATENCY_MS.name: 0.2, "bandwidth_gb_per_s": 100.0},
        }
    )
    res = run_point(Point(0, {}, cfg))
    s = res.summary
    sim_cpu = s[columns.GIL_BUSY_HARNESS.name] * s[columns.ELAPSED_S.name] / max(1, s["requests"])
    return {
        "sim_cpu_per_request_ms": sim_cpu * 1e3,
        "noop_latency_p50_ms": s[columns.LATENCY_P50_MS.name],
        columns.NOISE_FLOOR_P50_MS.name: s[columns.NOISE_FLOOR_P50_MS.name],
        columns.NOISE_FLOOR_P99_MS.name: s[columns.NOISE_FLOOR_P99_MS.name],
    }


def measure_background_load(seconds: float = 1.0, burst_s: float = 0.005) -> float:
    """Runnable threads of other processes sharing this machine's cores, right now.

    One thread alternates bursts of pure Python (``burst_s`` of CPU time, as a load
    thread's hold) with sleeps of the same length, as kvsim's threads do, and times
    how much wall time its bursts take. Under fair sharing with ``b`` other runnable
    threads a burst runs at ``min(1, n / (1 + b))`` of a core, so the stretch ``w``
    (wall over CPU) gives ``b = n·w - 1``. A thread that sleeps often gets more than a
    CPU hog would (the scheduler favours a waking sleeper), so this is measured with
    sleeps rather than by spinning. A stretch near 1 shows no load that matters to one
    thread: 0 then (more threads of ours could still meet some; it cannot tell).
    """
    # a variant: not with `kvsim calibrate --help`
    from connectors.address_synthetic import spin_cpu

    n = os.cpu_count() or 1
    end = time.perf_counter() + seconds
    wall = cpu = 0.0
    while time.perf_counter() < end:
        w0, c0 = time.perf_counter(), time.thread_time()
        spin_cpu(int(burst_s * 1e9))
        wall += time.perf_counter() - w0
        cpu += time.thread_time() - c0
        time.sleep(burst_s)
    stretch = wall / max(cpu, 1e-9)
    if stretch <= 1.05:
        return 0.0
    return max(0.0, n * stretch - 1.0)


def measure_conditions() -> dict[str, Any]:
    """What the machine's state adds, right now: the background load and the latency
    of thread wake-ups, the GIL's hand-offs (sim.calibration.measure_handoff), timed
    waits, sleeps and the probe's wake-ups, each as a median
    (``<name>_ms``) and as sorted samples (``<name>_samples_ms``) that the model draws
    from, so that a loaded machine's long tails reach the simulated latencies."""
    probe_late, probe_hold = _probe_costs()
    samples = {
        "wake": _wake_ms(),
        "timer_late": _timer_late_ms(),
        "sleep_late": _sleep_late_ms(),
        "probe_late": probe_late,
        # a hand-off with no visit kept (a machine too loaded) is left out: the model then
        # draws it from `wake`, as for a calibration written before it was measured
        **{name: xs for name, xs in gil_handoffs().items() if xs},
    }
    out: dict[str, Any] = {
        "background_load": measure_background_load(),
        "probe_hold_ms": probe_hold,
    }
    busy_hold = _probe_hold_busy_ms()
    if busy_hold is not None:  # none found the GIL busy: the model takes the free one's
        out["probe_hold_busy_ms"] = busy_hold
    for name, xs in samples.items():
        out[f"{name}_ms"] = _median(xs)
        out[f"{name}_samples_ms"] = sorted(round(x, 6) for x in xs)
    return out


def measure_harness() -> dict[str, Any]:
    return {**_sim_cpu_per_request_ms(), **measure_conditions()}
