"""Workload planning: seeded and reproducible, chunk-aligned tokens, and trace replay."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sim.config import ConfigError, parse_config
from sim.point.metrics import PLANNED_METRICS
from sim.runtime.point import run_point
from sim.workload.plan import plan_workload, planned_requests
from sim.workload.replay import cache_capacity_blocks, trace_block_bytes
from sim.workload.trace import TraceError, write_trace

ROOT = Path(__file__).resolve().parents[2]

#: Hand-made trace; with 128-token chunks and speedup 2 the plan is worked out below.
ROWS = [
    {"timestamp": 1000, "input_length": 1200, "output_length": 1, "hash_ids": [0, 1, 2]},
    {"timestamp": 1000, "input_length": 700, "output_length": 1, "hash_ids": [0, 3]},
    {"timestamp": 3000, "input_length": 1100, "output_length": 1, "hash_ids": [0, 1, 2]},
    {"timestamp": 5000, "input_length": 300, "output_length": 1, "hash_ids": [9]},
    {"timestamp": 5000, "input_length": 2000, "output_length": 1, "hash_ids": [0, 1, 7, 8]},
]
MODEL = {"regions": 4, "block_len": [1024, 2048], "block_size": 128, "num_blocks": 256}


def _trace_config(write_config, tmp_path: Path, rows=ROWS, **arrival: Any) -> Path:
    write_trace(tmp_path / "trace.jsonl", rows)
    return write_config(
        {
            "model": MODEL,
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": "trace.jsonl", **arrival},
            },
        }
    )


def _plan(path: Path, seed: int = 0):
    _, points = parse_config(path)
    return points, plan_workload(points[0].config, np.random.default_rng([seed, 0]))


@pytest.mark.parametrize(
    "workload",
    [
        {
            "arrival": {"kind": "poisson", "rate_rps": 30.0},
            "tokens": {"dist": "lognormal", "median": 900},
        },
        {
            "arrival": {"kind": "onoff", "rate_rps": 30.0},
            "tokens": {"dist": "uniform", "low": 16, "high": 999},
        },
        {"arrival": {"kind": "constant", "rate_rps": 30.0}},
        {"arrival": {"kind": "closed", "clients": 3, "think_ms": 2.0}},
    ],
)
def test_same_config_and_seed_give_a_byte_identical_plan(write_config, workload) -> None:
    path = write_config({"workload": workload})
    _, a = _plan(path)
    _, b = _plan(path)
    assert pickle.dumps(a) == pickle.dumps(b)
    _, c = _plan(path, seed=1)
    assert pickle.dumps(a) != pickle.dumps(c)


def test_poisson_plan_keeps_its_draw_order(write_config) -> None:
    """tokens, then arrival gaps, then job seeds, then draws: old plans stay what they were."""
    _, points = parse_config(write_config({"workload": {"requests": 6}}))
    plan = plan_workload(points[0].config, np.random.default_rng([3, 0]))
    rng = np.random.default_rng([3, 0])
    gaps = rng.exponential(1 / 400, size=6).tolist()
    seeds = rng.integers(0, 2**63 - 1, size=6, dtype=np.int64).tolist()
    draws = rng.random(size=6).tolist()
    assert [r.at_s for r in plan] == np.cumsum(gaps).tolist()
    assert [r.job_seed for r in plan] == seeds and [r.draw for r in plan] == draws


@pytest.mark.parametrize(
    "tokens",
    [
        {"dist": "uniform", "low": 1, "high": 500},
        {"dist": "lognormal", "median": 100},
        {"dist": "fixed", "value": 7},
    ],
)
def test_tokens_are_whole_chunks(write_config, tokens) -> None:
    _, plan = _plan(write_config({"workload": {"requests": 200, "tokens": tokens}}))
    values = np.array([r.tokens for r in plan])
    assert np.all(values % 16 == 0) and np.all(values >= 16)


def test_empirical_tokens_come_from_the_trace(write_config, tmp_path: Path) -> None:
    write_trace(tmp_path / "trace.jsonl", ROWS)
    path = write_config(
        {
            "workload": {
                "requests": 300,
                "tokens": {"dist": "empirical", "path": "trace.jsonl", "max": 1500},
            }
        }
    )
    _, plan = _plan(path)
    allowed = {min(r["input_length"], 1500) // 16 * 16 for r in ROWS}
    drawn = {r.tokens for r in plan}
    assert drawn == allowed  # 300 draws from 5 values reach every one


def test_trace_replay_tokens_arrivals_and_hit_ratio(write_config, tmp_path: Path) -> None:
    _, plan = _plan(_trace_config(write_config, tmp_path, speedup=2.0))
    # Row 0 is cold; row 1 shares block 0 (512 tokens); row 2 finds all 3 blocks but
    # loads at most 1099 tokens -> 1024; row 3 misses; row 4 finds blocks 0 and 1.
    assert [r.tokens for r in plan] == [512, 1024, 1024]
    assert [r.at_s for r in plan] == [0.0, 1.0, 2.0]
    assert plan.closed_clients is None
    assert plan.stats == {
        "trace_requests": 5.0,
        "skipped_requests": 2.0,
        "hit_ratio": (512 + 1024 + 1024) / (1200 + 700 + 1100 + 300 + 2000),
        "block_hit_ratio": (0 + 1 + 3 + 0 + 2) / 13,
    }


def test_each_replayed_request_names_its_trace_line(write_config, tmp_path: Path) -> None:
    """Rows 1, 2 and 4 load something; a blank line in the file shifts the later ones."""
    _, plan = _plan(_trace_config(write_config, tmp_path))
    assert [r.trace_line for r in plan] == [2, 3, 5]
    assert pickle.dumps(plan) == pickle.dumps(_plan(tmp_path / "exp.yaml")[1])
    text = (tmp_path / "trace.jsonl").read_text().splitlines()
    (tmp_path / "trace.jsonl").write_text("\n".join([*text[:2], "", *text[2:]]) + "\n")
    _, plan = _plan(tmp_path / "exp.yaml")
    assert [r.trace_line for r in plan] == [2, 4, 6]
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    assert [json.loads(lines[r.trace_line - 1])["input_length"] for r in plan] == [700, 1100, 2000]


def test_planned_requests_is_the_replayed_count_not_workload_requests(
    write_config, tmp_path: Path
) -> None:
    _, points = parse_config(_trace_config(write_config, tmp_path, limit=3))
    memo: dict = {}
    count, stats = planned_requests(points[0].config, memo)
    assert (count, stats["trace_requests"], stats["skipped_requests"]) == (2, 3.0, 1.0)
    assert len(memo) == 1 and planned_requests(points[0].config, memo)[0] == 2
    _, (plain,) = parse_config(write_config({"workload": {"requests": 7}}, name="plain.yaml"))
    assert planned_requests(plain.config)[0] == 7


def test_limit_replays_only_the_first_requests(write_config, tmp_path: Path) -> None:
    _, plan = _plan(_trace_config(write_config, tmp_path, limit=3))
    assert plan.stats["trace_requests"] == 3 and len(plan) == 2


def test_a_trace_that_never_hits_is_an_error(write_config, tmp_path: Path) -> None:
    path = _trace_config(write_config, tmp_path, rows=[ROWS[0], ROWS[3]])
    with pytest.raises(TraceError, match="none of the 2 replayed requests"):
        _plan(path)


def test_lru_hit_ratio_grows_with_capacity(write_config, tmp_path: Path) -> None:
    sample = str(ROOT / "configs" / "traces" / "mooncake_sample.jsonl")
    ratios = []
    for cap in (20, 80, 300, None):
        write_config(
            {
                "model": MODEL,
                "workload": {
                    "requests": 40,
                    "tokens": 131072,
                    "arrival": {"kind": "trace", "path": sample, "cache": {"capacity_blocks": cap}},
                },
            }
        )
        _, plan = _plan(tmp_path / "exp.yaml")
        ratios.append(plan.stats["hit_ratio"])
    assert ratios == sorted(ratios) and ratios[0] < ratios[-1] <= 1.0


def test_capacity_in_gib_counts_whole_trace_blocks(write_config, tmp_path: Path) -> None:
    _, points = parse_config(_trace_config(write_config, tmp_path, cache={"capacity_gib": 0.01}))
    cfg = points[0].config
    block = trace_block_bytes(cfg.model, 512)
    assert block == 512 * (1024 + 2048) * 2 / 128
    assert cache_capacity_blocks(cfg.workload.arrival.cache, cfg.model, 512) == int(
        0.01 * 2**30 // block
    )
    _, points = parse_config(_trace_config(write_config, tmp_path, cache={"capacity_gib": 1e-6}))
    with pytest.raises(TraceError, match="holds no whole trace block"):
        plan_workload(points[0].config, np.random.default_rng(0))


@pytest.mark.parametrize(("key", "value"), [("requests", 5), ("tokens", 64)])
def test_trace_sets_requests_and_tokens_itself(write_config, tmp_path, key, value) -> None:
    write_trace(tmp_path / "trace.jsonl", ROWS)
    path = write_config(
        {
            "workload": {
                "requests": 40,
                "tokens": 131072,
                key: value,
                "arrival": {"kind": "trace", "path": "trace.jsonl"},
            }
        }
    )
    with pytest.raises(ConfigError, match=f"{key} is set by"):
        parse_config(path)


@pytest.mark.realthreads
def test_a_replayed_run_follows_the_trace(write_config, tmp_path: Path) -> None:
    _, points = parse_config(_trace_config(write_config, tmp_path, speedup=20.0))
    res = run_point(points[0])
    assert [r.tokens for r in res.records] == [512, 1024, 1024]
    assert [r.as_row()["trace_line"] for r in res.records] == [2, 3, 5]
    assert all(r.status == "ok" for r in res.records)
    # Planned at 0, 0.1 and 0.2 s of run time on the trace clock, whatever the load;
    # handed to the pipeline never before that.
    assert [r.arrival_s for r in res.records] == [0.0, 0.1, 0.2]
    assert all(r.injected_s >= r.arrival_s - 1e-9 for r in res.records)
    assert all(r.inject_lag_ms >= 0 for r in res.records)
    assert res.summary["hit_ratio"] == pytest.approx(2560 / 5300)
    assert res.summary["skipped_requests"] == 2 and res.summary["requests"] == 3


@pytest.mark.realthreads
def test_planned_columns_are_nan_without_a_trace(write_config) -> None:
    _, points = parse_config(write_config({"workload": {"requests": 2}}))
    res = run_point(points[0])
    assert all(math.isnan(res.summary[k]) for k in PLANNED_METRICS)
    assert {r.as_row()["trace_line"] for r in res.records} == {""}  # an empty CSV cell


@pytest.mark.realthreads
def test_shipped_replay_config_runs_a_slice(tmp_path: Path) -> None:
    cfg, points = parse_config(ROOT / "configs" / "trace_replay.yaml")
    assert cfg.model.preset == "deepseek-v3" and cfg.model.regions == 61
    arrival = cfg.workload.arrival.model_copy(update={"limit": 40, "speedup": 500.0})
    workload = cfg.workload.model_copy(update={"arrival": arrival})
    point = points[1]
    fast = type(point)(
        point.index, point.axes, point.config.model_copy(update={"workload": workload})
    )
    res = run_point(fast)
    assert res.summary["trace_requests"] == 40 and 0 < res.summary["hit_ratio"] < 1
    assert res.summary["ok"] == res.summary["requests"] == len(res.records) > 0
    assert all(r.tokens % 128 == 0 for r in res.records)


def test_warm_lines_fill_the_store_untimed_and_the_window_follows(
    write_config, tmp_path: Path
) -> None:
    """Rows 0 and 1 warm the store (blocks 0-3); row 2 finds 3 blocks (1099 -> 1024 tokens),
    row 3 nothing, row 4 blocks 0 and 1; the clock starts at row 2's timestamp."""
    _, plan = _plan(
        _trace_config(write_config, tmp_path, speedup=2.0, cache={"warm": {"requests": 2}})
    )
    assert [r.tokens for r in plan] == [1024, 1024]
    assert [r.trace_line for r in plan] == [3, 5]
    assert [r.at_s for r in plan] == [0.0, 1.0]
    assert plan.stats == {
        "trace_requests": 3.0,
        "skipped_requests": 1.0,
        "hit_ratio": 2048 / (1100 + 300 + 2000),
        "block_hit_ratio": (3 + 0 + 2) / 8,
    }


