"""Processes seen through /proc, for the tests of signals and orphans (no psutil).

A test starts kvsim with a unique value of ``KVSIM_TEST_TAG`` in its environment;
every process kvsim starts inherits it (a point's child, a model-mode worker, the
multiprocessing resource tracker), so :func:`tagged` finds them all, even after
they were left to another parent.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "TAG_ENV",
    "catches",
    "children",
    "command_line",
    "kill_tagged",
    "new_tag",
    "tagged",
    "wait_for",
]

TAG_ENV = "KVSIM_TEST_TAG"


def new_tag() -> str:
    return uuid.uuid4().hex


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of ``pid``, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def command_line(pid: int) -> str:
    """``pid``'s command line, arguments joined by spaces ('' once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def children(pid: int, needle: str = "") -> list[int]:
    """Live (not zombie) children of ``pid`` whose command line holds ``needle``."""
    out = []
    for p in _pids():
        st = _stat(p)
        if st is not None and st[1] == pid and st[0] != "Z" and needle in command_line(p):
            out.append(p)
    return out


def catches(pid: int, sig: int) -> bool:
    """``pid`` has a handler for ``sig`` (its start-up is past installing it)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except OSError:
        pass
    return False


def tagged(tag: str) -> list[int]:
    """Live processes (zombies excluded: they run nothing) with ``KVSIM_TEST_TAG=tag``."""
    want = f"{TAG_ENV}={tag}".encode()
    out = []
    for p in _pids():
        try:
            env = Path(f"/proc/{p}/environ").read_bytes()
        except OSError:
            continue
        st = _stat(p)
        if want in env.split(b"\0") and st is not None and st[0] != "Z":
            out.append(p)
    return out


def kill_tagged(tag: str) -> None:
    """Clean up after a failed test: SIGKILL what it left (only its own processes)."""
    for p in tagged(tag):
        try:
            os.kill(p, signal.SIGCONT)
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def wait_for(predicate: Callable[[], object], timeout_s: float, every_s: float = 0.05) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(every_s)
    return bool(predicate())
