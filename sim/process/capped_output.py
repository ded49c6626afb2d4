"""A point child's stray output, capped: a plug-in printing in a loop cannot fill the disk.

A point's child sends everything written to ``sys.stdout`` and ``sys.stderr`` to its
``stderr.log`` (sim.sweep.child). A variant that prints on every call wrote 68 MB
for 20 requests; one that prints in a loop would fill the disk. :func:`cap_output`
replaces both streams with writers that keep the first :data:`LOG_LIMIT_CHARS`
characters, drop the rest (counting them, and keeping the last few writes), and
:meth:`OutputCap.note` says afterwards how much was cut, followed by what was
written last. Past the cap a write costs a lock and a count, not a system call.

Python-level writes only (``print``, ``logging``, ``warnings``, tracebacks): a C
library writing to file descriptor 2 itself is not capped.
"""

from __future__ import annotations

import io
import sys
import threading
from collections import deque
from typing import Any, TextIO

__all__ = ["LOG_LIMIT_CHARS", "OutputCap", "cap_output"]

#: Characters of stray output a point's log keeps before it cuts the rest.
LOG_LIMIT_CHARS = 1 << 20
#: Characters of the last writes kept past the cap, shown after the note.
TAIL_CHARS = 4096


class OutputCap:
    """The budget shared by a process's stdout and stderr writers."""

    def __init__(self, limit: int = LOG_LIMIT_CHARS) -> None:
        self.limit = limit
        self.written = 0
        self.cut = 0
        self._tail: deque[str] = deque(maxlen=64)
        self.lock = threading.Lock()

    def take(self, text: str) -> str:
        """The part of ``text`` that still fits (all of it, some, or ""); the rest is counted."""
        with self.lock:
            room = self.limit - self.written
            if len(text) <= room:
                self.written += len(text)
                return text
            keep = text[: max(room, 0)]
            self.written += len(keep)
            self.cut += len(text) - len(keep)
            self._tail.append(text[-TAIL_CHARS:])
            return keep

    def note(self) -> str:
        """What was cut, and the last of it ("" when nothing was)."""
        if not self.cut:
            return ""
        tail = "".join(self._tail)[-TAIL_CHARS:]
        return (
            f"\nkvsim: output cut: {self.cut:,} more characters were written by the code this "
            f"process ran (a plug-in printing?) after the first {self.limit:,}; "
            f"the last {len(tail):,} follow\n{tail}\n"
        )


class _Capped(io.TextIOBase):
    """A text stream that writes through ``raw`` within ``cap``."""

    def __init__(self, raw: TextIO, cap: OutputCap) -> None:
        self._raw = raw
        self._cap = cap

    def write(self, text: str) -> int:
        keep = self._cap.take(text)
        if keep:
            self._raw.write(keep)
        return len(text)

    def flush(self) -> None:
        self._raw.flush()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # encoding, errors, buffer: the raw stream's
        return getattr(self._raw, name)


def cap_output(limit: int = LOG_LIMIT_CHARS) -> tuple[OutputCap, TextIO]:
    """Cap ``sys.stdout`` and ``sys.stderr`` together at ``limit`` characters; returns the
    cap (its :meth:`~OutputCap.note` for the end) and the raw stderr, for kvsim's own last
    words (a point's traceback), which must not be lost to a plug-in's flood."""
    raw_err = sys.stderr
    cap = OutputCap(limit)
    sys.stdout = _Capped(sys.stdout, cap)  # type: ignore[assignment]
    sys.stderr = _Capped(raw_err, cap)  # type: ignore[assignment]
    return cap, raw_err
