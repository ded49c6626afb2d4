"""How ``kvsim bench connectors`` times a request: GIL hold, the GC inside it, the GC after it.

Two measurements per variant:

- **per call** (:func:`measure_once`): one request under the simulator's GIL
  meter (``sim.instruments.gilmeter.measure``): hold (thread CPU minus declared GIL-free
  CPU), wall, declared GIL-free CPU; with ``gc.callbacks`` timing every
  collection, the GC CPU inside the request (part of the hold) and its **GC
  debt**: every collection after the request ended plus a generation-0
  collection run with the result still alive — the scan of new containers the
  request left for whoever allocates next.
- **sustained** (:func:`measure_sustained`): ``count`` requests back to back in
  one timed region, each result kept alive while the next request runs (a
  consumer one request behind, as a transfer would be) and a container
  allocated right after each request with its result alive (what any consumer
  does next; it fires a pending young collection, as in a live process). The
  thread CPU minus declared GIL-free CPU, divided by ``count``, is the hold per
  request with every collection the requests cause included, wherever it
  fell: debt cannot hide there.

Before each measurement the heap is collected and then frozen
(``gc.freeze()``), so that each one starts from empty young generations and a
collection inside it scans only what the bench and the requests created (a
lower bound of what it would scan in a large process). :func:`gc_harness`
undoes the freeze at the end.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from connectors.base import free_time
from sim.instruments.gilmeter import measure

__all__ = ["METRICS", "GcClock", "gc_harness", "measure_once", "measure_sustained"]

#: Per-call samples, in ms: hold, wall, declared GIL-free CPU, GC inside, GC debt.
METRICS = ("hold", "wall", "free", "gc_in", "debt")


class GcClock:
    """``gc.callbacks`` entry: the wall start and thread CPU time of every collection."""

    def __init__(self) -> None:
        self.runs: list[tuple[int, int]] = []
        self._t0 = (0, 0)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = (time.perf_counter_ns(), time.thread_time_ns())
        else:
            self.runs.append((self._t0[0], time.thread_time_ns() - self._t0[1]))


@contextmanager
def gc_harness() -> Iterator[GcClock]:
    """A GcClock installed for the bench; the freeze undone and the callback removed after."""
    clock = GcClock()
    frozen_before = gc.get_freeze_count()
    gc.callbacks.append(clock)
    try:
        yield clock
    finally:
        gc.callbacks.remove(clock)
        if frozen_before == 0:
            gc.unfreeze()


def _fresh_heap(clock: GcClock) -> None:
    gc.collect()
    gc.freeze()
    clock.runs.clear()


def measure_once(fn: Callable[[], Any], samples: dict[str, list[float]], clock: GcClock) -> None:
    """One request: its timing, the GC it ran inside, and the GC it left behind."""
    _fresh_heap(clock)
    result, error, t = measure(fn)
    if error is not None:
        raise RuntimeError(f"{type(error).__name__}: {error}") from error
    gc.collect(0)
    del result
    gc_in = sum(cpu for start, cpu in clock.runs if start < t.end_ns)
    gc_after = sum(cpu for start, cpu in clock.runs if start >= t.end_ns)
    for key, ns in zip(
        METRICS, (t.hold_ns, t.wall_ns, t.free_cpu_ns, gc_in, gc_after), strict=True
    ):
        samples[key].append(ns / 1e6)


def measure_sustained(
    fn: Callable[[int], Any], count: int, clock: GcClock
) -> tuple[float, float, float]:
    """``(hold_ms, gc_ms, collections)`` per request over ``count`` requests back to back
    (request i is ``fn(i)``); see the module docstring for what the consumer does between
    them. The collection count is what ``kvsim run`` records per request as
    ``gc_gen0 + gc_gen1 + gc_gen2``: a check, free of timing, that the bench and the run
    see the same allocations (tests/e2e/test_gc_agreement.py)."""
    _fresh_heap(clock)
    behind: Any = None
    c0, f0 = time.thread_time_ns(), free_time.cpu_ns
    try:
        for i in range(count):
            result = fn(i)
            consumer = [result]  # the next allocation, with the result alive
            behind = consumer  # the previous request's result is dropped only now
            del result, consumer
        cpu = time.thread_time_ns() - c0
        free = free_time.cpu_ns - f0
    except Exception as exc:
        raise RuntimeError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        del behind
    gc_ns = sum(c for _start, c in clock.runs)
    return (cpu - free) / count / 1e6, gc_ns / count / 1e6, len(clock.runs) / count
