"""Scratch directories kvsim makes under the system's temporary directory, and removes
after a process that was killed (SIGKILL, a node gone) left them.

``TemporaryDirectory`` cleans up when its process ends normally; one killed outright
leaves its directory, and a bench's or a point's can hold gigabytes of rows. Each such
directory is named ``kvsim-<kind>-<pid namespace>-<pid>-`` and mkdtemp's 8 characters,
so a later process of the same kind can tell one whose owner is gone: the next one
made removes those first (:func:`scratch_dir`).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["owner_prefix", "pid_namespace", "remove_stale", "scratch_dir"]


def pid_namespace() -> int:
    """The inode of this process's pid namespace (0 where /proc does not say): a pid
    counts only in its namespace."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def owner_prefix(kind: str) -> str:
    """``kvsim-<kind>-<pid namespace>-<pid>-``: the name of a directory this process
    owns starts so."""
    return f"kvsim-{kind}-{pid_namespace()}-{os.getpid()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def remove_stale(root: Path, kind: str) -> list[Path]:
    """Remove the ``kind`` directories under ``root`` whose owner is gone; return them.
    Only directories of exactly the shape :func:`scratch_dir` makes, owned by this
    user, made in this pid namespace (a pid of another means nothing here), whose
    process no longer runs: a live owner's, and anything else, stay."""
    shape = re.compile(rf"kvsim-{re.escape(kind)}-(\d+)-(\d+)-[a-z0-9_]{{8}}")
    here = pid_namespace()
    gone: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return gone
    for entry in entries:
        m = shape.fullmatch(entry.name)
        if m is None or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        if int(m.group(1)) != here or _alive(int(m.group(2))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)  # rmtree never follows a link
        gone.append(Path(entry.path))
    return gone


@contextmanager
def scratch_dir(kind: str, root: Path | None = None) -> Iterator[Path]:
    """A new scratch directory of ``kind`` (removed on leaving), after removing those
    of the same kind that killed processes left under ``root`` (default: the system's
    temporary directory)."""
    base = Path(tempfile.gettempdir()) if root is None else root
    remove_stale(base, kind)
    with tempfile.TemporaryDirectory(prefix=owner_prefix(kind), dir=base) as tmp:
        yield Path(tmp)
