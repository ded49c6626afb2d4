"""``kvsim validate``: the request count it prints is the one the run will plan."""

from __future__ import annotations

import math
from pathlib import Path

from sim.api.validate_config import requests_phrase
from sim.cli import main
from sim.workload.trace import write_trace

#: 5 trace requests; with 128-token chunks 3 of them load something (lines 2, 3, 5).
ROWS = [
    {"timestamp": 0, "input_length": 1200, "output_length": 1, "hash_ids": [0, 1, 2]},
    {"timestamp": 10, "input_length": 700, "output_length": 1, "hash_ids": [0, 3]},
    {"timestamp": 20, "input_length": 1100, "output_length": 1, "hash_ids": [0, 1, 2]},
    {"timestamp": 30, "input_length": 300, "output_length": 1, "hash_ids": [9]},
    {"timestamp": 40, "input_length": 2000, "output_length": 1, "hash_ids": [0, 1, 7, 8]},
]


def trace_config(write_config, tmp_path: Path, **arrival) -> Path:
    write_trace(tmp_path / "trace.jsonl", ROWS)
    return write_config(
        {
            "model": {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256},
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": "trace.jsonl", **arrival},
            },
        }
    )


def test_validate_prints_the_trace_replay_count(write_config, tmp_path, capsys) -> None:
    assert main(["validate", str(trace_config(write_config, tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "3 requests each (from trace: 5 read, 2 with nothing to load)" in out
    assert "40 requests" not in out  # workload.requests, which a trace ignores


def test_validate_follows_the_limit_per_point(write_config, tmp_path, capsys) -> None:
    path = trace_config(write_config, tmp_path)
    text = path.read_text() + "sweep:\n  workload.arrival.limit: [3, 5]\n"
    path.write_text(text)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2–3 requests per point (from trace: read and skipped per point below)" in out
    assert "(2 requests; 3 read, 1 skipped)" in out and "(3 requests; 5 read, 2 skipped)" in out


def test_validate_without_a_trace_prints_workload_requests(write_config, capsys) -> None:
    assert main(["validate", str(write_config())]) == 0
    assert "8 requests each, output" in capsys.readouterr().out


def test_requests_phrase() -> None:
    nan = {"trace_requests": math.nan}
    assert requests_phrase([40, 40], [nan, nan]) == "40 requests each"
    assert requests_phrase([10, 40], [nan, nan]) == "10–40 requests per point"


def test_validate_prints_the_planned_workload_of_a_warm_trace(
    write_config, tmp_path, capsys
) -> None:
    """Rows 0-1 warm the store; rows 2 and 4 load 1024 tokens each, row 3 nothing."""
    path = trace_config(write_config, tmp_path, cache={"warm": {"requests": 2}})
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("trace: "))
    assert "2 requests load something (of 3 measured, after 2 lines warming" in line
    assert "span 0.02 s at speed-up 1" in line
    assert f"hit ratio {2048 / 3400:.3f} of prompt tokens" in line
    assert "tokens loaded (load: hit) mean 1,024, p50 1,024, p99 1,024" in line


def test_validate_hints_at_warming_a_mostly_cold_window(write_config, tmp_path, capsys) -> None:
    """Five prompts of which only the last shares a head with an earlier one: 1 of 5 load."""
    path = trace_config(write_config, tmp_path)
    rows = [
        {"timestamp": 10 * i, "input_length": 1100, "output_length": 1, "hash_ids": ids}
        for i, ids in enumerate([[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11], [0, 1, 12]])
    ]
    write_trace(tmp_path / "trace.jsonl", rows)
    assert main(["validate", str(path)]) == 0
    hints = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("hint: ")]
    assert len(hints) == 1, hints
    assert "4 of 5 measured requests find nothing stored" in hints[0]
    assert "cache.warm.share or .requests; now 0 lines" in hints[0]


def test_validate_gives_no_warm_hint_when_most_requests_load(
    write_config, tmp_path, capsys
) -> None:
    assert main(["validate", str(trace_config(write_config, tmp_path))]) == 0
    assert "hint: " not in capsys.readouterr().out


def test_validate_hints_when_the_store_cannot_keep_up(write_config, capsys) -> None:
    # 9.2 GB a request (1,024 chunks × 61 regions × 147,456 B) at 25/s is 230 GB/s: the
    # default 100 GB/s store queues more and more, and every variant's latency is its queue.
    geometry = {"regions": 61, "block_len": [147456], "block_size": 128, "num_blocks": 16384}
    heavy = {
        "model": geometry,
        "workload": {
            "requests": 40,
            "arrival": {"kind": "poisson", "rate_rps": 25},
            "tokens": 131072,
        },
    }
    slow = write_config({**heavy, "store": {"bandwidth_gb_per_s": 100}})
    assert main(["validate", str(slow)]) == 0
    hint = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("hint:")]
    assert len(hint) == 1 and "on every point the store needs longer" in hint[0]
    assert "40 transfers of 8.58 GiB at 100 GB/s" in hint[0]
    assert "store.bandwidth_gb_per_s" in hint[0]
    fast = write_config({**heavy, "store": {"bandwidth_gb_per_s": 400}}, name="fast.yaml")
    assert main(["validate", str(fast)]) == 0
    assert "hint:" not in capsys.readouterr().out
