"""The hold split by stage: the stages partition the hold; collections are their own stage."""

from __future__ import annotations

import gc
import threading

import pytest

from connectors.base import gil_free, mark_stage, stage_hook
from sim.config import parse_config
from sim.instruments.gc_meter import recording, thread_role, thread_totals
from sim.instruments.gilmeter import measure
from sim.instruments.stages import GC, OTHER
from sim.point.records import HOLD_STAGE_COLUMNS
from sim.runtime.point import run_point


def _spin_cpu(ns: int) -> None:
    import time

    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        pass


def test_stages_sum_to_the_hold_exactly_and_land_where_marked() -> None:
    def job() -> None:
        mark_stage("keys")
        mark_stage("addresses")
        _spin_cpu(5_000_000)
        with gil_free():
            _spin_cpu(2_000_000)  # declared GIL-free: in no stage
        mark_stage("free")

    _, err, t = measure(job)
    assert err is None and t.stages is not None
    assert sum(t.stages.hold_ns.values()) == t.hold_ns  # a partition, to the nanosecond
    # thread CPU time: the 5 ms spin is in addresses even on a loaded machine
    assert t.stages.of("addresses") >= 5_000_000
    assert t.stages.of("addresses") > t.stages.of("keys") + t.stages.of("free")
    assert stage_hook.mark is None  # the hook does not outlive the job


def test_a_job_that_marks_nothing_is_all_other_and_a_failing_job_still_adds_up() -> None:
    _, _, t = measure(lambda: _spin_cpu(1_000_000))
    assert t.stages is not None and set(t.stages.hold_ns) <= {OTHER, GC}
    assert sum(t.stages.hold_ns.values()) == t.hold_ns

    def boom() -> None:
        mark_stage("keys")
        raise RuntimeError("no")

    _, err, t = measure(boom)
    assert isinstance(err, RuntimeError)
    assert t.stages is not None and sum(t.stages.hold_ns.values()) == t.hold_ns
    assert stage_hook.mark is None


def test_a_collection_inside_a_job_is_its_gc_stage_and_counted_by_generation() -> None:
    def job() -> None:
        mark_stage("keys")
        mark_stage("addresses")
        junk = [[i] for i in range(20_000)]  # something for the collector to scan
        gc.collect()  # a full (generation 2) collection, inside "addresses"
        del junk

    with recording() as rec:
        _, err, t = measure(job)
    assert err is None and t.stages is not None
    assert t.stages.gc_counts[2] >= 1
    assert t.stages.gc_in.get("addresses", 0) >= 1
    assert t.stages.of(GC) > 0
    assert sum(t.stages.hold_ns.values()) == t.hold_ns
    me = threading.current_thread().name
    assert rec.cells[(me, 2)].collections >= 1
    assert rec.cells[(me, 2)].wall_ns > 0


def test_nested_recordings_see_each_collection_once_and_leave_no_callback() -> None:
    before = len(gc.callbacks)
    with recording() as outer:
        with recording() as inner:
            n0 = thread_totals().counts[2]
            gc.collect()
            assert thread_totals().counts[2] == n0 + 1  # one callback, however many recorders
        gc.collect()
    me = threading.current_thread().name
    assert inner.cells[(me, 2)].collections == 1
    assert outer.cells[(me, 2)].collections == 2
    assert len(gc.callbacks) == before


def test_thread_roles() -> None:
    assert thread_role("kvsim-load-3") == "load"
    assert thread_role("kvsim-engine") == "engine"
    assert thread_role("MainThread") == "simulation"
    assert thread_role("Thread-7") == "other"


@pytest.mark.realthreads
def test_every_request_of_a_point_has_stage_holds_that_add_up(write_config) -> None:
    """The acceptance check of the quickstart: per-stage holds sum to gil_hold_ms."""
    _, points = parse_config(write_config({"workload": {"requests": 10}}))
    res = run_point(points[0])
    assert len(res.records) == 10
    for r in res.records:
        stages = [getattr(r, c) for c in HOLD_STAGE_COLUMNS]
        assert all(s >= 0 for s in stages), stages
        # the meter's resolution is 1 ns; the columns are the same integers / 1e6
        assert sum(stages) == pytest.approx(r.gil_hold_ms, abs=1e-5)
        assert r.hold_keys_ms > 0 and r.hold_addresses_ms > 0
    gc_rows = res.tables["gc"]
    s = res.summary
    for col in HOLD_STAGE_COLUMNS:
        stem = col.removesuffix("_ms")
        values = sorted(getattr(r, col) for r in res.records)
        assert s[f"{stem}_mean_ms"] == pytest.approx(sum(values) / len(values))
        assert values[0] <= s[f"{stem}_p99_ms"] <= values[-1]
    assert s["hold_keys_mean_ms"] + s["hold_addresses_mean_ms"] + s["hold_free_mean_ms"] + s[
        "hold_gc_mean_ms"
    ] == pytest.approx(s["gil_hold_mean_ms"], abs=1e-5)
    per_req = sum(r.gc_gen0 + r.gc_gen1 + r.gc_gen2 for r in res.records)
    load_rows = sum(row["collections"] for row in gc_rows if row["role"] == "load")
    # every collection inside a request ran on a load thread while the recorder was open
    assert load_rows >= per_req
