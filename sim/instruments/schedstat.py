"""A thread's time runnable but waiting for a core, from Linux's per-thread schedstat.

``/proc/thread-self/schedstat`` holds three numbers: time on a core, time runnable on
a run queue (waiting for a core), and time slices, in nanoseconds. The second, read
around a job, is the part of the job's wall time the kernel kept it off every core:
with the GIL off the one wait left when two threads want more cores than there are
(docs/columns.md §GIL off); with it on, a part of what ``gil_wait_ms`` holds. One
``pread`` of a descriptor each thread keeps open (about a microsecond); None off Linux.
"""

from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["run_delay_ns"]


class _Fd:
    """One thread's schedstat descriptor; closed when the thread's locals are dropped."""

    def __init__(self) -> None:
        path = f"/proc/self/task/{threading.get_native_id()}/schedstat"
        try:
            self.fd: int | None = os.open(path, os.O_RDONLY)
        except OSError:
            self.fd = None

    def __del__(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)


_mine = threading.local()


def run_delay_ns() -> int | None:
    """Nanoseconds this thread has spent runnable but off-core so far (None: unknown)."""
    holder = getattr(_mine, "fd", None)
    if holder is None:
        holder = _mine.fd = _Fd()
    if holder.fd is None:
        return None
    try:
        return int(os.pread(holder.fd, 128, 0).split()[1])
    except (OSError, ValueError, IndexError):
        return None
