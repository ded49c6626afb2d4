"""The sentinel probe: stall lateness, the GIL-busy estimate and its cross-check."""

from __future__ import annotations

import math
import statistics
import threading
import time

import pytest

from sim import columns
from sim.config import parse_config
from sim.instruments import gilmeter
from sim.instruments.probe import (
    ProbeAddOn,
    SentinelProbe,
    busy_fraction,
    core_late_fraction,
    probe_addon,
    run_delay_ns,
)
from sim.point.metrics import SUMMARY_METRICS
from sim.runtime.env import HybridEnvironment
from sim.runtime.point import run_point


def test_busy_fraction_counts_targets_later_than_tau() -> None:
    assert busy_fraction([10, 20, 300, 5_000_000], 100) == 0.5
    assert busy_fraction([100], 100) == 0.0  # exactly tau is free
    assert math.isnan(busy_fraction([], 100))  # no samples, no estimate


def test_core_late_fraction_counts_lateness_that_was_mostly_core_wait() -> None:
    late = [10, 300, 300, 5_000_000]
    offcore = [0, 250, 50, 0]  # the 2nd was late only because it waited for a core
    assert core_late_fraction(late, offcore, 100) == 0.25
    assert busy_fraction(late, 100) - core_late_fraction(late, offcore, 100) == 0.5
    assert math.isnan(core_late_fraction([], [], 100))


def test_probe_lifecycle() -> None:
    p = SentinelProbe(0.001)
    p.stop()  # stopping an unstarted probe is harmless
    p = SentinelProbe(0.001)
    p.start()
    with pytest.raises(RuntimeError):
        p.start()
    time.sleep(0.02)
    p.stop()
    p.stop()
    assert p.wake_late_ns and len(p.target_late_ns) >= len(p.wake_late_ns)
    with pytest.raises(ValueError):
        SentinelProbe(0.0)


def _probe_beside(spinner: bool, seconds: float = 0.3) -> SentinelProbe:
    """Run a probe for ``seconds``, alone or beside a thread that never lets go of the GIL."""
    stop = threading.Event()

    def spin() -> None:
        n = 0
        while not stop.is_set():
            n += 1

    th = threading.Thread(target=spin) if spinner else None
    if th is not None:
        th.start()
    probe = SentinelProbe(0.002, seed=1)
    probe.start()
    time.sleep(seconds)
    probe.stop()
    stop.set()
    if th is not None:
        th.join()
    return probe


def _gil_late(probe: SentinelProbe, tau: int = 100_000) -> float:
    """The probe's GIL-late fraction: late targets, less those late for a core."""
    return busy_fraction(probe.target_late_ns, tau) - core_late_fraction(
        probe.target_late_ns, probe.target_offcore_ns, tau
    )


@pytest.mark.realthreads
def test_probe_tells_an_idle_gil_from_a_busy_one() -> None:
    tau = 100_000
    # An idle probe is late too, for reasons that are the machine's, not the GIL's: a core
    # taken by other work (counted apart, from the scheduler's run delay) and, on a VM, a
    # timer or wake-up delivered late, which no run delay records. On CI's VM three idle
    # 0.3 s windows all read 0.37 or more; beside a CPU hog one read 0.44. What must hold
    # on any machine is that the probe tells the two apart: a thread that never lets go of
    # the GIL makes nearly every target late, far more than the idle machine's floor. The
    # idle side takes the best of five windows (a burst of foreign load passes).
    idle = min((_probe_beside(spinner=False) for _ in range(5)), key=_gil_late)
    busy = _probe_beside(spinner=True)
    assert busy_fraction(busy.target_late_ns, tau) > 0.8
    assert _gil_late(busy) - _gil_late(idle) > 0.4, (_gil_late(busy), _gil_late(idle))
    # behind a thread that never sleeps, the probe waits about a switch interval per wake
    assert statistics.median(busy.wake_late_ns) > statistics.median(idle.wake_late_ns)
    # and targets pass while it waits: they count as busy samples
    assert len(busy.target_late_ns) > len(busy.wake_late_ns)


