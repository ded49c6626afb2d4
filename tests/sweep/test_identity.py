"""results.json and output.percentiles: one object per point, units in the metric keys,
the run's metadata, and the configured percentiles in summary.csv too."""

from __future__ import annotations

import json

import pytest

from sim.cli import main
from sim.config import ConfigError, parse_config
from sim.rundir.outputs import read_csv
from sim.sweep.identity import config_hash


def test_results_json_has_points_metrics_and_metadata(write_config, tmp_path) -> None:
    path = write_config(
        {
            "output": {"dir": str(tmp_path / "out"), "percentiles": [50, 90, 95, 99, 99.9]},
            "sweep": {"connector.variant": ["scalar", "numpy"]},
        }
    )
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["format"] == "kvsim-results/1" and doc["status"] == "complete"
    assert doc["axes"] == ["variant", "workers", "mode"]
    assert [p["axes"] for p in doc["points"]] == [
        {"variant": "scalar", "workers": 2, "mode": "real"},
        {"variant": "numpy", "workers": 2, "mode": "real"},
    ]
    summary = read_csv(tmp_path / "out" / "summary.csv")
    for point, row in zip(doc["points"], summary, strict=True):
        m = point["metrics"]
        assert point["status"] == "ok" and point["repeats"] == 1
        assert m["requests"] == 8 and isinstance(m["requests"], int)
        for key in ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_p99.9_ms"):
            assert m[key] == pytest.approx(float(row[key]))
        assert m["latency_p90_ms"] <= m["latency_p95_ms"] <= m["latency_p99_ms"]
        assert m["latency_p99_ms"] <= m["latency_p99.9_ms"] <= m["latency_max_ms"]
        assert "throughput_rps" in m and "elapsed_s" in m
    # p95 sits between p90 and p99 in summary.csv, p99.9 after p99
    cols = list(summary[0])
    assert (
        cols.index("latency_p90_ms")
        < cols.index("latency_p95_ms")
        < cols.index("latency_p99_ms")
        < cols.index("latency_p99.9_ms")
    )
    meta = doc["metadata"]
    assert meta["config"]["name"] == "tiny" and meta["config_hash"]
    assert meta["versions"]["numpy"] and meta["versions"]["python"]
    assert "commit" in meta and meta["machine"]["cpu_count"]


def test_percentiles_are_validated_and_part_of_the_identity(write_config) -> None:
    bad = write_config({"output": {"percentiles": [50, 100]}})
    with pytest.raises(ConfigError, match=r"output\.percentiles.*above 0 and below 100"):
        parse_config(bad)
    plain = parse_config(write_config({}, name="a.yaml"))[0]
    base = parse_config(write_config({"output": {"percentiles": [99, 50]}}, name="b.yaml"))[0]
    more = parse_config(write_config({"output": {"percentiles": [99.9]}}, name="c.yaml"))[0]
    assert config_hash(plain) == config_hash(base)  # 50/90/99 are always there
    assert config_hash(plain) != config_hash(more)  # an extra column: a resume must not mix
