"""Sweeps: a process and a directory per point run, resume, crash isolation, dry run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim.cli import main
from sim.config import parse_config
from sim.events import SweepEvents
from sim.rundir.guard import RunDirError, prepare_run_dir
from sim.rundir.layout import read_status, rep_runs
from sim.rundir.outputs import read_csv
from sim.sweep.experiment import plan_sweep, run_experiment

pytestmark = pytest.mark.realthreads

TWO_POINTS = {"sweep": {"connector.variant": ["scalar", "numpy"]}}


def _run(path: Path, out: Path, **kw):
    cfg, points = parse_config(path)
    prepare_run_dir(out, force=False, resume=kw.get("resume", False))
    return cfg, points, run_experiment(cfg, points, path, out, **kw)


def test_each_point_run_gets_its_own_process_and_directory(write_config, tmp_path) -> None:
    path = write_config(TWO_POINTS)
    out = tmp_path / "out"
    cfg, points, res = _run(path, out)
    reps = rep_runs(out, points, cfg.repeats)
    statuses = [read_status(r.dir) for r in reps]
    assert [s["status"] for s in statuses] == ["ok", "ok"]
    pids = {s["pid"] for s in statuses}
    assert len(pids) == 2 and os.getpid() not in pids
    for r in reps:
        names = {p.name for p in r.dir.iterdir()}
        assert {"requests.csv", "summary.csv", "status.json", "stderr.log", "spec.json"} <= names
        assert len(read_csv(r.dir / "requests.csv")) == 8
    assert len(read_csv(out / "requests.csv")) == 16
    assert [r["variant"] for r in read_csv(out / "summary.csv")] == ["scalar", "numpy"]
    assert res.failed_points == []


def test_resume_skips_finished_points_and_redoes_the_rest(write_config, tmp_path) -> None:
    path = write_config(TWO_POINTS)
    out = tmp_path / "out"
    cfg, points, _ = _run(path, out)
    first, second = rep_runs(out, points, cfg.repeats)
    kept = read_status(first.dir)
    # Simulate a sweep killed while the second point ran: no marker, half a file.
    (second.dir / "status.json").unlink()
    (second.dir / "requests.csv").write_text("request_id\n1\n")
    assert [r.state for r in plan_sweep(cfg, points, out).runs] == ["done", "pending"]

    started: list[str] = []
    events = SweepEvents(started=lambda rep, host: started.append(rep.point.label))
    res = run_experiment(cfg, points, path, out, events, resume=True)
    assert started == [second.point.label]
    assert res.skipped == 1
    assert read_status(first.dir) == kept  # untouched: same pid, same timing
    assert read_status(second.dir)["status"] == "ok"
    assert len(read_csv(second.dir / "requests.csv")) == 8
    assert len(read_csv(out / "requests.csv")) == 16
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["sessions"]) == 2


def test_resume_refuses_a_changed_config(write_config, tmp_path) -> None:
    path = write_config(TWO_POINTS)
    out = tmp_path / "out"
    _run(path, out)
    changed = write_config({**TWO_POINTS, "workload": {"requests": 9}})
    cfg, points = parse_config(changed)
    with pytest.raises(RunDirError, match=r"workload\.requests: 8 → 9"):
        run_experiment(cfg, points, changed, out, resume=True)
    assert main(["run", "-q", "--resume", str(changed)]) == 2


def _crashy_child(tmp_path: Path) -> list[str]:
    """A child command that dies hard on point 0 and raises inside the point on point 1."""
    script = tmp_path / "crashy_child.py"
    script.write_text(
        "import json, os, sys\n"
        "spec = json.load(open(sys.argv[1]))\n"
        "if spec['index'] == 0:\n"
        "    print('about to crash', file=sys.stderr)\n"
        "    sys.stderr.flush()\n"
        "    os._exit(3)\n"
        "if spec['index'] == 1:\n"
        "    import sim.runtime.point\n"
        "    def boom(*a, **k):\n"
        "        raise RuntimeError('variant exploded')\n"
        "    sim.runtime.point.run_point = boom\n"
        "from sim.sweep.child import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return [sys.executable, str(script)]


def test_a_crashing_child_fails_its_point_and_the_sweep_goes_on(
    write_config, tmp_path, monkeypatch, capsys
) -> None:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"], "seed": [1, 2]}})
    monkeypatch.setattr("sim.sweep.runner.CHILD_COMMAND", tuple(_crashy_child(tmp_path)))
    assert main(["run", str(path)]) == 1
    captured = capsys.readouterr()
    out = tmp_path / "out"
    summary = read_csv(out / "summary.csv")
    assert [r["status"] for r in summary] == ["failed", "failed", "ok", "ok"]
    assert "child exited with code 3: about to crash" in summary[0]["error"]
    assert summary[1]["error"] == "RuntimeError: variant exploded"
    assert summary[2]["ok"] == "8" and summary[3]["ok"] == "8"
    assert "variant exploded" in captured.err and "stderr.log" in captured.err
    assert captured.out.count("FAILED") == 2  # the end table says so
    log = next((out / "points").glob("001_*/rep-0/stderr.log")).read_text()
    assert "Traceback" in log and "variant exploded" in log
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"


def test_dry_run_lists_points_and_writes_nothing(write_config, tmp_path, capsys) -> None:
    path = write_config({**TWO_POINTS, "repeats": 2})
    out = tmp_path / "out"
    assert main(["run", "--dry-run", str(path)]) == 0
    text = capsys.readouterr().out
    assert "variant=scalar,workers=2" in text and "variant=numpy,workers=2" in text
    assert text.count("pending") == 4 and "4 point run(s) to do" in text
    assert not out.exists()

    cfg, points = parse_config(path)
    prepare_run_dir(out, force=False)
    run_experiment(cfg, points, path, out, isolate=False)
    (rep_runs(out, points, 2)[3].dir / "status.json").unlink()
    assert main(["run", "--dry-run", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.count("done") == 3 and text.count("pending") == 1, text
    assert "1 of 4 point run(s) to do" in text


def test_force_and_resume_together_are_refused(write_config, capsys) -> None:
    path = write_config()
    with pytest.raises(SystemExit):
        main(["run", "--force", "--resume", str(path)])
    assert "not allowed with argument" in capsys.readouterr().err


def _wait_for(predicate, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_mid_sweep_then_resume_completes_without_redoing(write_config, tmp_path) -> None:
    # Slow enough points (about a second each) that the sweep is caught mid-way.
    path = write_config(
        {
            "workload": {"requests": 6, "arrival": {"kind": "poisson", "rate_rps": 6}},
            "sweep": {"seed": [1, 2, 3]},
        }
    )
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = out / "points"
    try:
        # Interleaved rounds run the points in a seeded order: wait for any of them.
        assert _wait_for(
            lambda: any(read_status(d) for d in first.glob("*/rep-0")), timeout_s=60
        ), "no point ever finished"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    cfg, points = parse_config(path)
    states = [r.state for r in plan_sweep(cfg, points, out).runs]
    assert 1 <= states.count("done") < 3, states
    reps = rep_runs(out, points, 1)
    kept = {i: read_status(reps[i].dir) for i, s in enumerate(states) if s == "done"}

    done = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert {i: read_status(reps[i].dir) for i in kept} == kept
    assert [r.state for r in plan_sweep(cfg, points, out).runs] == ["done"] * 3
    assert len(read_csv(out / "requests.csv")) == 18


#: A tiny trace (3 of its 5 requests load something with 128-token chunks).
TRACE_ROWS = [
    {"timestamp": 0, "input_length": 1200, "output_length": 1, "hash_ids": [0, 1, 2]},
    {"timestamp": 10, "input_length": 700, "output_length": 1, "hash_ids": [0, 3]},
    {"timestamp": 20, "input_length": 1100, "output_length": 1, "hash_ids": [0, 1, 2]},
    {"timestamp": 30, "input_length": 300, "output_length": 1, "hash_ids": [9]},
    {"timestamp": 40, "input_length": 2000, "output_length": 1, "hash_ids": [0, 1, 7, 8]},
]


def _trace_experiment(write_config, tmp_path: Path) -> Path:
    from sim.workload.trace import write_trace

    write_trace(tmp_path / "trace.jsonl", TRACE_ROWS)
    return write_config(
        {
            "model": {"regions": 4, "block_len": [1024], "block_size": 128, "num_blocks": 256},
            "workload": {
                "requests": 40,
                "tokens": 131072,
                "arrival": {"kind": "trace", "path": "trace.jsonl", "speedup": 50.0},
            },
        }
    )


def test_resume_refuses_an_edited_trace_and_names_the_file(write_config, tmp_path) -> None:
    """The config records the trace by path; its contents are part of the identity too."""
    path = _trace_experiment(write_config, tmp_path)
    out = tmp_path / "out"
    cfg, _points, _ = _run(path, out, isolate=False)
    assert [r["trace_line"] for r in read_csv(out / "requests.csv")] == ["2", "3", "5"]
    plan_sweep(*parse_config(path), out).check_resumable(out)  # unchanged: resumable
    assert plan_sweep(*parse_config(path), out).difference == ""

    from sim.workload.trace import write_trace

    write_trace(tmp_path / "trace.jsonl", [*TRACE_ROWS, TRACE_ROWS[2] | {"timestamp": 50}])
    cfg, points = parse_config(path)  # same config text, edited trace
    msg = r"workload\.arrival\.path: the file's contents changed \(sha256:\w{12} → sha256:\w{12}\)"
    plan = plan_sweep(cfg, points, out)
    with pytest.raises(RunDirError, match=msg):
        plan.check_resumable(out)
    assert "contents changed" in plan.difference and len(plan.pending) == 1
    assert main(["run", "-q", "--resume", str(path)]) == 2


def test_identity_hashes_every_data_file_and_only_when_there_is_one(write_config, tmp_path) -> None:
    from sim.sweep.identity import config_hash, config_identity, data_files, first_difference

    plain, _ = parse_config(write_config())
    assert "data_files" not in config_identity(plain)  # old runs keep their hash

    (tmp_path / "model").mkdir()
    hf = tmp_path / "model" / "config.json"
    hf.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "hidden_size": 256,
                "torch_dtype": "bfloat16",
            }
        )
    )
    (tmp_path / "lengths.jsonl").write_text(
        json.dumps({"timestamp": 0, "input_length": 900, "hash_ids": [1]}) + "\n"
    )
    text = (
        "name: files\n"
        "model: {hf_config: model, block_size: 16, num_blocks: 256}\n"
        "workload: {requests: 4, tokens: {dist: empirical, path: lengths.jsonl}}\n"
    )
    path = write_config(text=text, name="files.yaml")
    cfg, _ = parse_config(path)
    assert [f for f, _ in data_files(cfg)] == ["workload.tokens.path", "model.hf_config"]
    before = config_identity(cfg)
    assert set(before["data_files"]) == {"workload.tokens.path", "model.hf_config"}
    hash_before = config_hash(cfg)
    hf.write_text(hf.read_text().replace('"hidden_size": 256', '"hidden_size": 256 '))
    cfg2, _ = parse_config(path)  # same geometry, different bytes
    assert cfg2.model == cfg.model and config_hash(cfg2) != hash_before
    assert first_difference(before, config_identity(cfg2)).startswith(
        "model.hf_config: the file's contents changed"
    )