@pytest.mark.realthreads
def test_the_probe_notes_its_own_hold_per_wake_up() -> None:
    """One hold per wake-up (the last one's comes with the next sleep, so it may be
    missing): the time from the wake-up to the next sleep, positive, and far below the
    gaps between wake-ups on an idle GIL; behind a thread that never lets go it holds
    the GIL for some microseconds at each wake-up, and the add-on's column says how long."""
    idle = _probe_beside(spinner=False)
    assert len(idle.wake_late_ns) - 1 <= len(idle.held_ns) <= len(idle.wake_late_ns)
    assert all(h > 0 for h in idle.held_ns)
    assert statistics.median(idle.held_ns) < 1_000_000  # the gaps are 1-3 ms
    busy = _probe_beside(spinner=True)
    assert busy.held_ns and all(h > 0 for h in busy.held_ns)


@pytest.mark.realthreads
def test_the_busy_hold_column_averages_the_holds_after_late_wake_ups() -> None:
    addon = ProbeAddOn(interval_ms=2.0, threshold_ms=0.1)
    addon.attach(HybridEnvironment())
    stop = time.perf_counter() + 0.3
    while time.perf_counter() < stop:  # the GIL held, so that wake-ups come late
        pass
    addon.detach()
    probe = addon._probe
    late = [h for w, h in zip(probe.wake_late_ns, probe.held_ns, strict=False) if w > 100_000]
    got = addon.summary()[columns.PROBE_HOLD_BUSY_US.name]
    assert late, "no wake-up found the GIL busy beside a thread that never let it go"
    assert got == pytest.approx(statistics.fmean(late) / 1e3)
    assert 0 < got < 5_000  # µs: it holds the GIL at a wake-up, it does not keep it


def test_the_busy_hold_column_is_nan_without_a_late_wake_up() -> None:
    addon = ProbeAddOn(interval_ms=2.0, threshold_ms=1e6)  # no wake-up is ever that late
    addon.attach(HybridEnvironment())
    time.sleep(0.02)
    addon.detach()
    assert math.isnan(addon.summary()[columns.PROBE_HOLD_BUSY_US.name])


def test_factory_follows_the_config(write_config) -> None:
    _, (on,) = parse_config(write_config())
    _, (off,) = parse_config(write_config({"gil": {"probe": False}}, name="off.yaml"))
    assert isinstance(probe_addon(on.config), ProbeAddOn)
    assert probe_addon(off.config) is None


def test_addon_columns_are_summary_metrics_and_ledger_is_closed() -> None:
    addon = ProbeAddOn(interval_ms=1.0, threshold_ms=0.1)
    addon.attach(HybridEnvironment())
    assert len(gilmeter._open_ledgers) == 1
    gilmeter.measure(lambda: sum(range(10_000)))
    time.sleep(0.01)
    addon.detach()
    assert gilmeter._open_ledgers == ()
    summary = addon.summary()
    assert set(summary) <= set(SUMMARY_METRICS)
    assert summary["gil_busy_requests"] > 0
    assert summary["stall_p50_ms"] <= summary["stall_max_ms"]
    assert addon.tables() == {}
    assert math.isnan(summary["gil_busy_engine"])  # no engine ran


def test_engine_holds_are_accounted_in_the_agreement() -> None:
    """The probe sees the engine thread hold the GIL, so the accounted side must too."""
    addon = ProbeAddOn(interval_ms=1.0, threshold_ms=0.1)
    addon.attach(HybridEnvironment())
    gilmeter.measure(lambda: sum(range(10_000)))
    gilmeter.measure(lambda: sum(range(200_000)), source=gilmeter.ENGINE)
    time.sleep(0.01)
    addon.detach()
    s = addon.summary()
    assert s["gil_busy_engine"] > 0 and s["gil_busy_requests"] > 0
    accounted = s["gil_busy_requests"] + s["gil_busy_harness"] + s["gil_busy_engine"]
    assert s["gil_busy_agreement"] == pytest.approx(s["gil_busy_probe"] / accounted)


