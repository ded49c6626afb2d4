"""Garbage collection made visible: every collection's thread, generation and cost.

CPython runs a collection on the thread whose allocation crossed a threshold,
holding the GIL for the whole collection: every other Python thread is stopped
meanwhile, whoever's objects are being scanned. So a collection is GIL hold of
the thread it ran on, and a stall for all the others; to say where a request's
hold goes, kvsim must know which collections ran inside it.

While :func:`recording` is open, one ``gc.callbacks`` entry times each
collection with the thread's CPU clock (what the GIL meter counts) and the wall
clock (what the other threads wait), and

* adds it to per-thread running totals (:func:`thread_totals`), which the stage
  clock (``sim.instruments.stages``) reads at stage boundaries, so that a job's
  collections become its ``gc`` stage and are taken out of the stage they
  interrupted;
* files it in every open :class:`GcRecorder` by thread name and generation:
  the per-thread table (``gc.csv``) and the summary columns of a point.

One callback serves any number of recorders, so nested recordings (a point
inside a test that records too) never count a collection twice.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sim import columns

__all__ = [
    "GC_COLUMNS",
    "GENERATIONS",
    "GcAddOn",
    "GcRecorder",
    "GcTotals",
    "gc_addon",
    "gc_summary",
    "recording",
    "thread_role",
    "thread_totals",
]

GENERATIONS = 3

#: Columns of gc.csv (after the axis columns): one row per thread and generation.
GC_COLUMNS = [
    "thread",
    "role",
    "generation",
    "collections",
    "cpu_ms",
    "wall_ms",
    "max_wall_ms",
    "max_cpu_ms",
    "collected",
]


class GcTotals(threading.local):
    """Per-thread running totals of the collections this thread ran (never reset)."""

    cpu_ns: int = 0
    counts: tuple[int, int, int] = (0, 0, 0)
    #: The collection in progress on this thread: (thread CPU, wall) at its start.
    started: tuple[int, int] = (0, 0)


_totals = GcTotals()


def thread_totals() -> GcTotals:
    """This thread's totals (zero while nothing records)."""
    return _totals


@dataclass
class _Cell:
    collections: int = 0
    cpu_ns: int = 0
    wall_ns: int = 0
    max_wall_ns: int = 0
    max_cpu_ns: int = 0
    collected: int = 0


@dataclass
class GcRecorder:
    """Collections seen while open, by (thread name, generation).

    ``cells`` is only written under the GIL by the callback (which runs with the
    GIL held), so no lock is needed; read it after :func:`recording` closes.
    """

    cells: dict[tuple[str, int], _Cell] = field(default_factory=dict)

    def add(self, thread: str, generation: int, cpu_ns: int, wall_ns: int, collected: int) -> None:
        cell = self.cells.get((thread, generation))
        if cell is None:
            cell = self.cells[(thread, generation)] = _Cell()
        cell.collections += 1
        cell.cpu_ns += cpu_ns
        cell.wall_ns += wall_ns
        cell.max_wall_ns = max(cell.max_wall_ns, wall_ns)
        cell.max_cpu_ns = max(cell.max_cpu_ns, cpu_ns)
        cell.collected += collected

    def rows(self, role_of: Any = None) -> list[dict[str, Any]]:
        """gc.csv rows, sorted by thread then generation; ``role_of(name)`` names its role."""
        out = []
        for (thread, gen), c in sorted(self.cells.items()):
            out.append(
                {
                    "thread": thread,
                    "role": role_of(thread) if role_of else "",
                    "generation": gen,
                    "collections": c.collections,
                    "cpu_ms": c.cpu_ns / 1e6,
                    "wall_ms": c.wall_ns / 1e6,
                    "max_wall_ms": c.max_wall_ns / 1e6,
                    "max_cpu_ms": c.max_cpu_ns / 1e6,
                    "collected": c.collected,
                }
            )
        return out


_lock = threading.Lock()
#: Open recorders; replaced (never mutated) so the callback iterates it without a lock.
_recorders: tuple[GcRecorder, ...] = ()


