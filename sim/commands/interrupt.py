"""What a command says after Ctrl-C or SIGTERM, beside ``kvsim: interrupted``.

A command that has something to keep (finished point runs) wraps the part that
writes them in :func:`hint_on_interrupt`; the hint travels on the exception itself
(a note), and sim.cli prints it. Nothing is stored on the command line's Namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sim.process.signals import Terminated

__all__ = ["hint_on_interrupt", "interrupt_hint"]

_PREFIX = "kvsim-hint: "


@contextmanager
def hint_on_interrupt(hint: str) -> Iterator[None]:
    """Ctrl-C (KeyboardInterrupt) or SIGTERM (Terminated) inside the block carries ``hint``."""
    try:
        yield
    except (KeyboardInterrupt, Terminated) as exc:
        exc.add_note(_PREFIX + hint)
        raise


def interrupt_hint(exc: BaseException) -> str:
    """The hint :func:`hint_on_interrupt` attached to ``exc`` ("" when none)."""
    notes = [n for n in getattr(exc, "__notes__", ()) if n.startswith(_PREFIX)]
    return notes[-1].removeprefix(_PREFIX) if notes else ""
