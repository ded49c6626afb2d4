"""What a Ray task does on the host it lands on: run ONE point × repeat, send back its files.

It is the local executor's child seen from afar: the same ``python -m
sim.sweep.child SPEC``, started by the Ray worker process the way the local
driver starts it, in a scratch directory that holds the spec (config paths
pointing at the data files that came with it) and nothing else. Only after the
child has ended are its files read and returned, so nothing travels while the
point is measured except a rare progress line to the driver's board (at most
once a second).

The child is tied to the Ray worker's life (``PR_SET_PDEATHSIG``): when Ray kills
the worker (the driver gone, ``ray stop``), the child dies with it instead of
measuring on for nobody. On Ctrl-C the driver does not cancel tasks (``ray.cancel``
racing a task's own reply crashes the driver inside Ray's core worker: a failed
``RAY_CHECK``, seen under load); it raises a flag on the board, and each task's
watcher stops its child, which marks its point interrupted and ends the task.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sim.config.sections import LimitsConfig
from sim.files.scratch import scratch_dir
from sim.process.lifeline import ask_to_die_with_parent
from sim.rundir.layout import log_file, spec_file, write_status
from sim.rundir.outputs import write_json
from sim.sweep.deadline import START_ALLOWANCE_S, Deadline, over_budget_error, wait_bound_s
from sim.sweep.executors.transfer import InputFile, collect_outputs, place_inputs
from sim.sweep.hostinfo import code_hash, host_name
from sim.sweep.runner import TERMINATE_GRACE_S, protocol_line, start_child, stop_child

__all__ = [
    "POINT_SCRATCH",
    "PROGRESS_EVERY_S",
    "STOP_POLL_S",
    "Board",
    "run_on_host",
]

#: Minimum seconds between two progress messages to the driver.
PROGRESS_EVERY_S = 1.0
#: How often a task asks the board whether the driver wants everything stopped.
STOP_POLL_S = 0.5
#: The kind of a task's scratch directory (sim.files.scratch): ``kvsim-point-…``.
POINT_SCRATCH = "point"


def _die_with_parent() -> None:  # pragma: no cover - runs between fork and exec
    # Between fork and exec the parent cannot have died unseen: the child's own check
    # (sim.sweep.child, through PARENT_PID_ENV) covers its interpreter's start-up.
    ask_to_die_with_parent(signal.SIGTERM)


def _limits(spec: dict[str, Any]) -> LimitsConfig:
    """The point's limits, read from its spec without validating the rest of the config
    (its plug-in variants are not registered in this process)."""
    config = spec.get("config")
    raw = config.get("limits") if isinstance(config, dict) else None
    return LimitsConfig.model_validate(raw if isinstance(raw, dict) else {})


def _relay(proc: subprocess.Popen[str], key: str, board: Any) -> None:
    """Read the child's protocol lines; forward progress at most every PROGRESS_EVERY_S."""
    assert proc.stdout is not None
    last = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= PROGRESS_EVERY_S or done >= total:
            last = now
            board.progress.remote(key, done, total)

    for line in proc.stdout:
        protocol_line(line, progress if board is not None else None)


def _watch_for_stop(proc: subprocess.Popen[str], board: Any, over: threading.Event) -> None:
    """Until ``over``: when the driver raised the stop flag, SIGTERM the child (it marks its
    point interrupted and exits)."""
    import ray  # heavy: ray, on a host the ray executor runs on

    while not over.wait(STOP_POLL_S):
        try:
            stop = ray.get(board.stopping.remote())
        except Exception:  # the board is gone with the driver: Ray ends this worker
            return
        if stop:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            return


def run_on_host(
    spec: dict[str, Any], inputs: list[InputFile], key: str, board: Any = None
) -> dict[str, Any]:
    """Run the spec's point here; return its files and where and when it ran."""
    import ray  # heavy: ray, on a host the ray executor runs on

    node_id = ray.get_runtime_context().get_node_id()
    name = host_name()
    if board is not None:
        board.started.remote(key, name, node_id)
    # a scratch directory of its own, after those of Ray workers killed mid-task
    # (a node killed, a worker SIGKILLed: TemporaryDirectory never ran its cleanup)
    with scratch_dir(POINT_SCRATCH) as tmp:
        rep_dir = Path(tmp) / "rep"
        rep_dir.mkdir()
        write_json(spec_file(rep_dir), place_inputs(spec, inputs, Path(tmp) / "data"))
        started = time.time()
        with open(log_file(rep_dir), "w", encoding="utf-8") as log:
            proc = start_child(
                [sys.executable, "-m", "sim.sweep.child", str(spec_file(rep_dir))],
                log,
                preexec_fn=_die_with_parent,
            )
            over = threading.Event()
            if board is not None:
                threading.Thread(
                    target=_watch_for_stop, args=(proc, board, over), daemon=True
                ).start()
            # A child stopped (SIGSTOP) or hung must not hold this task forever: past its
            # start-up allowance and budget (sim.sweep.deadline) it is stopped and failed.
            bound_s = START_ALLOWANCE_S + wait_bound_s(_limits(spec))
            fired = threading.Event()

            def expire() -> None:
                fired.set()
                stop_child(proc)

            overdue = threading.Timer(bound_s, expire)
            overdue.daemon = True
            overdue.start()
            try:
                _relay(proc, key, board)
                proc.wait(bound_s + 4 * TERMINATE_GRACE_S)
            except BaseException:
                stop_child(proc)
                raise
            finally:
                over.set()
                overdue.cancel()
            if fired.is_set():
                write_status(rep_dir, "failed", error=over_budget_error(Deadline(bound_s)))
        ended = time.time()
        return {
            "outputs": collect_outputs(rep_dir),
            "host": name,
            "node_id": node_id,
            "pid": os.getpid(),
            "returncode": proc.returncode,
            "started_unix": started,
            "ended_unix": ended,
            "code_hash": code_hash(),
        }


class Board:
    """What tasks tell the driver while they run (a Ray actor on the head node):
    where each started, and its progress. The driver drains it as it waits. The other
    way, one flag: stop (Ctrl-C)."""

    def __init__(self) -> None:
        self._events: list[tuple[Any, ...]] = []
        self._stop = False

    def stop(self) -> None:
        """The driver was interrupted: every task stops its child."""
        self._stop = True

    def stopping(self) -> bool:
        return self._stop

    def started(self, key: str, host: str, node_id: str) -> None:
        self._events.append(("started", key, host, node_id))

    def progress(self, key: str, done: int, total: int) -> None:
        self._events.append(("progress", key, done, total))

    def drain(self) -> list[tuple[Any, ...]]:
        events, self._events = self._events, []
        return events
