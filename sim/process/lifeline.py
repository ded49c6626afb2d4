"""A process kvsim starts dies with the process that started it, from its first instruction.

``PR_SET_PDEATHSIG`` asks the kernel for a signal when the parent dies, but only for a
death that comes after the asking: a parent killed while the child's interpreter
started (a kill -9 in the first half second of a sweep) is already gone, the child
belongs to another parent, and no signal will ever come. So every process kvsim
starts asks, then compares ``getppid()`` with the pid its parent gave it — not with
1, since a container's init or a sub-reaper adopts orphans under another pid — and
ends at once when they differ. The point's child (``sim.sweep.child``), the
model-mode sweep's worker processes (``sim.sweep.executors.parallel``), a Ray host's
child and the Mooncake master (``sim.store.mooncake``) all do it through here.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable

__all__ = [
    "PARENT_PID_ENV",
    "ask_to_die_with_parent",
    "die_with_parent",
    "parent_pid",
    "preexec_die_with",
]

#: How a process kvsim starts learns its parent's pid (set by the parent, read first).
PARENT_PID_ENV = "KVSIM_PARENT_PID"

_PR_SET_PDEATHSIG = 1


def ask_to_die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` when the parent dies (Linux; elsewhere nothing).

    Safe between fork and exec (a ``preexec_fn``): it only calls ``prctl``."""
    if not sys.platform.startswith("linux"):
        return
    # without it, the next write to the parent's pipe ends the process
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)


def parent_pid() -> int:
    """The pid the parent gave (``PARENT_PID_ENV``), else ``getppid()`` (started by hand)."""
    given = os.environ.get(PARENT_PID_ENV, "")
    return int(given) if given.isdigit() else os.getppid()


def preexec_die_with(parent: int, sig: int = signal.SIGTERM) -> Callable[[], None]:
    """A ``preexec_fn`` for a program that is not kvsim (the Mooncake master, py-spy):
    it gets ``sig`` when ``parent`` dies, and never starts when ``parent`` died first."""

    def check() -> None:  # runs in the forked child before exec
        if not die_with_parent(parent, sig):
            os._exit(1)

    return check


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> bool:
    """Ask for ``sig`` at the death of ``parent``, then check it is still the parent.

    False when it is not (it died before the asking): the caller ends at once, having
    nobody to work for. The order matters: a death after the check is seen by the
    kernel, one before it by the check.
    """
    ask_to_die_with_parent(sig)
    return os.getppid() == parent
