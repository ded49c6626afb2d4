"""The child process of a sweep: run ONE point × repeat and fill its directory.

Each point runs in a fresh interpreter so that no GIL, JIT, allocator or GC
state of one point leaks into the next, and so that a point that crashes the
interpreter costs only that point. The parent starts::

    python -m sim.sweep.child RUN/points/<slug>/rep-<k>/spec.json

The spec carries the point's resolved config (see ``sim.sweep.spec``), so the
child needs no config file: a config built in Python runs here as one loaded
from YAML does. The child checks the point's hash, which covers the data files
the config names, so a trace edited mid-sweep fails the point instead of
silently mixing experiments.

Protocol: the process's original stdout carries JSON lines to the parent
(``{"started": true}`` once, when the point begins: the parent's wait runs on the
point's budget from then, sim.sweep.deadline; then ``{"progress": [done, total]}``);
fd 1 is then pointed at stderr, so stray prints from connector code land in
``stderr.log`` and cannot corrupt it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from connectors.plugin_trace import exit_message
from sim import columns
from sim.config import Point
from sim.config.plugins import plugin_scope
from sim.errors import RunError
from sim.point.metrics import summary_columns
from sim.point.result import PointResult
from sim.process.capped_output import cap_output
from sim.process.interpreter import gil_enabled, gil_mismatch, observed
from sim.process.lifeline import die_with_parent, parent_pid
from sim.process.stray_threads import leave
from sim.rundir.layout import write_ok, write_status
from sim.sweep.hostinfo import host_info
from sim.sweep.point_tables import RequestsFile, write_point_tables
from sim.sweep.spec import (
    PointSpec,
    read_spec_data,
    spec_plugins,
    write_spec,
)

__all__ = ["execute", "execute_spec", "main", "one_line", "write_spec"]

ProgressFn = Callable[[int, int], None]

#: Minimum seconds between two progress lines (the last one is always sent).
PROGRESS_EVERY_S = 0.1


def one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def execute(
    rep_dir: Path, progress: ProgressFn | None = None, host: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run the point described by ``rep_dir/spec.json``; write its CSVs and ``ok`` status.

    ``host``: a ``sim.sweep.hostinfo.host_base`` this process read before (a sweep
    running its points in process reads it once). Raises whatever the point
    raised; the caller records the failure.
    """
    data = read_spec_data(rep_dir)
    with plugin_scope(spec_plugins(data)):  # the config's own variants, for this point only
        return execute_spec(PointSpec.from_json(data), rep_dir, progress, host)


def run_in_mode(point: Point, repeat: int, progress: ProgressFn | None, rows: Any) -> PointResult:
    """Run ``point`` in its mode: real threads on this machine (sim.runtime.point), or the
    calibrated discrete-event model (sim.model.driver). The child picks, so the runtime
    never imports the model (docs/design.md §2)."""
    # Each mode's code loads only in a child that runs it: a model point starts no thread.
    if point.config.mode == "model":
        # heavy: one mode's package (simpy); a child loads only the mode it runs
        from sim.model.driver import run_model_point

        return run_model_point(point, repeat, progress, write_rows=rows)
    # heavy: one mode's package (simpy); a child loads only the mode it runs
    from sim.runtime.point import run_point

    return run_point(point, repeat, progress, rows)


