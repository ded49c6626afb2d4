"""A process that ends when its work is done, whatever threads a plug-in left running.

Python waits at exit for every thread that is not a daemon. A plug-in that starts one
(at import, in ``warm_up``) and never ends it would keep ``kvsim variants`` (or a
point's child, its files written) from ever exiting. :func:`leave` gives such threads
a moment, then names them in one line and ends the process without waiting.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

__all__ = ["GRACE_S", "leave"]

#: Seconds the threads a plug-in started get to end by themselves.
GRACE_S = 1.0


def leave(code: int) -> int:
    """``code`` when no thread a plug-in started is still running (the caller exits as
    usual); otherwise a line on standard error and ``os._exit(code)``: the process ends
    now, its output flushed (exit handlers do not run: nothing of kvsim's needs them
    once a command has returned)."""
    loader = sys.modules.get("connectors.plugin_file")  # loaded only if a plug-in was
    if loader is None:
        return code
    stray = loader.plugin_threads()
    end = time.monotonic() + GRACE_S
    for t in stray:
        t.join(max(0.0, end - time.monotonic()))
    stray = [t for t in stray if t.is_alive()]
    if not stray:
        return code
    names = ", ".join(repr(t.name) for t in stray[:3]) + (", …" if len(stray) > 3 else "")
    print(
        f"kvsim: note: {len(stray)} thread(s) started by a plug-in still running ({names}); "
        "exiting without waiting for them (a plug-in's threads must end, or be daemons)",
        file=sys.stderr,
    )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to flush to
            stream.flush()
    os._exit(code)
