"""The sentinel probe: how late a Python thread gets to run, and how busy the GIL was.

One Python thread sleeps until a target instant, then records how late it runs
(docs/design.md §1.3): after a GIL-free sleep a thread must take the GIL back, so its
lateness is the stall that any co-resident Python loop (the engine's) suffers —
up to a switch interval behind one busy thread, longer behind several, since
the hand-off is not FIFO.

The same lateness, read at instants chosen independently of the GIL's state,
estimates the fraction of time the GIL was held by someone else: an instant at
which the GIL was free costs the probe only its wake-up latency, an instant at
which it was held costs the rest of the hold. Targets are jittered (±50% around
the mean interval) so that they cannot lock onto a periodic workload. The probe
sees the GIL's wall-clock occupancy, including time a holder spends preempted by
the OS; docs/gil-method.md lists this and the other error sources.

:class:`ProbeAddOn` runs the probe beside a point and sets its estimate beside
the GIL meter's: the sum of per-request holds (a :class:`~sim.instruments.gilmeter.HoldLedger`),
the engine loop's step holds (same ledger, when the engine runs) and the
simulation thread's own CPU time, all over the same window, with the
time the process's threads waited for a core (a thread preempted while holding
the GIL keeps it without using CPU time, which the meter cannot see).
"""

from __future__ import annotations

import ctypes
import random
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from sim.instruments.gilmeter import ENGINE, HoldLedger, close_ledger, open_ledger
from sim.instruments.schedstat import run_delay_ns as own_run_delay_ns
from sim.point.probe_summary import probe_summary
from sim.stats import percentiles

if TYPE_CHECKING:
    from sim.config.experiment import ExperimentConfig

__all__ = [
    "ProbeAddOn",
    "SentinelProbe",
    "busy_fraction",
    "core_late_fraction",
    "probe_addon",
    "run_delay_ns",
]

_PR_SET_TIMERSLACK = 29


