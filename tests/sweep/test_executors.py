"""Executors without a cluster: inputs and results travel by content and are verified,
the executor choice is checked, every point names its host, and results of other code
are refused. (The Ray executor against a real cluster: tests/e2e/test_ray_executor.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.cli import main
from sim.config import parse_config
from sim.rundir.guard import prepare_run_dir
from sim.rundir.layout import SPEC_FILE, read_status, rep_runs
from sim.rundir.outputs import read_csv
from sim.sweep.executors import ExecutorChoice, ExecutorError, SweepEvents
from sim.sweep.executors.ray_driver import RayExecutor, _Flight
from sim.sweep.executors.transfer import (
    TransferError,
    collect_outputs,
    digest,
    place_inputs,
    read_inputs,
    write_outputs,
)
from sim.sweep.experiment import run_experiment
from sim.sweep.hostinfo import HOST_NAME_ENV, code_hash
from sim.sweep.spec import PointSpec, write_spec
from sim.workload.trace import write_trace

ROWS = [
    {"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [0, 3]},
    {"timestamp": 2.5, "input_length": 300, "output_length": 0, "hash_ids": [4]},
]


def _trace_run(write_config, tmp_path: Path):
    write_trace(tmp_path / "trace.jsonl", ROWS)
    path = write_config(
        {
            "model": {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256},
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": "trace.jsonl"},
            },
        }
    )
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    prepare_run_dir(out, force=False)
    (rep,) = rep_runs(out, points, cfg.repeats)
    rep.dir.mkdir(parents=True)
    spec = json.loads(write_spec(rep, ["variant", "workers"], str(path)).read_text())
    return cfg, points, out, rep, spec


def _events(log: list) -> SweepEvents:
    return SweepEvents(
        started=lambda rep, host: log.append(("started", rep.label, host)),
        progress=lambda rep, done, total: None,
        finished=lambda rep, outcome: log.append(("finished", rep.label, outcome)),
        note=lambda text: log.append(("note", text)),
    )


def test_data_files_travel_by_content_and_the_point_stays_the_same(write_config, tmp_path):
    _cfg, _points, _out, _rep, spec = _trace_run(write_config, tmp_path)
    inputs = read_inputs(spec)
    assert [(f.field, f.name) for f in inputs] == [("workload.arrival.path", "trace.jsonl")]
    assert inputs[0].sha256 == spec["data_files"]["workload.arrival.path"]
    placed = place_inputs(spec, inputs, tmp_path / "host" / "data")
    new_path = Path(placed["config"]["workload"]["arrival"]["path"])
    assert new_path.parent.parent == tmp_path / "host" / "data"
    assert new_path.read_bytes() == (tmp_path / "trace.jsonl").read_bytes()
    point = PointSpec.from_json(placed)
    point.check()  # same contents under the new path: the same point
    assert point.data_files == spec["data_files"] and point.axes == spec["axes"]


def test_an_input_edited_or_damaged_on_the_way_is_refused(write_config, tmp_path):
    _cfg, _points, _out, _rep, spec = _trace_run(write_config, tmp_path)
    (inp,) = read_inputs(spec)
    bad = type(inp)(inp.field, inp.name, inp.as_dir, inp.sha256, inp.data + b"\n")
    with pytest.raises(TransferError, match=r"workload.arrival.path: trace.jsonl arrived damaged"):
        place_inputs(spec, [bad], tmp_path / "host")
    (tmp_path / "trace.jsonl").write_text("{}\n")
    with pytest.raises(TransferError, match=r"workload.arrival.path: .*changed since the sweep"):
        read_inputs(spec)


def test_results_are_checked_and_written_status_last(write_config, tmp_path):
    _cfg, _points, _out, rep, _spec = _trace_run(write_config, tmp_path)
    host = tmp_path / "hostrep"
    host.mkdir()
    (host / "requests.csv").write_text("a\n1\n")
    (host / "status.json").write_text(json.dumps({"status": "ok", "elapsed_s": 1.0}))
    (host / "spec.json").write_text("{}")  # the host's copy: never sent back
    outputs = collect_outputs(host)
    assert sorted(outputs) == ["requests.csv", "status.json"]
    status = write_outputs(rep.dir, outputs, {"executor": "ray"})
    assert status == {"status": "ok", "elapsed_s": 1.0, "executor": "ray"}
    assert read_status(rep.dir) == status and (rep.dir / SPEC_FILE).read_text() != "{}"
    for name, files in (
        ("../evil.csv", {"../evil.csv": (digest(b"x"), b"x")}),
        ("spec.json", {"spec.json": (digest(b"x"), b"x")}),
    ):
        with pytest.raises(TransferError, match="not a file a point writes"):
            write_outputs(rep.dir, files, {})
        assert not (rep.dir.parent / name).exists()
    damaged = {"summary.csv": (digest(b"x"), b"y"), "status.json": outputs["status.json"]}
    with pytest.raises(TransferError, match=r"summary\.csv arrived damaged"):
        write_outputs(rep.dir, damaged, {})
    assert not (rep.dir / "summary.csv").exists()


def test_results_of_other_code_are_not_combined(write_config, tmp_path):
    _cfg, _points, _out, rep, _spec = _trace_run(write_config, tmp_path)
    host = tmp_path / "hostrep"
    host.mkdir()
    (host / "summary.csv").write_text("x\n1\n")
    (host / "status.json").write_text(json.dumps({"status": "ok"}))
    log: list = []
    ex = RayExecutor(prepare=lambda r: r.dir / SPEC_FILE)
    result = {
        "outputs": collect_outputs(host),
        "host": "elsewhere",
        "node_id": "n1",
        "returncode": 0,
        "started_unix": 1.0,
        "ended_unix": 2.0,
        "code_hash": "sha256:" + "0" * 64,
    }
    ex._write(_Flight(rep, 1, "0:0:1"), result, _events(log))
    st = read_status(rep.dir)
    assert st["status"] == "failed" and "runs different kvsim code" in st["error"]
    assert log[-1][0] == "finished" and log[-1][2].status == "failed"
    ex._write(_Flight(rep, 1, "0:0:1"), {**result, "code_hash": code_hash()}, _events(log))
    assert read_status(rep.dir)["status"] == "ok" and read_status(rep.dir)["attempts"] == 1


def test_executor_choice_is_checked() -> None:
    assert ExecutorChoice().name == "local"
    with pytest.raises(ExecutorError, match="allowed: local, ray"):
        ExecutorChoice("dask")
    with pytest.raises(ExecutorError, match="retries -1"):
        ExecutorChoice("ray", retries=-1)
    with pytest.raises(ExecutorError, match="only meaningful with the ray executor"):
        ExecutorChoice("local", address="10.0.0.1:6379")


def test_cli_refuses_in_process_with_ray(write_config, capsys) -> None:
    path = write_config()
    assert main(["run", str(path), "--executor", "ray", "--in-process"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--in-process" in err[0] and "--executor ray" in err[0]


@pytest.mark.realthreads
def test_every_point_names_its_host(write_config, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(HOST_NAME_ENV, "bench-7")
    path = write_config({"sweep": {"connector.workers": [1, 2]}})
    cfg, points = parse_config(path)
    out = tmp_path / "out"
    prepare_run_dir(out, force=False)
    log: list = []
    res = run_experiment(
        cfg, points, path, out, SweepEvents(started=lambda rep, host: log.append(host))
    )
    assert res.failed_points == [] and log == ["local", "local"]
    for rep in rep_runs(out, points, cfg.repeats):
        host = read_status(rep.dir)["host"]
        assert host["name"] == "bench-7" and host["code_hash"] == code_hash()
        assert host["cpu_count"] and host["python"] and "numpy" in host["packages"]
        assert set(host["noise_floor"]) == {"noise_floor_p50_ms", "noise_floor_p99_ms"}
    assert {r["host"] for r in read_csv(out / "summary_repeats.csv")} == {"bench-7"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sessions"][-1]["executor"] == "local"


def test_recorded_checksums_name_the_drivers_spec(write_config, tmp_path):
    """A child that records its files' checksums (spec included) checked the host's spec
    copy; in the run directory the record must hold for the driver's spec."""
    import hashlib

    _cfg, _points, _out, rep, _spec = _trace_run(write_config, tmp_path)
    host = tmp_path / "hostrep"
    host.mkdir()
    (host / "requests.csv").write_text("a\n1\n")
    records = {
        "spec.json": {"size": 2, "sha256": hashlib.sha256(b"{}").hexdigest()},
        "requests.csv": {"size": 4, "sha256": hashlib.sha256(b"a\n1\n").hexdigest()},
    }
    (host / "status.json").write_text(json.dumps({"status": "ok", "files": records}))
    status = write_outputs(rep.dir, collect_outputs(host), {})
    for name, rec in status["files"].items():
        data = (rep.dir / name).read_bytes()
        assert rec == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def test_no_cluster_is_one_line_and_touches_no_run_directory(write_config, tmp_path, capsys):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'kvsim[ray]')")
    path = write_config()
    out = tmp_path / "never"
    # Port 1 on loopback: nothing listens there, so the probe is refused at once.
    args = ["run", str(path), "--out", str(out), "--executor", "ray", "--address", "127.0.0.1:1"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no Ray cluster answers at 127.0.0.1:1" in err[0], err
    assert not out.exists()
