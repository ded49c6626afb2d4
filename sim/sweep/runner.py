"""Run one point × repeat in a child process, relay its progress, record how it ended.

The parent never trusts a child to finish: whatever happens (an exception, a
segfault, ``os._exit``, a kill, Ctrl-C) the run directory ends with a status
marker that says so, and the sweep goes on to the next point.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from sim.events import RepOutcome
from sim.files.read import read_tail
from sim.process.interpreter import InterpreterError, child_env, resolve_python
from sim.process.lifeline import PARENT_PID_ENV
from sim.process.signals import deferred_signals
from sim.rundir.layout import RepRun, read_status, write_status
from sim.rundir.rep_files import clear_rep_dir, remove_temporaries
from sim.sweep.deadline import START_ALLOWANCE_S, Deadline, over_budget_error, wait_bound_s
from sim.sweep.identity import DataDigests
from sim.sweep.spec import write_spec

__all__ = [
    "CHILD_COMMAND",
    "CHILD_ENV_DEFAULTS",
    "child_environment",
    "last_error_line",
    "last_line",
    "protocol_line",
    "run_rep",
    "start_child",
    "stop_child",
]

#: How a child is started; the spec path is appended.
CHILD_COMMAND: tuple[str, ...] = (sys.executable, "-m", "sim.sweep.child")

#: A child's environment where the parent's sets none of these. numpy's OpenBLAS starts a
#: thread per core at import that spins before it sleeps: ~50 ms of CPU per child on two
#: cores (kvsim bench startup), beside the point's own threads. No kvsim point calls BLAS
#: (the connector variants broadcast, they do not multiply matrices); a user who wants a
#: BLAS pool in a plug-in sets OPENBLAS_NUM_THREADS, and that value is kept.
CHILD_ENV_DEFAULTS: dict[str, str] = {"OPENBLAS_NUM_THREADS": "1"}

#: Seconds a child gets to exit after SIGTERM before it is killed.
TERMINATE_GRACE_S = 5.0

ProgressFn = Callable[[int, int], None]


def last_line(text: str) -> str:
    """The last non-empty line of ``text``, stripped, cut to 300 characters ("" if none)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def last_error_line(log: Path) -> str:
    """The most telling line of a child's stderr: its last non-empty one."""
    try:
        text = read_tail(log, 64 << 10, what="log", error=OSError).decode(errors="replace")
    except OSError:
        return ""
    return last_line(text)


