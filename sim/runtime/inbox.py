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
"""

from __future__ import annotations

import _thread
from collections import deque
from typing import Generic, TypeVar

__all__ = ["Inbox"]

T = TypeVar("T")


class Inbox(Generic[T]):
    __slots__ = ("_bell", "_items")

    def __init__(self) -> None:
        self._items: deque[T] = deque()  # append and popleft are atomic
        self._bell = _thread.allocate_lock()
        self._bell.acquire()  # not rung

    def put(self, item: T) -> None:
        """Any thread: add ``item`` and wake the waiter."""
        self._items.append(item)
        try:  # noqa: SIM105 - suppress() costs a context manager per post
            self._bell.release()
        except RuntimeError:
            pass  # already rung: the waiter will see this item too

    def ring(self) -> None:
        """Any thread: wake the waiter without posting (it looks for what to do)."""
        try:  # noqa: SIM105 - as in put
            self._bell.release()
        except RuntimeError:
            pass

    def __bool__(self) -> bool:
        return bool(self._items)

    def take(self) -> T:
        """The oldest item (the one waiting thread only; the inbox must not be empty)."""
        return self._items.popleft()

    def wait(self, timeout: float | None) -> bool:
        """Sleep until a post or ``timeout`` seconds (None: no limit); True when rung (it
        may still be empty)."""
        if timeout is None:
            return self._bell.acquire()
        return self._bell.acquire(timeout=timeout) if timeout > 0 else self._bell.acquire(False)