def _callback(phase: str, info: dict[str, Any]) -> None:
    t = _totals
    if phase == "start":
        t.started = (time.thread_time_ns(), time.perf_counter_ns())
        return
    cpu = time.thread_time_ns() - t.started[0]
    wall = time.perf_counter_ns() - t.started[1]
    gen = int(info.get("generation", 0))
    t.cpu_ns += cpu
    counts = list(t.counts)
    counts[min(gen, GENERATIONS - 1)] += 1
    t.counts = (counts[0], counts[1], counts[2])
    if _recorders:
        name = threading.current_thread().name
        collected = int(info.get("collected", 0))
        for rec in _recorders:
            rec.add(name, gen, cpu, wall, collected)


@contextmanager
def recording() -> Iterator[GcRecorder]:
    """A recorder of every collection until the block ends; the callback is installed
    with the first open recorder and removed with the last, so nothing outlives a run."""
    global _recorders
    rec = GcRecorder()
    with _lock:
        if not _recorders:
            gc.callbacks.append(_callback)
        _recorders = (*_recorders, rec)
    try:
        yield rec
    finally:
        with _lock:
            _recorders = tuple(r for r in _recorders if r is not rec)
            if not _recorders and _callback in gc.callbacks:
                gc.callbacks.remove(_callback)


def thread_role(name: str) -> str:
    """What a thread of a point does, from the name kvsim gave it."""
    if name.startswith("kvsim-load"):
        return "load"
    if name.startswith("kvsim-engine"):
        return "engine"
    if name == "MainThread":
        return "simulation"
    if name.startswith("kvsim-"):
        return name.removeprefix("kvsim-").split("-")[0]
    return "other"


def gc_summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Summary of gc.csv rows: counts, wall time between the collector's callbacks, the
    longest collection by its CPU time, and CPU time by role (load threads, engine,
    simulation).

    The longest is taken by CPU time, not wall: the stop callback is Python code, which
    gives the GIL up at its first instruction when another thread has asked for it, so
    at a contended GIL its wall time also counts a wait during which the other threads
    ran (measured: four allocating threads at a 5 ms switch interval, collections' wall
    387 ms against 131 ms of CPU, the longest 60 ms; with forced switching off, 261
    against 247). The collection itself holds the GIL throughout, so its CPU time is
    what it certainly stalled every other thread (less than the stall when the OS
    preempted the collecting thread: under a background load)."""
    out: dict[str, float] = {
        columns.GC_COLLECTIONS.name: sum(r["collections"] for r in rows),
        columns.GC_GEN2_COLLECTIONS.name: sum(
            r["collections"] for r in rows if r["generation"] == 2
        ),
        columns.GC_WALL_MS.name: sum(r["wall_ms"] for r in rows),
        columns.GC_MAX_MS.name: max((r["max_cpu_ms"] for r in rows), default=0.0),
    }
    for role in ("load", "engine", "simulation"):
        out[f"gc_{role}_ms"] = sum(r["cpu_ms"] for r in rows if r["role"] == role)
    return out


class GcAddOn:
    """AddOn: records every collection while the load runs (attached after the engine
    baseline, so the table covers the measured load only)."""

    def __init__(self) -> None:
        self._ctx: Any = None
        self._rec: GcRecorder | None = None
        self._rows: list[dict[str, Any]] = []

    def attach(self, env: Any) -> None:
        self._ctx = recording()
        self._rec = self._ctx.__enter__()

    def detach(self) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(None, None, None)
            self._ctx = None
        if self._rec is not None:
            self._rows = self._rec.rows(thread_role)

    def summary(self) -> dict[str, float]:
        return gc_summary(self._rows)

    def tables(self) -> dict[str, list[dict[str, Any]]]:
        return {"gc": self._rows}


def gc_addon(cfg: Any) -> GcAddOn:
    """The add-on factory: always on (one callback per collection costs about a microsecond)."""
    return GcAddOn()
