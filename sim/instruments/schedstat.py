"""A thread's time runnable but waiting for a core, from Linux's per-thread schedstat.

``/proc/thread-self/schedstat`` holds three numbers: time on a core, time runnable on
a run queue (waiting for a core), and time slices, in nanoseconds. The second, read
around a job, is the part of the job's wall time the kernel kept it off every core:
with the GIL off the one wait left when two threads want more cores than there are
(docs/columns.md §GIL off); with it on, the part of ``gil_wait_ms`` that was a wait
for a core (``core_wait_ms``).

The read must not hand the GIL over: ``os.pread``, like every system call Python
wraps, releases the GIL around it, so a read at a job's start and end let a waiting
thread in at each (4 threads of 5 ms holds then ran one after another), and the
probe's read at each wake-up cost the load thread a second hand-off. The read here
calls libc's ``pread`` through ``ctypes.PyDLL``, whose calls keep the GIL: one
descriptor per thread, kept open, about 2 µs a read. None where there is no
schedstat (off Linux, or a kernel built without it).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Callable

__all__ = ["run_delay_ns"]

_BUF = 128


def _pread() -> Callable[..., int] | None:
    """libc's pread, called with the GIL held (None: no C library to load)."""
    try:
        fn = ctypes.PyDLL(None).pread
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype = ctypes.c_ssize_t
    fn.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long)
    return fn  # type: ignore[no-any-return]


_PREAD = _pread()


class _Fd:
    """One thread's schedstat descriptor and buffer; closed when the thread's locals go."""

    def __init__(self) -> None:
        self.buf = ctypes.create_string_buffer(_BUF)
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
    if _PREAD is None:
        return None
    holder = getattr(_mine, "fd", None)
    if holder is None:
        holder = _mine.fd = _Fd()
    if holder.fd is None:
        return None
    n = _PREAD(holder.fd, holder.buf, _BUF - 1, 0)
    try:
        return int(holder.buf.raw[:n].split()[1]) if n > 0 else None
    except (ValueError, IndexError):
        return None
