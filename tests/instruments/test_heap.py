"""The production-like heap: its size, its freeze, its validation, and that it leaves nothing."""

from __future__ import annotations

import gc

import pytest

from sim.config import HeapConfig, parse_config
from sim.errors import ConfigError
from sim.instruments.heap import OBJECTS_PER_UNIT, build_heap, live_heap
from sim.runtime.point import run_point


def test_build_heap_makes_that_many_tracked_containers() -> None:
    gc.collect()
    before = len(gc.get_objects())
    heap = build_heap(40_000)
    gc.collect()  # and they stay tracked (a tuple of atoms would be untracked here)
    grown = len(gc.get_objects()) - before
    assert len(heap) == 40_000 // OBJECTS_PER_UNIT
    # every object built is a tracked container; allow the test harness's own churn
    assert abs(grown - 40_000) <= 200
    assert gc.isenabled()


@pytest.mark.parametrize("frozen", [False, True])
def test_live_heap_freezes_or_settles_and_undoes_it(frozen: bool) -> None:
    assert gc.get_freeze_count() == 0
    with live_heap(HeapConfig(objects=20_000, frozen=frozen)) as info:
        assert info.objects == 20_000
        if frozen:
            assert gc.get_freeze_count() >= 20_000 == info.objects
            assert abs(info.frozen_objects - gc.get_freeze_count()) <= 50  # frozen ones can die
            assert len(gc.get_objects(generation=2)) < 20_000  # out of every collection
        else:
            assert gc.get_freeze_count() == 0
            assert len(gc.get_objects(generation=2)) >= 20_000  # where full collections scan
        assert info.tracked_objects >= 20_000
    assert gc.get_freeze_count() == 0


def test_no_heap_by_default() -> None:
    with live_heap(HeapConfig()) as info:
        assert info.objects == 0 and info.frozen_objects == 0
    with live_heap(HeapConfig(frozen=True)) as info:  # the process's own heap, frozen
        assert info.objects == 0 and info.frozen_objects > 0 and gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize(
    ("heap", "fragment"),
    [
        ({"objects": -1}, "greater than or equal"),
        ({"objects": 10**9}, "less than or equal"),
        ({"frozen": "yes"}, "boolean"),
        ({"object": 5}, "object"),
    ],
)
def test_bad_heap_config_is_one_line_naming_the_field(write_config, heap, fragment) -> None:
    path = write_config({"engine": {"heap": heap}})
    with pytest.raises(ConfigError) as info:
        parse_config(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(str(path))
    assert "engine.heap" in msg and fragment in msg


@pytest.mark.realthreads
def test_a_point_runs_inside_a_frozen_heap_and_leaves_none(write_config) -> None:
    path = write_config({"engine": {"heap": {"objects": 40_000, "frozen": True}}})
    _, points = parse_config(path)
    res = run_point(points[0])
    s = res.summary
    assert s["ok"] == len(res.records) > 0
    assert s["heap_objects"] == 40_000
    assert s["heap_frozen_objects"] >= 40_000
    assert gc.get_freeze_count() == 0


@pytest.mark.realthreads
def test_the_engine_starts_up_before_the_heap_is_settled(write_config, monkeypatch) -> None:
    """As a serving engine initialises (torch, its index buffers) before it freezes its
    heap, the engine's start-up runs before the point's heap is collected or frozen, so
    its objects are start-up objects, not a mid-load arrival in the young generations."""
    from contextlib import contextmanager

    import sim.runtime.point as point
    from sim.instruments.engine import EngineLoop

    order: list[str] = []
    real_prepare, real_heap = EngineLoop.prepare, point.live_heap

    def prepare(self: EngineLoop) -> None:
        order.append("engine start-up")
        real_prepare(self)

    @contextmanager
    def heap(cfg):  # type: ignore[no-untyped-def]
        order.append("heap settled")
        with real_heap(cfg) as info:
            yield info

    monkeypatch.setattr(EngineLoop, "prepare", prepare)
    monkeypatch.setattr(point, "live_heap", heap)
    path = write_config(
        {
            "workload": {"requests": 5},
            "engine": {"enabled": True, "baseline_steps": 3, "heap": {"frozen": True}},
        }
    )
    _, points = parse_config(path)
    res = run_point(points[0])
    assert res.summary["ok"] == 5
    # attach calls prepare again, which finds the start-up done
    assert order == ["engine start-up", "heap settled", "engine start-up"]
    assert res.summary["heap_frozen_objects"] > 0 and gc.get_freeze_count() == 0
