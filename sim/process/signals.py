"""Signals: cleanup that a second Ctrl-C cannot cut short, and SIGTERM unwinding like
Ctrl-C (in a sweep, and in every command: ``sim.cli`` says the same words for both).

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

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def deferred_signals() -> Generator[list[int], None, None]:
    """Hold SIGINT and SIGTERM until the block ends; yields the signals that arrived."""
    arrived: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived
        return

    def hold(signum: int, frame: Any) -> None:
        arrived.append(signum)

    previous = {s: signal.signal(s, hold) for s in _SIGNALS}
    try:
        yield arrived
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class Terminated(SystemExit):
    """SIGTERM during a sweep: unwinds like Ctrl-C (child stopped, files kept), exit 143."""


@contextmanager
def sigterm_unwinds() -> Generator[None, None, None]:
    """Turn SIGTERM into an exception while the sweep runs, unless someone else handles it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
