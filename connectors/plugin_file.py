"""Variants from a user's own Python file, registered for the length of a ``with`` block.

A plug-in file is an ordinary module that decorates its classes with ``@register``
(an :class:`~connectors.base.AddressVariant`) or ``@register_index`` (an
:class:`~connectors.token_index.IndexVariant`), exactly as the built-ins do
(docs/your-connector.md). kvsim runs the file's *text*, not its path: the text is
what the config hash covers and what travels to a child process or a Ray host, so
the code measured is the code that was planned, wherever it runs.

Loading is scoped (:func:`plugins_loaded`): the registries and ``sys.modules`` are
left as they were found when the block ends, so no plug-in outlives the run that
named it. A file that cannot be used raises :class:`PluginError`, whose first line
names the file and what is wrong; for an exception raised by the file itself, the
lines after it are the traceback frames of the user's own file.
"""

from __future__ import annotations

import hashlib
import sys
import sysconfig
import threading
import traceback
import types
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from .base import AddressVariant
from .plugin_trace import CONTRACT_DOC, MODULE_PREFIX, ending, guard_os_exit, plugin_line
from .registry import ADDRESS_VARIANTS, INDEX_VARIANTS, Registry
from .token_index import IndexVariant

__all__ = [
    "IMPORT_TIMEOUT_S",
    "PluginCode",
    "PluginError",
    "is_plugin",
    "load_plugin",
    "plugin_threads",
    "plugins_loaded",
]


#: Seconds a plug-in file may take to run as a module (its imports included: numba and
#: torch take seconds on a loaded machine) before kvsim stops waiting and names it.
IMPORT_TIMEOUT_S = 60.0

#: What to do instead of ending the process, for messages.
_NO_EXIT = (
    "a plug-in must not end or interrupt kvsim; raise an ordinary exception "
    "(ValueError, RuntimeError) to report a problem"
)


class PluginError(ValueError):
    """A plug-in file that cannot be used; ``str()`` starts with the file's path."""


@dataclass(frozen=True)
class PluginCode:
    """One plug-in file as read when the config was loaded: its path (for messages and
    tracebacks) and its text (what runs)."""

    path: str
    source: str

    @property
    def sha256(self) -> str:
        return "sha256:" + hashlib.sha256(self.source.encode("utf-8")).hexdigest()

    @property
    def module_name(self) -> str:
        """A module name no two different texts share (and no real package uses)."""
        return MODULE_PREFIX + self.sha256[7:23]


def is_plugin(cls: type) -> bool:
    """Whether ``cls`` comes from a plug-in file (not a built-in or an installed package)."""
    return cls.__module__.startswith(MODULE_PREFIX)


def _not_users(filename: str) -> bool:
    """A frame of kvsim, of Python itself or of an installed package (not the user's)."""
    if filename.startswith("<"):
        return True
    own = str(Path(__file__).resolve().parent.parent)
    roots = {own, sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values()}
    resolved = str(Path(filename).resolve())
    return any(resolved.startswith(r + "/") for r in roots if r)


def _user_frames(exc: BaseException, path: str, source: str) -> list[str]:
    """Traceback lines of the user's frames: the plug-in file (its lines from the text
    that ran) and any module of theirs it imported; kvsim's, Python's and installed
    packages' frames are left out."""
    lines = source.splitlines()
    out = []
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename != path:
            if not _not_users(frame.filename):
                out.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
                if frame.line:
                    out.append(f"    {frame.line.strip()}")
            continue
        out.append(f'  File "{path}", line {frame.lineno}, in {frame.name}')
        if frame.lineno and 0 < frame.lineno <= len(lines):
            out.append(f"    {lines[frame.lineno - 1].strip()}")
    if isinstance(exc, SyntaxError) and exc.filename == path and exc.lineno:
        out.append(f'  File "{path}", line {exc.lineno}')
        if exc.text:
            out.append(f"    {exc.text.strip()}")
    return out


def _new_entries(reg: Registry, before: dict[str, type]) -> list[type]:
    return [cls for name, cls in reg.entries().items() if before.get(name) is not cls]


def _exec_bounded(code: PluginCode, module: types.ModuleType) -> None:
    """Run the file's text as ``module``, on a thread of its own, for at most
    :data:`IMPORT_TIMEOUT_S`: a file that sleeps or loops at import is named instead of
    hanging the command, and one that ends the process (``sys.exit``, ``raise
    KeyboardInterrupt``) is refused in one line instead of ending kvsim silently. (On
    another thread, a KeyboardInterrupt can only be the file's own: signals reach the
    main thread, which waits here and so still stops at a real Ctrl-C.)

    Raises what the file raised (an ``Exception``), or PluginError."""
    compiled = compile(code.source, code.path, "exec")  # a SyntaxError: raised here
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            exec(compiled, module.__dict__)  # the user's file, as a module
        except BaseException as exc:  # kept for the waiting thread, which says what it was
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=run, name="kvsim-plugin-import", daemon=True)
    worker.start()
    worker.join(IMPORT_TIMEOUT_S)
    if worker.is_alive():
        raise PluginError(
            f"{code.path}: did not finish running as a module in {IMPORT_TIMEOUT_S:g} s "
            "(a wait or a loop at import?); build what takes long in warm_up(), which runs "
            f"under the check's time limit ({CONTRACT_DOC})"
        )
    exc = outcome[0]
    if exc is None:
        return
    if isinstance(exc, Exception):
        raise exc
    where = plugin_line(exc, code.path)
    raise PluginError(
        f"{code.path}: the file {ending(exc)} at import"
        + (f" ({where})" if where else "")
        + f": {_NO_EXIT}"
    ) from None


