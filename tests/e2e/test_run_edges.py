"""Rough edges of ``kvsim run`` / ``validate`` found in a newcomer trial, one test each."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sim.cli import main
from sim.config import ConfigError, parse_config
from sim.process.lifeline import PARENT_PID_ENV
from sim.rundir.guard import record_owned
from sim.rundir.layout import read_status
from sim.rundir.outputs import write_json
from tests.conftest import slow_config


def _wait_for(predicate, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith("kvsim 0.")


def test_set_overrides_a_field_a_swept_field_and_an_axis(write_config) -> None:
    path = write_config({"sweep": {"connector.workers": [1, 4]}})
    _, points = parse_config(path, ["connector.workers=8"])
    assert [p.axes["workers"] for p in points] == [8]  # a swept field: that value only
    _, points = parse_config(path, ["store.latency_ms=1.5", "sweep.connector.workers=[1,2]"])
    assert [p.axes["workers"] for p in points] == [1, 2]
    assert points[0].config.store.latency_ms == 1.5
    with pytest.raises(ConfigError, match=r"\(--set store.concurrency\): store.concurrency"):
        parse_config(path, ["store.concurrency=lots"])
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        parse_config(path, ["connector.workers"])


@pytest.mark.parametrize("swept", [False, True], ids=["fixed", "swept"])
def test_a_bad_variant_from_set_blames_the_set_not_the_file_line(write_config, swept) -> None:
    over = {"sweep": {"connector.variant": ["scalar", "numpy"]}} if swept else {}
    path = write_config(over)
    for given in ("connector.variant=bogus", "sweep.connector.variant=[numpy, bogus]"):
        key = given.partition("=")[0]
        with pytest.raises(ConfigError) as err:
            parse_config(path, [given])
        message = str(err.value)
        assert message.startswith(f"{path} (--set {key}): connector.variant: unknown variant")
        assert f"{path}:" not in message  # no line of the file, which says numpy or scalar
    with pytest.raises(ConfigError, match=r"\(--set connector.options\): connector\.options"):
        parse_config(path, ["connector.options={hold_ms: 2.0}"])


def test_set_on_a_swept_variant_checks_its_options_against_that_variant(write_config) -> None:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    sets = ["connector.variant=synthetic", "connector.options={hold_ms: 2.0, free_ms: 0.0}"]
    _, points = parse_config(path, sets)
    assert [p.config.connector.variant for p in points] == ["synthetic"]
    assert points[0].config.connector.options == {"hold_ms": 2.0, "free_ms": 0.0}
    with pytest.raises(ConfigError, match=r"connector\.options"):  # scalar takes no options
        parse_config(path, ["connector.options={hold_ms: 2.0}"])


def test_validate_and_run_take_set(write_config, tmp_path, capsys) -> None:
    path = write_config({})
    assert main(["validate", str(path), "--set", "connector.variant=scalar"]) == 0
    out = capsys.readouterr().out
    assert "variant=scalar" in out and str(tmp_path / "out") in out  # the full output path
    assert main(["run", "-q", "--in-process", str(path), "--set", "workload.requests=3"]) == 0
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["overrides"] == ["workload.requests=3"]
    assert manifest["runs"]["done"] == 1


def test_bad_baseline_is_refused_before_any_work(write_config, tmp_path, capsys) -> None:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    assert main(["run", str(path), "--baseline", "numpyy"]) == 2
    err = capsys.readouterr().err
    assert "--baseline 'numpyy'" in err and "did you mean 'numpy'" in err
    assert "allowed: scalar, numpy" in err
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_dry_run_prints_the_full_path(write_config, tmp_path, capsys, monkeypatch) -> None:
    path = write_config({"output": {"dir": "rel/out"}})
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--dry-run", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich may wrap a long path
    assert str(tmp_path / "rel" / "out").replace("/", "") in out.replace("/", "").replace(" ", "")


def test_no_progress_line_before_an_output_dir_error(write_config, tmp_path, capsys) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("not kvsim's")
    assert main(["run", str(write_config({}))]) == 2
    err = capsys.readouterr().err
    assert "holds no kvsim run" in err and "0/0" not in err and "starting" not in err


def test_resume_removes_compare_and_figures_of_the_partial_run(write_config, tmp_path, capsys):
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    out = tmp_path / "out"
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    assert main(["compare", str(out), "--bootstrap", "100"]) == 0
    (out / "figures").mkdir()
    (out / "figures" / "latency_cdf.png").write_bytes(b"png")
    record_owned(out, "figures/latency_cdf.png")  # as `kvsim plot` records what it drew
    (out / "figures" / "notes.txt").write_text("the user's own file")
    (out / "figures" / "gil_hold.png").write_text("a user's file with a kvsim name")
    # make the second point unfinished, as an interrupted run leaves it
    second = sorted((out / "points").iterdir())[1] / "rep-0"
    (second / "status.json").unlink()
    m = json.loads((out / "manifest.json").read_text())
    write_json(out / "manifest.json", {**m, "status": "interrupted"})
    capsys.readouterr()
    assert main(["run", "-q", "--in-process", "--resume", str(path)]) == 0
    err = capsys.readouterr().err
    assert "removed compare.csv, compare.md, figures/latency_cdf.png" in err
    assert not (out / "compare.md").exists() and not (out / "figures" / "latency_cdf.png").exists()
    assert (out / "figures" / "notes.txt").read_text() == "the user's own file"
    assert (out / "figures" / "gil_hold.png").exists()  # not in the ledger: not kvsim's


def test_ctrl_c_message_says_how_to_resume(write_config, tmp_path) -> None:
    path = slow_config(write_config)
    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: any((tmp_path / "out" / "points").glob("*/rep-0")), 60)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "kvsim: interrupted; finished point runs are kept in" in err
    assert f"kvsim run {path} --resume" in err


def test_kill_9_of_the_parent_marks_the_point_interrupted(write_config, tmp_path) -> None:
    path = slow_config(write_config)
    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rep = None
    try:

        def started() -> bool:
            nonlocal rep
            logs = list((tmp_path / "out" / "points").glob("*/rep-0/stderr.log"))
            rep = logs[0].parent if logs else None
            return rep is not None

        assert _wait_for(started, 60)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _wait_for(lambda: read_status(rep) is not None, 120), "the child never ended"
    finally:
        if proc.poll() is None:
            proc.kill()
    status = read_status(rep)
    assert status["status"] == "interrupted", status
    assert "went away" in status["error"]


def test_a_child_whose_parent_died_before_it_started_marks_its_point_interrupted(
    write_config, tmp_path
) -> None:
    """A kill -9 of the parent while the child's interpreter starts comes before the
    child can ask to die with it: the pid the parent gave tells it, and the point is
    marked interrupted at once rather than run for nobody."""
    path = write_config()  # any point: its child never runs it
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    rep = sorted((tmp_path / "out" / "points").iterdir())[0] / "rep-0"
    (rep / "status.json").unlink()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that is nobody's parent now
    env = {**os.environ, PARENT_PID_ENV: str(dead.pid)}
    child = [sys.executable, "-m", "sim.sweep.child", str(rep / "spec.json")]
    done = subprocess.run(child, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    status = read_status(rep)
    assert status["status"] == "interrupted", status
    assert "went away" in status["error"]
