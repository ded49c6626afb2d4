"""Every error kvsim raises on purpose, under one base that carries its exit code.

A :class:`KvsimError` is a condition kvsim foresaw and explains in one line
(``str(exc)`` is the whole message: the file, the field, what is allowed), so
the command line prints ``kvsim: error: <message>`` and exits with the class's
``exit_code`` instead of showing a traceback. Anything else is a bug and keeps
its traceback. The CLI maps by this base class alone, so a new error needs no
change there: pick the right parent.

Exit codes: 2 for what the user can fix before running (a config, an argument,
a run directory), 1 for what went wrong while measuring.

The classes are defined here, in a module with no imports, and re-exported where
they are raised (``sim.config.ConfigError``, ``sim.rundir.guard.RunDirError``, …),
so every old import keeps working and this module never takes part in a circle.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "ConfigError",
    "HFConfigError",
    "KvsimError",
    "MeasureError",
    "PluginFault",
    "RunDirError",
    "RunError",
    "SpecError",
    "StallError",
    "StoreError",
    "TraceError",
    "UsageError",
    "WatchdogError",
]


class KvsimError(Exception):
    """Base of kvsim's own errors; ``str()`` is a one-line message for the user."""

    #: Exit status of ``kvsim`` when this error ends a command.
    exit_code: ClassVar[int] = 1


class UsageError(KvsimError):
    """A command-line argument that cannot be used (``--bootstrap 5``, an unknown axis)."""

    exit_code: ClassVar[int] = 2


class ConfigError(KvsimError):
    """A config that cannot be run; the message names the file, line and field."""

    exit_code: ClassVar[int] = 2


class TraceError(ConfigError):
    """A trace file kvsim cannot replay; the message names the file and line."""


class HFConfigError(ConfigError, ValueError):
    """A Hugging Face ``config.json`` (or preset) that yields no KV layout.

    Also a ValueError, so pydantic validators that meet it report it as a field error.
    """


class RunDirError(KvsimError):
    """A run directory that cannot be used, written or resumed."""

    exit_code: ClassVar[int] = 2


class SpecError(KvsimError, ValueError):
    """A point spec a child cannot run: unreadable, of another version, or changed."""

    exit_code: ClassVar[int] = 2


class RunError(KvsimError):
    """A measurement that could not go on (exit code 1)."""


class WatchdogError(RunError, RuntimeError):
    """A request or worker hung past the configured limit; the run cannot finish."""


class PluginFault(RunError, RuntimeError):
    """A variant did what a point cannot go on from: ended its thread (``sys.exit``,
    ``KeyboardInterrupt``), returned what breaks the contract, hung an engine step. The
    point fails with this one line, naming the variant and its file."""


class MeasureError(RunError, RuntimeError):
    """A calibration's measurement failed in the child that ran it (a variant that raised,
    a child that died): one line naming the variant and what its child said last."""


class StallError(RunError, RuntimeError):
    """Nothing can happen any more: no timer is due and no thread will post."""


class StoreError(RunError, RuntimeError):
    """A store operation failed (a transfer after every retry, a store that will not start);
    a failed transfer is recorded against the request that asked for it."""
