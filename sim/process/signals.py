"""Signals: cleanup that a second Ctrl-C cannot cut short, and SIGTERM unwinding like
Ctrl-C (in a sweep, and in every command: ``sim.cli`` says the same words for both).
SIGHUP (a closed terminal, an ended ssh session) is a SIGTERM here: the sweep stops its
child, marks the point and the run, and exits 129 with one line — unless SIGHUP was
ignored on purpose (``nohup``), which stays so.

When a sweep is interrupted, the parent stops the running child and marks its
point ``interrupted``, then rewrites the top-level tables and the manifest. An
impatient second Ctrl-C (or a SIGTERM) during that cleanup used to abort it and
leave a point with no status. Inside :func:`deferred_signals` SIGINT and SIGTERM
are only counted; the interrupt that started the cleanup is already unwinding
the sweep, so nothing is lost by not raising a second one.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

__all__ = ["Terminated", "deferred_signals", "sigterm_unwinds"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_STOPS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def deferred_signals() -> Generator[list[int], None, None]:
    """Hold SIGINT, SIGTERM and SIGHUP until the block ends; yields the signals that
    arrived (one that was ignored, as ``nohup`` ignores SIGHUP, stays ignored)."""
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived
        return

    def hold(signum: int, frame: Any) -> None:
        arrived.append(signum)

    previous = {
        s: signal.signal(s, hold) for s in _SIGNALS if signal.getsignal(s) is not signal.SIG_IGN
    }
    try:
        yield arrived
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class Terminated(SystemExit):
    """SIGTERM (or SIGHUP) during a sweep: unwinds like Ctrl-C (child stopped, files kept),
    exit 143 (129)."""


@contextmanager
def sigterm_unwinds() -> Generator[None, None, None]:
    """Turn SIGTERM and SIGHUP into an exception while the block runs, each unless someone
    else handles it or it is ignored (``nohup``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(128 + signum)

    previous = {s: signal.getsignal(s) for s in _STOPS}
    ours = [s for s, h in previous.items() if h in (signal.SIG_DFL, None)]
    for s in ours:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s in ours:
            signal.signal(s, previous[s])
