"""The collection meter: the longest collection is read by its CPU time, since its wall time
between two Python callbacks also counts the stop callback's own wait for the GIL."""

from __future__ import annotations

import gc

from sim.instruments.gc_meter import GC_COLUMNS, GcRecorder, gc_summary, recording, thread_role


def test_the_longest_collection_is_its_cpu_time_and_wall_stays_an_upper_bound() -> None:
    rec = GcRecorder()
    # a collection of 12 ms of CPU whose stop callback then waited 40 ms for the GIL, and
    # one of 30 ms with no wait: the longest stall is the 30 ms one
    rec.add("kvsim-load-0", 0, 12_000_000, 52_000_000, 3)
    rec.add("kvsim-load-1", 2, 30_000_000, 31_000_000, 0)
    rows = rec.rows(thread_role)
    assert list(rows[0]) == GC_COLUMNS
    load0 = rows[0]
    assert load0["max_wall_ms"] == 52.0 and load0["max_cpu_ms"] == 12.0
    s = gc_summary(rows)
    assert s["gc_max_ms"] == 30.0
    assert s["gc_wall_ms"] == 83.0 and s["gc_load_ms"] == 42.0
    assert s["gc_collections"] == 2 and s["gc_gen2_collections"] == 1
    assert gc_summary([])["gc_max_ms"] == 0.0


def test_a_real_collection_is_recorded_with_its_cpu_time() -> None:
    with recording() as rec:
        gc.collect()
    rows = rec.rows(thread_role)
    (row,) = [r for r in rows if r["generation"] == 2]
    assert row["collections"] >= 1
    assert 0 < row["max_cpu_ms"] <= row["cpu_ms"]
    assert row["max_wall_ms"] > 0
