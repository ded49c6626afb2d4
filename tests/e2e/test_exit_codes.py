"""The exit code always tells: a sweep with a point run not ``ok`` exits 1, whatever
stopped that run (SIGTERM or SIGINT to its child), with ``-q`` too, and says so in one
line on stderr; SIGTERM to kvsim itself exits 143 with the same words as Ctrl-C.

Every wait here is bounded; a test that fails kills what it started (by its tag).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sim.cli import main
from sim.rundir.layout import MANIFEST_FILE, read_status
from tests.conftest import slow_config
from tests.procscan import (
    TAG_ENV,
    catches,
    children,
    command_line,
    kill_tagged,
    new_tag,
    tagged,
    wait_for,
)

pytestmark = pytest.mark.realthreads


def _start(cmd: list[str], tag: str, **kw) -> subprocess.Popen[str]:
    env = {**os.environ, TAG_ENV: tag, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kw
    )


def _first_child(proc: subprocess.Popen[str]) -> int:
    """The first point's child, once it handles SIGTERM (then it marks a stop interrupted)."""
    found: list[int] = []
    assert wait_for(lambda: found.extend(children(proc.pid, "sim.sweep.child")) or found, 60)
    assert wait_for(lambda: catches(found[0], signal.SIGTERM), 60)
    return found[0]


def _run_signalled(
    cmd: list[str],
    tag: str,
    act: Callable[[subprocess.Popen[str]], object],
    timeout_s: float = 120,
    **kw: Any,
) -> tuple[subprocess.Popen[str], str, str]:
    """Start ``cmd``, let ``act(proc)`` signal it, wait (bounded) for its end; its stdout
    and stderr. Whatever happens, nothing the run started is left running."""
    proc = _start(cmd, tag, **kw)
    try:
        act(proc)
        out, err = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_tagged(tag)
    return proc, out, err


def _signal_group_ignoring(path: Path, sig: int) -> tuple[subprocess.Popen[str], str, str]:
    """Run ``path`` in a session of its own with ``sig`` ignored (a script's background
    job ignores SIGINT; ``nohup`` ignores SIGHUP), and send ``sig`` to the whole group
    once the first point has started."""

    def ignore() -> None:
        signal.signal(sig, signal.SIG_IGN)

    def to_group(proc: subprocess.Popen[str]) -> None:
        _first_child(proc)
        os.killpg(proc.pid, sig)

    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    return _run_signalled(cmd, new_tag(), to_group, start_new_session=True, preexec_fn=ignore)


def _stop_first_point(
    path: Path, out: Path, sig: int
) -> tuple[subprocess.Popen[str], str, str, bool]:
    """Run ``path`` into ``out``, send ``sig`` to the first point's child; its output,
    and whether the signal landed while that point ran.

    A test process starved on a loaded machine can find the child, then get round to
    signalling it only after its point ended (a zombie takes the signal and does
    nothing): the run is then complete because the test was late, which says nothing
    about kvsim. The point's ``ok`` status records when it ended, so that case is told
    apart from a stop that was lost.
    """
    tag = new_tag()
    sent: dict[str, Any] = {}

    def stop(proc: subprocess.Popen[str]) -> None:
        child = _first_child(proc)
        sent["rep_dir"] = Path(command_line(child).split()[-1]).parent
        sent["unix"] = time.time()
        os.kill(child, sig)

    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path), "--out", str(out)]
    proc, out_text, err = _run_signalled(cmd, tag, stop)
    rep_dir, sent_unix = sent["rep_dir"], sent["unix"]
    assert wait_for(lambda: not tagged(tag), 30), "a process the run started survived"
    status = read_status(rep_dir) or {}
    late = status.get("status") == "ok" and float(status.get("ended_unix", 0)) < sent_unix
    return proc, out_text, err, not late


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_a_points_child_makes_the_run_exit_1(write_config, tmp_path, sig) -> None:
    path = slow_config(write_config)
    for attempt in range(3):  # a retry only when the test's own signal came too late
        out = tmp_path / f"out-{attempt}"
        proc, out_text, err, landed = _stop_first_point(path, out, sig)
        if landed:
            break
    else:
        pytest.fail("the signal reached the point's child after its point ended, 3 times")
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert manifest["status"] == "failed"
    assert proc.returncode == 1, err
    assert out_text == ""  # -q: nothing on stdout, the word is on stderr
    last = err.strip().splitlines()[-1]
    assert "1 point run(s) did not finish (1 interrupted)" in last, err
    assert "--resume" in last
    assert "Traceback" not in err


