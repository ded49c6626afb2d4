"""No process a run started outlives it: a kill -9 of the sweep in its first moments
(while its model-mode worker processes start, before they could ask to die with it)
leaves no worker and no multiprocessing resource tracker behind; nor does a run that
ends normally. Processes are found through /proc by a tag in their environment
(tests/procscan.py); every wait is bounded and a failed test kills what it left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_model_sweep_outputs import sweep_config  # noqa: F401 - a fixture
from tests.procscan import TAG_ENV, children, kill_tagged, new_tag, tagged, wait_for

pytestmark = pytest.mark.realthreads

#: Runs the sweep with two worker processes whatever its size (the thresholds are for
#: speed, not correctness), as ``kvsim run -q`` does.
_DRIVER = """
import sys
from sim.sweep.executors import parallel
parallel.MIN_PARALLEL_REQUESTS = 0
parallel.os.sched_getaffinity = lambda pid: {0, 1}
from sim.cli import main
sys.exit(main(["run", "-q", sys.argv[1]]))
"""


def _driver(path: Path, tag: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, TAG_ENV: tag, "PYTHONPATH": str(Path(__file__).parents[2])}
    return subprocess.Popen(
        [sys.executable, "-c", _DRIVER, str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("moment", ["first worker", "tracker"])
def test_kill_9_while_model_workers_start_leaves_no_process(sweep_config, moment) -> None:  # noqa: F811
    path = sweep_config(workload={"requests": 2000})
    tag = new_tag()
    needle = "spawn_main" if moment == "first worker" else "resource_tracker"
    proc = _driver(path, tag)
    try:
        assert wait_for(lambda: children(proc.pid, needle), 120, every_s=0.005), proc.stderr
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        left: list[int] = []

        def none_left() -> bool:
            left[:] = tagged(tag)
            return not left

        assert wait_for(none_left, 60), f"processes the run started outlived it: {left}"
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_tagged(tag)
        if proc.stderr is not None:
            proc.stderr.close()


def test_a_finished_model_sweep_leaves_no_process(sweep_config) -> None:  # noqa: F811
    path = sweep_config()
    tag = new_tag()
    proc = _driver(path, tag)
    try:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert wait_for(lambda: not tagged(tag), 30), tagged(tag)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_tagged(tag)


def test_a_stopped_model_worker_does_not_hang_the_sweep(sweep_config, tmp_path) -> None:  # noqa: F811
    """SIGSTOP to a model-mode worker while points run: after the points' budget with
    no result (limits: 8 + 1 s), the workers are ended and the rest run in the sweep's
    process; the sweep ends, its exit code matching its manifest, nothing left behind."""
    path = sweep_config(
        workload={"requests": 3000}, limits={"max_point_s": 8, "request_timeout_s": 1}
    )
    tag = new_tag()
    proc = _driver(path, tag)
    try:
        assert wait_for(lambda: list((tmp_path / "out").glob("points/*/rep-0/status.json")), 120)
        workers = children(proc.pid, "spawn_main")
        assert workers, "the sweep ended before a worker could be stopped"
        os.kill(workers[0], signal.SIGSTOP)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_tagged(tag)
    status = json.loads((tmp_path / "out" / "manifest.json").read_text())["status"]
    assert (status, proc.returncode) in (("complete", 0), ("failed", 1)), (status, err)
    assert wait_for(lambda: not tagged(tag), 30), tagged(tag)


def test_a_program_kvsim_starts_dies_with_its_parent_or_never_starts() -> None:
    """The Mooncake master and py-spy are started with sim.process.lifeline's preexec:
    a parent already gone (here: a pid that is not the parent) means no start at all,
    and a kill -9 of the parent ends the program."""
    from sim.process.lifeline import preexec_die_with

    gone = subprocess.Popen(["sleep", "30"], preexec_fn=preexec_die_with(os.getppid()))
    assert gone.wait(timeout=30) == 1
    tag = new_tag()
    starter = (
        "import os, subprocess, sys, time\n"
        "from sim.process.lifeline import preexec_die_with\n"
        "p = subprocess.Popen(['sleep', '60'], preexec_fn=preexec_die_with(os.getpid()))\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, TAG_ENV: tag, "PYTHONPATH": str(Path(__file__).parents[2])}
    parent = subprocess.Popen(
        [sys.executable, "-c", starter], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        sleeper = int(parent.stdout.readline())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=30)
        assert wait_for(lambda: sleeper not in tagged(tag), 30), "it outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        kill_tagged(tag)
        if parent.stdout is not None:
            parent.stdout.close()