def start_child(
    argv: Sequence[str],
    log: TextIO,
    preexec_fn: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[str]:
    """A point's child process: its protocol lines on a pipe, its stderr in ``log``
    (the local runner's and a Ray host's children are started alike). It is told this
    process's pid (``PARENT_PID_ENV``): a parent that dies before the child has asked to
    die with it (sim.process.lifeline) is then seen, not outlived by a point nobody awaits.
    ``env``: the child's environment (default: this process's), with
    :data:`CHILD_ENV_DEFAULTS` where it sets none."""
    return subprocess.Popen(
        list(argv),
        env={**child_environment(env), PARENT_PID_ENV: str(os.getpid())},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        encoding="utf-8",
        errors="replace",
        preexec_fn=preexec_fn,
    )


def child_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with :data:`CHILD_ENV_DEFAULTS` under it: what a
    point's child runs with (``kvsim bench startup`` times its child with the same)."""
    return {**CHILD_ENV_DEFAULTS, **(os.environ if env is None else env)}


def stop_child(proc: subprocess.Popen[str]) -> None:
    """SIGTERM (the child marks its point interrupted), then SIGKILL after the grace.

    SIGCONT follows the SIGTERM, so a child stopped by SIGSTOP handles it too; every
    wait is bounded (a process the kernel cannot end is left, not waited for)."""
    if proc.poll() is not None:
        return
    proc.terminate()
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGCONT)
    try:
        proc.wait(TERMINATE_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(TERMINATE_GRACE_S)


def _relay(
    proc: subprocess.Popen[str], progress: ProgressFn | None, deadline: Deadline, bound_s: float
) -> bool:
    """Pass the child's progress lines on until its stdout ends (True) or the deadline
    passes first (False). Reads the pipe's bytes, never blocking past the deadline; the
    child's ``started`` line restarts it with the point's ``bound_s``."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    pending = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            if deadline.passed:
                return False
            if not sel.select(min(deadline.left(), 1.0)):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return True
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if protocol_line(line, progress) == "started":
                    deadline.restart(bound_s, "run")


def protocol_line(line: bytes | str, progress: ProgressFn | None) -> str:
    """Act on one line of the child's protocol (a progress line: ``progress(done,
    total)``); say which kind it was."""
    try:
        msg = json.loads(line)
    except ValueError:
        return ""
    if isinstance(msg, dict) and msg.get("started") is True:
        return "started"
    done_total = msg.get("progress") if isinstance(msg, dict) else None
    if progress is not None and isinstance(done_total, list) and len(done_total) == 2:
        progress(int(done_total[0]), int(done_total[1]))
    return "progress"


def _waited(proc: subprocess.Popen[str], deadline: Deadline) -> bool:
    """The child ended (its stdout closed) before the deadline: reap it, within it."""
    try:
        proc.wait(deadline.left())
    except subprocess.TimeoutExpired:
        return False
    return True


def _in_process(
    rep: RepRun, progress: ProgressFn | None, host: dict[str, Any] | None = None
) -> None:
    """Same files as a child would write, in this process (debugging, fast tests)."""
    # the point's own modules: the parent runs points in children, these only in-process
    from sim.sweep.child import execute, one_line

    try:
        execute(rep.dir, progress, host)
    except Exception as exc:
        with open(rep.log, "a", encoding="utf-8") as log:
            traceback.print_exc(file=log)
        write_status(rep.dir, "failed", error=one_line(exc), pid=os.getpid())


def _interpreter(rep: RepRun, base: Sequence[str]) -> tuple[list[str], dict[str, str] | None]:
    """The child's command and environment under the point's ``interpreter:`` (its python
    in place of this one, PYTHON_GIL for its GIL switch); a custom ``base`` is kept."""
    interp = rep.point.config.interpreter
    if interp.is_default:
        return list(base), None
    argv = list(base)
    if tuple(base) == CHILD_COMMAND:
        argv[0] = resolve_python(interp.python)
    return argv, child_env(interp.gil)


def _child_command(rep: RepRun, base: Sequence[str]) -> list[str]:
    """A point with a real store runs in a private network namespace where one can be made."""
    store = rep.point.config.store
    if store.kind != "mooncake" or store.mooncake.network == "loopback":
        return list(base)
    # a point child imports this module: the namespace helpers load only for a real store
    from sim.store.netns import netns_available, say_once, wrap_in_netns

    why = netns_available()
    if why is None:
        return wrap_in_netns(base)
    if store.mooncake.network == "auto":
        say_once(f"no private network namespace for the Mooncake store ({why}); binding 127.0.0.1")
    return list(base)  # network: namespace -> the child refuses to start the store


def run_rep(
    rep: RepRun,
    run_dir: Path,
    columns: Sequence[str],
    progress: ProgressFn | None = None,
    *,
    source: str | Path = "",
    isolate: bool = True,
    child_command: Sequence[str] = CHILD_COMMAND,
    host: dict[str, Any] | None = None,
    digests: DataDigests | None = None,
    run_hash: str = "",
) -> RepOutcome:
    """Run ``rep`` from a clean directory and return how it ended.

    ``columns`` are the sweep's axis columns (every table carries them all);
    ``source`` names where the config came from, for messages only: the child
    gets the resolved config itself in its spec. ``host``: what
    ``sim.sweep.hostinfo.host_base`` read earlier in this process, for a point
    run here (a child reads its own). ``digests`` and ``run_hash``: what the sweep
    planned, written into the spec (``sim.sweep.spec.write_spec``).

    On KeyboardInterrupt (or any other exception in the parent) the child is
    stopped, the directory is marked ``interrupted`` and the exception re-raised.
    """
    clear_rep_dir(run_dir, rep.dir)
    model = rep.point.config.mode == "model"
    # A model-mode point's files go without fsync (sim.sweep.child.execute_spec says why).
    spec = write_spec(rep, columns, source, durable=not model, digests=digests, run_hash=run_hash)
    t0 = time.perf_counter()
    # A model-mode point starts no thread and touches no GIL state: a child process
    # would cost more to start than the point takes to run.
    if not isolate and not model and not rep.point.config.interpreter.is_default:
        write_status(
            rep.dir, "failed", error="interpreter: needs a child process per point (not in-process)"
        )
    elif not isolate or model:
        _in_process(rep, progress, host)
    else:
        with open(rep.log, "w", encoding="utf-8") as log:
            try:
                base, env = _interpreter(rep, child_command)
            except InterpreterError as exc:  # validated at planning; gone since
                write_status(rep.dir, "failed", error=str(exc))
                return _outcome(rep, t0)
            # A Ctrl-C while the child is being started would otherwise leave a child
            # without a handle to stop it and a started point without a status: it is
            # held until the child exists, then delivered inside the try below.
            with deferred_signals() as arrived:
                proc = start_child([*_child_command(rep, base), str(spec)], log, env=env)
            deadline = Deadline(START_ALLOWANCE_S, "start")
            bound_s = wait_bound_s(rep.point.config.limits)
            try:
                if arrived:
                    signal.raise_signal(arrived[0])  # its own handler: Ctrl-C or SIGTERM
                ended = _relay(proc, progress, deadline, bound_s) and _waited(proc, deadline)
                if not ended:
                    with deferred_signals():
                        stop_child(proc)
                        write_status(rep.dir, "failed", error=over_budget_error(deadline))
            except BaseException:
                # A second Ctrl-C must not cut this short: the point ends finished and
                # verified, or marked interrupted, never without a status.
                with deferred_signals():
                    stop_child(proc)
                    if not rep.done:
                        write_status(rep.dir, "interrupted", error="stopped by Ctrl-C or SIGTERM")
                raise
        status = read_status(rep.dir)
        if status is None:
            why = last_error_line(rep.log)
            msg = f"child exited with code {proc.returncode}" + (f": {why}" if why else "")
            write_status(rep.dir, "failed", error=msg, returncode=proc.returncode)
    return _outcome(rep, t0)


def _outcome(rep: RepRun, t0: float) -> RepOutcome:
    status = read_status(rep.dir) or {"status": "failed", "error": "no status written"}
    if status["status"] != "ok":  # a child that died mid-write left half a table
        remove_temporaries(rep.dir)
    return RepOutcome(
        status=str(status["status"]),
        error=str(status.get("error", "")),
        elapsed_s=time.perf_counter() - t0,
    )
