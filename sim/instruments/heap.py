"""A production-like heap: the live objects of a serving process, in the point's process.

What a collection costs depends on the heap it runs in. A young collection scans
the young containers only, but a full (generation-2) collection scans every
tracked container in the process, and CPython starts one when the objects that
survived into the oldest generation since the last one exceed a quarter of those
that live there (``long_lived_pending > long_lived_total / 4``). A serving
engine has millions of containers alive (request states, scheduler queues,
configs, modules); kvsim's child process has a few hundred thousand. So in a
small process full collections are frequent and short; in a large unfrozen one
they are rare and long; and an engine that calls ``gc.freeze()`` after start-up
(as vLLM and others do) takes its start-up heap out of every collection.

:func:`live_heap` builds ``engine.heap.objects`` containers before anything is
measured, in a serving engine's shapes: per request-like unit one class
instance, one dict, one list and one tuple of containers (tuples of atoms would
be untracked by the collector and cost it nothing), linked to the previous unit
so the graph is connected, as real object graphs are. Then it collects (the heap
settles in the oldest generation, where full collections scan it; done for every
point, heap or not, so that no point pays a fresh process's first full
collection) and, with ``engine.heap.frozen``, freezes. The engine's start-up (torch,
its index buffers: ``sim.point.addons.StartsUp``) runs before, as a serving
engine's initialisation does before it freezes: its ~137,000 objects settle with the
rest instead of arriving mid-load, where they made a full collection of ~100 ms fall
inside engine_interference's four-worker scalar points (docs/model-mode.md). At the
end the heap is dropped and a freeze it made is undone, so that nothing outlives the
point.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sim import columns

if TYPE_CHECKING:
    from sim.config.engine import HeapConfig

__all__ = ["HEAP_SUMMARY", "OBJECTS_PER_UNIT", "HeapInfo", "build_heap", "live_heap"]

#: Tracked containers per request-like unit: an instance, a dict, a list, a tuple.
OBJECTS_PER_UNIT = 4

#: Summary columns: containers built, objects frozen, tracked objects in the
#: process while measuring, and the build time (not part of any measurement).
HEAP_SUMMARY = columns.names(columns.HEAP)


class _RequestState:
    """A stand-in for an engine's per-request object (one tracked container)."""

    __slots__ = ("links", "meta", columns.REQUEST_ID.name, "tokens")

    def __init__(self, request_id: int, meta: dict[str, Any], tokens: list[Any], links: Any):
        self.request_id = request_id
        self.meta = meta
        self.tokens = tokens
        self.links = links


@dataclass(frozen=True)
class HeapInfo:
    objects: int
    frozen_objects: int
    tracked_objects: int
    build_s: float

    def summary(self) -> dict[str, float]:
        return dict(
            zip(
                HEAP_SUMMARY,
                (self.objects, self.frozen_objects, self.tracked_objects, self.build_s),
                strict=True,
            )
        )


def build_heap(objects: int) -> list[Any]:
    """About ``objects`` tracked containers (rounded down to whole units), kept alive by
    the returned list (one more container)."""
    units: list[Any] = []
    prev: Any = None
    enabled = gc.isenabled()
    gc.disable()  # else the growing heap is scanned over and over while it is built
    try:
        for i in range(objects // OBJECTS_PER_UNIT):
            meta = {"id": i, "prio": i & 7, "prev": prev}
            tokens = [i, i + 1, i + 2, "s"]
            links = (meta, tokens)
            prev = _RequestState(i, meta, tokens, links)
            units.append(prev)
    finally:
        if enabled:
            gc.enable()
    return units


@contextmanager
def live_heap(cfg: HeapConfig) -> Iterator[HeapInfo]:
    """The heap ``cfg`` asks for, alive for the block; a freeze made here is undone after."""
    t0 = time.perf_counter()
    heap = build_heap(cfg.objects) if cfg.objects else []
    froze = False
    # Always: the heap settles in the oldest generation, as in a long-running process. A
    # fresh process has no long-lived count yet, so CPython would run its first full
    # collection after its first ten generation-1 ones, inside the first requests: a
    # start-up event, not the steady state a serving engine is measured in.
    gc.collect()
    if cfg.frozen:  # with no objects built, this freezes kvsim's own start-up heap
        froze = gc.get_freeze_count() == 0
        gc.freeze()
    build_s = time.perf_counter() - t0
    info = HeapInfo(
        objects=len(heap) * OBJECTS_PER_UNIT,
        frozen_objects=gc.get_freeze_count(),
        tracked_objects=_tracked(),
        build_s=build_s,
    )
    try:
        yield info
    finally:
        if froze:
            gc.unfreeze()
        del heap


def _tracked() -> int:
    """Tracked containers in the process: every generation plus the permanent one."""
    return len(gc.get_objects()) + gc.get_freeze_count()