def _tighten_timer_slack() -> None:
    """Ask Linux to wake this thread within ~1 ns of its deadline instead of the default
    50 µs, so that the probe's lateness on an idle GIL stays far below ``tau``. Best effort."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None).prctl(_PR_SET_TIMERSLACK, ctypes.c_ulong(1), 0, 0, 0)
    except (OSError, AttributeError):
        return


def run_delay_ns(native_id: int) -> int | None:
    """Time thread ``native_id`` of this process has spent runnable but off-core (Linux)."""
    try:
        with open(f"/proc/self/task/{native_id}/schedstat", "rb") as fh:
            return int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


def busy_fraction(late_ns: list[int], tau_ns: int) -> float:
    """Fraction of target instants at which the GIL was busy: those late by more than tau.

    A target in a hold costs the probe the rest of the hold; one on a free GIL
    costs only its wake-up latency (tens of µs), which ``tau`` must exceed.
    """
    if not late_ns:
        return float("nan")
    return sum(w > tau_ns for w in late_ns) / len(late_ns)


def core_late_fraction(late_ns: list[int], offcore_ns: list[int], tau_ns: int) -> float:
    """Fraction of targets counted busy although the probe's lateness was mostly its own
    wait for a core: on a busy machine the GIL may have been free at those instants."""
    if not late_ns:
        return float("nan")
    n = sum(w > tau_ns and w - c <= tau_ns for w, c in zip(late_ns, offcore_ns, strict=True))
    return n / len(late_ns)


class SentinelProbe:
    """A thread that wants to run at jittered targets ``interval_s`` apart on average.

    ``wake_late_ns`` has one lateness per wake-up (the stall samples);
    ``target_late_ns`` has one per target instant, including targets that passed
    while the thread was still waiting to run (the busy samples: such a target's
    lateness is how much longer the thread waited after it); ``target_offcore_ns``
    is, for each target, the time the thread spent runnable but off-core (waiting
    for a CPU, not the GIL) during the wake-up that served it (0 off Linux);
    ``held_ns`` has, per wake-up, the time from it to the next sleep: the GIL held
    throughout (the probe runs Python). After a wake-up that found the GIL busy it is
    two to three times as long as on a free one (docs/model-mode.md, "The probe's
    hold"), and those are the holds that delay a load thread.
    """

    def __init__(self, interval_s: float, seed: int = 0, name: str = "kvsim-probe") -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self._interval_s = interval_s
        self._rng = random.Random(seed)
        self._name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.wake_late_ns: list[int] = []
        self.target_late_ns: list[int] = []
        self.target_offcore_ns: list[int] = []
        self.held_ns: list[int] = []

    def mean_hold_after_late_ns(self, late_ns: int) -> float | None:
        """The mean of ``held_ns`` over the wake-ups later than ``late_ns`` (those that
        found the GIL busy); None when there was none."""
        held = [h for w, h in zip(self.wake_late_ns, self.held_ns, strict=False) if w > late_ns]
        return sum(held) / len(held) if held else None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("probe already started")
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    @property
    def ident(self) -> int:
        """The running probe thread's ``threading`` ident (its CPU clock's key)."""
        if self._thread is None or self._thread.ident is None:
            raise RuntimeError("probe not started")
        return self._thread.ident

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop and join the thread; idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _gap_ns(self) -> int:
        return int(self._interval_s * 1e9 * self._rng.uniform(0.5, 1.5))

    def _loop(self) -> None:
        _tighten_timer_slack()
        own = own_run_delay_ns  # kept GIL: a read that handed it over cost a hand-off a wake
        clock = time.perf_counter_ns
        wakes = self.wake_late_ns
        targets = self.target_late_ns
        offcore = self.target_offcore_ns
        held = self.held_ns
        rq_before = own() or 0
        now = clock()
        target = now + self._gap_ns()
        woke = False
        while not self._stop.is_set():
            t = clock()
            if woke:  # the last wake-up's hold: from it to this sleep
                held.append(t - now)
            delay = target - t
            if delay > 0:
                time.sleep(delay / 1e9)
            now = clock()
            woke = True
            rq = own() or 0
            core_wait, rq_before = rq - rq_before, rq
            wakes.append(now - target)
            targets.append(now - target)
            offcore.append(core_wait)
            target += self._gap_ns()
            while target <= now:  # passed while this thread waited for the GIL (or a core)
                targets.append(now - target)
                offcore.append(core_wait)
                target += self._gap_ns()


class ProbeAddOn:
    """AddOn: stall percentiles and the GIL-busy cross-check of one point.

    Summary columns: ``stall_p50_ms``, ``stall_p99_ms``, ``stall_max_ms`` (lateness
    of each wake-up); ``gil_busy_probe`` (the probe's estimate) and
    ``gil_busy_probe_core`` (the part of it that may be the probe's own wait for a
    core rather than a busy GIL: the truth lies between the two); ``gil_busy_requests``
    (sum of per-request holds over the window); ``gil_busy_harness`` (the simulation
    thread's CPU time over the window — it holds the GIL whenever it runs);
    ``gil_busy_engine`` (sum of the engine loop's step holds over the window, NaN
    when no engine ran); ``gil_busy_agreement`` = probe / (requests + harness +
    engine), 1.0 when they agree;
    ``core_wait_frac``: time the threads other than the probe spent runnable but
    waiting for a core, over the window — an upper bound on the GIL occupancy that
    CPU-time holds miss because a holder was preempted (NaN off Linux).
    """

    def __init__(self, interval_ms: float, threshold_ms: float, seed: int = 0) -> None:
        self._probe = SentinelProbe(interval_ms / 1e3, seed)
        self._tau_ns = round(threshold_ms * 1e6)
        self._ledger: HoldLedger | None = None
        self._t0_ns = self._t1_ns = 0
        self._sim_cpu0_ns = self._sim_cpu1_ns = 0
        self._rq0: dict[int, int] = {}
        self._core_wait_ns: int | None = None

    def attach(self, env: object) -> None:  # either clock: the probe runs on its own thread
        self._ledger = open_ledger()
        self._rq0 = {}
        for t in threading.enumerate():  # the probe's own thread starts below
            rq = run_delay_ns(t.native_id) if t.native_id is not None else None
            if rq is not None:
                self._rq0[t.native_id] = rq
        self._sim_cpu0_ns = time.thread_time_ns()  # attach and detach run on the sim thread
        self._t0_ns = time.perf_counter_ns()
        self._probe.start()

    def detach(self) -> None:
        self._t1_ns = time.perf_counter_ns()
        self._sim_cpu1_ns = time.thread_time_ns()
        deltas = [rq - self._rq0[tid] for tid in self._rq0 if (rq := run_delay_ns(tid)) is not None]
        self._core_wait_ns = sum(deltas) if deltas else None
        self._probe.stop()
        if self._ledger is not None:
            close_ledger(self._ledger)

    def summary(self) -> dict[str, float]:
        window_ns = self._t1_ns - self._t0_ns
        nan = float("nan")
        stall = [w / 1e6 for w in self._probe.wake_late_ns]
        s50, s99 = percentiles(stall, [50, 99])
        probe = busy_fraction(self._probe.target_late_ns, self._tau_ns)
        probe_core = core_late_fraction(
            self._probe.target_late_ns, self._probe.target_offcore_ns, self._tau_ns
        )
        requests = harness = engine = core_wait = nan
        if window_ns > 0 and self._ledger is not None:
            requests = self._ledger.total_ns / window_ns
            harness = (self._sim_cpu1_ns - self._sim_cpu0_ns) / window_ns
            if self._ledger.jobs_of(ENGINE):
                engine = self._ledger.total_of(ENGINE) / window_ns
            if self._core_wait_ns is not None:
                core_wait = self._core_wait_ns / window_ns
        stall_max = max(stall) if stall else nan
        busy_ns = self._probe.mean_hold_after_late_ns(self._tau_ns)
        hold_busy = busy_ns / 1e3 if busy_ns is not None else nan
        return probe_summary(
            (s50, s99, stall_max),
            probe,
            probe_core,
            requests,
            harness,
            engine,
            core_wait,
            hold_busy,
        )

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {}


def probe_addon(cfg: ExperimentConfig) -> ProbeAddOn | None:
    """The add-on factory: a ProbeAddOn unless ``gil.probe`` is off."""
    if not cfg.gil.probe:
        return None
    return ProbeAddOn(cfg.gil.probe_interval_ms, cfg.gil.probe_threshold_ms, cfg.seed)
