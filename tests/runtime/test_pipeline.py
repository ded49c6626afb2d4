"""The load pipeline end to end on a tiny config: rows, columns, statuses, failures."""

from __future__ import annotations

import gc
import math
import weakref
from typing import ClassVar

import pytest

from connectors.base import AddressVariant
from connectors.registry import ADDRESS_VARIANTS
from sim.config import parse_config
from sim.point.records import REQUEST_COLUMNS
from sim.runtime import pipeline
from sim.runtime.point import run_point
from sim.workload.plan import request_bytes

pytestmark = pytest.mark.realthreads


class _Flaky(AddressVariant):
    """Fails every request whose id is odd: the run must go on."""

    name = "test-flaky"
    computes_addresses = False  # returns no addresses: not held to the list contract
    description = "test only"

    def prepare_values(self, chunks, block_ids):
        raise RuntimeError("store said no")

    def warm_up(self) -> None:
        return None

    def run(self, job, group, handler):
        if job.request_id % 2:
            raise RuntimeError(f"request {job.request_id} exploded")
        return [], None


@pytest.fixture
def flaky_variant():
    with ADDRESS_VARIANTS.temporary(_Flaky):
        yield _Flaky.name


def test_every_request_ends_once_with_consistent_timestamps(write_config) -> None:
    _, points = parse_config(write_config({"workload": {"requests": 12}}))
    res = run_point(points[0])
    recs = res.records
    assert [r.request_id for r in recs] == list(range(12))
    assert all(r.status == "ok" and r.error == "" for r in recs)
    cfg = points[0].config
    for r in recs:
        assert r.tokens == 160 and r.chunks == 10
        assert r.bytes == request_bytes(cfg.model, r.tokens) == 10 * (1024 + 2048) * 2
        assert r.arrival_s <= r.start_s <= r.cpu_done_s <= r.done_s
        assert math.isclose(
            r.latency_ms, (r.done_s - r.arrival_s) * 1e3, rel_tol=1e-3, abs_tol=0.01
        )
        assert r.gil_hold_ms > 0 and r.stage_wall_ms > 0 and r.queue_ms >= 0
        modelled = cfg.store.latency_ms + r.bytes / (cfg.store.bandwidth_gb_per_s * 1e9) * 1e3
        assert r.transfer_ms >= modelled * 0.99  # the modelled transfer really elapsed
        assert r.thread.startswith("kvsim-load-")
    s = res.summary
    assert s["requests"] == s["ok"] == 12 and s["failed"] == 0
    assert s["latency_p50_ms"] <= s["latency_p99_ms"] <= s["latency_max_ms"]
    assert s["noise_floor_p50_ms"] >= 0


def test_a_finished_request_keeps_its_notes_not_its_job(write_config, monkeypatch) -> None:
    """Real mode makes its rows after the load (sim.runtime.pipeline): until then each
    finished request is held, so it must hold only what its row needs, not its job's
    block tables (nor its CPU stages' result), or a long real point grows by them."""
    jobs: list[weakref.ref] = []
    admitted = pipeline._Request._admitted

    def noting(self, job, waited_s):
        jobs.append(weakref.ref(job))
        admitted(self, job, waited_s)

    alive: list[int] = []
    records = pipeline.LoadPipeline.records

    def counting(self):
        gc.collect()
        alive.append(sum(ref() is not None for ref in jobs))
        yield from records(self)

    monkeypatch.setattr(pipeline._Request, "_admitted", noting)
    monkeypatch.setattr(pipeline.LoadPipeline, "records", counting)
    _, points = parse_config(write_config({"workload": {"requests": 12}}))
    res = run_point(points[0])
    assert len(jobs) == 12 and res.summary["ok"] == 12
    assert alive == [0]  # every request had ended: none of their jobs was still held


def _tracked_from(obj: object, seen: set[int]) -> int:
    """Containers the cyclic collector tracks reachable from ``obj`` through what it alone
    holds (not the pipeline, the planned request or a class): what a finished request adds
    to the next full collection's count."""
    if id(obj) in seen or not gc.is_tracked(obj) or isinstance(obj, (type, tuple)):
        return 0
    if isinstance(obj, pipeline.LoadPipeline):
        return 0
    seen.add(id(obj))
    return 1 + sum(_tracked_from(o, seen) for o in gc.get_referents(obj))


def test_a_finished_request_keeps_few_containers_for_the_collector(write_config, monkeypatch):
    """Until its row is made after the load, a finished request keeps four tracked objects
    (itself, its timing, the timing's stages, the store's outcome): each one more (a
    dataclass's __dict__) brought the next full collection, which runs on the simulation
    thread in the middle of the load, that much closer (sim.runtime.pipeline._Request)."""
    kept: list[int] = []
    records = pipeline.LoadPipeline.records

    def counting(self):
        kept.extend(_tracked_from(r, set()) for r in self._finished)
        yield from records(self)

    monkeypatch.setattr(pipeline.LoadPipeline, "records", counting)
    _, points = parse_config(write_config({"workload": {"requests": 12}}))
    assert run_point(points[0]).summary["ok"] == 12
    assert len(kept) == 12 and max(kept) <= 4


def test_failures_are_recorded_and_the_run_goes_on(write_config, flaky_variant) -> None:
    _, points = parse_config(write_config({"connector": {"variant": flaky_variant}}))
    res = run_point(points[0])
    assert len(res.records) == 8
    failed = [r for r in res.records if r.status == "failed"]
    assert {r.request_id for r in failed} == {1, 3, 5, 7}
    assert all("exploded" in r.error and math.isnan(r.transfer_ms) for r in failed)
    assert res.summary["failed"] == 4 and res.summary["ok"] == 4