def test_limit_counts_measured_lines_after_the_warm_ones(write_config, tmp_path: Path) -> None:
    path = _trace_config(write_config, tmp_path, limit=2, cache={"warm": {"requests": 2}})
    _, plan = _plan(path)
    assert [r.trace_line for r in plan] == [3]  # lines 3 and 4 measured; 4 loads nothing
    assert plan.stats["trace_requests"] == 2.0


def test_warming_every_line_leaves_nothing_to_measure(write_config, tmp_path: Path) -> None:
    path = _trace_config(write_config, tmp_path, cache={"warm": {"requests": 5}})
    with pytest.raises(ConfigError, match=r"all 5 lines read warm the store"):
        _plan(path)


def test_a_warm_share_counts_the_whole_traces_lines_and_the_limit_follows(
    write_config, tmp_path: Path
) -> None:
    """share 0.5 of 5 lines warms with 2 (rounded down), as {requests: 2} does, although
    the limit would have read only 3 lines; the window is the next limit lines."""
    by_share = _trace_config(
        write_config, tmp_path, speedup=2.0, limit=2, cache={"warm": {"share": 0.5}}
    )
    _, plan = _plan(by_share)
    assert [r.trace_line for r in plan] == [3]  # lines 3 and 4 measured; 4 loads nothing
    assert plan.stats["trace_requests"] == 2.0
    _, whole = _plan(_trace_config(write_config, tmp_path, cache={"warm": {"share": 0.5}}))
    _, counted = _plan(_trace_config(write_config, tmp_path, cache={"warm": {"requests": 2}}))
    assert [(r.trace_line, r.tokens, r.at_s) for r in whole] == [
        (r.trace_line, r.tokens, r.at_s) for r in counted
    ]
    assert whole.stats == counted.stats


