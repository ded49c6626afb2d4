"""One writer per run directory: an exclusive ``flock`` on ``RUN/.kvsim.lock``.

``run`` (fresh, ``--resume`` or ``--force``) takes the lock before it looks at or
touches anything in the directory and keeps it until it ends; the operating
system drops it when the process dies, however it dies, so a crash never leaves
a run locked. The lock file says who holds it (pid, start time, command), so a
second writer is refused with one line naming the holder, and readers
(``compare``, ``plot``, ``--dry-run``) can say that a run is still being written.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sim.errors import RunDirError
from sim.rundir.layout import LOCK_FILE

__all__ = ["RunLock", "describe_holder", "holder"]

_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def describe_holder(info: dict[str, Any] | None) -> str:
    """``pid 1234, started 2026-11-30 19:20:05 UTC`` (or what is known of it)."""
    if not info:
        return "another process (it did not say which)"
    started = info.get("started_unix")
    when = (
        datetime.fromtimestamp(started, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        if isinstance(started, (int, float))
        else "at an unknown time"
    )
    return f"pid {info.get('pid', '?')}, started {when}"


def _read_info(fd: int) -> dict[str, Any] | None:
    try:
        raw = os.pread(fd, 4096, 0)
        data = json.loads(raw.decode("utf-8", errors="replace") or "null")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def holder(run_dir: Path) -> dict[str, Any] | None:
    """Who is writing ``run_dir`` now (the lock file's record), or None when nobody is."""
    try:
        # O_NONBLOCK: a FIFO in the lock's place must not block the open.
        fd = os.open(
            run_dir / LOCK_FILE, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        )
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_info(fd) or {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class RunLock:
    """The exclusive lock of one run directory (a context manager; nothing on construction)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        """Take the lock or raise RunDirError naming the process that holds it."""
        path = self.run_dir / LOCK_FILE
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, _FLAGS, 0o666)
        except OSError as exc:
            raise RunDirError(f"{path}: cannot open the run's lock ({exc.strerror})") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RunDirError(f"{path}: the run's lock is not a regular file; remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            info = _read_info(fd)
            os.close(fd)
            raise RunDirError(
                f"{self.run_dir}: another kvsim is writing this run ({describe_holder(info)}); "
                "wait for it to end, or pass --out to write elsewhere"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise RunDirError(f"{path}: cannot lock ({exc.strerror})") from None
        info = {"pid": os.getpid(), "started_unix": time.time(), "argv": sys.argv[:8]}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        except OSError:
            pass  # the lock holds without its label; readers then say "another process"
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> RunLock:
        return self if self.held else self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
