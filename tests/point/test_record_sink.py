"""Records streamed as requests finish: the same summary and rows as holding them all,
one record path for both modes, and output.requests choosing the rows."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from sim.config import Point, parse_config
from sim.model.driver import run_model_point
from sim.point import summary_stream
from sim.point.metrics import summarize_requests
from sim.point.record_sink import RecordSink
from sim.point.records import REQUEST_COLUMNS, RequestRecord
from sim.rundir.outputs import read_csv
from sim.sweep.experiment import run_experiment
from sim.sweep.plan import axis_columns
from sim.sweep.point_tables import requests_text
from tests.model.test_draws import CASES, sampled_calibration  # noqa: F401 (fixture)
from tests.model.test_driver import write_calibration

NUMERIC = (
    "latency_ms",
    "transfer_ms",
    "gil_hold_ms",
    "gil_wait_ms",
    "queue_ms",
    "inject_lag_ms",
    "stage_wall_ms",
    "hold_keys_ms",
    "hold_addresses_ms",
    "hold_free_ms",
    "hold_gc_ms",
)


def _records(n: int, seed: int = 1) -> list[RequestRecord]:
    """Made-up finished records: some failed, some NaN cells, some zero waits."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        at = i * 0.01
        r = RequestRecord(i, 128, 1, 10, at, injected_s=at + float(rng.random()) * 1e-3)
        failed = rng.random() < 0.1
        r.status = "failed" if failed else "ok"
        r.error = "StoreError: lost" if failed else ""
        for col in NUMERIC:
            v = float(rng.lognormal()) if rng.random() < 0.95 else math.nan
            setattr(r, col, v)
        if rng.random() < 0.3:
            r.gil_wait_ms = 0.0
        r.gc_gen0 = int(rng.integers(0, 3))
        out.append(r)
    return out


def _through_sink(records: list[RequestRecord], **kw) -> RecordSink:
    """Add ``records`` in a finishing order: shuffled within windows of 50."""
    order = list(records)
    rnd = random.Random(4)
    for k in range(0, len(order), 50):
        window = order[k : k + 50]
        rnd.shuffle(window)
        order[k : k + 50] = window
    sink = RecordSink((95.0, 99.9), **kw)
    for r in order:
        sink.add(r)
    sink.close()
    return sink


def test_the_sink_summary_is_exactly_the_reference_below_the_limit() -> None:
    records = _records(9000)
    sink = _through_sink(records)
    assert sink.stream.exact
    assert repr(sink.summary(31.5)) == repr(summarize_requests(records, 31.5, (95.0, 99.9)))
    assert [r.request_id for r in sink.records] == list(range(9000))  # back in id order
    assert sink.hold_ms == pytest.approx(
        math.fsum(r.gil_hold_ms for r in records if r.gil_hold_ms == r.gil_hold_ms)
    )


def test_past_the_limit_the_summary_is_within_a_histogram_bucket(monkeypatch) -> None:
    monkeypatch.setattr(summary_stream, "EXACT_LIMIT", 1000)
    records = _records(9000)
    sink = _through_sink(records, keep=False)
    assert not sink.stream.exact and sink.records == []
    got, ref = sink.summary(31.5), summarize_requests(records, 31.5, (95.0, 99.9))
    assert set(got) == set(ref)
    for key, want in ref.items():
        have = got[key]
        if isinstance(want, str) or math.isnan(want):
            assert have == want or (have != have and want != want), key
        else:
            assert have == pytest.approx(want, rel=summary_stream.RELATIVE_ERROR), key


def test_rows_go_to_the_writer_in_id_order_every_kth_with_sampling() -> None:
    written: list[int] = []
    _through_sink(_records(1000), write=lambda rows: written.extend(r.request_id for r in rows))
    assert written == list(range(1000))
    written.clear()
    sink = _through_sink(
        _records(1000), write=lambda rows: written.extend(r.request_id for r in rows), stride=7
    )
    assert written == list(range(0, 1000, 7))
    assert sink.summary(1.0)["requests"] == 1000  # the summary still covers every request


@pytest.fixture
def model_cfg(write_config, tmp_path):
    cal = write_calibration(tmp_path / "cal.json")

    def _write(output: dict | None = None, **over) -> Path:
        base = {
            "mode": "model",
            "machine": {"calibration": str(cal)},
            "workload": {"requests": 60},
            "sweep": {"connector.workers": [1, 2]},
            **over,
        }
        if output:
            base["output"] = {"dir": str(tmp_path / "out"), **output}
        return write_config(base)

    return _write


