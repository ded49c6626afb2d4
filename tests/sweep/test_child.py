"""A point's child (sim.sweep.child): a stop never ends a point ``ok``, even one that
code on the way swallowed (the workflow, with real signals, is tests/e2e/test_exit_codes)."""

from __future__ import annotations

import io
import json
import os
import signal
import time
from pathlib import Path

import pytest

from sim.rundir.layout import read_status, write_ok
from sim.sweep import child


@pytest.fixture
def in_this_process(monkeypatch):
    """main() as a child runs it, but with this process's stdout, parent and SIGTERM
    disposition left as they were."""
    monkeypatch.setattr(child, "die_with_parent", lambda parent: True)
    monkeypatch.setattr(child, "_claim_stdout", io.StringIO)
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_a_stop_swallowed_inside_the_point_still_marks_it_interrupted(
    tmp_path: Path, monkeypatch, in_this_process
) -> None:
    """As a SimPy process keeps any exception as its failure, or a library's bare
    ``except:`` drops it: the point would have ended ok."""
    rep = tmp_path / "rep-0"
    rep.mkdir()

    def swallowing_point(rep_dir: Path, progress=None, host=None) -> dict:  # type: ignore[no-untyped-def]
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs here, and raises
        except BaseException:  # the swallowing under test
            pass
        write_ok(rep_dir, [])
        return {}

    monkeypatch.setattr(child, "execute", swallowing_point)
    monkeypatch.setenv("KVSIM_PARENT_PID", str(os.getppid()))
    assert child.main([str(rep / "spec.json")]) == 130
    status = read_status(rep)
    assert status is not None and status["status"] == "interrupted", status


def test_the_progress_after_a_swallowed_stop_ends_the_point(in_this_process) -> None:
    channel = io.StringIO()
    report = child._Reporter(channel, [])
    report(1, 4)
    assert json.loads(channel.getvalue()) == {"progress": [1, 4]}
    with pytest.raises(child._Stopped):
        child._Reporter(channel, [signal.SIGTERM])(2, 4)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the drop itself
def test_a_ctrl_c_dropped_where_it_was_raised_is_still_noted(monkeypatch) -> None:
    """CPython prints and drops an exception raised in a gc callback: a KeyboardInterrupt
    from SIGINT arriving there left the point ``ok``. The child's handler notes SIGINT as it
    notes SIGTERM, so the end of its main sees the stop; an ignored SIGINT stays ignored."""
    import gc
    import os
    import signal

    from sim.sweep import child

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setattr(child, "die_with_parent", lambda _pid: True)  # not for the suite
    stops: list[int] = []

    def raised_in_a_callback(phase: str, info: dict) -> None:
        if phase == "start":
            gc.callbacks.remove(raised_in_a_callback)
            os.kill(os.getpid(), signal.SIGINT)  # delivered here: dropped by the collector

    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        child._end_with_parent(os.getppid(), stops)
        gc.callbacks.append(raised_in_a_callback)
        gc.collect()  # the KeyboardInterrupt is printed as ignored, and goes no further
        assert stops == [signal.SIGINT]
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        child._end_with_parent(os.getppid(), [])
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a background job's
    finally:
        if raised_in_a_callback in gc.callbacks:
            gc.callbacks.remove(raised_in_a_callback)
        for s, handler in saved.items():
            signal.signal(s, handler)
