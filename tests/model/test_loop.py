"""Model mode's own event loop (sim.model.loop) and what rests on it: order, determinism.

The loop replaced SimPy for speed; these tests pin what the model relies on: entries
due at the same time run in the order they were scheduled, nothing runs in the past,
``stop`` and ``until`` end a run where they say, and a model point is reproducible
(same seed, same requests.csv) whatever shortcut the loop takes.
"""

from __future__ import annotations

import pytest

from sim.config import parse_config
from sim.model.cores import Cores
from sim.model.driver import run_model_point
from sim.model.loop import Loop
from sim.rundir.outputs import read_csv
from sim.sweep.experiment import run_experiment
from tests.model.test_draws import CASES
from tests.model.test_driver import write_calibration


def test_simultaneous_entries_run_in_the_order_they_were_scheduled() -> None:
    loop = Loop()
    seen: list[tuple[float, str]] = []
    note = lambda name: seen.append((loop.now, name))  # noqa: E731
    loop.at(0.002, note, "c")
    loop.after(0.001, note, "a")
    loop.at(0.001, note, "b")
    loop.after(0.002, note, "d")

    def first(_a: object) -> None:
        note("first")
        loop.after(0.0, note, "spawned")  # due now, after everything already due now

    loop.at(0.0, first)
    loop.at(0.0, note, "second")
    loop.run()
    assert seen == [
        (0.0, "first"),
        (0.0, "second"),
        (0.0, "spawned"),
        (0.001, "a"),
        (0.001, "b"),
        (0.002, "c"),
        (0.002, "d"),
    ]


def test_nothing_is_scheduled_in_the_past_and_stop_and_until_end_a_run() -> None:
    loop = Loop()
    seen: list[float] = []

    def tick(_a: object) -> None:
        seen.append(loop.now)
        if len(seen) == 3:
            loop.at(-1.0, tick)  # in the past: runs now instead
        elif len(seen) == 5:
            loop.stop()
        else:
            loop.after(0.5, tick)

    loop.at(1.0, tick)
    assert loop.run(until=1.7) is False and seen == [1.0, 1.5] and loop.now == 1.7
    assert loop.run() is True and seen == [1.0, 1.5, 2.0, 2.0, 2.5]
    assert loop.pending == 0 and loop.peek() == float("inf")


def test_alarms_move_and_cancel_for_free_and_run_before_entries_due_with_them() -> None:
    loop = Loop()
    seen: list[tuple[float, str]] = []
    first = loop.alarm(lambda _a: seen.append((loop.now, "first")))
    second = loop.alarm(lambda _a: seen.append((loop.now, "second")))
    loop.at(0.003, lambda _a: seen.append((loop.now, "entry")))
    loop.set_alarm(first, 0.001)
    loop.set_alarm(first, 0.003)  # moved: fires once, at its last time
    loop.set_alarm(second, 0.002)
    assert loop.peek() == 0.002
    loop.cancel(second)
    assert loop.peek() == 0.003
    loop.run()
    assert seen == [(0.003, "first"), (0.003, "entry")]
    assert first.at == float("inf") and loop.peek() == float("inf")


def test_cores_run_at_full_speed_until_full_then_share() -> None:
    loop = Loop()
    cores = Cores(loop, 2)
    done: dict[str, float] = {}
    for name, work in (("a", 0.010), ("b", 0.010), ("c", 0.010)):
        cores.run(work, lambda _a, n=name: done.setdefault(n, loop.now))
    loop.run()
    # Three tasks on two cores: each at 2/3 speed, all done at 15 ms.
    assert done == pytest.approx({"a": 0.015, "b": 0.015, "c": 0.015})
    assert cores.busy_core_s == pytest.approx(0.030)


def test_instant_work_only_when_nothing_else_is_due_before_it_ends() -> None:
    loop = Loop()
    cores = Cores(loop, 1)
    loop.at(0.005, lambda _a: None)
    assert cores.instant(0.004) and loop.now == pytest.approx(0.004)
    assert not cores.instant(0.002)  # the entry at 5 ms comes first
    assert loop.now == pytest.approx(0.004)
    cores.run(1.0, lambda _a: None)
    loop.run(until=0.0045)
    assert not cores.instant(1e-6)  # the one core is taken: the task's pace would change