def test_closed_loop_keeps_at_most_n_in_flight(write_config) -> None:
    cfg_path = write_config(
        {"workload": {"requests": 10, "arrival": {"kind": "closed", "clients": 2}}}
    )
    _, points = parse_config(cfg_path)
    recs = run_point(points[0]).records
    assert len(recs) == 10
    events = sorted([(r.arrival_s, 1) for r in recs] + [(r.done_s, -1) for r in recs])
    level, peak = 0, 0
    for _, d in events:
        level += d
        peak = max(peak, level)
    assert peak <= 2


def test_per_chunk_and_per_group_handlers_both_run(write_config) -> None:
    for handler in ("per_chunk", "per_group"):
        _, points = parse_config(
            write_config({"connector": {"handler": handler}, "model": {"kv_groups": 2}})
        )
        res = run_point(points[0])
        assert res.summary["ok"] == 8
        assert all(r.chunks == 20 for r in res.records)


def test_columns_are_the_documented_ones() -> None:
    for col in (
        "request_id",
        "tokens",
        "chunks",
        "arrival_s",
        "start_s",
        "cpu_done_s",
        "done_s",
        "queue_ms",
        "stage_wall_ms",
        "gil_hold_ms",
        "transfer_ms",
        "latency_ms",
        "status",
        "error",
    ):
        assert col in REQUEST_COLUMNS


class _Recording(AddressVariant):
    """Records the job each request's CPU stage got (on its load thread)."""

    name = "test-recording"
    computes_addresses = False  # returns no addresses: not held to the list contract
    description = "test only"
    seen: ClassVar[dict[int, tuple[bytes, tuple]]] = {}

    def prepare_values(self, chunks, block_ids):
        return None

    def warm_up(self) -> None:
        return None

    def run(self, job, group, handler):
        type(self).seen[job.request_id] = (job.block_hashes, job.block_ids)
        return [], None


@pytest.fixture
def recording_variant():
    with ADDRESS_VARIANTS.temporary(_Recording):
        yield _Recording.name


@pytest.mark.parametrize("fits", [0, 5, 12])
def test_jobs_built_before_the_load_are_the_jobs_built_at_arrival(
    write_config, monkeypatch, recording_variant, fits
) -> None:
    """Jobs go to the load threads built before the load up to the budget, at arrival past
    it; either way each request gets the very job its seed plans."""
    import numpy as np

    from sim.runtime import pipeline
    from sim.workload.plan import HASH_LEN, plan_workload

    cfg = {"workload": {"requests": 12, "tokens": 2048}, "connector": {"variant": _Recording.name}}
    _, points = parse_config(write_config(cfg))
    geo = points[0].config.model
    per_job = 2048 // geo.chunk_granularity * HASH_LEN + -(-2048 // geo.block_size) * 36
    budget = fits * per_job + per_job // 2  # room for `fits` jobs, not one more
    from sim.runtime import point as point_module

    built: list[int] = []
    real_prepare = pipeline.prepare_jobs

    def prepare(requests, geometry, budget_bytes=None):
        jobs = real_prepare(requests, geometry, budget)
        built.append(len(jobs))
        return jobs

    monkeypatch.setattr(point_module, "prepare_jobs", prepare)  # what run_point calls
    _Recording.seen = {}
    res = run_point(points[0])
    assert res.summary["ok"] == 12
    assert built == [fits]
    plan = plan_workload(points[0].config, np.random.default_rng([points[0].config.seed, 0]))
    for req in plan:
        job = req.job(geo)
        assert _Recording.seen[req.request_id] == (job.block_hashes, job.block_ids)


def test_a_modelled_transfer_ends_when_the_model_says_however_late_the_loop_notes_it(
    write_config, monkeypatch
) -> None:
    """Two load threads holding the GIL for 15 ms keep the simulation thread from noting
    a 2 ms transfer's end on time; the end of record is the model's all the same."""
    from sim.runtime import pipeline

    picked: dict[int, float] = {}
    staged = pipeline._Request._staged

    def spy(self, outcome):
        picked[self.req.request_id] = self.p._env.run_time()  # the transfer starts now
        staged(self, outcome)

    monkeypatch.setattr(pipeline._Request, "_staged", spy)
    cfg_path = write_config(
        {
            "workload": {"requests": 10, "arrival": {"kind": "constant", "rate_rps": 100}},
            "connector": {"variant": "synthetic", "options": {"hold_ms": 15}},
            "store": {"latency_ms": 2.0, "bandwidth_gb_per_s": 1000, "concurrency": 64},
            "gil": {"probe": False},
        }
    )
    _, points = parse_config(cfg_path)
    recs = run_point(points[0]).records
    assert len(recs) == 10 and all(r.status == "ok" for r in recs)
    for r in recs:
        modelled = 2e-3 + r.bytes / 1e12  # alone on the link; a neighbour shifts it by ns
        assert r.done_s - picked[r.request_id] == pytest.approx(modelled, abs=1e-6)
        # the transfer starts when the load thread posted its answer (as a real
        # connector's load thread starts it itself), not when the simulation thread got
        # the GIL to look: never before its CPU stages ended
        assert picked[r.request_id] >= r.cpu_done_s - 1e-9
        assert r.latency_ms == pytest.approx((r.done_s - r.arrival_s) * 1e3, abs=1e-3)
