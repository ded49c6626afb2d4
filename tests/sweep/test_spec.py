"""The child's spec carries the resolved config: in-memory configs run in isolated children."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from sim.config import ExperimentConfig, expand_points, parse_config
from sim.rundir.guard import prepare_run_dir
from sim.rundir.layout import read_status, rep_runs
from sim.rundir.outputs import read_csv
from sim.sweep.child import execute
from sim.sweep.experiment import run_experiment
from sim.sweep.spec import SPEC_VERSION, PointSpec, SpecError, read_spec, write_spec

pytestmark = pytest.mark.realthreads

TINY = {
    "name": "tiny",
    "seed": 3,
    "repeats": 1,  # one run a point (the default is 3, for verdicts)
    "model": {"regions": 4, "block_len": [1024, 2048], "block_size": 16, "num_blocks": 256},
    "workload": {"requests": 8, "arrival": {"kind": "poisson", "rate_rps": 400}, "tokens": 160},
    "connector": {"variant": "numpy", "workers": 2},
    "store": {"bandwidth_gb_per_s": 50, "latency_ms": 0.2, "concurrency": 2},
}

ROWS = [
    {"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 3]},
    {"timestamp": 2.5, "input_length": 300, "output_length": 0, "hash_ids": [4]},
]


def _in_memory(raw: dict) -> tuple[ExperimentConfig, list]:
    cfg = ExperimentConfig.model_validate(raw)
    return cfg, expand_points(raw, lambda r, where: ExperimentConfig.model_validate(r))


def test_a_config_built_in_memory_runs_in_child_processes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # no YAML anywhere: nothing for a child to re-read
    raw = {**TINY, "sweep": {"connector.variant": ["scalar", "numpy"]}}
    cfg, points = _in_memory(raw)
    out = tmp_path / "out"
    prepare_run_dir(out, force=False)
    res = run_experiment(cfg, points, None, out)
    assert res.failed_points == []
    reps = rep_runs(out, points, cfg.repeats)
    pids = {read_status(r.dir)["pid"] for r in reps}
    assert len(pids) == 2 and os.getpid() not in pids
    spec = json.loads((reps[0].dir / "spec.json").read_text())
    assert "config_path" not in spec and spec["source"] == ""
    assert spec["config"]["connector"]["variant"] == "scalar"
    assert spec["columns"] == ["variant", "workers", "mode"]
    assert [r["variant"] for r in read_csv(out / "summary.csv")] == ["scalar", "numpy"]
    assert len(read_csv(out / "requests.csv")) == 16
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config_path"] == "" and manifest["status"] == "complete"


def test_the_spec_round_trips_every_shipped_config() -> None:
    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "configs").glob("*.yaml")):
        _cfg, points = parse_config(path)
        for p in points:
            rep = rep_runs(Path("/nonexistent"), [p], 1)[0]
            spec = PointSpec.for_rep(rep, ["variant", "workers"], path)
            again = PointSpec.from_json(json.loads(json.dumps(spec.to_json())))
            assert again == spec, (path, p.index)
            again.check()


def test_an_edited_data_file_fails_the_point_and_names_the_field(write_config, tmp_path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    raw = {**TINY, "workload": {"arrival": {"kind": "trace", "path": "t.jsonl"}}}
    path = write_config(text=yaml.safe_dump(raw))
    _cfg, points = parse_config(path)
    rep = rep_runs(tmp_path / "out", points, 1)[0]
    rep.dir.mkdir(parents=True)
    write_spec(rep, ["variant", "workers"], path)
    spec = read_spec(rep.dir)
    assert spec.config.workload.arrival.path == str(trace)  # resolved, absolute
    assert spec.data_files["workload.arrival.path"].startswith("sha256:")
    spec.check()
    trace.write_text(json.dumps(ROWS[0]) + "\n")
    with pytest.raises(SpecError, match=r"workload\.arrival\.path: the file's contents changed"):
        execute(rep.dir)
    assert not (rep.dir / "requests.csv").exists()


def test_a_spec_of_another_version_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(json.dumps({"config_path": "x.yaml", "index": 0}))
    with pytest.raises(SpecError, match=f"spec version 1 is not {SPEC_VERSION}"):
        read_spec(tmp_path)
    (tmp_path / "spec.json").write_text("{not json")
    with pytest.raises(SpecError, match="cannot read the spec"):
        read_spec(tmp_path)
    bad = {"version": SPEC_VERSION, "config": {"name": "x", "seed": -1}}
    (tmp_path / "spec.json").write_text(json.dumps(bad))
    with pytest.raises(SpecError, match=r"spec config: seed: "):
        read_spec(tmp_path)