def test_ctrl_c_to_the_group_while_kvsim_ignores_it_exit_code_matches_the_manifest(
    write_config, tmp_path
) -> None:
    """As in a script's background job: SIGINT ignored by kvsim (and so by its children,
    which inherit that), Ctrl-C to the whole group. Whatever ended, the code says it."""
    proc, _, err = _signal_group_ignoring(slow_config(write_config), signal.SIGINT)
    status = json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())["status"]
    assert (status, proc.returncode) in (("complete", 0), ("failed", 1)), (status, err)


def test_sigterm_to_kvsim_exits_143_with_the_words_of_ctrl_c(write_config, tmp_path) -> None:
    path = slow_config(write_config)
    tag = new_tag()

    def terminate(proc: subprocess.Popen[str]) -> None:
        _first_child(proc)
        proc.send_signal(signal.SIGTERM)

    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    proc, _, err = _run_signalled(cmd, tag, terminate, timeout_s=60)
    assert proc.returncode == 143, err
    assert "kvsim: interrupted by SIGTERM; finished point runs are kept in" in err, err
    assert "--resume" in err and "Traceback" not in err
    assert json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())["status"] == "interrupted"
    assert wait_for(lambda: not tagged(tag), 30), "a process the run started survived"


def test_a_stopped_child_is_stopped_at_its_budget_and_the_sweep_goes_on(
    write_config, tmp_path
) -> None:
    """SIGSTOP to a point's child: the sweep waits its budget (limits.max_point_s +
    request_timeout_s: 4 s here), fails that point run, runs the next."""
    from sim.rundir.outputs import read_csv

    path = write_config(
        {
            "workload": {"requests": 12, "arrival": {"kind": "poisson", "rate_rps": 8}},
            "sweep": {"seed": [1, 2]},
            "limits": {"max_point_s": 3, "request_timeout_s": 1},
        }
    )
    tag = new_tag()
    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    points = tmp_path / "out" / "points"

    def began() -> bool:
        """The child told the sweep it started: it then opens its requests.csv (a temporary
        file until the point ends), so the stop lands on the point's budget, not on the
        start allowance (a stop between the child's SIGTERM handler and its 'started' line,
        which a loaded machine makes likely, read 'did not start within 60 s')."""
        return any(points.glob("*/rep-*/.requests.csv.*")) or any(
            points.glob("*/rep-*/requests.csv")
        )

    def stop_once_begun(p: subprocess.Popen[str]) -> None:
        child = _first_child(p)
        assert wait_for(began, 60)
        os.kill(child, signal.SIGSTOP)

    proc, _, err = _run_signalled(cmd, tag, stop_once_begun)
    assert proc.returncode == 1, err
    rows = read_csv(tmp_path / "out" / "summary_repeats.csv")
    assert sorted(r["status"] for r in rows) == ["failed", "ok"], rows
    failed = next(r for r in rows if r["status"] == "failed")
    assert "no result within 4 s" in failed["error"], failed
    assert not tagged(tag)  # the stopped child was ended, not left behind


def test_a_search_whose_point_was_stopped_exits_1_not_judging_it(
    write_config, tmp_path, monkeypatch, capsys
) -> None:
    """A point run stopped by a signal has no verdict: the search says so and exits 1,
    instead of counting it a miss and bisecting on. Its resume then finishes."""
    from sim.rundir.layout import write_status
    from sim.sweep import runner

    real = runner._in_process
    stopped: list[str] = []

    def stopped_once(rep, progress, host=None):  # type: ignore[no-untyped-def]
        if not stopped:  # as the child writes it when SIGTERM or Ctrl-C reaches it
            stopped.append(rep.label)
            write_status(rep.dir, "interrupted", error="stopped by Ctrl-C or SIGTERM")
            return
        real(rep, progress, host)

    monkeypatch.setattr(runner, "_in_process", stopped_once)
    path = write_config()
    out = tmp_path / "search"
    args = ["search", str(path), "--slo", "latency_p99_ms<=1000", "--over",
            "workload.arrival.rate_rps", "--max-runs", "2", "--out", str(out),
            "--in-process", "-q"]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "1 point run(s) did not finish" in err and "interrupted" in err, err
    assert main([*args, "--resume"]) == 0