@pytest.mark.parametrize(
    ("warm", "said"),
    [
        ({"share": 0.5, "requests": 2}, "give warm.requests or warm.share, not both"),
        ({"share": 1.0}, "less than 1"),
        ({"share": -0.1}, "greater than or equal to 0"),
        ({"share": "half"}, "valid number"),
    ],
)
def test_a_bad_warm_is_refused_in_one_line(write_config, tmp_path: Path, warm, said) -> None:
    path = _trace_config(write_config, tmp_path, cache={"warm": warm})
    with pytest.raises(ConfigError) as err:
        parse_config(path)
    text = str(err.value)
    assert said in text and "warm" in text and "\n" not in text.strip(), text


def test_load_prompt_loads_the_whole_prompt_whatever_is_stored(
    write_config, tmp_path: Path
) -> None:
    _, plan = _plan(_trace_config(write_config, tmp_path, load="prompt"))
    # every prompt but its last token, in whole 128-token chunks
    assert [r.tokens for r in plan] == [1152, 640, 1024, 256, 1920]
    # the hit ratio is still the store's: what load: hit would load
    assert plan.stats["hit_ratio"] == (512 + 1024 + 1024) / (1200 + 700 + 1100 + 300 + 2000)
    assert plan.stats["skipped_requests"] == 0.0
