"""The simulation thread's inbox: what load threads post, and a wait that cannot hang.

``queue.SimpleQueue.get(timeout=t)`` can block forever in CPython 3.11: when its
lock is free on entry, the first try takes it, and the time left is recomputed; if
``t`` ran out meanwhile (a 30 µs timer wait, the thread preempted for longer), the
negative time left is passed on as a lock timeout, which means *no* timeout, and the
call waits for a put that may never come (seen: a real point hung at its 200th
request, the load thread idle). ``Lock.acquire(timeout=...)`` checks for that case,
so the inbox is a deque with a lock as its doorbell: a post appends and rings (releases
the lock, unless it is already rung); a wait takes the lock back, or times out.
A wait may also return with nothing posted (a ring left over from posts already
taken): the caller looks again.

The inbox is the deque itself (a subclass with the lock beside it), so that the
simulation thread's ``if inbox:`` and :meth:`Inbox.take` are C calls, not Python
frames: that thread looks at its inbox twice per wake-up, and the Python it runs
right after a sleep is several times slower than hot (cold caches), which is most
of the harness's GIL time per request (sim.benches.harness).
"""

from __future__ import annotations

import _thread
from collections import deque
from typing import TypeVar

__all__ = ["Inbox"]

T = TypeVar("T")


class Inbox(deque[T]):
    """The posted items, oldest first (``append`` and ``popleft`` are atomic), and the
    doorbell the waiter sleeps on."""

    __slots__ = ("bell",)

    def __init__(self) -> None:
        super().__init__()
        #: The doorbell: released by a post or :meth:`ring`, taken back by the waiter. The
        #: simulation thread acquires it itself (sim.runtime.env), so that its thread-CPU
        #: bracket around the wait holds the GIL-released wait and nothing else.
        self.bell = _thread.allocate_lock()
        self.bell.acquire()  # not rung

    def put(self, item: T) -> None:
        """Any thread: add ``item`` and wake the waiter."""
        self.append(item)
        try:  # noqa: SIM105 - suppress() costs a context manager per post
            self.bell.release()
        except RuntimeError:
            pass  # already rung: the waiter will see this item too

    def ring(self) -> None:
        """Any thread: wake the waiter without posting (it looks for what to do)."""
        try:  # noqa: SIM105 - as in put
            self.bell.release()
        except RuntimeError:
            pass

    def take(self) -> T:
        """The oldest item (the one waiting thread only; the inbox must not be empty)."""
        return self.popleft()

    def wait(self, timeout: float | None) -> bool:
        """Sleep until a post or ``timeout`` seconds (None: no limit); True when rung (it
        may still be empty)."""
        if timeout is None:
            return self.bell.acquire()
        return self.bell.acquire(timeout=timeout) if timeout > 0 else self.bell.acquire(False)