@pytest.fixture
def busy_point(write_config, tmp_path):
    """A point that takes every path: GIL contention, probe, engine, store faults and
    retries, a concurrency limit, GIL-free kernels, background load."""
    cal = write_calibration(tmp_path / "cal.json")
    cal_data = cal.read_text().replace(
        '"probe_hold_ms": 0.005', '"probe_hold_ms": 0.005, "background_load": 0.7'
    )
    cal.write_text(cal_data)
    return write_config(
        {
            "mode": "model",
            "seed": 21,
            "machine": {"calibration": str(cal)},
            **CASES["busy-engine-faults"],
        }
    )


def test_a_model_run_is_reproducible_requests_csv_identical(busy_point, tmp_path) -> None:
    cfg, points = parse_config(busy_point)
    texts = []
    for run in ("a", "b"):
        out = tmp_path / run
        res = run_experiment(cfg, points, busy_point, out)
        assert [r["status"] for r in res.summary_rows] == ["ok"]
        texts.append((out / "requests.csv").read_bytes())
        rows = read_csv(out / "requests.csv")
        assert len(rows) == 120
        assert any(r["status"] == "failed" for r in rows)  # the faults were exercised
        assert any(int(r["attempts"]) > 1 for r in rows)
        assert any(float(r["store_wait_ms"]) > 0 for r in rows)
    assert texts[0] == texts[1]


def test_the_instant_shortcut_changes_nothing(busy_point, monkeypatch) -> None:
    """Work done at once when nothing else is due gives the same run as a scheduled end."""
    _cfg, points = parse_config(busy_point)
    fast = run_model_point(points[0])
    monkeypatch.setattr(Cores, "instant", lambda self, work_s, shared=False: False)
    slow = run_model_point(points[0])
    assert [r.as_row() for r in fast.records] == [r.as_row() for r in slow.records]
    for key in ("stall_p99_ms", "gil_busy_probe", "model_switches", "engine_stall_p99_ms"):
        if key in fast.summary:
            assert fast.summary[key] == pytest.approx(slow.summary[key], rel=1e-9, nan_ok=True)
    assert fast.tables["steps"] == slow.tables["steps"]


def test_a_short_task_started_on_full_cores_runs_at_full_speed() -> None:
    """Beside a background load the OS gives a thread that just woke the core for a slice
    (sim.model.cores): a task no longer than the burst is not slowed; a longer one shares
    from its start, as every task does with no burst."""
    ends: dict[tuple[float, float], float] = {}
    for burst in (0.0, 0.002):
        for work in (0.001, 0.010):
            loop = Loop()
            cores = Cores(loop, 2, background=2.0, burst_s=burst)  # 3 runnable: pace 2/3
            cores.run(work, lambda _a, k=(burst, work), lp=loop: ends.setdefault(k, lp.now))
            loop.run()
            assert cores.busy_core_s == pytest.approx(work)
    assert ends[(0.0, 0.001)] == pytest.approx(0.0015)
    assert ends[(0.0, 0.010)] == pytest.approx(0.015)
    assert ends[(0.002, 0.001)] == pytest.approx(0.001)  # a burst: full speed
    assert ends[(0.002, 0.010)] == pytest.approx(0.015)


def test_a_burst_has_a_core_of_its_own_and_can_be_taken_off() -> None:
    """A task in its burst takes a core from the others' sharing (here the only one);
    taken off in it (a GIL drop request), it reports its work left, and the others get
    the core back."""
    loop = Loop()
    cores = Cores(loop, 1, burst_s=0.004)
    done: dict[str, float] = {}
    cores.run(0.010, lambda _a: done.setdefault("a", loop.now))  # a free core: no burst
    loop.run(until=0.002)
    b = cores.run(0.003, lambda _a: done.setdefault("b", loop.now))  # full: a burst
    assert cores.running == 2
    loop.run(until=0.003)
    assert cores.take_off(b) == pytest.approx(0.002)
    assert cores.running == 1
    loop.run()
    # a: 2 ms alone, stopped for b's 1 ms of burst, then its 8 ms left alone.
    assert done == {"a": pytest.approx(0.011)}
    assert cores.busy_core_s == pytest.approx(0.011)


def test_at_most_one_burst_per_core() -> None:
    """On one core beside a background load, a second short task does not burst: it
    waits for the first's burst, then shares with the background."""
    loop = Loop()
    cores = Cores(loop, 1, background=1.0, burst_s=0.002)
    done: dict[str, float] = {}
    cores.run(0.001, lambda _a: done.setdefault("a", loop.now))
    cores.run(0.001, lambda _a: done.setdefault("b", loop.now))
    loop.run()
    assert done == {"a": pytest.approx(0.001), "b": pytest.approx(0.003)}
    assert cores.busy_core_s == pytest.approx(0.002)