#: Idents of the threads alive when the first plug-in ran here (None: none has run).
_threads_before: frozenset[int | None] | None = None


def plugin_threads() -> list[threading.Thread]:
    """Threads that would keep this process from exiting (alive, not daemon, not the main
    thread) and were started after a plug-in first ran in it: kvsim's own threads that
    outlive a command are daemons, so these are the plug-in's (or a library's it called)."""
    if _threads_before is None:
        return []
    main = threading.main_thread()
    return [
        t
        for t in threading.enumerate()
        if t.is_alive() and not t.daemon and t is not main and t.ident not in _threads_before
    ]


def load_plugin(code: PluginCode) -> list[type]:
    """Run ``code`` as a module and return the variant classes it registered.

    Call inside :func:`plugins_loaded` (or a registry scope): the registrations and
    the module entry are otherwise left behind.
    """
    global _threads_before
    if _threads_before is None:
        _threads_before = frozenset(t.ident for t in threading.enumerate())
    guard_os_exit()  # a plug-in's os._exit is refused like its sys.exit
    path = code.path
    before_a, before_i = ADDRESS_VARIANTS.entries(), INDEX_VARIANTS.entries()
    module = types.ModuleType(code.module_name)
    module.__file__ = path
    # In sys.modules while it runs (dataclasses and pydantic look their module up there).
    sys.modules[code.module_name] = module
    try:
        _exec_bounded(code, module)
    except PluginError:
        raise
    except Exception as exc:
        problem = str(exc).splitlines()[0] if str(exc) else ""
        if isinstance(exc, ValueError) and " is taken by " in problem:
            head, _, owner = problem.rpartition(" is taken by ")
            if owner.startswith(MODULE_PREFIX):  # another plug-in: its file, not its module
                owner = str(getattr(sys.modules.get(owner), "__file__", None) or owner)
            raise PluginError(
                f"{path}: {head} is taken by {owner}: a plug-in cannot reuse a built-in's or "
                "another plug-in's name; choose another `name`"
            ) from None
        if isinstance(exc, ValueError) and problem.endswith(" has no name"):
            raise PluginError(
                f'{path}: {problem}: give the class a `name = "..."` (what configs call it)'
            ) from None
        frames = _user_frames(exc, path, code.source)
        head = f"{path}: the file raised {type(exc).__name__}" + (f": {problem}" if problem else "")
        raise PluginError("\n".join([head, *frames])) from None
    added_a = _new_entries(ADDRESS_VARIANTS, before_a)
    added_i = _new_entries(INDEX_VARIANTS, before_i)
    # One name, one variant: `kvsim check NAME` and `kvsim variants NAME` look in both
    # registries, so an address variant named like an index variant (or the reverse)
    # would hide the other.
    for mine, theirs, kind in (
        (added_a, INDEX_VARIANTS.entries(), "index variant"),
        (added_i, ADDRESS_VARIANTS.entries(), "address variant"),
    ):
        for cls in mine:
            other = theirs.get(getattr(cls, "name", ""))
            if other is not None:
                owner = other.__module__
                if owner.startswith(MODULE_PREFIX):
                    owner = str(getattr(sys.modules.get(owner), "__file__", None) or owner)
                raise PluginError(
                    f"{path}: name {cls.name!r} is taken by the {kind} of {owner}: a plug-in "
                    "cannot reuse a built-in's or another plug-in's name; choose another `name`"
                )
    for cls in added_a:
        if not (isinstance(cls, type) and issubclass(cls, AddressVariant)):
            raise PluginError(
                f"{path}: {getattr(cls, '__qualname__', cls)!r} is registered with @register "
                "but is not a subclass of connectors.base.AddressVariant"
            )
    for cls in added_i:
        if not (isinstance(cls, type) and issubclass(cls, IndexVariant)):
            raise PluginError(
                f"{path}: {getattr(cls, '__qualname__', cls)!r} is registered with "
                "@register_index but is not a subclass of connectors.token_index.IndexVariant"
            )
    if not added_a and not added_i:
        raise PluginError(
            f"{path}: registers no variant; decorate an AddressVariant subclass with "
            f"@register (from connectors.registry), see {CONTRACT_DOC}"
        )
    return [*added_a, *added_i]


@contextmanager
def plugins_loaded(codes: Sequence[PluginCode]) -> Iterator[list[type]]:
    """``codes`` loaded and their variants registered inside the block, then removed.

    Yields the classes registered. With no codes this is a no-op, so callers can
    always use it.
    """
    if not codes:
        yield []
        return
    names = [c.module_name for c in codes]
    saved = {n: sys.modules[n] for n in names if n in sys.modules}
    with ExitStack() as stack:
        stack.enter_context(ADDRESS_VARIANTS.scoped())
        stack.enter_context(INDEX_VARIANTS.scoped())
        try:
            loaded: list[type] = []
            for code in codes:
                loaded.extend(load_plugin(code))
            yield loaded
        finally:
            for n in names:
                sys.modules.pop(n, None)
            sys.modules.update(saved)
