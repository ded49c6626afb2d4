"""Where a plug-in's code raised, and what an exception that ends a process did, in words.

Kept apart from the loader (connectors.plugin_file, which needs numpy for the index
variants' base class): the load threads' and the engine's error paths name the
plug-in with these, and they are imported where start-up must stay light.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

__all__ = [
    "CONTRACT_DOC",
    "MODULE_PREFIX",
    "OsExit",
    "ending",
    "exit_message",
    "guard_os_exit",
    "plugin_line",
]

#: The module name every plug-in file runs under starts with this.
MODULE_PREFIX = "kvsim_plugin_"

#: Where the contract is explained, for error messages.
CONTRACT_DOC = "docs/your-connector.md"


class OsExit(SystemExit):
    """``os._exit`` called by a plug-in's own code: raised instead, so that what catches a
    ``sys.exit`` from a plug-in (the loader, the check, the load threads) names it too."""


_REAL_EXIT = os._exit


def _guarded_exit(status: int) -> NoReturn:
    """``os._exit`` for everyone but a plug-in's own frames (kvsim's own calls pass)."""
    caller = sys._getframe(1)
    if str(caller.f_globals.get("__name__", "")).startswith(MODULE_PREFIX):
        raise OsExit(status)
    _REAL_EXIT(status)


def guard_os_exit() -> None:
    """From now on, ``os._exit`` called from a plug-in file raises :class:`OsExit` (it would
    end the process at once, files half-written and nothing said). Idempotent."""
    os._exit = _guarded_exit


def _plugin_frame(exc: BaseException) -> tuple[str, int, str] | None:
    """(file, line, function) of the innermost plug-in frame ``exc`` passed through. Read
    from the frames themselves (their module's name), so it works after the plug-in's
    scope has ended."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if str(frame.f_globals.get("__name__", "")).startswith(MODULE_PREFIX):
            found = (frame.f_code.co_filename, tb.tb_lineno, frame.f_code.co_name)
        tb = tb.tb_next
    return found


def plugin_line(exc: BaseException, path: str = "") -> str:
    """``mine.py line 12, in prepare_values``: the innermost frame of a plug-in file that
    ``exc`` passed through ("" when none did); ``line 12, in prepare_values`` when the
    file is ``path`` (a message that names it already)."""
    found = _plugin_frame(exc)
    if found is None:
        return ""
    file, line, func = found
    return ("" if file == path else f"{file} ") + f"line {line}, in {func}"


def ending(exc: BaseException) -> str:
    """What an exception that is not an ``Exception`` did, in words: ``called
    sys.exit(0)``, ``raised KeyboardInterrupt``."""
    if isinstance(exc, OsExit):
        return f"called os._exit({exc.code!r})"
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"raised {type(exc).__name__}" + (f": {text}" if text else "")


def exit_message(exc: BaseException) -> str | None:
    """``mine.py: the plug-in called sys.exit(0) (line 12, in warm_up): …``: one line for
    a SystemExit raised by a plug-in's code, which would otherwise end kvsim with its
    code and no word; None when no plug-in frame raised it (kvsim's own exit)."""
    found = _plugin_frame(exc)
    if found is None:
        return None
    path = found[0]
    return (
        f"{path}: the plug-in {ending(exc)} ({plugin_line(exc, path)}): a plug-in must not end or "
        "interrupt kvsim; raise an ordinary exception to report a problem"
    )
