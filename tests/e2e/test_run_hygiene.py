"""What a run leaves behind: files that follow the umask, ``~`` expanded, no stray
directories, children that print no warnings, and signals that never leave a point
without a status (a second Ctrl-C during cleanup, a kill -9 of the parent)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sim.cli import main
from sim.process.signals import deferred_signals
from sim.rundir.layout import LOG_FILE, MANIFEST_FILE, REQUESTS_FILE, verify_rep
from tests.conftest import slow_config

pytestmark = pytest.mark.realthreads


def _wait_for(predicate, timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_result_files_follow_the_umask(write_config, tmp_path, mask) -> None:
    path = write_config()
    old = os.umask(mask)
    try:
        assert main(["run", "-q", "--in-process", str(path)]) == 0
    finally:
        os.umask(old)
    out = tmp_path / "out"
    for f in (out / REQUESTS_FILE, out / MANIFEST_FILE, *out.glob("points/*/rep-0/*.csv")):
        assert stat.S_IMODE(f.stat().st_mode) == 0o666 & ~mask, f


def test_tilde_expands_and_dotdot_leaves_no_stray_directory(
    write_config, tmp_path, monkeypatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    path = write_config({"output": {"dir": "~/kvsim-runs/x"}})
    assert main(["run", "-q", "--in-process", str(path)]) == 0
    assert (home / "kvsim-runs" / "x" / REQUESTS_FILE).is_file()
    assert not (work / "~").exists()
    assert main(["run", "-q", "--in-process", str(path), "--out", "a/b/../../out2"]) == 0
    assert (work / "out2" / REQUESTS_FILE).is_file()
    assert sorted(p.name for p in work.iterdir()) == ["out2"]  # no a/ or a/b/ left


def test_children_print_no_warnings(write_config, tmp_path) -> None:
    path = write_config({"sweep": {"connector.variant": ["scalar", "numpy"]}})
    assert main(["run", "-q", str(path)]) == 0
    logs = list((tmp_path / "out" / "points").glob(f"*/rep-0/{LOG_FILE}"))
    assert len(logs) == 2
    for log in logs:
        assert log.read_text() == "", log.read_text()


def test_signals_held_during_cleanup_are_counted_not_raised() -> None:
    before = signal.getsignal(signal.SIGINT)
    with deferred_signals() as arrived:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        assert _wait_for(lambda: len(arrived) == 2, 5)
    assert arrived == [signal.SIGINT, signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) is before


def _started_rep(out: Path) -> Path | None:
    logs = list((out / "points").glob(f"*/rep-0/{LOG_FILE}"))
    return logs[0].parent if logs else None


def test_a_second_ctrl_c_during_cleanup_still_leaves_a_status(write_config, tmp_path) -> None:
    path = slow_config(write_config)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(lambda: _started_rep(out) is not None, 60)
        started = _started_rep(out)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # the impatient second press, during cleanup
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    # The run that was going when Ctrl-C came has a status; on a loaded machine the next
    # one's directory may already exist, never started: pending, run again by --resume.
    assert verify_rep(started)[0] in ("done", "interrupted"), verify_rep(started)
    for rep in (out / "points").glob("*/rep-*"):
        assert verify_rep(rep)[0] in ("done", "interrupted", "pending"), (rep, verify_rep(rep))
    assert json.loads((out / MANIFEST_FILE).read_text())["status"] == "interrupted"


def test_kill_9_of_the_parent_ends_the_child_and_marks_it_interrupted(
    write_config, tmp_path
) -> None:
    path = slow_config(write_config)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _wait_for(lambda: _started_rep(out) is not None, 60)
        rep = _started_rep(out)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _wait_for(lambda: verify_rep(rep)[0] != "pending", 60), "the child never ended"
    finally:
        if proc.poll() is None:
            proc.kill()
    state, why = verify_rep(rep)
    assert state == "interrupted" and "went away" in why, (state, why)


def test_ctrl_c_while_the_child_is_being_started_still_leaves_a_status(
    write_config, tmp_path, monkeypatch
) -> None:
    """A Ctrl-C that lands inside Popen (a loaded machine makes that window wide) is
    held until the child exists, then stops it: the point is interrupted, not left
    without a status and a child running on."""
    from sim.config import parse_config
    from sim.rundir.guard import prepare_run_dir
    from sim.rundir.layout import rep_runs
    from sim.sweep import runner

    _cfg, points = parse_config(write_config({"workload": {"requests": 4}}))
    out = tmp_path / "out"
    prepare_run_dir(out, force=False)
    rep = rep_runs(out, points, 1)[0]
    real_popen = subprocess.Popen
    started: list[subprocess.Popen] = []

    def popen_hit_by_ctrl_c(*args, **kwargs):  # type: ignore[no-untyped-def]
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while the child starts
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        return proc

    monkeypatch.setattr(runner.subprocess, "Popen", popen_hit_by_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        runner.run_rep(rep, out, [])
    assert started and started[0].poll() is not None  # the child was stopped
    assert verify_rep(rep.dir)[0] == "interrupted", verify_rep(rep.dir)