def test_a_streamed_requests_csv_is_byte_for_byte_the_in_memory_one(model_cfg, tmp_path) -> None:
    path = model_cfg()
    cfg, points = parse_config(path)
    out = tmp_path / "run"
    run_experiment(cfg, points, path, out)
    for p in points:
        rep = next((out / "points").glob(f"{p.index:03d}_*/rep-0"))
        held = run_model_point(p).records
        lead = {**{a: p.axes.get(a, "") for a in axis_columns(points)}, "repeat": 0}
        assert (rep / "requests.csv").read_text() == requests_text(lead, held)


@pytest.mark.parametrize(("choice", "rows"), [("none", 0), ("sample 12", 12), ("all", 60)])
def test_output_requests_picks_the_rows_and_the_summary_counts_all(
    model_cfg, tmp_path, choice, rows
) -> None:
    path = model_cfg({"requests": choice})
    cfg, points = parse_config(path)
    out = tmp_path / "run"
    run_experiment(cfg, points, path, out)
    table = read_csv(out / "requests.csv")
    assert len(table) == 2 * rows
    if rows:
        assert {int(r["request_id"]) % (60 // rows) for r in table} == {0}
    assert [int(r["requests"]) for r in read_csv(out / "summary.csv")] == [60, 60]


def test_both_modes_write_the_same_requests_csv_columns(write_config, tmp_path) -> None:
    """One record path: a real point and a model point emit the same columns, the catalogue's."""
    cal = write_calibration(tmp_path / "cal.json")
    path = write_config(
        {
            "machine": {"calibration": str(cal)},
            "workload": {"requests": 6},
            "sweep": {"mode": ["real", "model"]},
        }
    )
    cfg, points = parse_config(path)
    out = tmp_path / "run"
    run_experiment(cfg, points, path, out)
    headers = {
        rep.parent.name: (rep / "requests.csv").read_text().splitlines()[0]
        for rep in sorted((out / "points").glob("*/rep-0"))
    }
    assert len(headers) == 2 and len(set(headers.values())) == 1
    assert headers[next(iter(headers))].split(",")[-len(REQUEST_COLUMNS) :] == REQUEST_COLUMNS
    rows = read_csv(out / "requests.csv")
    assert {r["mode"] for r in rows} == {"real", "model"}
    assert all(r["status"] == "ok" and r["transfer_bytes"] == r["bytes"] for r in rows)


def test_window_s_writes_latency_per_window_counting_every_request(model_cfg, tmp_path) -> None:
    path = model_cfg({"window_s": 0.5}, workload={"requests": 300})
    cfg, points = parse_config(path)
    out = tmp_path / "run"
    run_experiment(cfg, points, path, out)
    rows = read_csv(out / "windows.csv")
    for workers in ("1", "2"):
        mine = [r for r in rows if r["workers"] == workers]
        assert sum(int(r["requests"]) for r in mine) == 300
        starts = [float(r["window_start_s"]) for r in mine]
        assert starts == sorted(starts) and all(s % 0.5 == 0 for s in starts)
        assert all(float(r["latency_p50_ms"]) <= float(r["latency_p99_ms"]) for r in mine)


def test_a_long_plan_is_drawn_in_blocks_the_same_each_time(write_config, monkeypatch) -> None:
    from sim.workload import plan as plan_mod

    monkeypatch.setattr(plan_mod, "PLAN_HELD", 100)
    monkeypatch.setattr(plan_mod, "PLAN_BLOCK", 64)
    path = write_config(
        {"workload": {"requests": 300, "tokens": {"dist": "uniform", "low": 16, "high": 4096}}}
    )
    _, (point,) = parse_config(path)
    wl = plan_mod.plan_workload(point.config, np.random.default_rng(0))
    first, again = list(wl), list(wl)
    assert first == again and len(wl) == 300 and wl.requests[123] == first[123]
    assert [r.request_id for r in first] == list(range(300))
    times = [r.at_s for r in first]
    assert times == sorted(times)  # arrivals continue from block to block
    gaps = np.diff([0.0, *times])
    assert np.mean(gaps) == pytest.approx(1 / 400, rel=0.2)  # TINY's rate: 400/s
    assert plan_mod.tokens_range(wl) == (min(r.tokens for r in first), max(r.tokens for r in first))


def test_large_tables_are_joined_from_their_files_byte_for_byte(
    model_cfg, tmp_path, monkeypatch
) -> None:
    """A run's tables past IN_MEMORY_BYTES are copied from disk, not held: same bytes."""
    from sim.rundir import combine

    path = model_cfg()
    cfg, points = parse_config(path)
    run_experiment(cfg, points, path, tmp_path / "held")
    monkeypatch.setattr(combine, "IN_MEMORY_BYTES", 0)
    run_experiment(cfg, points, path, tmp_path / "streamed")
    for name in ("requests.csv", "summary.csv"):
        held = (tmp_path / "held" / name).read_bytes()
        assert held == (tmp_path / "streamed" / name).read_bytes()
    assert held.count(b"\n") == 3  # summary: header and two points


def test_a_part_from_a_file_is_the_part_from_its_bytes(tmp_path) -> None:
    from sim.rundir.parts import Part

    cases = {
        "plain": b"a,b\n1,2\n3,4\n",
        "header only": b"a,b\n",
        "quoted": b'a,b\n"x,y",2\n',
        "blank line": b"a,b\n1,2\n\n3,4\n",
        "no newline at end": b"a,b\n1,2",
    }
    for name, data in cases.items():
        f = tmp_path / "t.csv"
        f.write_bytes(data)
        a, b = Part.from_file(f), Part.from_bytes(data)
        assert (a.columns, a.canonical, a.rows()) == (b.columns, b.canonical, b.rows()), name
        assert b"".join(a.body_chunks()) == b.body or not a.canonical, name


@pytest.mark.parametrize("all_ok", [False, True])
def test_windows_count_every_request_and_the_ok_latencies_alone(all_ok: bool) -> None:
    """windows.csv from the sink's columns: per window of arrival, every request counted,
    only the ok ones' latencies in its histogram (a failed record's latency is left out;
    a batch of only ok records takes the summary's column as it is)."""
    records = _records(9000)  # arrivals 0-90 s: three batches, ~10 % failed
    if all_ok:
        for r in records:
            r.status, r.error = "ok", ""
    rows = _through_sink(records, window_s=7.0).tables()["windows"]
    assert sum(row["requests"] for row in rows) == len(records)
    for row in rows:
        w = round(row["window_start_s"] / 7.0)
        mine = [r for r in records if math.floor(r.arrival_s / 7.0) == w]
        ok = [r.latency_ms for r in mine if r.status == "ok" and r.latency_ms == r.latency_ms]
        ref = summary_stream.LogHistogram()
        ref.add(np.array(ok, dtype=float))
        assert (row["requests"], row["ok"]) == (len(mine), len(ok))
        assert [row["latency_p50_ms"], row["latency_p99_ms"]] == ref.percentiles([50, 99])
        assert row["latency_max_ms"] == max(ok)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_model_point_keeping_few_records_sums_up_as_one_keeping_all(
    write_config,
    sampled_calibration,  # noqa: F811 (the fixture imported above)
    case,
) -> None:
    """Model mode hands the sink a request's cells alone, no record, when no row of it is
    kept (sim.model.driver): the summary, windows and the rows kept are those of the point
    that keeps every record, to the last digit (failures, no GIL, a closed loop)."""
    base = {"mode": "model", "machine": {"calibration": str(sampled_calibration)}}
    path = write_config(base | CASES[case] | {"output": {"window_s": 0.25}})
    _, (point,) = parse_config(path)
    held = run_model_point(point)  # no writer: every record kept
    cfg = point.config
    sampled = cfg.model_copy(
        update={"output": cfg.output.model_copy(update={"requests": "sample 7"})}
    )
    rows: list[RequestRecord] = []
    streamed = run_model_point(Point(point.index, point.axes, sampled), write_rows=rows.extend)
    assert streamed.records == [] and held.records
    assert repr(streamed.summary) == repr(held.summary)
    assert repr(streamed.tables) == repr(held.tables) and "windows" in held.tables
    step = sampled.output.request_stride(len(held.records))
    assert step > 1
    kept = [r.as_row() for r in held.records if r.request_id % step == 0]
    assert [r.as_row() for r in rows] == kept