def test_a_ray_hosts_stopped_child_is_failed_at_its_budget(
    write_config, tmp_path, monkeypatch
) -> None:
    """The Ray task's wait on its child is bounded too (start-up allowance + budget):
    run_on_host driven here (no cluster: only the node id is asked of Ray)."""
    import threading
    import types

    from sim.config import parse_config
    from sim.rundir.layout import rep_runs
    from sim.sweep.executors import ray_host
    from sim.sweep.spec import PointSpec

    fake_ray = types.SimpleNamespace(
        get_runtime_context=lambda: types.SimpleNamespace(get_node_id=lambda: "node")
    )
    monkeypatch.setitem(sys.modules, "ray", fake_ray)
    # The child is stopped as soon as it shows in /proc (milliseconds after it is started),
    # before its imports are done: the allowance only has to outlast that look, so the
    # test waits 5 + 3 s, not 60 + 3 s. A child still running would need ~1.5 s to finish.
    monkeypatch.setattr(ray_host, "START_ALLOWANCE_S", 5.0)
    path = write_config({"limits": {"max_point_s": 2, "request_timeout_s": 1}})
    _cfg, points = parse_config(path)
    rep = rep_runs(tmp_path / "out", points, 1)[0]
    spec = PointSpec.for_rep(rep, ["variant"], path).to_json()
    result: list[dict] = []
    task = threading.Thread(target=lambda: result.append(ray_host.run_on_host(spec, [], "k")))
    task.start()
    found: list[int] = []
    try:
        assert wait_for(lambda: found.extend(children(os.getpid(), "sim.sweep.child")) or found, 60)
        os.kill(found[0], signal.SIGSTOP)
        task.join(timeout=90)
        assert not task.is_alive(), "the task waited on a stopped child past its bound"
    finally:
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        task.join(timeout=30)
    status = json.loads(result[0]["outputs"]["status.json"][1])
    assert status["status"] == "failed" and "no result within 8 s" in status["error"], status


@pytest.mark.parametrize("to_group", [False, True], ids=["kvsim", "group"])
def test_sighup_ends_a_sweep_as_sigterm_does_exit_129(write_config, tmp_path, to_group) -> None:
    """A closed terminal (or ssh session) sends SIGHUP: to kvsim, or to its whole group.
    Before, kvsim died at once without a word, its manifest saying ``running``."""
    path = slow_config(write_config)
    tag = new_tag()

    def hang_up(proc: subprocess.Popen[str]) -> None:
        child = _first_child(proc)
        assert wait_for(lambda: catches(child, signal.SIGHUP), 60)
        if to_group:
            os.killpg(proc.pid, signal.SIGHUP)
        else:
            proc.send_signal(signal.SIGHUP)

    def as_from_a_terminal() -> None:
        # a run started from a terminal has SIGHUP's default action; a test suite run under
        # ``nohup`` (a CI runner's, or a session's) would pass its SIG_IGN on, and kvsim
        # rightly leaves an ignored SIGHUP ignored (test_under_nohup_sighup_is_left_ignored)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)

    cmd = [sys.executable, "-m", "sim", "run", "-q", str(path)]
    proc, _, err = _run_signalled(
        cmd, tag, hang_up, timeout_s=60, start_new_session=True, preexec_fn=as_from_a_terminal
    )
    assert proc.returncode == 129, err
    assert "kvsim: interrupted by SIGHUP; finished point runs are kept in" in err, err
    assert "Traceback" not in err
    assert json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())["status"] == "interrupted"
    assert wait_for(lambda: not tagged(tag), 30), "a process the run started survived"


def test_under_nohup_sighup_is_left_ignored(write_config, tmp_path) -> None:
    """``nohup`` ignores SIGHUP so that a run outlives its terminal: it must stay so."""
    proc, _, err = _signal_group_ignoring(slow_config(write_config), signal.SIGHUP)
    assert proc.returncode == 0, err
    assert json.loads((tmp_path / "out" / MANIFEST_FILE).read_text())["status"] == "complete"