def execute_spec(
    spec: PointSpec,
    rep_dir: Path,
    progress: ProgressFn | None = None,
    host: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run ``spec`` and fill ``rep_dir`` (its CSVs, then the ``ok`` status, last)."""
    spec.check()
    # A model-mode point's files are written without fsync: it reruns in milliseconds,
    # and a power cut that loses them leaves a status that is missing or whose
    # checksums fail, so a resume reruns it (it never counts as whole).
    durable = spec.config.mode != "model"
    point = Point(index=spec.index, axes=spec.axes, config=spec.config)
    axes = list(spec.columns)
    repeat = spec.repeat
    started_unix = time.time()
    lead = {**{a: point.axes.get(a, "") for a in axes}, "repeat": repeat}
    t0 = time.perf_counter()
    # The requests' rows go to requests.csv as they finish (sim.point.record_sink):
    # the point never holds them all.
    rows = RequestsFile(rep_dir, lead, durable)
    wanted = spec.config.interpreter.gil
    gil_at_start = gil_enabled()
    try:
        res = run_in_mode(point, repeat, progress, rows)
        gil_at_end = gil_enabled()
        real = spec.config.mode == "real"
        why = gil_mismatch(wanted, gil_at_start, gil_at_end) if real else None
        if why is not None:  # the point's figures are not of the GIL it asked for
            raise RunError(why)
        rows.commit()
    except BaseException:
        rows.abort()
        raise
    run_point_s = time.perf_counter() - t0
    noise = {k: v for k, v in res.summary.items() if k.startswith("noise_floor_")}
    record = host_info(noise, host)
    written = write_point_tables(
        rep_dir,
        lead,
        None,
        {**res.summary, "host": record["name"]},
        [*summary_columns(res.summary), "host"],
        res.tables,
        durable,
    )
    info = {
        columns.ELAPSED_S.name: time.perf_counter() - t0,
        "run_point_s": run_point_s,  # of which the point itself; the rest: its files
        "tables": sorted(res.tables),
        "pid": os.getpid(),
        "started_unix": started_unix,
        "ended_unix": time.time(),
        "host": record,
        # The interpreter and the GIL this process saw (sim.process.interpreter).
        "interpreter": observed(wanted, gil_at_start, gil_at_end),
    }
    write_ok(rep_dir, written, durable=durable, **info)
    return info


class _Reporter:
    """Progress lines to the parent, at most every PROGRESS_EVERY_S, always the last.

    It also ends the point at the first progress after a stop that code on the way
    swallowed (``stops``: the signals that reached this process)."""

    def __init__(self, channel: TextIO, stops: list[int]) -> None:
        self._channel = channel
        self._stops = stops
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if self._stops:
            raise _Stopped(f"signal {self._stops[0]}")
        now = time.monotonic()
        if done < total and now - self._last < PROGRESS_EVERY_S:
            return
        self._last = now
        # A broken pipe means the parent is gone: let the error end this point.
        self._channel.write(json.dumps({"progress": [done, total]}) + "\n")
        self._channel.flush()


def _claim_stdout() -> TextIO:
    """Keep the real stdout for the protocol; send fd 1 (stray prints) to stderr."""
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    return channel


class _Stopped(BaseException):
    """SIGTERM reached the child: from the parent stopping it, or because the parent died.

    A BaseException, as KeyboardInterrupt is: raised wherever the main thread is, it must
    not be taken for a failed request by an ``except Exception`` on the way (beside a CPU
    hog one SIGTERM in about eight was, and the point ended ok).
    """


def _end_with_parent(parent: int, stops: list[int]) -> bool:
    """Turn SIGTERM into an exception that marks the point interrupted, not failed (SIGINT
    stays KeyboardInterrupt), and ask for SIGTERM when ``parent`` dies (kill -9 included);
    False when it is already gone.

    Each signal is also noted in ``stops``: an exception raised where the main thread
    happens to be can be swallowed there (a library's bare ``except:``, a SimPy
    process, which keeps any exception as its failure), and the point must still not
    end ``ok``: the reporter and the end of :func:`main` look at the note."""

    def stop(signum: int, frame: Any) -> None:
        stops.append(signum)
        raise _Stopped(f"signal {signum}")

    def interrupt(signum: int, frame: Any) -> None:
        stops.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_DFL:  # a closed terminal; nohup: ignored
        signal.signal(signal.SIGHUP, stop)
    # Ctrl-C noted too: a KeyboardInterrupt raised inside a gc callback or a __del__ is
    # printed and dropped by CPython ("Exception ignored in"), and the point would end ok
    # (a SIGINT test saw a complete run once in the suite beside a CPU hog); an ignored
    # SIGINT (a background job's) stays ignored.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)
    return die_with_parent(parent)


def main(argv: list[str] | None = None) -> int:
    """Run the point; a plug-in's flood of output is capped (sim.process.capped_output)
    and the note of what was cut ends the log. As the process's own entry (``argv`` None),
    threads a plug-in left running do not keep it from exiting (sim.process.stray_threads)."""
    cap, raw_err = cap_output()
    try:
        code = _main(argv, raw_err)
    finally:
        note = cap.note()
        if note:
            raw_err.write(note)
            raw_err.flush()
    return leave(code) if argv is None else code


def _main(argv: list[str] | None, raw_err: TextIO) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 1:
        print(
            "usage: python -m sim.sweep.child RUN/points/<slug>/rep-<k>/spec.json", file=sys.stderr
        )
        return 2
    rep_dir = Path(argv[0]).parent
    # The pid the parent gave, not getppid() now: a parent that died before this line
    # (a kill -9 while the interpreter started) left this process to another parent,
    # and no SIGTERM will come for it.
    parent = parent_pid()
    stops: list[int] = []
    try:  # from the handler's first instant: a stop is "interrupted", never a traceback
        alive = _end_with_parent(parent, stops)
        channel = _claim_stdout()
        if not alive:
            raise _Stopped("the parent ended before the point started")
        # The parent's wait on this point runs from here on its budget (sim.sweep.deadline).
        channel.write(json.dumps({"started": True}) + "\n")
        channel.flush()
        execute(rep_dir, _Reporter(channel, stops))
        if stops:  # a stop swallowed on the way: the point did not end as it would have
            raise _Stopped(f"signal {stops[0]}")
    except (Exception, KeyboardInterrupt, _Stopped) as exc:
        if isinstance(exc, (_Stopped, KeyboardInterrupt)) and os.getppid() == parent:
            # SIGTERM or Ctrl-C from the parent (which marks the point too): no traceback
            write_status(rep_dir, "interrupted", error="stopped by Ctrl-C or SIGTERM")
            return 130
        if not isinstance(exc, _Stopped):
            traceback.print_exc(file=raw_err)  # kvsim's own last words: never cut
        if isinstance(exc, (BrokenPipeError, _Stopped)) or os.getppid() != parent:
            # The parent is gone (kill -9, a closed terminal): the point did not fail, it
            # was cut off, and a resume must run it again.
            write_status(
                rep_dir,
                "interrupted",
                error="the kvsim process that started this point went away",
                pid=os.getpid(),
            )
            return 1
        write_status(rep_dir, "failed", error=one_line(exc), pid=os.getpid())
        return 1
    except SystemExit as exc:  # a plug-in's sys.exit on this thread (warm_up, say)
        said = exit_message(exc)
        if said is None:
            raise
        write_status(rep_dir, "failed", error=f"PluginFault: {said}"[:300], pid=os.getpid())
        print(said, file=raw_err)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover - exercised through subprocesses
    sys.exit(main())