def test_run_delay_of_this_thread() -> None:
    rq = run_delay_ns(threading.get_native_id())
    if rq is not None:  # Linux with schedstats
        assert rq >= 0
    assert run_delay_ns(-1) is None


def _steady(write_config, attempt: int):
    """1 worker, one client at a time: 5 ms hold then 5 ms GIL-free, ~50 % busy."""
    path = write_config(
        {
            "seed": attempt,
            "workload": {"requests": 120, "arrival": {"kind": "closed", "clients": 1}},
            "connector": {
                "variant": "synthetic",
                "workers": 1,
                "options": {"hold_ms": 5.0, "free_ms": 5.0},
            },
        },
        name=f"steady{attempt}.yaml",
    )
    _, (point,) = parse_config(path)
    return run_point(point)


@pytest.mark.realthreads
def test_probe_agrees_with_the_meter_on_a_steady_workload(write_config) -> None:
    """Probe busy within 15 % of (per-request holds + simulation thread) / window.

    The probe sees the GIL's wall-clock occupancy; the meter counts CPU time, which
    stops while the OS preempts a holder. On a machine shared with other test runs
    the two part for that reason alone, so up to three attempts are made; when none
    agrees within 15 %, every attempt must still fall within the band that the
    measured off-core time explains: the meter's side may miss ``core_wait_frac``
    (or the requests' waits, which with one worker are time ready to run but
    off-core or behind the probe), the probe's side may add ``gil_busy_probe_core``
    and, while the GIL is free, the machine's own wake-up floor: the GIL-late fraction
    of the same probe run idle just before and just after, the larger (on CI's VM 0.37 —
    timers delivered late, which no run delay records; it read the steady load as
    0.72–0.82 busy against 0.41–0.46 accounted). A probe that is simply wrong fails both.
    """
    attempts = []
    for attempt in range(3):
        before = _gil_late(_probe_beside(spinner=False))
        res = _steady(write_config, attempt)
        # the floor of the machine around the run: measured on both sides of it, as a
        # shared machine's load moves within a second (CI once read 0.06 just before a run
        # that needed 0.24 to be explained, where its first attempt had read 0.41)
        floor = max(before, _gil_late(_probe_beside(spinner=False)))
        s = res.summary
        assert s["ok"] == 120
        accounted = s["gil_busy_requests"] + s["gil_busy_harness"]
        assert 0 < s["gil_busy_requests"] < 0.6  # 5 of every ~10 ms, less on a busy machine
        # The harness costs far less than a 5 ms request — but each of its blocking waits
        # costs tens of µs of CPU on a loaded VM, so no tighter bound holds whatever the load.
        assert 0 < s["gil_busy_harness"] < 0.5 * s["gil_busy_requests"]
        window_s = sum(r.gil_hold_ms for r in res.records) / 1e3 / s["gil_busy_requests"]
        waits = sum(r.gil_wait_ms for r in res.records) / 1e3 / window_s
        core = s["core_wait_frac"]
        off_core = waits if math.isnan(core) else max(core, waits)
        attempts.append((s["gil_busy_probe"], s["gil_busy_probe_core"], accounted, off_core, floor))
        if abs(s["gil_busy_agreement"] - 1.0) <= 0.15:
            return
    # the machine's floor over the whole test: the largest idle window read around any
    # attempt (CI once read 0.21 around one attempt and 0.42 and 0.56 around the others)
    worst_floor = max(a[4] for a in attempts)
    for probe, probe_core, accounted, off_core, _floor in attempts:
        floor = worst_floor
        assert probe >= 0.85 * accounted, attempts
        free = max(0.0, 1.0 - accounted)
        assert probe - probe_core <= 1.15 * (accounted + off_core) + floor * free, attempts
