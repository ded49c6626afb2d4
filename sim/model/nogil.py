"""Free-threaded CPython in model mode: no GIL, Python runs in parallel on the cores.

The same interface as :class:`sim.model.gil.CPythonGil` (which re-exports it), so that
the simulated threads run unchanged on either: every "held" run is plain CPU work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sim.model.cores import Cores
from sim.model.loop import Loop

__all__ = ["NoGil"]

#: What a thread does next, called with one (ignored) argument so that the loop can call it.
Cont = Callable[[Any], None]


class NoGil:
    """Free-threaded CPython: no GIL; Python runs in parallel, limited by the cores."""

    kind = "none"

    def __init__(self, loop: Loop, cores: Cores) -> None:
        self._loop = loop
        self._cores = cores
        #: Never called: a free-threaded interpreter has no GIL to take or let go.
        self.watch: Callable[[float], None] | None = None
        self.free_watch: Callable[[float], None] | None = None

    #: Nobody ever holds it.
    holder: Any = None

    @property
    def cores(self) -> Cores:
        return self._cores

    @property
    def waiting(self) -> int:
        return 0

    @property
    def switches(self) -> int:
        return 0

    @property
    def forced_drops(self) -> int:
        return 0

    def take(self, thread: Any) -> bool:
        return True

    def acquire(self, thread: Any, cont: Cont) -> None:
        cont(None)

    def release(self, thread: Any, tail: bool = False) -> None:
        return None

    def run_instant(self, thread: Any, work_s: float) -> bool:
        return self._cores.instant(work_s)

    def run(self, thread: Any, work_s: float, cont: Cont) -> None:
        if work_s > 0:
            self._cores.run(work_s, cont)
        else:
            cont(None)
