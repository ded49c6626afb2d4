"""The interface a simulated thread uses for the GIL, and free-threaded CPython behind it.

:class:`SimGil` is what threads call (take, acquire, release, run) and what they read
(``holder``, the probe's ``watch`` and ``free_watch``): one class that both
interpreters derive from, so that compiled code (sim.native) calls them through one
vtable instead of looking names up on either of two types. :class:`NoGil` is the
free-threaded interpreter: every "held" run is plain CPU work in parallel on the
cores. :class:`sim.model.gil.CPythonGil` (which re-exports both) has the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from sim.model.cores import Cores
from sim.model.loop import Loop

__all__ = ["LOAD_THREAD_PREFIX", "NoGil", "SimGil"]

#: The simulated load threads' names begin so (sim.model.threads names them).
LOAD_THREAD_PREFIX = "kvsim-load-"

#: What a thread does next, called with one (ignored) argument so that the loop can call it.
Cont = Callable[[Any], None]


class SimGil:
    """The GIL as the simulated threads see it (a base: use a kind below)."""

    kind: ClassVar[str] = "?"

    def __init__(self, loop: Loop, cores: Cores) -> None:
        self._loop = loop
        self._cores = cores
        #: The thread holding the GIL (None: free; then nobody waits either).
        self.holder: Any = None
        #: Called with the time whenever a free GIL is taken, and whenever the GIL is let
        #: go with nobody waiting (the probe listens).
        self.watch: Callable[[float], None] | None = None
        self.free_watch: Callable[[float], None] | None = None

    @property
    def cores(self) -> Cores:
        return self._cores

    @property
    def waiting(self) -> int:
        """Threads waiting for the GIL."""
        return 0

    @property
    def switches(self) -> int:
        """Times the GIL changed hands."""
        return 0

    @property
    def forced_drops(self) -> int:
        """Hand-offs caused by a drop request (a waiter's switch interval ran out)."""
        return 0

    def take(self, thread: Any) -> bool:
        """Take a free GIL for ``thread`` now; False when it is held: then :meth:`acquire`."""
        raise NotImplementedError

    def acquire(self, thread: Any, cont: Cont) -> None:
        """Call ``cont(None)`` once ``thread`` holds the GIL (at once when it is free)."""
        raise NotImplementedError

    def release(self, thread: Any, tail: bool = False) -> None:
        """``thread`` gives the GIL up; ``tail``: the caller does nothing after this in
        its loop entry."""
        raise NotImplementedError

    def pass_on(self, thread: Any, cont: Cont) -> float | None:
        """``thread``, holding the GIL, releases it mid-run (library code's own release):
        the woken waiter's wake-up (s) when one took it (``cont(None)`` follows once
        ``thread`` holds it again); None, and nothing done, when nobody was waiting (no
        GIL: never)."""
        return None

    def run_instant(self, thread: Any, work_s: float) -> bool:
        """:meth:`run` done at once when nothing can interrupt it; False: call :meth:`run`."""
        raise NotImplementedError

    def run(self, thread: Any, work_s: float, cont: Cont, _arg: Any = None) -> None:
        """``work_s`` CPU seconds of Python by ``thread``, then ``cont(None)``."""
        raise NotImplementedError


class NoGil(SimGil):
    """Free-threaded CPython: no GIL; Python runs in parallel, limited by the cores.
    Nobody ever holds it, and the probe's watches are never called."""

    kind: ClassVar[str] = "none"

    def take(self, thread: Any) -> bool:
        return True

    def acquire(self, thread: Any, cont: Cont) -> None:
        cont(None)

    def release(self, thread: Any, tail: bool = False) -> None:
        return None

    def run_instant(self, thread: Any, work_s: float) -> bool:
        return self._cores.instant(work_s, thread.startswith(LOAD_THREAD_PREFIX))

    def run(self, thread: Any, work_s: float, cont: Cont, _arg: Any = None) -> None:
        if work_s > 0:
            # a load thread's Python: the others' beside it slow it (Cores.crowd)
            self._cores.run(work_s, cont, thread.startswith(LOAD_THREAD_PREFIX))
        else:
            cont(None)
